#define _GNU_SOURCE
#include "fsdp/checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "shardrun/half.h"
#include "base/log.h"
#include "base/strbuf.h"
#include "fsdp/engine_internal.h"
#include "io/json.h"
#include "io/safetensors.h"

enum { K_PARAM = 0, K_EXP_AVG, K_EXP_AVG_SQ, K_COUNT };
static const char *const KIND[K_COUNT] = {"param", "exp_avg", "exp_avg_sq"};

static float *kind_shard(sr__uslot *s, int k) { return k == K_PARAM ? s->master : k == K_EXP_AVG ? s->exp_avg : s->exp_avg_sq; }

static void remove_tree(const char *dir) { /* checkpoint folders hold plain files only */
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        char *p = sr__fmt("%s/%s", dir, de->d_name);
        unlink(p), free(p);
    }
    closedir(d);
    rmdir(dir);
}

int sr__make_output_dir(const char *dir) {
    char *p = sr__fmt("%s", dir);
    int rc = 0;
    for (char *s = p + 1; *s && !rc; s++) /* each parent, then the folder itself */
        if (*s == '/') {
            *s = 0;
            if (mkdir(p, 0777) != 0 && errno != EEXIST) rc = -1;
            *s = '/';
        }
    if (!rc && mkdir(p, 0777) != 0 && errno != EEXIST) rc = -1;
    if (rc) sr__log(SR_LOG_ERROR, "cannot create output_dir %s: %s", dir, strerror(errno));
    free(p);
    return rc;
}

static void fsync_dir(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) fsync(fd), close(fd);
}

/* Testing aid: SHARDRUN_DEBUG_SAVE_DELAY_MS slows every unit's write, so a test can kill a run
   in the middle of a save. */
static void debug_delay(void) {
    const char *v = getenv("SHARDRUN_DEBUG_SAVE_DELAY_MS");
    long ms = v ? atol(v) : 0;
    if (ms > 0) nanosleep(&(struct timespec){ms / 1000, (ms % 1000) * 1000000L}, NULL);
}

/* ---- trainer_state.json ----------------------------------------------------------------------------- */

static int write_state(sr__engine *e, const char *dir, const sr__train_state *ts) {
    char *p = sr__fmt("%s/trainer_state.json", dir);
    FILE *f = fopen(p, "w");
    if (!f) {
        sr__log(SR_LOG_ERROR, "checkpoint: cannot write %s: %s", p, strerror(errno));
        free(p);
        return -1;
    }
    fprintf(f, "{\"global_step\": %lld, \"adam_steps\": %lld, \"seed\": %lld, \"loss_scale\": %.17g, "
               "\"good_steps\": %d, \"world_size\": %d, \"shard_group_size\": %d, \"state_dict_type\": \"%s\", "
               "\"model_params\": %zu}\n",
            ts->global_step, e->adam_steps, ts->seed, e->loss_scale, e->good_steps, e->world_size, e->shard_size,
            sr__state_dict_name(e->cfg.state_dict), sr__model_numel(e->model));
    int rc = fflush(f) == 0 && fsync(fileno(f)) == 0 ? 0 : -1;
    if (fclose(f) != 0) rc = -1;
    if (rc) sr__log(SR_LOG_ERROR, "checkpoint: writing %s failed: %s", p, strerror(errno));
    free(p);
    return rc;
}

/* What resume reads back from trainer_state.json; the other members are for people. */
static const char *const STATE_KEYS[] = {"global_step", "adam_steps", "seed", "loss_scale", "good_steps"};
enum { S_STEP, S_ADAM, S_SEED, S_SCALE, S_GOOD, S_COUNT };

/* The members of STATE_KEYS into v[] (the integers: non-negative, at most LLONG_MAX).  0, or -1
   with why[] saying what is wrong. */
