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
#include "base/clock.h"
#include "base/hash64.h"
#include "base/log.h"
#include "base/progress.h"
#include "base/rand.h" /* sr__mix64 */
#include "base/strbuf.h"
#include "fsdp/engine_internal.h"
#include "io/json.h"
#include "io/safetensors.h"

enum { K_PARAM = 0, K_EXP_AVG, K_EXP_AVG_SQ, K_COUNT };
static const char *const KIND[K_COUNT] = {"param", "exp_avg", "exp_avg_sq"};

static float *kind_shard(sr__uslot *s, int k) { return k == K_PARAM ? s->master : k == K_EXP_AVG ? s->exp_avg : s->exp_avg_sq; }

/* ---- integrity metadata (see checkpoint.h) ------------------------------------------------------------ */

#define CKPT_VERSION "2" /* "shardrun_checkpoint": files without it come from before the integrity metadata */
#define HASH_PLACEHOLDER "0000000000000000"

typedef struct ckpt_meta {
    char id[33];     /* the checkpoint id: a digest of the saved state (make_meta), in hex */
    char digest[17]; /* the model digest */
    long long step;
    int world_size, shard_group_size;
} ckpt_meta;

static double hash_seconds; /* this process's time in sr__hash64 during one save or load (debug log) */
static long long hash_bytes;
static double copy_seconds; /* a load's time in copies that hash what they copy (sr__hash64_copy) */
static long long copy_bytes;

static uint64_t timed_hash(const void *data, size_t n) {
    double t0 = sr__now_s();
    uint64_t h = sr__hash64(data, n, 0);
    hash_seconds += sr__now_s() - t0, hash_bytes += (long long)n;
    return h;
}

/* The model's identity: every parameter's name, shape and tie, independent of declaration order,
   world size and wrap policy (a SHARDED checkpoint may resume under other ones). */
static void model_digest(const sr_model *m, char out[17]) {
    uint64_t d = 0;
    for (int i = 0; i < m->nparams; i++) {
        const sr__param *p = &m->params[i];
        char shape[160];
        char *key = sr__fmt("%s\n%s\n%s", p->name, sr__st_shape_str(shape, sizeof shape, p->ndim, p->shape),
                            p->tied_to >= 0 ? m->params[p->tied_to].name : "");
        d += sr__mix64(sr__hash64(key, strlen(key), 0x5eed));
        free(key);
    }
    sr__hash64_hex(d, out);
}

/* A growing list of metadata entries that owns its strings. */
typedef struct kvlist {
    sr_st_kv *kv;
    size_t n, cap;
} kvlist;

static void kv_add(kvlist *l, const char *key, char *value /* taken */) {
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 32;
        l->kv = realloc(l->kv, l->cap * sizeof *l->kv);
    }
    l->kv[l->n++] = (sr_st_kv){sr__fmt("%s", key), value};
}

static void kv_free(kvlist *l) {
    for (size_t i = 0; i < l->n; i++) free((char *)l->kv[i].key), free((char *)l->kv[i].value);
    free(l->kv);
}

static int is_hash_key(const char *k) { return !strncmp(k, "hash:", 5) || !strcmp(k, "index_hash"); }

/* The hash of every metadata entry but the tensors' hashes and itself, in the header's order: the
   index (unit and parameter layout, ids) cannot change unnoticed. */
static uint64_t index_hash(const sr_st_kv *kv, size_t n) {
    uint64_t h = 0x1dec5;
    for (size_t i = 0; i < n; i++) {
        if (is_hash_key(kv[i].key)) continue;
        h = sr__hash64_fold(h, sr__hash64(kv[i].key, strlen(kv[i].key) + 1, 1));
        h = sr__hash64_fold(h, sr__hash64(kv[i].value, strlen(kv[i].value) + 1, 2));
    }
    return h;
}

/* What every safetensors file of a checkpoint says about itself; then the caller's own entries. */
static void add_common(kvlist *l, const ckpt_meta *m, const char *role) {
    kv_add(l, "shardrun_checkpoint", sr__fmt(CKPT_VERSION));
    kv_add(l, "file", sr__fmt("%s", role));
    kv_add(l, "checkpoint_id", sr__fmt("%s", m->id));
    kv_add(l, "global_step", sr__fmt("%lld", m->step));
    kv_add(l, "world_size", sr__fmt("%d", m->world_size));
    kv_add(l, "shard_group_size", sr__fmt("%d", m->shard_group_size));
    kv_add(l, "model_digest", sr__fmt("%s", m->digest));
}

/* After the caller's entries: index_hash, then one placeholder per tensor for its data's hash. */
static void add_hashes(kvlist *l, const sr_st_tensor *t, size_t n) {
    char hex[17];
    kv_add(l, "index_hash", sr__fmt("%s", sr__hash64_hex(index_hash(l->kv, l->n), hex)));
    for (size_t i = 0; i < n; i++) {
        char *k = sr__fmt("hash:%s", t[i].name);
        kv_add(l, k, sr__fmt(HASH_PLACEHOLDER));
        free(k);
    }
}

/* A checkpoint file being written: its tensors' hashes are taken as they are written (each
   tensor in one piece) and replace the placeholders before the file is finished. */
typedef struct out_file {
    sr_st_writer *w;
    char *path;
    size_t n;
    char **names;
    uint64_t *hash;
} out_file;

static int out_create(out_file *o, char *path /* taken */, const sr_st_tensor *t, size_t n, const kvlist *l) {
    char err[256];
    memset(o, 0, sizeof *o);
    o->path = path, o->n = n;
    o->names = calloc(n + 1, sizeof *o->names), o->hash = calloc(n + 1, sizeof *o->hash);
    for (size_t i = 0; i < n; i++) o->names[i] = sr__fmt("%s", t[i].name);
    o->w = sr__st_create(path, t, n, l->kv, l->n, err, sizeof err);
    if (!o->w) sr__progress_io_failed(errno, path), sr__log(SR_LOG_ERROR, "checkpoint: %s", err);
    return o->w ? 0 : -1;
}

static int out_put(out_file *o, size_t idx, const void *data, size_t bytes) {
    char err[256];
    o->hash[idx] = timed_hash(data, bytes);
    if (sr__st_write(o->w, idx, 0, data, bytes, err, sizeof err) == 0) return 0;
    sr__progress_io_failed(errno, o->path);
    sr__log(SR_LOG_ERROR, "checkpoint: %s: %s", o->path, err);
    return -1;
}

