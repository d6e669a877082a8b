/* Which checkpoint a run starts from, and whether it may (see resume.h). */
#define _GNU_SOURCE
#include "trainer/resume.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/strbuf.h"
#include "config/value.h"
#include "fsdp/ckpt_dir.h"
#include "task/ctx.h"
#include "trainer/output_dir.h"
#include "config/worker_settings.h"

/* [task] keys that only say where and how often to save, log and evaluate, or how to start: a
   resumed run may change them freely.  init_weights, init_adapters and seed have notes of their own (trainer.c):
   the checkpoint's parameters and data order are kept. */
static const char *const FREE_KEYS[] = {"output_dir",
                                        "overwrite_output_dir",
                                        "resume_from_checkpoint",
                                        "resume_allow_changes",
                                        "logging_steps",
                                        "save_steps",
                                        "save_strategy",
                                        "logging_strategy",
                                        "save_final",
                                        "save_total_limit",
                                        "eval_strategy",
                                        "eval_steps",
                                        "per_device_eval_batch_size",
                                        "max_eval_samples",
                                        "eval_on_start",
                                        "metric_for_best_model",
                                        "load_best_model_at_end",
                                        "init_weights",
                                        "init_adapters",
                                        "seed",
                                        "nan_policy",
                                        NULL};
/* Keys a resume may change to train longer or shorter: the schedule is recomputed for the new
   step count, with a note. */
static const char *const LENGTH_KEYS[] = {"max_steps", "num_train_epochs", NULL};
/* What resume_allow_changes takes besides [task] keys: the compute precision
   (ACCELERATE_MIXED_PRECISION), the data the task trains on (sr_data_identity), every setting. */
static const char *const ALLOW_NAMES[] = {"mixed_precision", "data", "all", NULL};

static int listed(const char *const *keys, const char *key) {
    for (; *keys; keys++)
        if (!strcmp(*keys, key)) return 1;
    return 0;
}

/* Whether name is one resume_allow_changes may list. */
static int allowable(const sr_ctx *ctx, const char *name) {
    if (listed(ALLOW_NAMES, name) || sr__find_key(sr__trainer_keys, name) || sr__ctx_task_where(ctx, name)) return 1;
    if (sr__ctx_asked_short(ctx)) return 1; /* the keys read are not all on record (warned) */
    const char *k;
    for (size_t i = 0; (k = sr__ctx_asked_key(ctx, i)); i++)
        if (!strcmp(k, name)) return 1;
    return 0;
}

int sr__resume_check_allow_names(const sr_ctx *ctx, const char *list) {
    int bad = 0;
    for (const char *p = list ? list : ""; *p;) {
        p += strspn(p, " ,");
        size_t l = strcspn(p, " ,");
        if (!l) break;
        char *name = sr__strndup(p, l);
        p += l;
        if (!name) return -1;
        if (!allowable(ctx, name)) {
            /* the nearest of every name it takes */
            const char *cands[512], *k;
            size_t n = 0;
            for (size_t i = 0; ALLOW_NAMES[i]; i++) cands[n++] = ALLOW_NAMES[i];
            for (const sr_key *tk = sr__trainer_keys; tk->name && n < 511; tk++) cands[n++] = tk->name;
            for (size_t i = 0; (k = sr__ctx_asked_key(ctx, i)) && n < 511; i++) cands[n++] = k;
            for (size_t i = 0; (k = sr__ctx_task_setting(ctx, i, &(const char *){0})) && n < 511; i++) cands[n++] = k;
            const char *best = sr__closest(name, cands, n);
            const char *where = sr__ctx_task_where(ctx, "resume_allow_changes");
            sr__log(SR_LOG_ERROR,
                    "%s: [task] resume_allow_changes names \"%s\", which is no [task] key of this run%s%s%s; it takes "
                    "[task] keys, mixed_precision, data or all, comma-separated",
                    where ? where : "[task]", name, best ? " (did you mean \"" : "", best ? best : "",
                    best ? "\"?)" : "");
            bad = 1;
        }
        free(name);
    }
    return bad ? -1 : 0;
}

int sr__resume_restarts(const sr__trainer *t) {
    int n = sr_restart_count(t->ctx);
    return n > 0 ? n : sr__worker_settings_get()->slurm_restarts;
}