static int parse_state(const char *text, size_t n, double v[S_COUNT], long long iv[S_COUNT], char *why, size_t len) {
    sr_json j;
    int have[S_COUNT] = {0}, more = -1, k = S_COUNT;
    const char *key, *what;
    size_t klen, at;
    sr__json_init(&j, text, n, NULL);
    if (sr__json_object(&j) == 0)
        while ((more = sr__json_member(&j, &key, &klen)) > 0) {
            for (k = 0; k < S_COUNT; k++)
                if (sr__json_key_is(key, klen, STATE_KEYS[k])) break;
            if (k == S_COUNT) {
                if (sr__json_skip(&j) != 0) break;
                continue;
            }
            sr_json_num num;
            if (sr__json_peek(&j) != SR_JSON_NUMBER || sr__json_number(&j, &num) != 0) break;
            if (k != S_SCALE && !(num.is_uint && num.uint <= (uint64_t)LLONG_MAX)) break;
            v[k] = num.value, iv[k] = (long long)num.uint, have[k] = 1;
        }
    if (more == 0) sr__json_end(&j);
    int rc = -1;
    if ((what = sr__json_error(&j, &at)))
        snprintf(why, len, "not valid JSON: %s at byte %zu", what, at);
    else if (more != 0)
        snprintf(why, len, "\"%s\" is not %s", STATE_KEYS[k], k == S_SCALE ? "a number" : "a non-negative integer");
    else
        rc = 0;
    for (k = 0; k < S_COUNT && rc == 0; k++)
        if (!have[k]) snprintf(why, len, "no \"%s\"", STATE_KEYS[k]), rc = -1;
    sr__json_free(&j);
    return rc;
}

static int read_state(sr__engine *e, const char *dir, sr__train_state *ts) {
    char *p = sr__fmt("%s/trainer_state.json", dir), why[300] = "";
    FILE *f = fopen(p, "r");
    char *text = NULL;
    size_t n = 0;
    if (f) { /* a small file: one object on one line */
        sr_buf b = {0};
        char chunk[4096];
        size_t k;
        while ((k = fread(chunk, 1, sizeof chunk, f)) > 0 && b.n < (1u << 20)) sr__buf_add(&b, chunk, k);
        fclose(f);
        text = b.s, n = b.n;
    }
    double v[S_COUNT] = {0};
    long long iv[S_COUNT] = {0};
    if (!f || parse_state(text ? text : "", n, v, iv, why, sizeof why) != 0) {
        sr__log(SR_LOG_ERROR, "resume_from_checkpoint: %s is missing or incomplete%s%s%s; it is not a shardrun "
                        "checkpoint folder (or it was not finished)", p, *why ? " (" : "", why, *why ? ")" : "");
        free(text), free(p);
        return -1;
    }
    free(text), free(p);
    ts->global_step = iv[S_STEP], ts->seed = iv[S_SEED];
    e->adam_steps = iv[S_ADAM], e->good_steps = iv[S_GOOD] > INT_MAX ? INT_MAX : (int)iv[S_GOOD];
    if (e->dtype == SR_FLOAT16) e->loss_scale = v[S_SCALE]; /* a scale only means something under fp16 */
    return 0;
}

/* ---- saving ------------------------------------------------------------------------------------------- */

static int st_put(sr_st_writer *w, size_t idx, uint64_t off, const void *data, size_t bytes, const char *path) {
    char err[256];
    if (sr__st_write(w, idx, off, data, bytes, err, sizeof err) == 0) return 0;
    sr__log(SR_LOG_ERROR, "checkpoint: %s: %s", path, err);
    return -1;
}

/* Finishes a file written without error (ok), else removes it.  0, or -1 after printing why. */
static int st_close(sr_st_writer *w, int ok) {
    char err[256];
    if (!w) return ok ? 0 : -1;
    if (!ok) {
        sr__st_abort(w);
        return -1;
    }
    if (sr__st_finish(w, err, sizeof err) == 0) return 0;
    sr__log(SR_LOG_ERROR, "checkpoint: %s", err);
    return -1;
}

