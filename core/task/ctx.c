#define _GNU_SOURCE
#include "task/ctx.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/progress.h"
#include "base/strbuf.h"
#include "base/watch.h"
#include "config/env_table.h"
#include "config/value.h"
#include "pg/world.h"

typedef struct sr__result {
    char *name;
    char *json;    /* the value, already JSON */
    int nonfinite; /* a number that was NaN or infinite, written as null */
} sr__result;

struct sr_ctx {
    sr_topology topo;
    sr__job *cfg;
    sr__result *res;
    size_t nres;
    int tty;
    char **asked; /* [task] keys read through sr_config*(), for sr__ctx_check_task_keys */
    size_t nasked;
    int asked_short; /* memory ran out recording one: the record misses keys that were read */
    char **paths;    /* what sr_config_path() returned, freed with the ctx */
    size_t npaths;
    char *data_identity, *data_detail; /* sr_data_identity() */
};

int sr_data_identity(sr_ctx *c, const char *identity, const char *detail) {
    free(c->data_identity), free(c->data_detail);
    c->data_identity = identity ? sr__strdup(identity) : NULL;
    c->data_detail = detail ? sr__strdup(detail) : NULL;
    return (identity && !c->data_identity) || (detail && !c->data_detail) ? -1 : 0;
}

const char *sr__ctx_data_identity(const sr_ctx *c, const char **detail) {
    if (detail) *detail = c->data_detail;
    return c->data_identity;
}

void sr__ctx_free(sr_ctx *c) {
    if (!c) return;
    for (size_t i = 0; i < c->nres; i++) free(c->res[i].name), free(c->res[i].json);
    for (size_t i = 0; i < c->nasked; i++) free(c->asked[i]);
    for (size_t i = 0; i < c->npaths; i++) free(c->paths[i]);
    free(c->data_identity), free(c->data_detail);
    free(c->res), free(c->asked), free(c->paths), free(c);
}

void sr__ctx_set_tty(sr_ctx *c, int tty) { c->tty = tty; }
int sr__ctx_tty(const sr_ctx *c) { return c->tty; }

sr_ctx *sr__ctx_new(const sr_topology *topo, sr__job *cfg) {
    sr_ctx *c = sr__calloc(1, sizeof *c);
    if (!c) return NULL;
    c->topo = *topo;
    c->cfg = cfg;
    return c;
}

sr_pg *sr_world(sr_ctx *c) {
    (void)c; /* one world group per worker process */
    return sr__pg_world();
}

int sr_rank(const sr_ctx *c) { return c->topo.rank; }
int sr_world_size(const sr_ctx *c) { return c->topo.world_size; }
int sr_local_rank(const sr_ctx *c) { return c->topo.local_rank; }
int sr_local_world_size(const sr_ctx *c) { return c->topo.local_world_size; }
int sr_node_rank(const sr_ctx *c) { return c->topo.node_rank; }
int sr_num_nodes(const sr_ctx *c) { return c->topo.nnodes; }
int sr_restart_count(const sr_ctx *c) { return c->topo.restart_count; }

void sr_progress(sr_ctx *c) {
    (void)c; /* one watch slot per worker process */
    sr__watch_progress();
}

static int was_asked(const sr_ctx *c, const char *key) {
    for (size_t i = 0; i < c->nasked; i++)
        if (!strcmp(c->asked[i], key)) return 1;
    return 0;
}

const char *sr_config(const sr_ctx *c, const char *key) {
    /* the record of what was asked is bookkeeping, not the task's state: const to the caller */
    sr_ctx *m = (sr_ctx *)c;
    if (key && !was_asked(c, key)) {
        char **a = sr__realloc(m->asked, (m->nasked + 1) * sizeof *a);
        if (a) m->asked = a;
        if (a && (a[m->nasked] = sr__strdup(key))) {
            m->nasked++;
        } else if (!m->asked_short) {
            /* the task still gets its value; only the report of keys never read would lie */
            m->asked_short = 1;
            sr__log(SR_LOG_WARN,
                    "out of memory recording that [task] %s was read (%zu bytes): the keys the task never read are "
                    "not reported this run",
                    key, strlen(key) + 1);
        }
    }
    return sr__config_value(c->cfg, "task", key);
}

const char *sr__ctx_task_setting(const sr_ctx *c, size_t i, const char **value) {
    for (size_t k = 0; k < c->cfg->nset; k++) {
        const sr__setting *s = &c->cfg->set[k];
        if (strcmp(s->section, "task") || !s->value) continue;
        if (i-- == 0) {
            *value = s->value;
            return s->key;
        }
    }
    return NULL;
}

