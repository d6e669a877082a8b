/* output_dir before any work (see output_dir.h). */
#define _GNU_SOURCE
#include "trainer/output_dir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/strbuf.h"
#include "fsdp/checkpoint.h"

/* mkdir -p: 0, or -1 with errno set by the folder that could not be made. */
static int make_dirs(const char *dir, char *failed, size_t len) {
    char *p = strdup(dir);
    if (!p) return -1;
    int rc = 0;
    for (char *s = p + 1;; s++) {
        if (*s && *s != '/') continue;
        char c = *s;
        *s = 0;
        struct stat st;
        if (mkdir(p, 0777) != 0 && errno != EEXIST) rc = -1;
        else if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode)) rc = -1, errno = errno ? errno : ENOTDIR;
        if (rc) snprintf(failed, len, "%s", p);
        *s = c;
        if (rc || !c) break;
    }
    free(p);
    return rc;
}

int sr__output_dir_check(const char *dir, int resume, int overwrite, char *err, size_t errlen) {
    char failed[4096];
    errno = 0;
    if (make_dirs(dir, failed, sizeof failed) != 0) {
        int e = errno;
        snprintf(err, errlen, "[task] output_dir = %s cannot be created (%s: %s); nothing was trained; choose a "
                 "folder this user can write", dir, failed, e == EEXIST ? "exists and is not a folder" : strerror(e));
        return -1;
    }
    char *probe = sr__fmt("%s/.shardrun-write-test-%ld", dir, (long)getpid());
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    int e = errno;
    if (fd >= 0) close(fd), unlink(probe);
    free(probe);
    if (fd < 0) {
        snprintf(err, errlen, "[task] output_dir = %s is not writable (creating a file in it: %s); nothing was "
                 "trained; choose a folder this user can write", dir, strerror(e));
        return -1;
    }
    char *latest = resume || overwrite ? NULL : sr__ckpt_latest(dir);
    if (latest) {
        snprintf(err, errlen, "[task] output_dir = %s already holds checkpoints of an earlier run (%s); this run "
                 "would overwrite them and restart its train_log.jsonl: set resume_from_checkpoint = latest to "
                 "continue that run, or overwrite_output_dir = true to start again, or choose another output_dir",
                 dir, latest);
        free(latest);
        return -1;
    }
    return 0;
}