static int save_sharded(sr__engine *e, const char *tmp) {
    if (e->rep_rank != 0) return 0; /* one replica writes */
    int nu = e->units.n, rc = 0;
    char *path = sr__fmt("%s/shard-%05d-of-%05d.safetensors", tmp, e->shard_rank, e->shard_size), err[256];
    sr_st_tensor *t = calloc((size_t)nu * K_COUNT, sizeof *t);
    char **names = calloc((size_t)nu * K_COUNT, sizeof *names);
    for (int u = 0; u < nu; u++)
        for (int k = 0; k < K_COUNT; k++) {
            sr_st_tensor *x = &t[u * K_COUNT + k];
            names[u * K_COUNT + k] = sr__fmt("u%d.%s", u, KIND[k]);
            x->name = names[u * K_COUNT + k];
            x->dtype = SR_FLOAT32;
            x->ndim = 1;
            x->shape[0] = (int64_t)e->units.u[u].shard;
        }
    /* metadata: where every parameter lives, so another world size or wrap policy can load it */
    size_t nmeta = 3 + (size_t)nu + (size_t)e->model->nparams, m = 0;
    sr_st_kv *meta = calloc(nmeta, sizeof *meta);
    char **vals = calloc(nmeta * 2, sizeof *vals);
    meta[m++] = (sr_st_kv){"format", "shardrun-sharded-1"};
    vals[0] = sr__fmt("%d", e->shard_size), meta[m++] = (sr_st_kv){"shard_group_size", vals[0]};
    vals[1] = sr__fmt("%d", e->shard_rank), meta[m++] = (sr_st_kv){"shard_rank", vals[1]};
    int v = 2;
    for (int u = 0; u < nu; u++) {
        vals[v] = sr__fmt("unit:%d", u);
        vals[v + 1] = sr__fmt("%zu %zu %zu", e->units.u[u].numel, e->units.u[u].padded, e->units.u[u].shard);
        meta[m++] = (sr_st_kv){vals[v], vals[v + 1]}, v += 2;
    }
    for (int i = 0; i < e->model->nparams; i++) {
        const sr__param *p = &e->model->params[i];
        if (p->tied_to >= 0) continue;
        vals[v] = sr__fmt("param:%s", p->name);
        vals[v + 1] = sr__fmt("%d %zu %zu", p->unit, p->offset, p->numel);
        meta[m++] = (sr_st_kv){vals[v], vals[v + 1]}, v += 2;
    }
    sr_st_writer *w = sr__st_create(path, t, (size_t)nu * K_COUNT, meta, m, err, sizeof err);
    if (!w) {
        sr__log(SR_LOG_ERROR, "checkpoint: %s", err);
        rc = -1;
    }
    size_t maxs = 0;
    for (int u = 0; u < nu; u++) maxs = e->units.u[u].shard > maxs ? e->units.u[u].shard : maxs;
    float *host = malloc(maxs * sizeof *host + 1);
    for (int u = 0; u < nu && !rc; u++) {
        size_t n = e->units.u[u].shard;
        for (int k = 0; k < K_COUNT && !rc; k++) {
            e->hdev->to_host(host, kind_shard(&e->slot[u], k), n * sizeof *host);
            rc = st_put(w, (size_t)(u * K_COUNT + k), 0, host, n * sizeof *host, path);
        }
        debug_delay();
    }
    if (w) rc = st_close(w, rc == 0);
    free(host);
    for (int i = 0; i < nu * K_COUNT; i++) free(names[i]);
    for (size_t i = 0; i < nmeta * 2; i++) free(vals[i]);
    free(names), free(vals), free(meta), free(t), free(path);
    return rc;
}