void sr__ctx_send_unread(const sr_ctx *c) {
    sr__progress_send(SR__PROGRESS_UNREAD, "");
    if (c->asked_short) return; /* a key missing from the record may well have been read (warned) */
    for (size_t i = 0; i < c->cfg->nset; i++) {
        const sr__setting *s = &c->cfg->set[i];
        if (strcmp(s->section, "task") || !s->value || was_asked(c, s->key)) continue;
        char text[700];
        snprintf(text, sizeof text, "%s %s", s->key, s->where ? s->where : "?");
        for (char *p = text; *p; p++)
            if (*p == '\n') *p = ' ';
        sr__progress_send(SR__PROGRESS_UNREAD, text);
    }
}

const char *sr__ctx_asked_key(const sr_ctx *c, size_t i) { return i < c->nasked ? c->asked[i] : NULL; }

int sr__ctx_asked_short(const sr_ctx *c) { return c->asked_short; }

const char *sr__ctx_task_where(const sr_ctx *c, const char *key) {
    const sr__setting *s = key ? sr__config_get(c->cfg, "task", key) : NULL;
    return s && s->value ? s->where : NULL;
}

/* The setting of [task] key when it came from the job file, else NULL. */
static const sr__setting *from_file(const sr_ctx *c, const char *key) {
    const sr__setting *s = key ? sr__config_get(c->cfg, "task", key) : NULL;
    return s && s->from == SR__FROM_FILE && c->cfg->dir ? s : NULL;
}

const char *sr_config_base_dir(const sr_ctx *c, const char *key) { return from_file(c, key) ? c->cfg->dir : "."; }

const char *sr_config_path(const sr_ctx *c, const char *key) {
    const char *v = sr_config(c, key);
    const sr__setting *s = v ? sr__config_get(c->cfg, "task", key) : NULL;
    if (!s || !sr__config_path_moves(c->cfg, s)) return v; /* absolute, or the current folder's: as given */
    sr_ctx *m = (sr_ctx *)c;                               /* the kept strings are bookkeeping, as the asked keys are */
    char **g = sr__realloc(m->paths, (m->npaths + 1) * sizeof *g);
    if (!g) return v;
    m->paths = g;
    char *p = sr__config_absolute(c->cfg, s->from, v);
    if (!p) return v;
    m->paths[m->npaths++] = p;
    return p;
}

/* The key nearest to a misspelt one among those the task asked for and the trainer's, or NULL. */
static const char *closest_task_key(const sr_ctx *c, const sr_key *runtime_keys, const char *key) {
    size_t n = 0, cap = c->nasked;
    for (const sr_key *k = runtime_keys; k && k->name; k++) cap++;
    const char **cands = cap ? sr__malloc(cap * sizeof *cands) : NULL;
    if (!cands) return NULL; /* no hint: the error itself still stands */
    for (size_t k = 0; k < c->nasked; k++) cands[n++] = c->asked[k];
    for (const sr_key *k = runtime_keys; k && k->name; k++) cands[n++] = k->name;
    const char *best = sr__closest(key, cands, n);
    free(cands);
    return best;
}

int sr__ctx_check_task_keys(const sr_ctx *c, const char *task_name, const sr_key *runtime_keys) {
    int bad = 0;
    if (c->asked_short) return 0; /* the record misses keys that were read (warned): no key is blamed */
    for (size_t i = 0; i < c->cfg->nset; i++) {
        const sr__setting *s = &c->cfg->set[i];
        if (strcmp(s->section, "task") || !s->value || was_asked(c, s->key)) continue;
        if (!bad) { /* the task's own keys; the trainer's are in the reference */
            sr__buf keys = {0};
            for (size_t k = 0; k < c->nasked; k++)
                if (!sr__find_key(runtime_keys, c->asked[k]))
                    sr__buf_printf(&keys, "%s%s", keys.n ? ", " : "", c->asked[k]);
            sr__log(SR_LOG_ERROR,
                    "task %s reads these [task] keys: %s; the trainer reads transformers' "
                    "TrainingArguments names (docs/environment.md, [task])",
                    task_name, keys.n ? keys.s : "(none)");
            sr__buf_free(&keys);
        }
        const char *best = closest_task_key(c, runtime_keys, s->key);
        char hint[300] = "";
        if (best) snprintf(hint, sizeof hint, " (did you mean \"%s\"?)", best);
        sr__log(SR_LOG_ERROR, "%s: [task] %s is read by neither; check its spelling%s", s->where, s->key, hint);
        bad = 1;
    }
    return bad ? -1 : 0;
}

