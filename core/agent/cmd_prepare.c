/* `shardrun prepare ARGS...`: runs shardrun_prepare (examples/prepare: text or JSON Lines into
   llm.c token shards; its own --help) from the folder the shardrun executable is in -- build/ in
   the build tree, bin/ where installed -- with the same arguments.  The tokenizer it needs lives
   with the transformer tasks, not in libshardrun: so a program of its own, and this its door. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"

int sr__cmd_prepare(int argc, char **argv) {
    char self[PATH_MAX], path[PATH_MAX + 32];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        sr__log(SR_LOG_ERROR,
                "prepare: cannot find the shardrun executable's folder (/proc/self/exe: %s); run "
                "shardrun_prepare directly",
                strerror(errno));
        return SR_EXIT_CONFIG;
    }
    self[n] = 0;
    char *slash = strrchr(self, '/');
    snprintf(path, sizeof path, "%.*s/shardrun_prepare", slash ? (int)(slash - self) : 1, slash ? self : ".");
    argv[0] = path; /* argv: "prepare", then its arguments */
    (void)argc;
    execv(path, argv);
    sr__log(SR_LOG_ERROR,
            "prepare: cannot run %s: %s; it is built with shardrun (cmake --build build --target "
            "shardrun_prepare) and installed next to it",
            path, strerror(errno));
    return SR_EXIT_CONFIG;
}
