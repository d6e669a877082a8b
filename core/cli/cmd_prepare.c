/* `shardrun prepare ARGS...` and `shardrun merge ARGS...`.  prepare runs shardrun_prepare (tools/prepare: text or JSON Lines into
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

/* Runs program `prog` from the shardrun executable's folder with argv (argv[0] replaced by `shown`,
   the name its messages give the command, or by its path); returns only when it cannot (exit code
   2, after saying why).  `cmd` names the subcommand in messages. */
static int exec_next_to_self(const char *cmd, const char *prog, const char *shown, char **argv) {
    char self[PATH_MAX], path[PATH_MAX + 32];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        sr__log(SR_LOG_ERROR,
                "%s: cannot find the shardrun executable's folder (/proc/self/exe: %s); run "
                "%s directly",
                cmd, strerror(errno), prog);
        return SR__EXIT_CONFIG;
    }
    self[n] = 0;
    char *slash = strrchr(self, '/');
    snprintf(path, sizeof path, "%.*s/%s", slash ? (int)(slash - self) : 1, slash ? self : ".", prog);
    argv[0] = shown ? (char *)shown : path; /* argv: the subcommand, then its arguments */
    execv(path, argv);
    sr__log(SR_LOG_ERROR,
            "%s: cannot run %s: %s; it is built with shardrun (cmake --build build --target "
            "%s) and installed next to it",
            cmd, path, strerror(errno), prog);
    return SR__EXIT_CONFIG;
}

int sr__cmd_prepare(int argc, char **argv) {
    (void)argc;
    /* its messages name the command as typed: "shardrun prepare: error: ..." */
    return exec_next_to_self("prepare", "shardrun_prepare", "shardrun prepare", argv);
}

/* `shardrun merge ARGS...`: runs shardrun_merge (tools/merge: a FULL checkpoint's LoRA adapters
   folded into its base weights) the same way */
int sr__cmd_merge(int argc, char **argv) {
    (void)argc;
    return exec_next_to_self("merge", "shardrun_merge", NULL, argv);
}