static void bad_value(const sr_ctx *c, const char *key, const char *v, const char *expected) {
    sr__setting *s = sr__config_get(c->cfg, "task", key);
    sr__log(SR_LOG_ERROR, "%s: [task] %s = \"%s\": expected %s", s ? s->where : "?", key, v, expected);
}

int sr_config_int(const sr_ctx *c, const char *key, long long def, long long *out) {
    const char *v = sr_config(c, key);
    if (!v) {
        *out = def;
        return 0;
    }
    if (sr__parse_int(v, out) == 0) return 0;
    bad_value(c, key, v, "an integer");
    return -1;
}

int sr_config_double(const sr_ctx *c, const char *key, double def, double *out) {
    const char *v = sr_config(c, key);
    if (!v) {
        *out = def;
        return 0;
    }
    if (sr__parse_float(v, out) == 0) return 0;
    bad_value(c, key, v, "a number");
    return -1;
}

int sr_config_bool(const sr_ctx *c, const char *key, int def, int *out) {
    const char *v = sr_config(c, key);
    if (!v) {
        *out = def;
        return 0;
    }
    if (sr__parse_bool(v, out) == 0) return 0;
    bad_value(c, key, v, "a boolean (" SR__BOOL_SPELLINGS ")");
    return -1;
}

static int report_flagged(sr_ctx *c, const char *name, char *json, int nonfinite) {
    if (!json) {
        sr__log(SR_LOG_ERROR, "out of memory for the result \"%s\"", name ? name : "(null)");
        return -1;
    }
    if (!name || !*name || !strcmp(name, "rank") || !strcmp(name, "exit_code") || !strcmp(name, "nonfinite")) {
        sr__log(SR_LOG_ERROR, "result name \"%s\" is empty or reserved", name ? name : "(null)");
        free(json);
        return -1;
    }
    for (size_t i = 0; i < c->nres; i++)
        if (!strcmp(c->res[i].name, name)) {
            free(c->res[i].json);
            c->res[i].json = json;
            c->res[i].nonfinite = nonfinite;
            return 0;
        }
    sr__result *r = sr__realloc(c->res, (c->nres + 1) * sizeof *c->res);
    char *copy = r ? sr__strdup(name) : NULL;
    if (r) c->res = r;
    if (!copy) {
        sr__log(SR_LOG_ERROR, "out of memory for the result \"%s\"", name);
        free(json);
        return -1;
    }
    c->res[c->nres++] = (sr__result){copy, json, nonfinite};
    return 0;
}

static int report(sr_ctx *c, const char *name, char *json) { return report_flagged(c, name, json, 0); }

/* JSON has no NaN or infinity: such a value is null, and its name is listed in the result's
   "nonfinite" member (sr__ctx_result_json). */
int sr_report_num(sr_ctx *c, const char *name, double v) {
    char buf[40];
    return report_flagged(c, name, sr__strdup(sr__fmt_double(v, buf, sizeof buf)), !isfinite(v));
}

int sr_report_int(sr_ctx *c, const char *name, long long v) { return report(c, name, sr__fmt("%lld", v)); }

int sr_report_str(sr_ctx *c, const char *name, const char *v) {
    sr__buf b = {0};
    sr__buf_json_str(&b, v ? v : "");
    if (b.oom) sr__buf_free(&b);
    return report(c, name, b.s);
}

int sr_report_bool(sr_ctx *c, const char *name, int v) { return report(c, name, sr__strdup(v ? "true" : "false")); }

char *sr__ctx_result_json(const sr_ctx *c, int exit_code) {
    sr__buf b = {0};
    sr__buf_printf(&b, "{\"rank\": %d, \"exit_code\": %d", c->topo.rank, exit_code);
    for (size_t i = 0; i < c->nres; i++) {
        sr__buf_add(&b, ", ", 2);
        sr__buf_json_str(&b, c->res[i].name);
        sr__buf_printf(&b, ": %s", c->res[i].json);
    }
    int listed = 0;
    for (size_t i = 0; i < c->nres; i++) {
        if (!c->res[i].nonfinite) continue;
        const char *sep = listed++ ? ", " : ", \"nonfinite\": [";
        sr__buf_add(&b, sep, strlen(sep));
        sr__buf_json_str(&b, c->res[i].name);
    }
    if (listed) sr__buf_add(&b, "]", 1);
    sr__buf_add(&b, "}", 1);
    if (b.oom || !b.s) { /* still a result the agent can read */
        sr__buf_free(&b);
        return sr__fmt("{\"rank\": %d, \"exit_code\": %d, \"error\": \"out of memory for the results\"}", c->topo.rank,
                       exit_code);
    }
    return b.s;
}
