#define _GNU_SOURCE
#include "base/lib_dir.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *sr__lib_dir(void) {
    static char dir[4096];
    if (!dir[0]) {
        Dl_info info;
        if (dladdr((void *)sr__lib_dir, &info) && info.dli_fname) {
            char *real = realpath(info.dli_fname, NULL);
            snprintf(dir, sizeof dir, "%s", real ? real : info.dli_fname);
            free(real);
            char *slash = strrchr(dir, '/');
            if (slash) *slash = 0;
            else snprintf(dir, sizeof dir, ".");
        } else {
            snprintf(dir, sizeof dir, ".");
        }
    }
    return dir;
}
