/* A checkpoint's trainer_state.json: writing it, reading it back (see ckpt_state.h). */
#define _GNU_SOURCE
#include "fsdp/ckpt_state.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/progress.h"
#include "base/strbuf.h"
#include "fsdp/ckpt_frozen.h"
#include "fsdp/engine_internal.h"
#include "io/json.h"

char *sr__ckpt_state_text(const char *dir, size_t *n, char *why, size_t len) {
    char *path = sr__fmt("%s/trainer_state.json", dir);
    if (!path) return snprintf(why, len, "%s/trainer_state.json: out of memory for its name", dir), NULL;
    struct stat st;
    FILE *f = fopen(path, "r");
    char *text = NULL;
    if (!f || fstat(fileno(f), &st) != 0) {
        snprintf(why, len, "%s: %s", path, strerror(errno));
    } else if (!S_ISREG(st.st_mode) || st.st_size > (off_t)SR__CKPT_STATE_MAX_BYTES) {
        snprintf(why, len, "%s: %s", path, S_ISREG(st.st_mode) ? "larger than 256 MiB" : "not a regular file");
    } else {
        sr__buf b = {0};
        char chunk[65536];
        size_t k;
        while ((k = fread(chunk, 1, sizeof chunk, f)) > 0 && b.n <= SR__CKPT_STATE_MAX_BYTES) sr__buf_add(&b, chunk, k);
        int bad = ferror(f);
        if (bad || b.n > SR__CKPT_STATE_MAX_BYTES) {
            snprintf(why, len, "%s: %s", path, bad ? "read error" : "larger than 256 MiB");
            sr__buf_free(&b);
        } else {
            *n = b.n;
            text = b.s ? b.s : sr__strdup("");
        }
    }
    if (f) fclose(f);
    free(path);
    return text;
}

