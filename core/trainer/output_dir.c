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

#include "base/alloc.h"
#include "base/fs.h"
#include "base/strbuf.h"
#include "fsdp/ckpt_dir.h"

int sr__output_dir_prepare(const char *dir, char *err, size_t errlen) {
    char failed[4096];
    errno = 0;
    if (sr__mkdir_p(dir, failed, sizeof failed) != 0) {
        int e = errno;
        if (e == ENOMEM) {
            snprintf(err, errlen, "[task] output_dir = %s: out of memory while creating it", dir);
            return -2;
        }
        snprintf(err, errlen,
                 "[task] output_dir = %s cannot be created (%s: %s); nothing was trained; choose a "
                 "folder this user can write",
                 dir, failed, e == EEXIST ? "exists and is not a folder" : strerror(e));
        return -1;
    }
    char *probe = sr__fmt("%s/.shardrun-write-test-%ld", dir, (long)getpid());
    if (!probe) {
        snprintf(err, errlen, "[task] output_dir = %s: out of memory for the name of a test file in it", dir);
        return -2;
    }
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    int e = errno;
    if (fd >= 0) close(fd), unlink(probe);
    free(probe);
    if (fd < 0) {
        snprintf(err, errlen,
                 "[task] output_dir = %s is not writable (creating a file in it: %s); nothing was "
                 "trained; choose a folder this user can write",
                 dir, strerror(e));
        return -1;
    }
    return 0;
}

int sr__output_dir_others(const char *dir, const char *lineage, char ***names, size_t *n, char *err, size_t errlen) {
    sr__ckpt_entry *l;
    size_t k;
    char why[1024];
    *names = NULL, *n = 0;
    if (sr__ckpt_list(dir, &l, &k, why, sizeof why) != 0) {
        snprintf(err, errlen, "[task] output_dir: %s", why);
        return -1;
    }
    char **v = sr__calloc(k + 1, sizeof *v);
    if (!v) {
        sr__ckpt_list_free(l, k);
        snprintf(err, errlen, "out of memory listing %s", dir);
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < k && rc == 0; i++) {
        char *p = sr__fmt("%s/%s", dir, l[i].name);
        sr__ckpt_ident id = {0};
        int known = p && sr__ckpt_ident_read(p, &id, why, sizeof why) == 0;
        int mine = known && lineage && !strcmp(sr__ckpt_lineage(&id), lineage);
        sr__ckpt_ident_free(&id);
        /* a folder without a readable identity may be anything a user keeps there (notes, a copy
           being made): it is never taken for another run's checkpoint, never removed */
        if (!known)
            snprintf(err, errlen,
                     "[task] output_dir = %s holds %s, which is not a checkpoint shardrun can read (%s): shardrun "
                     "removes only checkpoints it can prove belong to another run, and does not write beside "
                     "this one; move it out of output_dir (or remove it yourself), or choose another "
                     "output_dir; nothing was trained",
                     dir, p ? p : l[i].name, p ? why : "out of memory"),
                rc = -1;
        else if (!mine) v[(*n)++] = l[i].name, l[i].name = NULL; /* taken */
        free(p);
    }
    sr__ckpt_list_free(l, k);
    if (rc != 0) {
        for (size_t i = 0; i < *n; i++) free(v[i]);
        free(v);
        *n = 0;
        return -1;
    }
    *names = v;
    return 0;
}

int sr__output_dir_remove(const char *dir, const char *name, char *err, size_t errlen) {
    char *p = sr__fmt("%s/%s", dir, name), *gone = strstr(name, ".deleting") ? NULL : sr__fmt("%s.deleting", p);
    int rc = 0;
    if (gone && rename(p, gone) != 0) {
        if (errno != ENOENT) snprintf(err, errlen, "cannot rename %s to delete it: %s", p, strerror(errno)), rc = -1;
    } else {
        int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd >= 0) fsync(dfd), close(dfd);
        if (sr__remove_tree(gone ? gone : p) != 0)
            snprintf(err, errlen, "cannot remove %s: %s", gone ? gone : p, strerror(errno)), rc = -1;
    }
    free(p), free(gone);
    return rc;
}