/* Rank 0 writes model.safetensors and optimizer.safetensors; its shard group gathers each unit. */
static int save_full(sr__engine *e, const char *tmp) {
    if (e->rep_rank != 0) return 0;
    int me = e->rank == 0, rc = 0, np = e->model->nparams;
    char *mpath = NULL, *opath = NULL, err[256];
    sr_st_writer *mw = NULL, *ow = NULL;
    int *idx = calloc((size_t)np, sizeof *idx); /* param -> tensor index in both files */
    if (me) {
        sr_st_tensor *mt = calloc((size_t)np, sizeof *mt), *ot = calloc((size_t)np * 2, sizeof *ot);
        char **onames = calloc((size_t)np * 2, sizeof *onames);
        int n = 0;
        for (int i = 0; i < np; i++) {
            const sr__param *p = &e->model->params[i];
            if (p->tied_to >= 0) continue; /* tied names are saved once, under the owner (as HF does) */
            idx[i] = n;
            mt[n] = (sr_st_tensor){.name = p->name, .dtype = SR_FLOAT32, .ndim = p->ndim};
            memcpy(mt[n].shape, p->shape, sizeof p->shape);
            for (int k = 0; k < 2; k++) {
                onames[2 * n + k] = sr__fmt("%s.%s", p->name, KIND[1 + k]);
                ot[2 * n + k] = mt[n];
                ot[2 * n + k].name = onames[2 * n + k];
            }
            n++;
        }
        sr_st_kv meta[] = {{"format", "pt"}};
        mpath = sr__fmt("%s/model.safetensors", tmp);
        opath = sr__fmt("%s/optimizer.safetensors", tmp);
        mw = sr__st_create(mpath, mt, (size_t)n, meta, 1, err, sizeof err);
        if (mw) ow = sr__st_create(opath, ot, (size_t)n * 2, NULL, 0, err, sizeof err);
        if (!mw || !ow) sr__log(SR_LOG_ERROR, "checkpoint: %s", err), rc = -1;
        for (int i = 0; i < 2 * n; i++) free(onames[i]);
        free(onames), free(mt), free(ot);
    }
    /* rank 0's failure to create the files must stop the whole shard group before any gather */
    rc = sr__engine_agree(e, e->shard_pg, rc != 0);
    size_t maxp = 0;
    for (int u = 0; u < e->units.n; u++) maxp = e->units.u[u].padded > maxp ? e->units.u[u].padded : maxp;
    float *full = rc ? NULL : e->dev->alloc(maxp * sizeof(float)), *host = me ? malloc(maxp * sizeof(float)) : NULL;
    for (int u = 0; u < e->units.n && !rc; u++) { /* one unit at a time: nobody holds the whole model */
        const sr__unit *un = &e->units.u[u];
        for (int k = 0; k < K_COUNT && !rc; k++) {
            float *src = kind_shard(&e->slot[u], k);
            if (e->offload) { /* collectives and the copy below read device memory */
                sr__engine_shard_to_dev(e, e->xfer, src, un->shard);
                src = e->xfer;
            }
            if (e->shard_pg) {
                if (sr_pg_all_gather(e->shard_pg, src, full, un->shard, SR_FLOAT32, NULL) != 0) {
                    sr__log(SR_LOG_ERROR, "checkpoint: %s", sr_pg_error(e->shard_pg));
                    rc = -1;
                    break;
                }
                src = full;
            }
            if (!me) continue;
            e->dev->to_host(host, src, un->padded * sizeof(float));
            for (int j = 0; j < un->nparams && !rc; j++) {
                const sr__param *p = &e->model->params[un->params[j]];
                const float *data = host + p->offset;
                size_t bytes = p->numel * sizeof(float);
                if (k == K_PARAM) rc = st_put(mw, (size_t)idx[un->params[j]], 0, data, bytes, mpath);
                else rc = st_put(ow, (size_t)(2 * idx[un->params[j]] + k - 1), 0, data, bytes, opath);
            }
        }
        debug_delay();
    }
    if (me) {
        int ok = rc == 0;
        ok = st_close(mw, ok) == 0 && ok;
        ok = st_close(ow, ok) == 0 && ok;
        rc = ok ? 0 : -1;
    }
    e->dev->free(full);
    free(host), free(idx), free(mpath), free(opath);
    return rc;
}