/* Sets the hashes and finishes a file written without error (ok), else removes it.  0, or -1
   after printing why. */
static int out_close(out_file *o, int ok) {
    char err[256] = "", hex[17];
    if (o->w && ok)
        for (size_t i = 0; i < o->n && ok; i++) {
            char *k = sr__fmt("hash:%s", o->names[i]);
            ok = sr__st_set_metadata(o->w, k, sr__hash64_hex(o->hash[i], hex), err, sizeof err) == 0;
            free(k);
        }
    if (o->w && !ok) sr__st_abort(o->w);
    else if (o->w && sr__st_finish(o->w, err, sizeof err) != 0) ok = 0, sr__progress_io_failed(errno, o->path);
    if (!ok && *err) sr__log(SR_LOG_ERROR, "checkpoint: %s", err);
    for (size_t i = 0; i < o->n; i++) free(o->names[i]);
    free(o->names), free(o->hash), free(o->path);
    memset(o, 0, sizeof *o);
    return ok ? 0 : -1;
}

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

static int write_state(sr__engine *e, const char *dir, const sr__train_state *ts, const ckpt_meta *m) {
    char *p = sr__fmt("%s/trainer_state.json", dir);
    FILE *f = fopen(p, "w");
    if (!f) {
        sr__progress_io_failed(errno, p);
        sr__log(SR_LOG_ERROR, "checkpoint: cannot write %s: %s", p, strerror(errno));
        free(p);
        return -1;
    }
    /* the trainer's TrainerState members, then shardrun's under stateful_callbacks (one line: what
       resume reads, and the job that wrote it) */
    sr_buf job = {0}, requeue = {0}, run = {0};
    sr__buf_json_str(&job, ts->job_id);
    sr__buf_json_str(&requeue, ts->requeue_key);
    sr__buf_json_str(&run, ts->run_id);
    if (ts->hf_members) fprintf(f, "{\n%s,\n  ", ts->hf_members);
    else fprintf(f, "{\"global_step\": %lld, ", ts->global_step);
    fprintf(f, "\"stateful_callbacks\": {\"shardrun\": {\"global_step\": %lld, \"adam_steps\": %lld, \"seed\": %lld, "
               "\"loss_scale\": %.17g, \"good_steps\": %d, \"checkpoint_id\": \"%s\", \"model_digest\": \"%s\", "
               "\"world_size\": %d, \"shard_group_size\": %d, \"sharding_strategy\": \"%s\", \"state_dict_type\": \"%s\", \"model_params\": %zu, "
               "\"job_id\": %s, \"requeue_key\": %s, \"run_id\": %s%s%s}}%s}\n",
            ts->global_step, e->adam_steps, ts->seed, e->loss_scale, e->good_steps, m->id, m->digest, e->world_size,
            e->shard_size, sr__strategy_name(e->cfg.strategy), sr__state_dict_name(e->cfg.state_dict), sr__model_numel(e->model), job.s ? job.s : "\"\"",
            requeue.s ? requeue.s : "\"\"", run.s ? run.s : "\"\"", ts->settings ? ", " : "",
            ts->settings ? ts->settings : "", ts->hf_members ? "\n" : "");
    sr__buf_free(&job);
    sr__buf_free(&requeue);
    sr__buf_free(&run);
    int rc = fflush(f) == 0 && fsync(fileno(f)) == 0 ? 0 : -1;
    if (fclose(f) != 0) rc = -1;
    if (rc) sr__progress_io_failed(errno, p), sr__log(SR_LOG_ERROR, "checkpoint: writing %s failed: %s", p, strerror(errno));
    free(p);
    return rc;
}

/* What resume reads back from trainer_state.json; the other members are for people. */
static const char *const STATE_KEYS[] = {"global_step", "adam_steps", "seed", "loss_scale", "good_steps"};
enum { S_STEP, S_ADAM, S_SEED, S_SCALE, S_GOOD, S_COUNT };

typedef struct state_read {
    double v[S_COUNT];
    long long iv[S_COUNT];
    int have[S_COUNT];
    char *id; /* 33 bytes */
    char *why;
    size_t len;
    int bad; /* why[] says what is wrong */
} state_read;

/* The members of one object: STATE_KEYS and checkpoint_id, and (top level only) the same inside
   stateful_callbacks.shardrun.  0 when the object closed, else -1. */
static int state_members(sr_json *j, state_read *s, int level) {
    const char *key;
    size_t klen;
    int more, k;
    while ((more = sr__json_member(j, &key, &klen)) > 0) {
        if (level < 2 && sr__json_key_is(key, klen, level == 0 ? "stateful_callbacks" : "shardrun") &&
            sr__json_peek(j) == SR_JSON_OBJECT) {
            if (sr__json_object(j) != 0 || state_members(j, s, level + 1) != 0) return -1;
            continue;
        }
        if (level == 1) { /* another callback's state */
            if (sr__json_skip(j) != 0) return -1;
            continue;
        }
        if (sr__json_key_is(key, klen, "checkpoint_id")) { /* a string: the files' checkpoint_id */
            const char *sv;
            size_t sl;
            if (sr__json_peek(j) != SR_JSON_STRING) {
                snprintf(s->why, s->len, "\"checkpoint_id\" is not a string");
                s->bad = 1;
                return -1;
            }
            if (sr__json_string(j, &sv, &sl) != 0) return -1;
            snprintf(s->id, 33, "%.*s", (int)(sl < 32 ? sl : 32), sv);
            continue;
        }
        for (k = 0; k < S_COUNT; k++)
            if (sr__json_key_is(key, klen, STATE_KEYS[k])) break;
        if (k == S_COUNT) {
            if (sr__json_skip(j) != 0) return -1;
            continue;
        }
        sr_json_num num;
        if (sr__json_peek(j) != SR_JSON_NUMBER || sr__json_number(j, &num) != 0 ||
            (k != S_SCALE && !(num.is_uint && num.uint <= (uint64_t)LLONG_MAX))) {
            snprintf(s->why, s->len, "\"%s\" is not %s", STATE_KEYS[k], k == S_SCALE ? "a number" : "a non-negative integer");
            s->bad = 1;
            return -1;
        }
        s->v[k] = num.value, s->iv[k] = (long long)num.uint, s->have[k] = 1;
    }
    return more == 0 ? 0 : -1;
}