/* What every checkpoint of this run records of its configuration (members of
   stateful_callbacks.shardrun). */
static char *settings_json(const sr__trainer *t) {
    sr__buf b = {0};
    const char *key, *value;
    /* the mixed precision the run computes in, as accelerate spells it ("no" when unset) */
    sr__buf_printf(&b, "\"mixed_precision\": ");
    sr__buf_json_str(&b, sr__precision_name(sr__worker_settings_get()->fsdp.precision));
    sr__buf_printf(&b, ", \"task_settings\": {");
    for (size_t i = 0; (key = sr__ctx_task_setting(t->ctx, i, &value)); i++) {
        sr__buf_printf(&b, "%s", i ? ", " : "");
        sr__buf_json_str(&b, key);
        sr__buf_printf(&b, ": ");
        sr__buf_json_str(&b, value);
    }
    sr__buf_printf(&b, "}");
    if (b.oom) sr__buf_free(&b); /* NULL: the caller says it */
    return b.s;
}

/* Whether [task] resume_allow_changes (comma-separated keys, or all) lists key. */
static int allowed(const sr__trainer *t, const char *key) {
    const char *v = t->a.resume_allow_changes;
    if (!v) return 0;
    if (!strcmp(v, "all")) return 1;
    size_t n = strlen(key);
    for (const char *p = v; *p;) {
        p += strspn(p, " ,");
        size_t l = strcspn(p, " ,");
        if (l == n && !strncmp(p, key, n)) return 1;
        p += l;
    }
    return 0;
}

/* The batch keys: per rank, they may change with the world size as long as the global batch
   (per_device_train_batch_size x gradient_accumulation_steps x ranks) stays the same. */
static const char *const BATCH_KEYS[] = {"per_device_train_batch_size", "gradient_accumulation_steps", NULL};

/* A [task] value as the run sees it: what was set, else the trainer key's default (NULL: none). */
static const char *effective(const char *key, const char *value) {
    const sr_key *k = value ? NULL : sr__find_key(sr__trainer_keys, key);
    return value ? value : k ? k->def : NULL;
}

/* The global batch the checkpoint was trained with, read when a comparison needs it (0: not known):
   an elastic run's accumulation followed its membership, which its log_history records (the newest
   membership entry up to the checkpoint's step, records.c); otherwise the checkpoint's batch keys on
   its world size. */
typedef struct batch_was {
    const char *dir;
    const sr__ckpt_ident *id;
    long long gb;
    int known, oom; /* oom: said; the resume fails */
} batch_was;

static long long membership_batch(batch_was *w) {
    char *path = sr__fmt("%s/trainer_state.json", w->dir), why[512];
    sr__history h = {0};
    long long gb = 0, step = w->id->step;
    if (!path) {
        sr__log(SR_LOG_ERROR, "out of memory for the name of %s/trainer_state.json (%zu bytes)", w->dir,
                strlen(w->dir) + 20);
        w->oom = 1;
        return 0;
    }
    /* unreadable: no membership entry (records.c says why when it loads the history) */
    if (sr__history_read(path, &h, why, sizeof why) == 0)
        for (int i = h.n - 1; i >= 0 && !gb; i--) {
            double v = sr__hist_get(&h.e[i], "global_batch"), s = sr__hist_get(&h.e[i], "step");
            /* (a number a hand-edited file could make too large to convert is no batch) */
            if (v >= 1 && v < 0x1p62 && !(s > (double)step)) gb = (long long)v;
        }
    sr__history_free(&h);
    free(path);
    return gb;
}

static long long global_batch_was(batch_was *w) {
    if (w->known) return w->gb;
    w->known = 1;
    if ((w->gb = membership_batch(w)) || w->oom) return w->gb;
    const char *bs = effective(BATCH_KEYS[0], sr__ckpt_setting(w->id, BATCH_KEYS[0]));
    const char *acc = effective(BATCH_KEYS[1], sr__ckpt_setting(w->id, BATCH_KEYS[1]));
    if (!bs || !acc || w->id->world_size <= 0) return 0;
    return w->gb = atoll(bs) * atoll(acc) * w->id->world_size;
}
/* (in an elastic run, the accumulation is this membership's: trainer.c) */
static long long global_batch_now(const sr__trainer *t) {
    return t->a.per_device_train_batch_size * t->a.gradient_accumulation_steps * t->ws;
}