int sr__ckpt_save(sr__engine *e, const char *outdir, const sr__train_state *ts) {
    char *final = sr__fmt("%s/checkpoint-%lld", outdir, ts->global_step), *tmp = sr__fmt("%s.tmp", final),
         *old = sr__fmt("%s.old", final);
    int failed = 0;
    if (e->rank == 0) {
        failed = sr__make_output_dir(outdir) != 0;
        remove_tree(tmp); /* a save that was killed earlier */
        if (!failed && mkdir(tmp, 0777) != 0) {
            sr__log(SR_LOG_ERROR, "checkpoint: cannot create %s: %s", tmp, strerror(errno));
            failed = 1;
        }
    }
    int rc = sr__engine_agree(e, e->world, failed);
    if (rc == 0) {
        failed = (e->cfg.state_dict == SR_SD_FULL ? save_full(e, tmp) : save_sharded(e, tmp)) != 0;
        rc = sr__engine_agree(e, e->world, failed);
    }
    if (rc == 0 && e->rank == 0) {
        failed = write_state(e, tmp, ts) != 0;
        fsync_dir(tmp);
        if (!failed) { /* replace an existing checkpoint-N only once the new one is complete */
            remove_tree(old);
            int had = rename(final, old) == 0;
            if (rename(tmp, final) != 0) {
                sr__log(SR_LOG_ERROR, "checkpoint: cannot rename %s to %s: %s", tmp, final, strerror(errno));
                failed = 1;
                if (had) rename(old, final);
            } else if (had) {
                remove_tree(old);
            }
            fsync_dir(outdir);
        }
    }
    if (rc == 0) rc = sr__engine_agree(e, e->world, failed);
    if (rc != 0 && e->rank == 0) remove_tree(tmp);
    free(final), free(tmp), free(old);
    return rc;
}

/* ---- loading ------------------------------------------------------------------------------------------- */

typedef struct source {
    const char *dir;
    int full;
    sr_st_file *model, *optim; /* FULL */
    sr_st_file **shards;       /* SHARDED */
    int nshards;
} source;

static void source_close(source *s) {
    if (s->model) sr__st_close(s->model);
    if (s->optim) sr__st_close(s->optim);
    for (int i = 0; i < s->nshards; i++)
        if (s->shards[i]) sr__st_close(s->shards[i]);
    free(s->shards);
}

static sr_st_file *open_st(const char *dir, const char *name) {
    char *p = sr__fmt("%s/%s", dir, name), err[512];
    sr_st_file *f = sr__st_open(p, err, sizeof err);
    if (!f) sr__log(SR_LOG_ERROR, "resume_from_checkpoint: %s", err);
    free(p);
    return f;
}

static int source_open(source *s, const char *dir) {
    memset(s, 0, sizeof *s);
    s->dir = dir;
    char *p = sr__fmt("%s/model.safetensors", dir);
    s->full = access(p, F_OK) == 0;
    free(p);
    if (s->full) {
        s->model = open_st(dir, "model.safetensors");
        s->optim = s->model ? open_st(dir, "optimizer.safetensors") : NULL;
        return s->model && s->optim ? 0 : -1;
    }
    /* the group size is in the name of rank 0's file: shard-00000-of-NNNNN.safetensors */
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *de;
    while (d && (de = readdir(d)))
        if (sscanf(de->d_name, "shard-00000-of-%5d.safetensors", &n) == 1) break;
    if (d) closedir(d);
    if (n <= 0) {
        sr__log(SR_LOG_ERROR, "resume_from_checkpoint: %s has neither model.safetensors (FULL_STATE_DICT) nor "
                        "shard-00000-of-N.safetensors (SHARDED_STATE_DICT)", dir);
        return -1;
    }
    s->shards = calloc((size_t)n, sizeof *s->shards); /* zeroed: source_close skips what never opened */
    s->nshards = n;
    for (int i = 0; i < n; i++) {
        char name[64];
        snprintf(name, sizeof name, "shard-%05d-of-%05d.safetensors", i, n);
        s->shards[i] = open_st(dir, name);
        if (!s->shards[i]) return -1;
    }
    return 0;
}