/* The members of STATE_KEYS into v[] (the integers: non-negative, at most LLONG_MAX).  0, or -1
   with why[] saying what is wrong. */
static int parse_state(const char *text, size_t n, double v[S_COUNT], long long iv[S_COUNT], char id[33], char *why,
                       size_t len) {
    sr_json j;
    state_read s = {.id = id, .why = why, .len = len};
    const char *what;
    size_t at;
    sr__json_init(&j, text, n, NULL);
    int ok = sr__json_object(&j) == 0 && state_members(&j, &s, 0) == 0 && sr__json_end(&j) == 0;
    int rc = -1;
    if (s.bad)
        ; /* why[] says it */
    else if ((what = sr__json_error(&j, &at)))
        snprintf(why, len, "not valid JSON: %s at byte %zu", what, at);
    else if (ok)
        rc = 0;
    for (int k = 0; k < S_COUNT && rc == 0; k++)
        if (!s.have[k]) snprintf(why, len, "no \"%s\"", STATE_KEYS[k]), rc = -1;
    for (int k = 0; k < S_COUNT; k++) v[k] = s.v[k], iv[k] = s.iv[k];
    sr__json_free(&j);
    return rc;
}

static int read_state(sr__engine *e, const char *dir, sr__train_state *ts, char id[33]) {
    char *p = sr__fmt("%s/trainer_state.json", dir), why[300] = "";
    FILE *f = fopen(p, "r");
    char *text = NULL;
    size_t n = 0;
    if (f) { /* one object: the trainer's log_history makes it grow with the run (at most 256 MiB read) */
        sr_buf b = {0};
        char chunk[4096];
        size_t k;
        while ((k = fread(chunk, 1, sizeof chunk, f)) > 0 && b.n < (256u << 20)) sr__buf_add(&b, chunk, k);
        fclose(f);
        text = b.s, n = b.n;
    }
    double v[S_COUNT] = {0};
    long long iv[S_COUNT] = {0};
    if (!f || parse_state(text ? text : "", n, v, iv, id, why, sizeof why) != 0) {
        sr__log(SR_LOG_ERROR, "resume_from_checkpoint: %s is missing or incomplete%s%s%s; it is not a shardrun "
                        "checkpoint folder (or it was not finished)", p, *why ? " (" : "", why, *why ? ")" : "");
        free(text), free(p);
        return -1;
    }
    free(text);
    if (!*id) {
        sr__log(SR_LOG_ERROR, "resume_from_checkpoint: %s has no \"checkpoint_id\": the checkpoint was written by an "
                        "older shardrun without integrity metadata; this version cannot verify it and does not "
                        "load it (train again from the start or from init_weights)", p);
        free(p);
        return -1;
    }
    free(p);
    ts->global_step = iv[S_STEP], ts->seed = iv[S_SEED];
    e->adam_steps = iv[S_ADAM], e->good_steps = iv[S_GOOD] > INT_MAX ? INT_MAX : (int)iv[S_GOOD];
    if (e->dtype == SR_FLOAT16) e->loss_scale = v[S_SCALE]; /* a scale only means something under fp16 */
    return 0;
}

/* ---- saving ------------------------------------------------------------------------------------------- */

static int save_sharded(sr__engine *e, const char *tmp, const ckpt_meta *cm) {
    if (e->rep_rank != 0) return 0; /* one replica writes */
    int nu = e->units.n, rc = 0;
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
    kvlist l = {0};
    kv_add(&l, "format", sr__fmt("shardrun-sharded-2"));
    add_common(&l, cm, "shard");
    kv_add(&l, "shard_rank", sr__fmt("%d", e->shard_rank));
    for (int u = 0; u < nu; u++) {
        char *k = sr__fmt("unit:%d", u);
        kv_add(&l, k, sr__fmt("%zu %zu %zu", e->units.u[u].numel, e->units.u[u].padded, e->units.u[u].shard));
        free(k);
    }
    for (int i = 0; i < e->model->nparams; i++) {
        const sr__param *p = &e->model->params[i];
        char shape[160], *k;
        if (p->tied_to >= 0) continue;
        k = sr__fmt("param:%s", p->name);
        kv_add(&l, k, sr__fmt("%d %zu %zu %s", p->unit, p->offset, p->numel,
                              sr__st_shape_str(shape, sizeof shape, p->ndim, p->shape)));
        free(k);
    }
    add_hashes(&l, t, (size_t)nu * K_COUNT);
    out_file o;
    rc = out_create(&o, sr__fmt("%s/shard-%05d-of-%05d.safetensors", tmp, e->shard_rank, e->shard_size), t,
                    (size_t)nu * K_COUNT, &l);
    size_t maxs = 0;
    for (int u = 0; u < nu; u++) maxs = e->units.u[u].shard > maxs ? e->units.u[u].shard : maxs;
    float *host = malloc(maxs * sizeof *host + 1);
    for (int u = 0; u < nu && !rc; u++) {
        size_t n = e->units.u[u].shard;
        for (int k = 0; k < K_COUNT && !rc; k++) {
            e->hdev->to_host(host, kind_shard(&e->slot[u], k), n * sizeof *host);
            rc = out_put(&o, (size_t)(u * K_COUNT + k), host, n * sizeof *host);
        }
        debug_delay();
    }
    rc = out_close(&o, rc == 0);
    free(host);
    for (int i = 0; i < nu * K_COUNT; i++) free(names[i]);
    kv_free(&l);
    free(names), free(t);
    return rc;
}

/* Rank 0 writes model.safetensors and optimizer.safetensors; its shard group gathers each unit. */
static int save_full(sr__engine *e, const char *tmp, const ckpt_meta *cm) {
    if (e->rep_rank != 0) return 0;
    int me = e->rank == 0, rc = 0, np = e->model->nparams;
    out_file mo = {0}, oo = {0};
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
        kvlist ml = {0}, ol = {0};
        kv_add(&ml, "format", sr__fmt("pt"));
        add_common(&ml, cm, "model");
        add_hashes(&ml, mt, (size_t)n);
        add_common(&ol, cm, "optimizer");
        add_hashes(&ol, ot, (size_t)n * 2);
        rc = out_create(&mo, sr__fmt("%s/model.safetensors", tmp), mt, (size_t)n, &ml);
        if (!rc) rc = out_create(&oo, sr__fmt("%s/optimizer.safetensors", tmp), ot, (size_t)n * 2, &ol);
        kv_free(&ml), kv_free(&ol);
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
                if (k == K_PARAM) rc = out_put(&mo, (size_t)idx[un->params[j]], data, bytes);
                else rc = out_put(&oo, (size_t)(2 * idx[un->params[j]] + k - 1), data, bytes);
            }
        }
        debug_delay();
    }
    if (me) {
        int ok = rc == 0;
        ok = out_close(&mo, ok) == 0 && ok;
        ok = out_close(&oo, ok) == 0 && ok;
        rc = ok ? 0 : -1;
    }
    e->dev->free(full);
    free(host), free(idx);
    return rc;
}