/* One setting compared: a refusal appended to *refused, or a note printed (rank 0). */
static void compare_one(const sr__trainer *t, batch_was *bw, const char *key, const char *was, const char *now,
                        sr__buf *refused) {
    was = effective(key, was), now = effective(key, now);
    const char *w = was ? was : "(not set)", *n = now ? now : "(not set)";
    if (!strcmp(w, n) || listed(FREE_KEYS, key)) return;
    char shown[300]; /* what the user set it with */
    if (!strcmp(key, "mixed_precision")) snprintf(shown, sizeof shown, "ACCELERATE_MIXED_PRECISION");
    else snprintf(shown, sizeof shown, "[task] %s", key);
    long long gb = listed(BATCH_KEYS, key) ? global_batch_was(bw) : 0;
    if (gb && gb == global_batch_now(t)) {
        if (t->rank == 0)
            printf("shardrun: note: %s was %s in the checkpoint and is %s now; the global batch is the same, "
                   "%lld samples per step\n",
                   shown, w, n, gb);
    } else if (listed(LENGTH_KEYS, key)) {
        if (t->rank == 0)
            printf("shardrun: note: %s was %s in the checkpoint and is %s now: the run's length and its learning-rate "
                   "schedule are computed for the new value\n",
                   shown, w, n);
    } else if (allowed(t, key)) {
        if (t->rank == 0)
            printf("shardrun: warning: %s changes from %s to %s (allowed by resume_allow_changes): the resumed run "
                   "no longer reproduces the uninterrupted one\n",
                   shown, w, n);
    } else {
        sr__buf_printf(refused, "\n    %s: %s in the checkpoint, %s now", shown, w, n);
    }
}

/* The checkpoint's settings against this run's.  An exit code. */
static int compare_settings(const sr__trainer *t, const char *dir, const sr__ckpt_ident *id) {
    const char *key, *value;
    sr__buf refused = {0};
    if (!id->has_settings) {
        if (t->rank == 0)
            printf("shardrun: note: %s records no settings (an older shardrun wrote it): a change of settings since "
                   "cannot be detected\n",
                   dir);
        return SR__EXIT_OK;
    }
    batch_was bw = {dir, id, 0, 0, 0};
    const char *mp = sr__precision_name(sr__worker_settings_get()->fsdp.precision);
    if (id->mixed_precision[0]) compare_one(t, &bw, "mixed_precision", id->mixed_precision, mp, &refused);
    for (size_t i = 0; (key = sr__ctx_task_setting(t->ctx, i, &value)); i++)
        compare_one(t, &bw, key, sr__ckpt_setting(id, key), value, &refused);
    for (size_t i = 0; i < id->nsettings; i++) { /* keys the checkpoint had that this run does not set */
        const char *k = id->settings[i].key;
        int here = 0;
        for (size_t j = 0; !here && (key = sr__ctx_task_setting(t->ctx, j, &value)); j++) here = !strcmp(key, k);
        if (!here) compare_one(t, &bw, k, id->settings[i].value, NULL, &refused);
    }
    if (id->world_size > 0 && id->world_size != t->ws && t->rank == 0) {
        long long gb = global_batch_was(&bw), now = global_batch_now(t);
        printf("shardrun: note: %s was saved by %d ranks and this run has %d (a resharded resume): the parameters, the "
               "optimizer state, the step and the seed are kept; the data order from here on follows %d ranks",
               dir, id->world_size, t->ws, t->ws);
        if (gb && gb != now) printf(", and a step now takes %lld samples instead of %lld", now, gb);
        printf("\n");
    }
    if (bw.oom) {
        sr__buf_free(&refused);
        return SR__EXIT_FAILED;
    }
    if (!refused.n) return SR__EXIT_OK;
    sr__log(SR_LOG_ERROR,
            "resume_from_checkpoint: %s was trained with other settings than this run's:%s\n"
            "A resumed run reproduces the uninterrupted one only with the settings it was trained with; nothing "
            "was trained.  Restore them; or list the keys in [task] resume_allow_changes (a comma-separated "
            "list, or all) to continue with the new values; or start a new run (another output_dir, or "
            "overwrite_output_dir = true)",
            dir, refused.s);
    sr__buf_free(&refused);
    return SR__EXIT_CONFIG;
}

