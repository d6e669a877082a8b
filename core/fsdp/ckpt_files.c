/* The task's files in a FULL checkpoint (see ckpt_files.h). */
#define _GNU_SOURCE
#include "fsdp/ckpt_files.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/hash64.h"
#include "base/log.h"
#include "base/progress.h"
#include "base/strbuf.h"

void sr__ckpt_add_file_hashes(sr__ckpt_kvlist *l, const sr_model *m) {
    char hex[17];
    for (int i = 0; i < m->nfiles && !l->oom; i++) {
        char *k = sr__fmt(SR__CKPT_FILE_KEY "%s", m->files[i].name);
        if (k)
            sr__ckpt_kv_add(l, k,
                            sr__fmt("%s", sr__hash64_hex(sr__hash64(m->files[i].data, m->files[i].size, 0), hex)));
        else l->oom = 1;
        free(k);
    }
}

int sr__ckpt_write_files(const sr_model *m, const char *dir) {
    for (int i = 0; i < m->nfiles; i++) {
        char *path = sr__fmt("%s/%s", dir, m->files[i].name);
        if (!path) {
            sr__log(SR_LOG_ERROR, "checkpoint: out of memory for the path of %s", m->files[i].name);
            return -1;
        }
        FILE *f = fopen(path, "wb");
        int ok = f && fwrite(m->files[i].data, 1, m->files[i].size, f) == m->files[i].size && fflush(f) == 0 &&
                 fsync(fileno(f)) == 0;
        int err = errno;
        if (f && fclose(f) != 0 && ok) ok = 0, err = errno;
        if (!ok) {
            sr__progress_io_failed(err, path);
            sr__log(SR_LOG_ERROR, "checkpoint: cannot write %s: %s", path, strerror(err));
            unlink(path);
        }
        free(path);
        if (!ok) return -1;
    }
    return 0;
}