/* This rank's part of the checkpoint id: a hash of the state it saves (its master, exp_avg and
   exp_avg_sq shards) and the scalars a resume reads back. */
static int state_hash(sr__engine *e, const sr__train_state *ts, uint64_t *out) {
    double t0 = sr__now_s();
    sr__hash64_state h;
    sr__hash64_init(&h, 0x636b7074u /* "ckpt" */);
    long long scalars[6] = {ts->global_step, ts->seed, e->adam_steps, e->good_steps, e->world_size, e->shard_size};
    sr__hash64_update(&h, scalars, sizeof scalars);
    sr__hash64_update(&h, &e->loss_scale, sizeof e->loss_scale);
    size_t max = 0;
    for (int u = 0; u < e->units.n; u++) max = e->units.u[u].shard > max ? e->units.u[u].shard : max;
    float *host = NULL;
    if (e->hdev->kind != SR_DEVICE_CPU && !(host = malloc(max * sizeof *host))) {
        sr__log(SR_LOG_ERROR, "checkpoint: out of memory for a shard's host copy (%zu bytes)", max * sizeof *host);
        return -1;
    }
    for (int u = 0; u < e->units.n; u++)
        for (int k = 0; k < K_COUNT; k++) {
            const float *src = kind_shard(&e->slot[u], k);
            size_t bytes = e->units.u[u].shard * sizeof(float);
            if (host) {
                e->hdev->to_host(host, src, bytes);
                src = host;
            }
            sr__hash64_update(&h, src, bytes);
        }
    free(host);
    hash_seconds += sr__now_s() - t0;
    *out = sr__hash64_final(&h);
    return 0;
}

/* The checkpoint's identity: a digest of the state it holds, every rank's state_hash() combined in
   rank order, so that the same id means the same saved state.  A run resumed after a failure or a
   preemption then writes checkpoints that are byte for byte those of an uninterrupted run, while a
   file of another run or another step (other weights, other moments, another step number) still
   carries another id and is refused on resume.  Collective; 0 or -1. */
static int make_meta(sr__engine *e, const sr__train_state *ts, ckpt_meta *m) {
    uint64_t mine = 0, h0 = 0x5a17u, h1 = 0x5a18u;
    /* every rank takes part in the gather below, also one that failed: agree first */
    if (sr__engine_agree(e, e->world, state_hash(e, ts, &mine) != 0) != 0) return -1;
    if (e->world) {
        size_t n = (size_t)e->world_size;
        uint64_t *all = malloc(n * sizeof *all);
        void *send = e->dev->alloc(sizeof mine), *recv = e->dev->alloc(n * sizeof mine);
        int rc = all && send && recv ? 0 : -1;
        if (rc == 0) {
            e->dev->to_device(send, &mine, sizeof mine);
            if (sr_pg_all_gather(e->world, send, recv, 2, SR_INT32, NULL) != 0) {
                sr__log(SR_LOG_ERROR, "checkpoint: %s", sr_pg_error(e->world));
                rc = -1;
            } else {
                e->dev->to_host(all, recv, n * sizeof mine);
                for (size_t r = 0; r < n; r++) h0 = sr__hash64_fold(h0, all[r]), h1 = sr__hash64_fold(h1, ~all[r]);
            }
        } else {
            sr__log(SR_LOG_ERROR, "checkpoint: out of memory for the checkpoint id");
        }
        if (send) e->dev->free(send);
        if (recv) e->dev->free(recv);
        free(all);
        if (rc) return -1;
    } else {
        h0 = sr__hash64_fold(h0, mine), h1 = sr__hash64_fold(h1, ~mine);
    }
    snprintf(m->id, sizeof m->id, "%016llx%016llx", (unsigned long long)h0, (unsigned long long)h1);
    model_digest(e->model, m->digest);
    m->step = ts->global_step, m->world_size = e->world_size, m->shard_group_size = e->shard_size;
    return 0;
}

