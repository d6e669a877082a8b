/* Folders: mkdir -p and rm -r (see fs.h). */
#define _GNU_SOURCE
#include "base/fs.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/alloc.h"

int sr__mkdir_p(const char *dir, char *failed, size_t len) {
    char *p = sr__strdup(dir);
    if (!p) return snprintf(failed, len, "%s", dir), errno = ENOMEM, -1;
    int rc = 0;
    for (char *s = p + 1;; s++) { /* each parent, then the folder itself */
        if (*s && *s != '/') continue;
        char c = *s;
        *s = 0;
        struct stat st;
        errno = 0;
        if (mkdir(p, 0777) != 0 && errno != EEXIST) rc = -1;
        else if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode)) rc = -1, errno = errno ? errno : EEXIST;
        if (rc) snprintf(failed, len, "%s", p);
        *s = c;
        if (rc || !c) break;
    }
    int e = errno;
    free(p);
    errno = e;
    return rc;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path) == 0 || errno == ENOENT ? 0 : -1;
}

int sr__remove_tree(const char *path) {
    return nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS) != 0 && errno != ENOENT ? -1 : 0;
}