/* Elements [first, first + n) of parameter p's `kind` into dst (fp32). */
static int source_read(source *s, const sr__param *p, int kind, size_t first, size_t n, float *dst) {
    if (s->full) {
        char name[1024];
        snprintf(name, sizeof name, kind == K_PARAM ? "%s" : "%s.%s", p->name, KIND[kind]);
        const void *data;
        const sr_st_tensor *t = sr__st_find(kind == K_PARAM ? s->model : s->optim, name, &data);
        if (!t) {
            sr__log(SR_LOG_ERROR, "resume_from_checkpoint: %s: no tensor \"%s\" in %s.safetensors; the "
                            "checkpoint belongs to another model", s->dir, name, kind == K_PARAM ? "model" : "optimizer");
            return -1;
        }
        if (t->nbytes / sr_dtype_size(t->dtype) != p->numel || sr__st_to_f32(t, data, first, n, dst) != 0) {
            sr__log(SR_LOG_ERROR, "resume_from_checkpoint: %s: tensor \"%s\" has %" PRIu64 " elements of %s; "
                            "the model's has %zu floating-point elements", s->dir, name,
                    t->nbytes / sr_dtype_size(t->dtype), sr__st_dtype_name(t->dtype), p->numel);
            return -1;
        }
        return 0;
    }
    char key[1100];
    snprintf(key, sizeof key, "param:%s", p->name);
    const char *where = sr__st_metadata(s->shards[0], key), *uinfo;
    int unit = -1;
    size_t off = 0, numel = 0, unumel, upadded, ushard = 0;
    if (!where || sscanf(where, "%d %zu %zu", &unit, &off, &numel) != 3 || numel != p->numel) {
        sr__log(SR_LOG_ERROR, "resume_from_checkpoint: %s: parameter \"%s\" (%zu elements) is %s in the "
                        "checkpoint; it belongs to another model", s->dir, p->name, p->numel, where ? "different" : "missing");
        return -1;
    }
    snprintf(key, sizeof key, "unit:%d", unit);
    uinfo = sr__st_metadata(s->shards[0], key);
    if (!uinfo || sscanf(uinfo, "%zu %zu %zu", &unumel, &upadded, &ushard) != 3 || ushard == 0) {
        sr__log(SR_LOG_ERROR, "resume_from_checkpoint: %s: the shard index is damaged (unit %d)", s->dir, unit);
        return -1;
    }
    char tname[64];
    snprintf(tname, sizeof tname, "u%d.%s", unit, KIND[kind]);
    size_t flat = off + first, done = 0;
    while (done < n) { /* the range may span several saved shards */
        size_t file = (flat + done) / ushard, pos = (flat + done) % ushard, take = ushard - pos;
        if (take > n - done) take = n - done;
        const void *data;
        const sr_st_tensor *t = file < (size_t)s->nshards ? sr__st_find(s->shards[file], tname, &data) : NULL;
        if (!t || t->nbytes != ushard * sizeof(float)) {
            sr__log(SR_LOG_ERROR, "resume_from_checkpoint: %s: shard %zu lacks \"%s\"", s->dir, file, tname);
            return -1;
        }
        memcpy(dst + done, (const float *)data + pos, take * sizeof(float));
        done += take;
    }
    return 0;
}

int sr__ckpt_load(sr__engine *e, const char *dir, sr__train_state *ts) {
    source src = {0};
    int failed = read_state(e, dir, ts) != 0 || source_open(&src, dir) != 0;
    for (int u = 0; u < e->units.n && !failed; u++) {
        const sr__unit *un = &e->units.u[u];
        size_t lo = (size_t)e->shard_rank * un->shard, a, b;
        float *host = malloc(un->shard * sizeof *host + 1);
        for (int k = 0; k < K_COUNT && !failed; k++) {
            memset(host, 0, un->shard * sizeof *host);
            for (int j = 0; j < un->nparams && !failed; j++) {
                const sr__param *p = &e->model->params[un->params[j]];
                if (sr__param_in_range(p, lo, un->shard, &a, &b))
                    failed = source_read(&src, p, k, a - p->offset, b - a, host + (a - lo)) != 0;
            }
            if (!failed) e->hdev->to_device(kind_shard(&e->slot[u], k), host, un->shard * sizeof *host);
        }
        free(host);
    }
    source_close(&src);
    return sr__engine_agree(e, e->world, failed);
}

/* ---- finding the latest ---------------------------------------------------------------------------------- */

char *sr__ckpt_latest(const char *outdir) {
    DIR *d = opendir(outdir);
    if (!d) return NULL;
    long long best = -1;
    struct dirent *de;
    while ((de = readdir(d))) {
        long long n;
        int end = 0;
        /* checkpoint-N exactly: checkpoint-N.tmp (a save in progress or killed) does not count */
        if (sscanf(de->d_name, "checkpoint-%lld%n", &n, &end) == 1 && de->d_name[end] == 0 && n > best) best = n;
    }
    closedir(d);
    return best >= 0 ? sr__fmt("%s/checkpoint-%lld", outdir, best) : NULL;
}
