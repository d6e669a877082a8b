/* The checkpoint-N folders of an output_dir (see ckpt_dir.h). */
#define _GNU_SOURCE
#include "fsdp/ckpt_dir.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/strbuf.h"
#include "fsdp/ckpt_state.h"
#include "io/json.h"

long long sr__ckpt_name_step(const char *name) {
    if (strncmp(name, "checkpoint-", 11)) return -1;
    const char *d = name + 11;
    size_t n = strspn(d, "0123456789");
    if (n == 0 || d[n]) return -1;
    if ((d[0] == '0' && n > 1) || n > SR__CKPT_MAX_NAME_DIGITS) return -2;
    return strtoll(d, NULL, 10);
}

static int by_step(const void *a, const void *b) {
    long long x = ((const sr__ckpt_entry *)a)->step, y = ((const sr__ckpt_entry *)b)->step;
    return (x > y) - (x < y);
}

void sr__ckpt_list_free(sr__ckpt_entry *l, size_t n) {
    for (size_t i = 0; i < n; i++) free(l[i].name);
    free(l);
}

int sr__ckpt_list(const char *dir, sr__ckpt_entry **out, size_t *n, char *why, size_t len) {
    *out = NULL, *n = 0;
    DIR *d = opendir(dir);
    if (!d) {
        if (errno == ENOENT) return 0;
        snprintf(why, len, "cannot list %s: %s", dir, strerror(errno));
        return -1;
    }
    sr__ckpt_entry *l = NULL;
    size_t cap = 0, k = 0;
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        long long step = sr__ckpt_name_step(de->d_name);
        if (step == -1) continue;
        if (step == -2) {
            snprintf(why, len,
                     "%s/%s is not a checkpoint name shardrun writes (checkpoint-N: the step in decimal "
                     "without leading zeros, at most %d digits), so its step is unknown; rename it to the step "
                     "its trainer_state.json holds, or move it out of %s",
                     dir, de->d_name, SR__CKPT_MAX_NAME_DIGITS, dir);
            rc = -1;
            break;
        }
        if (k == cap) {
            cap = cap ? 2 * cap : 16;
            sr__ckpt_entry *g = sr__realloc(l, cap * sizeof *g);
            if (!g) {
                snprintf(why, len, "out of memory listing %s", dir);
                rc = -1;
                break;
            }
            l = g;
        }
        if (!(l[k].name = sr__strdup(de->d_name))) {
            snprintf(why, len, "out of memory listing %s", dir);
            rc = -1;
            break;
        }
        l[k++].step = step;
    }
    closedir(d);
    if (rc) {
        sr__ckpt_list_free(l, k);
        return -1;
    }
    if (k) qsort(l, k, sizeof *l, by_step);
    *out = l, *n = k;
    return 0;
}

/* ---- identity ------------------------------------------------------------------------------------ */

static void copy_str(char *dst, size_t cap, const char *s, size_t n) {
    snprintf(dst, cap, "%.*s", (int)(n < cap ? n : cap - 1), s);
}

/* task_settings: {"key": "value", ...} */
static int read_settings(sr__json *j, sr__ckpt_ident *id) {
    const char *key, *v;
    size_t klen, vlen;
    int more;
    if (sr__json_object(j) != 0) return -1;
    id->has_settings = 1;
    while ((more = sr__json_member(j, &key, &klen)) > 0) {
        if (sr__json_peek(j) != SR__JSON_STRING) return sr__json_fail(j, "a [task] setting that is not a string");
        if (sr__json_string(j, &v, &vlen) != 0) return -1;
        sr__ckpt_kv *g = sr__realloc(id->settings, (id->nsettings + 1) * sizeof *g);
        if (!g) return sr__json_fail(j, "out of memory");
        id->settings = g;
        g[id->nsettings].key = sr__strndup(key, klen);
        g[id->nsettings].value = sr__strndup(v, vlen);
        if (!g[id->nsettings].key || !g[id->nsettings].value) {
            free(g[id->nsettings].key), free(g[id->nsettings].value);
            return sr__json_fail(j, "out of memory");
        }
        id->nsettings++;
    }
    return more;
}

/* One member of shardrun's state, its value next in j: 1 when read, 0 when not one of ours (the
   caller skips it), -1 on a JSON error. */
