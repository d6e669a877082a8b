/* A FULL checkpoint's adapter files (ckpt_adapter.h). */
#define _GNU_SOURCE
#include "fsdp/ckpt_adapter.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/strbuf.h"
#include "io/safetensors.h"

static int write_config(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    int ok = f && fputs(text, f) >= 0;
    if (f && fclose(f) != 0) ok = 0;
    if (!ok) sr__log(SR_LOG_ERROR, "checkpoint: cannot write %s: %s", path, strerror(errno));
    return ok ? 0 : -1;
}

int sr__ckpt_save_adapter(const sr_model *m, const char *dir) {
    if (!m->adapter_config) return 0;
    char err[512];
    char *src = sr__fmt("%s/model.safetensors", dir), *dst = sr__fmt("%s/adapter_model.safetensors", dir),
         *cfg = sr__fmt("%s/adapter_config.json", dir);
    sr__st_tensor *t = sr__calloc((size_t)m->nparams, sizeof *t);
    char **names = sr__calloc((size_t)m->nparams, sizeof *names);
    const void **data = sr__calloc((size_t)m->nparams, sizeof *data);
    sr__st_file *f = NULL;
    sr__st_writer *w = NULL;
    int rc = -1, n = 0;
    if (!src || !dst || !cfg || !t || !names || !data) {
        sr__log(SR_LOG_ERROR, "checkpoint: out of memory for the adapter files in %s", dir);
        goto out;
    }
    if (!(f = sr__st_open(src, err, sizeof err))) {
        sr__log(SR_LOG_ERROR, "checkpoint: adapter files: %s", err);
        goto out;
    }
    for (int i = 0; i < m->nparams; i++) {
        const sr__param *p = &m->params[i];
        if (!(p->flags & SR_PARAM_ADAPTER) || p->tied_to >= 0) continue;
        const sr__st_tensor *st = sr__st_find(f, p->name, &data[n]);
        if (!st) {
            sr__log(SR_LOG_ERROR, "checkpoint: %s lacks the adapter's %s", src, p->name);
            goto out;
        }
        if (!(names[n] = sr__fmt("%s%s", m->adapter_prefix, p->name))) {
            sr__log(SR_LOG_ERROR, "checkpoint: out of memory for the adapter files in %s", dir);
            goto out;
        }
        t[n] = *st;
        t[n].name = names[n];
        n++;
    }
    /* PEFT's save_pretrained writes {"format": "pt"} as the file's metadata too */
    const sr__st_kv meta[] = {{"format", "pt"}};
    if (!(w = sr__st_create(dst, t, (size_t)n, meta, 1, err, sizeof err))) {
        sr__log(SR_LOG_ERROR, "checkpoint: %s", err);
        goto out;
    }
    for (int k = 0; k < n; k++)
        if (sr__st_write(w, (size_t)k, 0, data[k], (size_t)t[k].nbytes, err, sizeof err) != 0) {
            sr__log(SR_LOG_ERROR, "checkpoint: %s", err);
            sr__st_abort(w);
            w = NULL;
            goto out;
        }
    rc = sr__st_finish(w, err, sizeof err);
    w = NULL;
    if (rc != 0) sr__log(SR_LOG_ERROR, "checkpoint: %s", err);
    if (rc == 0) rc = write_config(cfg, m->adapter_config);
out:
    if (f) sr__st_close(f);
    for (int i = 0; names && i < m->nparams; i++) free(names[i]);
    free(names), free(t), free(data), free(src), free(dst), free(cfg);
    return rc;
}