int sr__ckpt_save(sr__engine *e, const char *outdir, const sr__train_state *ts) {
    char *final = sr__fmt("%s/checkpoint-%lld", outdir, ts->global_step), *tmp = sr__fmt("%s.tmp", final),
         *old = sr__fmt("%s.old", final);
    double t0 = sr__now_s();
    hash_seconds = 0, hash_bytes = 0;
    int failed = 0;
    if (e->rank == 0) {
        failed = sr__make_output_dir(outdir) != 0;
        remove_tree(tmp); /* a save that was killed earlier */
        if (!failed && mkdir(tmp, 0777) != 0) {
            sr__progress_io_failed(errno, tmp);
            sr__log(SR_LOG_ERROR, "checkpoint: cannot create %s: %s", tmp, strerror(errno));
            failed = 1;
        }
    }
    int rc = sr__engine_agree(e, e->world, failed);
    ckpt_meta cm = {0};
    if (rc == 0) rc = make_meta(e, ts, &cm);
    if (rc == 0) {
        failed = (e->cfg.state_dict == SR_SD_FULL ? save_full(e, tmp, &cm) : save_sharded(e, tmp, &cm)) != 0;
        rc = sr__engine_agree(e, e->world, failed);
    }
    if (rc == 0 && e->rank == 0) {
        failed = write_state(e, tmp, ts, &cm) != 0;
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
    if (rc == 0)
        sr__log(SR_LOG_DEBUG, "checkpoint: rank %d saved %s in %.3f s, %.3f s of it hashing %lld bytes", e->rank,
                final, sr__now_s() - t0, hash_seconds, hash_bytes);
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
    struct tcheck **chk; /* per file (FULL: model, optimizer; SHARDED: shard i), per tensor; see plan_checks */
} source;

static int source_nfiles(const source *s) { return s->full ? 2 : s->nshards; }
static sr_st_file *source_file(const source *s, int i) { return s->full ? (i ? s->optim : s->model) : s->shards[i]; }

static void source_close(source *s) {
    if (s->model) sr__st_close(s->model);
    if (s->optim) sr__st_close(s->optim);
    for (int i = 0; i < s->nshards; i++)
        if (s->shards[i]) sr__st_close(s->shards[i]);
    for (int i = 0; s->chk && i < source_nfiles(s); i++) free(s->chk[i]);
    free(s->chk);
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
    /* the group size is in the files' names: shard-RRRRR-of-NNNNN.safetensors, one N per folder */
    DIR *d = opendir(dir);
    int n = 0, bad = 0;
    struct dirent *de;
    while (d && (de = readdir(d)) && !bad) {
        int r, m, end = 0;
        if (sscanf(de->d_name, "shard-%5d-of-%5d.safetensors%n", &r, &m, &end) != 2 || de->d_name[end]) continue;
        if (n && m != n) {
            sr__log(SR_LOG_ERROR, "resume_from_checkpoint: %s holds shard files of two shard groups (of %d and of %d "
                            "files, e.g. %s): one checkpoint is one group's files", dir, n, m, de->d_name);
            bad = 1;
        } else if (m <= 0 || r < 0 || r >= m) {
            sr__log(SR_LOG_ERROR, "resume_from_checkpoint: %s/%s: shard number %d is not below its group size %d",
                    dir, de->d_name, r, m);
            bad = 1;
        }
        n = m;
    }
    if (d) closedir(d);
    if (bad) return -1;
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

/* ---- verifying: every file says which checkpoint, step, position and model it belongs to ---------------- */

typedef struct vfile {
    sr_st_file *f;
    char *name;       /* for messages: the file's name in the folder */
    const char *role; /* what it must say in "file" */
    int pos;          /* its shard number (SHARDED), else -1 */
    const char *id, *digest;
    long long step, world_size, group_size, shard_rank;
} vfile;

static int meta_int(const sr_st_file *f, const char *key, long long *v) {
    const char *s = sr__st_metadata(f, key);
    char *end;
    if (!s || !*s) return -1;
    errno = 0;
    *v = strtoll(s, &end, 10);
    return *end || errno || *v < 0 ? -1 : 0;
}

/* The file's own statements, present and well-formed.  0, or -1 after printing why. */
static int read_vfile(const char *dir, vfile *v) {
    const char *ver = sr__st_metadata(v->f, "shardrun_checkpoint"), *role = sr__st_metadata(v->f, "file");
    if (!ver) {
        sr__log(SR_LOG_ERROR, "resume_from_checkpoint: %s/%s was written by an older shardrun without integrity "
                        "metadata (no \"shardrun_checkpoint\" key); this version cannot verify it and does not load it",
                dir, v->name);
        return -1;
    }
    if (strcmp(ver, CKPT_VERSION)) {
        sr__log(SR_LOG_ERROR, "resume_from_checkpoint: %s/%s has checkpoint format %s; this shardrun reads format "
                        CKPT_VERSION, dir, v->name, ver);
        return -1;
    }
    char hex[17];
    const char *ih = sr__st_metadata(v->f, "index_hash");
    size_t nm = sr__st_metadata_count(v->f);
    sr_st_kv *kv = calloc(nm + 1, sizeof *kv);
    for (size_t i = 0; i < nm; i++) kv[i] = *sr__st_metadata_at(v->f, i);
    sr__hash64_hex(index_hash(kv, nm), hex);
    free(kv);
    if (!ih || strcmp(ih, hex)) {
        sr__log(SR_LOG_ERROR, "resume_from_checkpoint: %s/%s: its metadata does not match its index_hash (%s, "
                        "computed %s): the header was changed or damaged after it was written",
                dir, v->name, ih ? ih : "missing", hex);
        return -1;
    }
    if (!role || strcmp(role, v->role)) {
        sr__log(SR_LOG_ERROR, "resume_from_checkpoint: %s/%s holds a checkpoint's %s file, not its %s file", dir,
                v->name, role ? role : "(unnamed)", v->role);
        return -1;
    }
    const char *miss = NULL;
    v->id = sr__st_metadata(v->f, "checkpoint_id"), v->digest = sr__st_metadata(v->f, "model_digest");
    v->shard_rank = -1;
    if (!v->id) miss = "checkpoint_id";
    else if (!v->digest) miss = "model_digest";
    else if (meta_int(v->f, "global_step", &v->step)) miss = "global_step";
    else if (meta_int(v->f, "world_size", &v->world_size)) miss = "world_size";
    else if (meta_int(v->f, "shard_group_size", &v->group_size)) miss = "shard_group_size";
    else if (v->pos >= 0 && meta_int(v->f, "shard_rank", &v->shard_rank)) miss = "shard_rank";
    if (miss) {
        sr__log(SR_LOG_ERROR, "resume_from_checkpoint: %s/%s: metadata \"%s\" is missing or not valid", dir, v->name,
                miss);
        return -1;
    }
    return 0;
}

/* Every file belongs to the checkpoint trainer_state.json names (or, when no file does, the files
   agree among themselves and trainer_state.json is the odd one), at its position.  0, or -1 after
   printing one line per file that differs. */
static int check_files(const char *dir, vfile *v, int n, const char *sid, long long sstep) {
    int bad = 0, agree = 0;
    for (int i = 0; i < n; i++) agree += !strcmp(v[i].id, sid) && v[i].step == sstep;
    const char *rid = sid;
    long long rstep = sstep;
    if (!agree) {
        int same = 1;
        for (int i = 1; i < n; i++) same = same && !strcmp(v[i].id, v[0].id) && v[i].step == v[0].step;
        if (same) {
            sr__log(SR_LOG_ERROR, "resume_from_checkpoint: %s/trainer_state.json belongs to another checkpoint: it "
                            "says global_step %lld, checkpoint_id %s; the safetensors files say global_step %lld, "
                            "checkpoint_id %s", dir, sstep, sid, v[0].step, v[0].id);
            return -1;
        }
        sr__log(SR_LOG_ERROR, "resume_from_checkpoint: %s mixes files of several checkpoints; trainer_state.json says "
                        "global_step %lld, checkpoint_id %s", dir, sstep, sid);
        bad = 1;
    }
    for (int i = 0; i < n; i++)
        if (strcmp(v[i].id, rid) || v[i].step != rstep) {
            sr__log(SR_LOG_ERROR, "resume_from_checkpoint: %s/%s belongs to another checkpoint: it holds global_step "
                            "%lld of checkpoint_id %s, %s holds global_step %lld of checkpoint_id %s",
                    dir, v[i].name, v[i].step, v[i].id,
                    agree ? "trainer_state.json (and the other files)" : "trainer_state.json", rstep, rid);
            bad = 1;
        }
    if (bad) return -1;
    for (int i = 0; i < n; i++) {
        /* the same checkpoint: these agree unless a file was edited by hand */
        if (v[i].world_size != v[0].world_size || v[i].group_size != v[0].group_size || strcmp(v[i].digest, v[0].digest)) {
            sr__log(SR_LOG_ERROR, "resume_from_checkpoint: %s/%s disagrees with %s about world_size, shard_group_size "
                            "or model_digest", dir, v[i].name, v[0].name);
            bad = 1;
        }
        if (v[i].pos < 0) continue;
        if (v[i].shard_rank != v[i].pos)
            sr__log(SR_LOG_ERROR, "resume_from_checkpoint: %s/%s holds shard_rank %lld, not %d: the shard files were "
                            "renamed, swapped or copied over each other", dir, v[i].name, v[i].shard_rank, v[i].pos),
                bad = 1;
        else if (v[i].group_size != n)
            sr__log(SR_LOG_ERROR, "resume_from_checkpoint: %s/%s was written by a shard group of %lld ranks, but the "
                            "folder holds %d shard files", dir, v[i].name, v[i].group_size, n),
                bad = 1;
    }
    return bad ? -1 : 0;
}

/* The checkpoint's parameters (name, shape) against the model's owners: the model digest and the
   lists agree, or one message names what differs.  0, or -1 after printing. */
static int check_model(sr__engine *e, source *s, const char *digest) {
    const sr_model *m = e->model;
    char mine[17];
    model_digest(m, mine);
    sr_buf missing = {0}, extra = {0}, shapes = {0};
    int nmiss = 0, nextra = 0, nshape = 0, nmodel = 0, nckpt = 0;
    size_t cnumel = 0;
    char have[160], want[160];
    /* the checkpoint's list: model.safetensors' tensors, or shard 0's "param:NAME" index */
    size_t count = s->full ? sr__st_count(s->model) : sr__st_metadata_count(s->shards[0]);
    for (size_t k = 0; k < count; k++) {
        const char *name, *shape = have;
        size_t numel = 0;
        if (s->full) {
            const sr_st_tensor *t = sr__st_at(s->model, k);
            name = t->name, numel = t->nbytes / sr_dtype_size(t->dtype);
            sr__st_shape_str(have, sizeof have, t->ndim, t->shape);
        } else {
            const sr_st_kv *kv = sr__st_metadata_at(s->shards[0], k);
            int u, at = 0;
            size_t off;
            if (strncmp(kv->key, "param:", 6)) continue;
            name = kv->key + 6;
            if (sscanf(kv->value, "%d %zu %zu %n", &u, &off, &numel, &at) != 3) at = (int)strlen(kv->value);
            shape = kv->value + at;
        }
        nckpt++, cnumel += numel;
        int i = 0;
        while (i < m->nparams && (m->params[i].tied_to >= 0 || strcmp(m->params[i].name, name))) i++;
        if (i == m->nparams) {
            if (nextra++ < 5) sr__buf_printf(&extra, "%s%s", extra.n ? ", " : "", name);
            continue;
        }
        const sr__param *p = &m->params[i];
        if (strcmp(shape, sr__st_shape_str(want, sizeof want, p->ndim, p->shape)) && nshape++ < 3)
            sr__buf_printf(&shapes, "%s%s %s in the checkpoint, %s in the model", shapes.n ? "; " : "", name, shape,
                           want);
    }
    for (int i = 0; i < m->nparams; i++) {
        const sr__param *p = &m->params[i];
        if (p->tied_to >= 0) continue;
        nmodel++;
        int found = 0;
        if (s->full) found = sr__st_find(s->model, p->name, NULL) != NULL;
        else {
            char *k = sr__fmt("param:%s", p->name);
            found = sr__st_metadata(s->shards[0], k) != NULL;
            free(k);
        }
        if (!found && nmiss++ < 5) sr__buf_printf(&missing, "%s%s", missing.n ? ", " : "", p->name);
    }
    int bad = nmiss || nextra || nshape || strcmp(digest, mine);
    if (bad) {
        sr_buf msg = {0};
        sr__buf_printf(&msg, "resume_from_checkpoint: %s holds another model than the one being resumed (model_digest "
                             "%s, this model's %s): %d parameters of %zu elements in the checkpoint, %d of %zu in the "
                             "model", s->dir, digest, mine, nckpt, cnumel, nmodel, sr__model_numel(m));
        if (nextra) sr__buf_printf(&msg, "; only in the checkpoint (unused): %s%s", extra.s, nextra > 5 ? ", ..." : "");
        if (nmiss) sr__buf_printf(&msg, "; missing from the checkpoint: %s%s", missing.s, nmiss > 5 ? ", ..." : "");
        if (nshape) sr__buf_printf(&msg, "; shapes differ: %s%s", shapes.s, nshape > 3 ? "; ..." : "");
        if (!nextra && !nmiss && !nshape) sr__buf_printf(&msg, "; the names and shapes agree, the tied parameters differ");
        sr__buf_printf(&msg, "; a checkpoint resumes only the model that wrote it (init_weights starts from part of "
                             "one, without its optimizer state)");
        sr__log(SR_LOG_ERROR, "%s", msg.s);
        sr__buf_free(&msg);
    }
    sr__buf_free(&missing), sr__buf_free(&extra), sr__buf_free(&shapes);
    return bad ? -1 : 0;
}

/* A tensor whose data does not match its hash: one message.  -1. */
static int hash_mismatch(const char *dir, const char *file, const char *tensor, const char *want, uint64_t got) {
    char hex[17];
    sr__log(SR_LOG_ERROR, "resume_from_checkpoint: %s/%s: the data of tensor \"%s\" does not match its hash (hash %s, "
                    "the data hashes to %s): the file was damaged or changed after it was written",
            dir, file, tensor, want, sr__hash64_hex(got, hex));
    return -1;
}

/* ---- verifying the data: each tensor hashed once, mostly by the rank that copies it ---------------------
   A warm-cache load is little more than one copy of the data out of the mapped files, so hashing
   in a pass of its own would read every byte a second time (about 30% of a load of GPT-2 124M).
   Instead each tensor of each file gets one verifying rank (of the first replica): the one that
   copies the most of it (plan_checks).  That rank hashes the bytes it copies in the copy itself
   (copy_checked: sr__hash64_copy loads each stripe once, stores it and hashes it from registers),
   and, as the hash must take the tensor's bytes in order, hashes from the mapped file whatever it
   does not copy itself (bytes other ranks copy, the units' padding) when it skips ahead and at the
   end (finish_checks).  A tensor no rank copies any of is hashed in check_data, split over the
   world.  Every byte of every tensor is so hashed by one rank before sr__ckpt_load returns; a
   mismatch is refused on every rank (sr__engine_agree) before the run takes a step. */
typedef struct tcheck {
    int owner;         /* the shard rank (first replica) that verifies this tensor, or -1: check_data */
    int mine;          /* this rank is that one */
    uint64_t done;     /* bytes [0, done) are in st */
    sr__hash64_state st;
} tcheck;

/* Adds to want[f][t * S + r] the bytes of file f's tensor t that shard rank r copies: the bytes
   [x, x + n) of that tensor hold elements [at, at + n / 4) of unit u's flat buffer. */
static void count_copy(const sr__engine *e, uint64_t *want, int u, size_t at, uint64_t n) {
    size_t sh = e->units.u[u].shard, end = at + (size_t)(n / sizeof(float));
    for (int r = 0; r < e->shard_size; r++) {
        size_t lo = (size_t)r * sh, hi = lo + sh;
        lo = lo > at ? lo : at, hi = hi < end ? hi : end;
        if (hi > lo) want[r] += (uint64_t)(hi - lo) * sizeof(float);
    }
}

/* The tensor of file `f` called `name`: its index, or -1. */
static long tensor_index(const sr_st_file *f, const char *name) {
    const sr_st_tensor *t = sr__st_find(f, name, NULL);
    return t ? (long)(t - sr__st_at(f, 0)) : -1;
}

/* Chooses every tensor's verifying rank from the layout the copy will follow (the same on every
   rank): the shard rank that copies the most of it, ties going to alternate ranks. */
static void plan_checks(sr__engine *e, source *s) {
    int nf = source_nfiles(s), S = e->shard_size > 0 ? e->shard_size : 1;
    const sr_model *m = e->model;
    uint64_t **want = calloc((size_t)nf, sizeof *want);
    s->chk = calloc((size_t)nf, sizeof *s->chk);
    for (int f = 0; f < nf; f++) {
        size_t n = sr__st_count(source_file(s, f));
        s->chk[f] = calloc(n + 1, sizeof **s->chk);
        want[f] = calloc((n + 1) * (size_t)S, sizeof **want);
    }
    for (int i = 0; i < m->nparams; i++) {
        const sr__param *p = &m->params[i];
        if (p->tied_to >= 0) continue;
        for (int k = 0; k < K_COUNT; k++) {
            if (s->full) { /* tensor NAME (model) or NAME.KIND (optimizer): the whole parameter */
                char name[1024];
                snprintf(name, sizeof name, k == K_PARAM ? "%s" : "%s.%s", p->name, KIND[k]);
                int f = k == K_PARAM ? 0 : 1;
                long t = tensor_index(source_file(s, f), name);
                if (t >= 0) count_copy(e, want[f] + t * S, p->unit, p->offset, (uint64_t)p->numel * sizeof(float));
                continue;
            }
            /* SHARDED: the parameter sits at [off, off + numel) of saved unit U, whose file f holds
               [f * ushard, (f + 1) * ushard) as tensor uU.KIND */
            char key[1100], tname[64];
            snprintf(key, sizeof key, "param:%s", p->name);
            const char *where = sr__st_metadata(s->shards[0], key), *uinfo;
            int U;
            size_t off, numel, unumel, upadded, ushard;
            if (!where || sscanf(where, "%d %zu %zu", &U, &off, &numel) != 3 || numel != p->numel) continue;
            snprintf(key, sizeof key, "unit:%d", U);
            uinfo = sr__st_metadata(s->shards[0], key);
            if (!uinfo || sscanf(uinfo, "%zu %zu %zu", &unumel, &upadded, &ushard) != 3 || ushard == 0) continue;
            snprintf(tname, sizeof tname, "u%d.%s", U, KIND[k]);
            for (size_t x = off; x < off + numel;) {
                size_t f = x / ushard, take = (f + 1) * ushard - x;
                if (take > off + numel - x) take = off + numel - x;
                long t = f < (size_t)s->nshards ? tensor_index(s->shards[f], tname) : -1;
                if (t >= 0) count_copy(e, want[f] + t * S, p->unit, p->offset + (x - off), (uint64_t)take * sizeof(float));
                x += take;
            }
        }
    }
    int turn = 0;
    for (int f = 0; f < nf; f++)
        for (size_t t = 0; t < sr__st_count(source_file(s, f)); t++) {
            tcheck *c = &s->chk[f][t];
            uint64_t *w = want[f] + t * S, best = 0;
            c->owner = -1;
            for (int j = 0; j < S; j++) {
                int r = (turn + j) % S;
                if (w[r] > best) best = w[r], c->owner = r;
            }
            turn++;
            c->mine = c->owner >= 0 && c->owner == e->shard_rank && e->rep_rank == 0;
            if (c->mine) sr__hash64_init(&c->st, 0);
        }
    for (int f = 0; f < nf; f++) free(want[f]);
    free(want);
}

/* Copies bytes [off, off + n) of tensor t of file f (its data at `data`) to dst; hashes them in the
   same pass when this rank verifies t and has hashed it up to off (bytes it skips: from the file). */
static void copy_checked(source *s, int f, const sr_st_tensor *t, const void *data, uint64_t off, void *dst,
                         size_t n) {
    tcheck *c = s->chk ? &s->chk[f][t - sr__st_at(source_file(s, f), 0)] : NULL;
    const unsigned char *b = data;
    if (!c || !c->mine || off < c->done) {
        memcpy(dst, b + off, n);
        return;
    }
    double t0 = sr__now_s();
    if (off > c->done) sr__hash64_update(&c->st, b + c->done, (size_t)(off - c->done));
    double t1 = sr__now_s();
    sr__hash64_copy(&c->st, dst, b + off, n);
    hash_seconds += t1 - t0, hash_bytes += (long long)(off - c->done);
    copy_seconds += sr__now_s() - t1, copy_bytes += (long long)n;
    c->done = off + n;
}

static void file_name(const source *s, int f, char *buf, size_t len) {
    if (s->full) snprintf(buf, len, "%s.safetensors", f ? "optimizer" : "model");
    else snprintf(buf, len, "shard-%05d-of-%05d.safetensors", f, s->nshards);
}

/* After the copy: hashes what this rank verifies but did not copy, and compares.  0, or -1 after
   printing what differs. */
static int finish_checks(source *s) {
    int bad = 0;
    for (int f = 0; s->chk && f < source_nfiles(s) && !bad; f++) {
        const sr_st_file *sf = source_file(s, f);
        for (size_t i = 0; i < sr__st_count(sf) && !bad; i++) {
            tcheck *c = &s->chk[f][i];
            if (!c->mine) continue;
            const void *data;
            const sr_st_tensor *t = sr__st_at(sf, i);
            sr__st_find(sf, t->name, &data);
            double t0 = sr__now_s();
            sr__hash64_update(&c->st, (const unsigned char *)data + c->done, (size_t)(t->nbytes - c->done));
            uint64_t got = sr__hash64_final(&c->st);
            hash_seconds += sr__now_s() - t0, hash_bytes += (long long)(t->nbytes - c->done);
            char *key = sr__fmt("hash:%s", t->name), hex[17], fname[64];
            const char *want = sr__st_metadata(sf, key);
            free(key);
            if (want && !strcmp(sr__hash64_hex(got, hex), want)) continue;
            file_name(s, f, fname, sizeof fname);
            bad = hash_mismatch(s->dir, fname, t->name, want ? want : "missing", got) != 0;
        }
    }
    return bad ? -1 : 0;
}

/* Every tensor has a "hash:NAME"; the data of those no rank copies (plan_checks) is hashed here,
   the files' bytes split evenly over the world in file order.  0, or -1 after printing what
   differs. */
static int check_data(sr__engine *e, source *s, vfile *v, int n) {
    const char *dir = s->dir;
    uint64_t total = 0, at = 0;
    for (int i = 0; i < n; i++)
        for (size_t k = 0; k < sr__st_count(v[i].f); k++)
            if (s->chk[i][k].owner < 0) total += sr__st_at(v[i].f, k)->nbytes;
    int bad = 0, W = e->world_size > 0 ? e->world_size : 1;
    for (int i = 0; i < n && !bad; i++)
        for (size_t k = 0; k < sr__st_count(v[i].f) && !bad; k++) {
            const sr_st_tensor *t = sr__st_at(v[i].f, k);
            const void *data;
            int owner = total ? (int)((double)at / (double)total * W) : 0;
            if (owner >= W) owner = W - 1;
            char *key = sr__fmt("hash:%s", t->name), hex[17];
            const char *want = sr__st_metadata(v[i].f, key);
            free(key);
            if (!want) {
                sr__log(SR_LOG_ERROR, "resume_from_checkpoint: %s/%s: tensor \"%s\" has no \"hash:\" entry in the "
                                "metadata", dir, v[i].name, t->name);
                bad = 1;
                break;
            }
            if (s->chk[i][k].owner >= 0) continue; /* verified by the rank copying it */
            at += t->nbytes;
            if (owner != e->rank) continue;
            sr__st_find(v[i].f, t->name, &data);
            uint64_t got = timed_hash(data, (size_t)t->nbytes);
            if (strcmp(sr__hash64_hex(got, hex), want)) bad = hash_mismatch(dir, v[i].name, t->name, want, got) != 0;
        }
    return bad ? -1 : 0;
}

static int verify(sr__engine *e, source *s, const char *sid, long long sstep) {
    int n = s->full ? 2 : s->nshards, bad = 0;
    vfile *v = calloc((size_t)n, sizeof *v);
    for (int i = 0; i < n; i++) {
        if (s->full) {
            v[i].f = i ? s->optim : s->model, v[i].role = i ? "optimizer" : "model", v[i].pos = -1;
            v[i].name = sr__fmt("%s.safetensors", v[i].role);
        } else {
            v[i].f = s->shards[i], v[i].role = "shard", v[i].pos = i;
            v[i].name = sr__fmt("shard-%05d-of-%05d.safetensors", i, n);
        }
        bad |= read_vfile(s->dir, &v[i]) != 0;
    }
    if (!bad) bad = check_files(s->dir, v, n, sid, sstep) != 0;
    if (!bad) bad = check_model(e, s, v[0].digest) != 0;
    if (!bad) plan_checks(e, s);
    if (!bad) bad = check_data(e, s, v, n) != 0;
    for (int i = 0; i < n; i++) free(v[i].name);
    free(v);
    return bad ? -1 : 0;
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
        int bad = t->nbytes / sr_dtype_size(t->dtype) != p->numel;
        if (!bad && t->dtype == SR_FLOAT32) /* a checkpoint's own fp32: copied and verified in one pass */
            copy_checked(s, kind == K_PARAM ? 0 : 1, t, data, first * sizeof(float), dst, n * sizeof(float));
        else if (!bad) bad = sr__st_to_f32(t, data, first, n, dst) != 0;
        if (bad) {
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
        copy_checked(s, (int)file, t, data, pos * sizeof(float), dst + done, take * sizeof(float));
        done += take;
    }
    return 0;
}

int sr__ckpt_load(sr__engine *e, const char *dir, sr__train_state *ts) {
    source src = {0};
    char sid[33] = "";
    double t0 = sr__now_s();
    hash_seconds = 0, hash_bytes = 0, copy_seconds = 0, copy_bytes = 0;
    /* every file's metadata, position and model are verified before a value is copied; the data
       hashes as it is copied (plan_checks), all before any rank returns */
    int failed = read_state(e, dir, ts, sid) != 0 || source_open(&src, dir) != 0;
    if (!failed) failed = verify(e, &src, sid, ts->global_step) != 0;
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
    if (!failed) failed = finish_checks(&src) != 0;
    source_close(&src);
    int rc = sr__engine_agree(e, e->world, failed);
    if (rc == 0)
        sr__log(SR_LOG_DEBUG, "checkpoint: rank %d loaded %s in %.3f s, %.3f s of it hashing %lld bytes on their own "
                "and %.3f s copying and hashing %lld bytes in one pass", e->rank, dir, sr__now_s() - t0, hash_seconds,
                hash_bytes, copy_seconds, copy_bytes);
    return rc;
}