/* The checkpoint a restart continues from: the newest its own job wrote, or NULL (*oom set when
   memory ran out looking: the run must not start over). */
static char *restart_checkpoint(sr__trainer *t, int n, int *oom) {
    const sr__train_args *a = &t->a;
    *oom = 0;
    if (!n || !a->output_dir) return NULL;
    char *dir = sr_restart_count(t->ctx) > 0
                    ? sr__ckpt_latest_of_job(a->output_dir, "job_id", t->ts.job_id, oom)
                    : sr__ckpt_latest_of_job(a->output_dir, "requeue_key", t->ts.requeue_key, oom);
    if (*oom) return NULL;
    if (t->rank == 0) {
        if (dir) printf("shardrun: restart %d: resuming from this job's newest checkpoint, %s\n", n, dir);
        else
            printf("shardrun: restart %d: no checkpoint in %s yet; starting from %s\n", n, a->output_dir,
                   a->resume_from_checkpoint ? a->resume_from_checkpoint : "the beginning");
    }
    return dir;
}

/* resume_from_checkpoint's folder: latest's, or the one named, which must exist.  NULL after an
   error (*rc: its exit code). */
static char *named_checkpoint(const sr__trainer *t, int *rc) {
    const sr__train_args *a = &t->a;
    char why[2048];
    *rc = SR__EXIT_CONFIG;
    if (!strcmp(a->resume_from_checkpoint, "latest")) {
        sr__ckpt_entry *l;
        size_t n;
        if (sr__ckpt_list(a->output_dir, &l, &n, why, sizeof why) != 0) {
            sr__log(SR_LOG_ERROR, "resume_from_checkpoint = latest: %s", why);
            return NULL;
        }
        char *dir = n ? sr__fmt("%s/%s", a->output_dir, l[n - 1].name) : NULL;
        if (n && !dir) {
            sr__log(SR_LOG_ERROR, "resume_from_checkpoint = latest: out of memory for the name of %s/%s", a->output_dir,
                    l[n - 1].name);
            *rc = SR__EXIT_FAILED;
        }
        sr__ckpt_list_free(l, n);
        if (!dir && !n)
            sr__log(SR_LOG_ERROR,
                    "resume_from_checkpoint: no checkpoint-N folder in %s; train without "
                    "resume_from_checkpoint first, or name a checkpoint folder",
                    a->output_dir);
        return dir;
    }
    struct stat st;
    int found = stat(a->resume_from_checkpoint, &st) == 0;
    if (!found || !S_ISDIR(st.st_mode)) {
        sr__log(SR_LOG_ERROR,
                "[task] resume_from_checkpoint = %s: %s; nothing was trained; name a checkpoint-N "
                "folder a run wrote (or latest, for output_dir's newest)",
                a->resume_from_checkpoint, found ? "not a folder" : "no such folder");
        return NULL;
    }
    char *dir = sr__strdup(a->resume_from_checkpoint);
    if (!dir) {
        sr__log(SR_LOG_ERROR, "resume_from_checkpoint: out of memory for the path of %s (%zu bytes)",
                a->resume_from_checkpoint, strlen(a->resume_from_checkpoint) + 1);
        *rc = SR__EXIT_FAILED;
    }
    return dir;
}

/* The checkpoint's identity: readable, its name agreeing with its step.  An exit code. */
static int check_identity(const char *dir, const sr__ckpt_ident *id, const char *why) {
    const char *base = strrchr(dir, '/');
    base = base && base[1] ? base + 1 : dir;
    long long named = sr__ckpt_name_step(base);
    if (why) {
        sr__log(SR_LOG_ERROR,
                "resume_from_checkpoint: %s is not a shardrun checkpoint folder (%s); nothing was "
                "trained; name a checkpoint-N folder a run wrote",
                dir, why);
        return SR__EXIT_CONFIG;
    }
    if (named == -2 || (named >= 0 && named != id->step)) {
        sr__log(SR_LOG_ERROR,
                "resume_from_checkpoint: %s holds step %lld, which its name does not say; the step "
                "inside a checkpoint is what a resume continues from, and a run writes checkpoint-<step>: "
                "rename the folder to checkpoint-%lld (or move it out of the way); nothing was trained",
                dir, id->step, id->step);
        return SR__EXIT_CONFIG;
    }
    return SR__EXIT_OK;
}