static int read_member(sr__json *j, sr__ckpt_ident *id, const char *key, size_t klen) {
    const char *sv;
    size_t sl;
    struct {
        const char *name;
        char *dst;
        size_t cap;
    } strs[] = {{"run_id", id->run_id, sizeof id->run_id},
                {"job_id", id->job_id, sizeof id->job_id},
                {"requeue_key", id->requeue_key, sizeof id->requeue_key},
                {"mixed_precision", id->mixed_precision, sizeof id->mixed_precision},
                {"sharding_strategy", id->sharding_strategy, sizeof id->sharding_strategy},
                {"data_identity", id->data_identity, sizeof id->data_identity}};
    for (size_t s = 0; s < sizeof strs / sizeof *strs; s++)
        if (sr__json_key_is(key, klen, strs[s].name) && sr__json_peek(j) == SR__JSON_STRING) {
            if (sr__json_string(j, &sv, &sl) != 0) return -1;
            copy_str(strs[s].dst, strs[s].cap, sv, sl);
            return 1;
        }
    sr__json_num num;
    if ((sr__json_key_is(key, klen, "global_step") || sr__json_key_is(key, klen, "world_size")) &&
        sr__json_peek(j) == SR__JSON_NUMBER) {
        if (sr__json_number(j, &num) != 0) return -1;
        if (!num.is_uint || num.uint > (uint64_t)LLONG_MAX)
            return sr__json_fail(j, "a step or size that is not a non-negative integer");
        if (sr__json_key_is(key, klen, "global_step")) id->step = (long long)num.uint;
        else id->world_size = num.uint > 1u << 30 ? 0 : (int)num.uint;
        return 1;
    }
    if (sr__json_key_is(key, klen, "task_settings") && sr__json_peek(j) == SR__JSON_OBJECT)
        return read_settings(j, id) == 0 ? 1 : -1;
    return 0;
}

/* An object of shardrun's members (stateful_callbacks.shardrun, or the top level of a checkpoint
   of an older shardrun, which kept them there), every other member skipped; under
   stateful_callbacks, the shardrun member is entered.  0 when the object closed, else -1. */
static int read_object(sr__json *j, sr__ckpt_ident *id, int level) {
    const char *key;
    size_t klen;
    int more;
    if (sr__json_object(j) != 0) return -1;
    while ((more = sr__json_member(j, &key, &klen)) > 0) {
        if (level < 2 && sr__json_key_is(key, klen, level == 0 ? "stateful_callbacks" : "shardrun") &&
            sr__json_peek(j) == SR__JSON_OBJECT) {
            if (read_object(j, id, level + 1) != 0) return -1;
            continue;
        }
        int r = level == 1 ? 0 : read_member(j, id, key, klen);
        if (r < 0 || (r == 0 && sr__json_skip(j) != 0)) return -1;
    }
    return more;
}

int sr__ckpt_ident_read(const char *dir, sr__ckpt_ident *id, char *why, size_t len) {
    memset(id, 0, sizeof *id);
    id->step = -1;
    char *p = sr__fmt("%s/trainer_state.json", dir);
    if (!p) return snprintf(why, len, "%s/trainer_state.json: out of memory for its name", dir), -1;
    size_t n = 0;
    char *text = sr__ckpt_state_text(dir, &n, why, len);
    int rc = -1;
    if (text) {
        sr__json j;
        size_t at;
        const char *what;
        sr__json_init(&j, text, n, NULL);
        int ok = read_object(&j, id, 0) == 0 && sr__json_end(&j) == 0;
        if ((what = sr__json_error(&j, &at))) snprintf(why, len, "%s: not valid JSON: %s at byte %zu", p, what, at);
        else if (!ok || id->step < 0) snprintf(why, len, "%s has no global_step: not a shardrun checkpoint", p);
        else rc = 0;
        sr__json_free(&j);
        free(text);
    }
    free(p);
    return rc;
}

void sr__ckpt_ident_free(sr__ckpt_ident *id) {
    for (size_t i = 0; i < id->nsettings; i++) free(id->settings[i].key), free(id->settings[i].value);
    free(id->settings);
    id->settings = NULL, id->nsettings = 0;
}

const char *sr__ckpt_lineage(const sr__ckpt_ident *id) { return id->run_id[0] ? id->run_id : id->job_id; }

const char *sr__ckpt_setting(const sr__ckpt_ident *id, const char *key) {
    for (size_t i = 0; i < id->nsettings; i++)
        if (!strcmp(id->settings[i].key, key)) return id->settings[i].value;
    return NULL;
}

char *sr__ckpt_latest_of_job(const char *outdir, const char *member, const char *value, int *oom) {
    sr__ckpt_entry *l;
    size_t n;
    char why[512];
    *oom = 0;
    if (!value || !*value || sr__ckpt_list(outdir, &l, &n, why, sizeof why) != 0) return NULL;
    char *found = NULL;
    for (size_t i = n; i-- > 0 && !found;) {
        char *dir = sr__fmt("%s/%s", outdir, l[i].name);
        if (!dir) {
            sr__log(SR_LOG_ERROR, "out of memory for the name of %s/%s", outdir, l[i].name);
            *oom = 1;
            break;
        }
        sr__ckpt_ident id = {0};
        if (sr__ckpt_ident_read(dir, &id, why, sizeof why) == 0 && id.step == l[i].step &&
            !strcmp(!strcmp(member, "job_id") ? id.job_id : id.requeue_key, value))
            found = dir, dir = NULL;
        sr__ckpt_ident_free(&id);
        free(dir);
    }
    sr__ckpt_list_free(l, n);
    return found;
}