int sr__ckpt_state_write(const sr__engine *e, const char *dir, const sr__train_state *ts, const sr__ckpt_meta *m) {
    char *p = sr__fmt("%s/trainer_state.json", dir);
    if (!p) {
        sr__log(SR_LOG_ERROR, "checkpoint: out of memory for the name of %s/trainer_state.json", dir);
        return -1;
    }
    FILE *f = fopen(p, "w");
    if (!f) {
        sr__progress_io_failed(errno, p);
        sr__log(SR_LOG_ERROR, "checkpoint: cannot write %s: %s", p, strerror(errno));
        free(p);
        return -1;
    }
    /* the trainer's TrainerState members, then shardrun's under stateful_callbacks (one line: what
       resume reads, and the job that wrote it) */
    sr__buf job = {0}, requeue = {0}, run = {0};
    sr__buf_json_str(&job, ts->job_id);
    sr__buf_json_str(&requeue, ts->requeue_key);
    sr__buf_json_str(&run, ts->run_id);
    if (ts->hf_members) fprintf(f, "{\n%s,\n  ", ts->hf_members);
    else fprintf(f, "{\"global_step\": %lld, ", ts->global_step);
    fprintf(f,
            "\"stateful_callbacks\": {\"shardrun\": {\"global_step\": %lld, \"adam_steps\": %lld, \"seed\": %lld, "
            "\"loss_scale\": %.17g, \"good_steps\": %d, \"checkpoint_id\": \"%s\", \"model_digest\": \"%s\", %s%s%s"
            "\"world_size\": %d, \"shard_group_size\": %d, \"sharding_strategy\": \"%s\", \"state_dict_type\": \"%s\", "
            "\"model_params\": %zu, "
            "\"job_id\": %s, \"requeue_key\": %s, \"run_id\": %s%s%s}}%s}\n",
            ts->global_step, e->adam_steps, ts->seed, e->loss_scale, e->good_steps, m->id, m->digest,
            m->frozen[0] ? "\"" SR__CKPT_FROZEN_KEY "\": \"" : "", m->frozen, m->frozen[0] ? "\", " : "", e->world_size,
            e->shard_size, sr__strategy_name(e->cfg.strategy), sr__state_dict_name(e->cfg.state_dict),
            sr__model_numel(e->model), job.s ? job.s : "\"\"", requeue.s ? requeue.s : "\"\"", run.s ? run.s : "\"\"",
            ts->settings ? ", " : "", ts->settings ? ts->settings : "", ts->hf_members ? "\n" : "");
    sr__buf_free(&job);
    sr__buf_free(&requeue);
    sr__buf_free(&run);
    int rc = fflush(f) == 0 && fsync(fileno(f)) == 0 ? 0 : -1;
    if (fclose(f) != 0) rc = -1;
    if (rc)
        sr__progress_io_failed(errno, p),
            sr__log(SR_LOG_ERROR, "checkpoint: writing %s failed: %s", p, strerror(errno));
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
static int state_members(sr__json *j, state_read *s, int level) {
    const char *key;
    size_t klen;
    int more, k;
    while ((more = sr__json_member(j, &key, &klen)) > 0) {
        if (level < 2 && sr__json_key_is(key, klen, level == 0 ? "stateful_callbacks" : "shardrun") &&
            sr__json_peek(j) == SR__JSON_OBJECT) {
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
            if (sr__json_peek(j) != SR__JSON_STRING) {
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
        sr__json_num num;
        if (sr__json_peek(j) != SR__JSON_NUMBER || sr__json_number(j, &num) != 0 ||
            (k != S_SCALE && !(num.is_uint && num.uint <= (uint64_t)LLONG_MAX))) {
            snprintf(s->why, s->len, "\"%s\" is not %s", STATE_KEYS[k],
                     k == S_SCALE ? "a number" : "a non-negative integer");
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
    sr__json j;
    state_read s = {.id = id, .why = why, .len = len};
    const char *what;
    size_t at;
    sr__json_init(&j, text, n, NULL);
    int ok = sr__json_object(&j) == 0 && state_members(&j, &s, 0) == 0 && sr__json_end(&j) == 0;
    int rc = -1;
    if (s.bad)
        ; /* why[] says it */
    else if ((what = sr__json_error(&j, &at))) snprintf(why, len, "not valid JSON: %s at byte %zu", what, at);
    else if (ok) rc = 0;
    for (int k = 0; k < S_COUNT && rc == 0; k++)
        if (!s.have[k]) snprintf(why, len, "no \"%s\"", STATE_KEYS[k]), rc = -1;
    for (int k = 0; k < S_COUNT; k++) v[k] = s.v[k], iv[k] = s.iv[k];
    sr__json_free(&j);
    return rc;
}

int sr__ckpt_state_read(sr__engine *e, const char *dir, sr__train_state *ts, char id[33]) {
    char *p = sr__fmt("%s/trainer_state.json", dir), why[600] = "";
    if (!p) {
        sr__log(SR_LOG_ERROR, "resume_from_checkpoint: out of memory for the name of %s/trainer_state.json", dir);
        return -1;
    }
    size_t n = 0;
    char *text = sr__ckpt_state_text(dir, &n, why, sizeof why);
    double v[S_COUNT] = {0};
    long long iv[S_COUNT] = {0};
    if (!text || parse_state(text, n, v, iv, id, why, sizeof why) != 0) {
        const char *w = why; /* without the path the message names anyway */
        if (!strncmp(w, p, strlen(p)) && w[strlen(p)] == ':') w += strlen(p) + 2;
        sr__log(SR_LOG_ERROR,
                "resume_from_checkpoint: %s is missing or incomplete%s%s%s; it is not a shardrun "
                "checkpoint folder (or it was not finished)",
                p, *w ? " (" : "", w, *w ? ")" : "");
        free(text), free(p);
        return -1;
    }
    free(text);
    if (!*id) {
        sr__log(SR_LOG_ERROR,
                "resume_from_checkpoint: %s has no \"checkpoint_id\": the checkpoint was written by an "
                "older shardrun without integrity metadata; this version cannot verify it and does not "
                "load it (train again from the start or from init_weights)",
                p);
        free(p);
        return -1;
    }
    free(p);
    ts->global_step = iv[S_STEP], ts->seed = iv[S_SEED];
    e->adam_steps = iv[S_ADAM], e->good_steps = iv[S_GOOD] > INT_MAX ? INT_MAX : (int)iv[S_GOOD];
    if (e->dtype == SR_FLOAT16) e->loss_scale = v[S_SCALE]; /* a scale only means something under fp16 */
    return 0;
}