/* output_dir holds checkpoints of the run continued (lineage; NULL: a new run) only: another run's
   are refused, or removed with overwrite_output_dir (one rank per node does it: rank 0's refusal
   stops the others).  An exit code. */
static int other_runs(const sr__trainer *t, const char *lineage) {
    const sr__train_args *a = &t->a;
    char **names = NULL, why[4096];
    size_t n = 0;
    if (sr_local_rank(t->ctx) != 0) return SR__EXIT_OK;
    if (sr__output_dir_others(a->output_dir, lineage, &names, &n, why, sizeof why) != 0) {
        sr__log(SR_LOG_ERROR, "%s", why);
        return SR__EXIT_CONFIG;
    }
    int rc = SR__EXIT_OK;
    if (n && !a->overwrite_output_dir) {
        sr__buf list = {0};
        for (size_t i = 0; i < n; i++) sr__buf_printf(&list, "%s%s/%s", i ? ", " : "", a->output_dir, names[i]);
        if (!lineage)
            sr__log(SR_LOG_ERROR,
                    "[task] output_dir = %s already holds checkpoints of an earlier run (%s); this run "
                    "would overwrite them and restart its train_log.jsonl: set resume_from_checkpoint = latest "
                    "to continue that run, or overwrite_output_dir = true to start again (which removes them), "
                    "or choose another output_dir",
                    a->output_dir, list.s);
        else
            sr__log(SR_LOG_ERROR,
                    "[task] output_dir = %s holds checkpoints of another training run (%s) beside those "
                    "of the run being resumed (run %s): save_total_limit would count them and latest could take "
                    "them; move them out, choose another output_dir, or set overwrite_output_dir = true to "
                    "remove them; nothing was trained",
                    a->output_dir, list.s, lineage);
        sr__buf_free(&list);
        rc = SR__EXIT_CONFIG;
    }
    for (size_t i = 0; i < n && a->overwrite_output_dir && rc == SR__EXIT_OK; i++) {
        if (sr__output_dir_remove(a->output_dir, names[i], why, sizeof why) != 0) {
            sr__log(SR_LOG_ERROR, "overwrite_output_dir: %s; nothing was trained", why);
            rc = SR__EXIT_FAILED;
        } else if (t->rank == 0) {
            printf("shardrun: overwrite_output_dir: removed %s/%s (a checkpoint of another run)\n", a->output_dir,
                   names[i]);
        }
    }
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    return rc;
}

int sr__resume_choose(sr__trainer *t) {
    const sr__train_args *a = &t->a;
    char why[2048];
    int rc = SR__EXIT_OK;
    if (a->output_dir && sr__output_dir_prepare(a->output_dir, why, sizeof why) != 0) {
        sr__log(SR_LOG_ERROR, "%s", why);
        return SR__EXIT_CONFIG;
    }
    t->settings = settings_json(t);
    if (!t->settings) {
        sr__log(SR_LOG_ERROR, "out of memory for the run's settings, which every checkpoint records");
        return SR__EXIT_FAILED;
    }
    snprintf(t->ts.run_id, sizeof t->ts.run_id, "%s", t->ts.job_id); /* a new run, unless it resumes */
    int restarts = sr__resume_restarts(t);
    int oom;
    char *dir = restart_checkpoint(t, restarts, &oom);
    if (oom) return SR__EXIT_FAILED;
    if (!dir && a->resume_from_checkpoint && !(dir = named_checkpoint(t, &rc))) return rc;
    if (!dir) return a->output_dir ? other_runs(t, NULL) : SR__EXIT_OK;
    sr__ckpt_ident id = {0};
    int ok = sr__ckpt_ident_read(dir, &id, why, sizeof why) == 0;
    rc = check_identity(dir, &id, ok ? NULL : why);
    if (rc == SR__EXIT_OK) {
        const char *lineage = sr__ckpt_lineage(&id);
        if (*lineage) snprintf(t->ts.run_id, sizeof t->ts.run_id, "%s", lineage);
        if (t->rank == 0 && a->resume_from_checkpoint && !strcmp(a->resume_from_checkpoint, "latest") && !restarts)
            printf("shardrun: resume_from_checkpoint = latest: %s (step %lld of run %s, written by launch %s)\n", dir,
                   id.step, *lineage ? lineage : "(unknown)", id.job_id[0] ? id.job_id : "(unknown)");
        rc = compare_settings(t, dir, &id);
        if (rc == SR__EXIT_OK && a->output_dir) rc = other_runs(t, lineage);
    }
    t->resume_step = id.step;
    snprintf(t->resume_strategy, sizeof t->resume_strategy, "%s", id.sharding_strategy);
    snprintf(t->resume_data, sizeof t->resume_data, "%s", id.data_identity);
    sr__ckpt_ident_free(&id);
    if (rc != SR__EXIT_OK) {
        free(dir);
        return rc;
    }
    t->resume_dir = dir;
    return SR__EXIT_OK;
}

int sr__resume_check_plan(const sr__trainer *t) {
    if (!t->resume_dir || t->ts.global_step < t->plan.total_steps) return SR__EXIT_OK;
    sr__log(SR_LOG_ERROR,
            "resume_from_checkpoint: %s holds step %lld and this run plans %lld steps (max_steps, or "
            "num_train_epochs = %g at %lld steps per epoch): nothing is left to train; raise max_steps or "
            "num_train_epochs to train further, or start a new run",
            t->resume_dir, t->ts.global_step, t->plan.total_steps, t->a.num_train_epochs, t->plan.steps_per_epoch);
    return SR__EXIT_CONFIG;
}

int sr__resume_data(sr__trainer *t) {
    const char *detail, *now = sr__ctx_data_identity(t->ctx, &detail);
    if (now) { /* checkpoints record it from here on */
        sr__buf b = {0};
        sr__buf_printf(&b, "%s, \"data_identity\": ", t->settings);
        sr__buf_json_str(&b, now);
        if (detail) {
            sr__buf_printf(&b, ", \"data_files\": ");
            sr__buf_json_str(&b, detail);
        }
        if (b.oom) {
            sr__log(SR_LOG_ERROR, "out of memory for the run's settings with its data identity, which every "
                                  "checkpoint records");
            sr__buf_free(&b);
            return SR__EXIT_FAILED;
        }
        free(t->settings);
        t->ts.settings = t->settings = b.s;
    }
    if (!t->resume_dir || !t->resume_data[0] || (now && !strcmp(now, t->resume_data))) return SR__EXIT_OK;
    const char *n = now ? now : "(not recorded by this run's task)";
    if (allowed(t, "data")) {
        if (t->rank == 0)
            printf("shardrun: warning: the data changed since %s (%s then, %s now; allowed by resume_allow_changes): "
                   "the resumed run no longer reproduces the uninterrupted one\n",
                   t->resume_dir, t->resume_data, n);
        return SR__EXIT_OK;
    }
    sr__log(SR_LOG_ERROR,
            "resume_from_checkpoint: %s was trained on other data than this run's:\n    data: %s in the "
            "checkpoint (its trainer_state.json lists the files under data_files), %s now\n"
            "A resumed run continues with the samples the uninterrupted run would have seen only on the "
            "same data; nothing was trained.  Restore the data; or add data to [task] "
            "resume_allow_changes to continue on the new data; or start a new run",
            t->resume_dir, t->resume_data, n);
    return SR__EXIT_CONFIG;
}

void sr__resume_note_strategy(const sr__trainer *t) {
    const char *now = sr__strategy_name(t->cfg->strategy);
    if (t->resume_dir && t->resume_strategy[0] && strcmp(t->resume_strategy, now) && t->rank == 0)
        printf("shardrun: note: %s was saved under %s and this run shards with %s: the parameters and the optimizer "
               "state are resharded; the arithmetic of a step is the same\n",
               t->resume_dir, t->resume_strategy, now);
}
