/* The trainer's records (see records.h): trainer_state.json, loss.svg, save_total_limit, the
   summary, load_best_model_at_end. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/out_file.h"
#include "base/strbuf.h"
#include "fsdp/ckpt_dir.h"
#include "fsdp/model_desc.h"
#include "trainer/loss_plot.h"
#include "trainer/output_dir.h"
#include "trainer/trainer_internal.h"

int sr__records_setup(sr__trainer *t) {
    const sr__train_args *a = &t->a;
    t->hist.best_metric = NAN;
    t->eval_step = -1;
    t->eval_metric = NAN;
    int rc = sr__choice_setup(t); /* [task] eval_files */
    if (rc != SR__EXIT_OK) return rc;
    if (a->eval_strategy == SR__EVERY_NEVER && !a->eval_on_start) return SR__EXIT_OK;
    const char *why = NULL;
    if (!t->model->eval.num_samples) why = "describes no eval data (its create() does not call sr_model_eval_data)";
    else if ((t->neval = t->model->eval.num_samples(t->state)) <= 0) why = "has no eval samples";
    if (why && t->choice.n) { /* eval_files alone: the evaluations score them, with no eval_loss */
        t->neval = 0;
        return SR__EXIT_OK;
    }
    if (why) {
        sr__log(SR_LOG_ERROR,
                "[task] eval_strategy = %s%s: task %s %s; give the task held-out data (models/gpt2: "
                "eval_data or validation_split_percentage; examples/toy: eval_samples) or set eval_strategy = no",
                sr__every_name(a->eval_strategy), a->eval_on_start ? " (with eval_on_start)" : "", t->task, why);
        t->neval = 0;
        return SR__EXIT_CONFIG;
    }
    t->task_neval = t->neval;
    if (a->max_eval_samples > 0 && a->max_eval_samples < t->neval) t->neval = a->max_eval_samples;
    t->eval_idx = sr__malloc((size_t)a->per_device_eval_batch_size * sizeof *t->eval_idx);
    if (!t->eval_idx) {
        sr__log(SR_LOG_ERROR, "out of memory for an eval batch's sample indices; lower per_device_eval_batch_size");
        return SR__EXIT_CONFIG;
    }
    return SR__EXIT_OK;
}

void sr__records_free(sr__trainer *t) {
    sr__history_free(&t->hist);
    sr__choice_teardown(t);
    free(t->eval_idx);
    t->eval_idx = NULL;
}

/* The step of a checkpoint-N folder path (its base name as shardrun writes it), or -1. */
static long long folder_step(const char *dir) {
    const char *b = strrchr(dir, '/');
    long long n = sr__ckpt_name_step(b ? b + 1 : dir);
    return n >= 0 ? n : -1;
}

/* The best checkpoint the resumed run recorded, found again in this run's output_dir: trainer_state.json
   names it by the path it had then (another folder if output_dir was copied or moved since), so only
   its folder name is kept, and the folder there must be a checkpoint of the same training run at the
   step its name says, no later than the step resumed.  0; or, when it is not and load_best_model_at_end
   needs it, an exit code after saying why (otherwise a note, and no best checkpoint yet). */
static int find_best_again(sr__trainer *t) {
    char *recorded = t->hist.best_checkpoint, why[1024] = "";
    long long step = folder_step(recorded);
    const char *base = strrchr(recorded, '/');
    base = base ? base + 1 : recorded;
    char *here = step >= 0 && t->a.output_dir ? sr__fmt("%s/%s", t->a.output_dir, base) : NULL;
    sr__ckpt_ident id = {0};
    if (step < 0) snprintf(why, sizeof why, "its name is not a checkpoint-N folder");
    else if (!here) snprintf(why, sizeof why, "this run has no output_dir");
    else if (step > t->ts.global_step)
        snprintf(why, sizeof why, "it was saved after step %lld, which this run resumes from", t->ts.global_step);
    else if (sr__ckpt_ident_read(here, &id, why, sizeof why) != 0)
        ; /* why[] says it */
    else if (id.step != step) snprintf(why, sizeof why, "%s holds step %lld", here, id.step);
    else if (strcmp(sr__ckpt_lineage(&id), t->ts.run_id))
        snprintf(why, sizeof why, "%s belongs to another training run (run %s, not %s)", here, sr__ckpt_lineage(&id),
                 t->ts.run_id);
    sr__ckpt_ident_free(&id);
    if (!*why) {
        t->hist.best_checkpoint = here;
        free(recorded);
        return SR__EXIT_OK;
    }
    int needed = t->a.load_best_model_at_end;
    if (needed)
        sr__log(SR_LOG_ERROR,
                "load_best_model_at_end: the best checkpoint of the run being resumed, %s (as "
                "trainer_state.json recorded it), cannot be used: %s; nothing was trained; put that "
                "run's %s back into output_dir = %s, or set load_best_model_at_end = false",
                recorded, why, base, t->a.output_dir ? t->a.output_dir : "(none)");
    else if (t->rank == 0)
        printf("shardrun: note: the best checkpoint recorded, %s, is not used (%s); the best is tracked again from "
               "here\n",
               recorded, why);
    free(here);
    free(recorded);
    t->hist.best_checkpoint = NULL;
    t->hist.best_metric = NAN;
    return needed ? SR__EXIT_CONFIG : SR__EXIT_OK;
}

int sr__records_resume(sr__trainer *t, const char *dir) {
    char *p = sr__fmt("%s/trainer_state.json", dir), why[512];
    sr__history h = {0};
    if (!p) {
        sr__log(SR_LOG_ERROR, "out of memory for the name of %s/trainer_state.json", dir);
        return SR__EXIT_FAILED;
    }
    if (sr__history_read(p, &h, why, sizeof why) == 0) {
        /* entries after the checkpoint's step belong to a run that went on after it */
        int kept = 0;
        for (int i = 0; i < h.n; i++)
            if (!(sr__hist_get(&h.e[i], "step") > (double)t->ts.global_step)) h.e[kept++] = h.e[i];
        h.n = kept;
        sr__history_free(&t->hist);
        t->hist = h;
    } else { /* a checkpoint of an earlier shardrun: no log_history; the records start here */
        if (t->rank == 0) printf("shardrun: note: %s; log_history restarts at step %lld\n", why, t->ts.global_step);
        t->hist.best_metric = NAN;
    }
    free(p);
    return t->hist.best_checkpoint ? find_best_again(t) : SR__EXIT_OK;
}

int sr__records_train_entry(sr__trainer *t, double loss, const sr__step_result *r) {
    long long step = t->ts.global_step;
    const char *names[] = {"loss", "grad_norm", "learning_rate", "epoch", "step"};
    double v[] = {loss, r->grad_norm, t->o.lr, (double)step / (double)t->plan.steps_per_epoch, (double)step};
    if (sr__history_add(&t->hist, 5, names, v) != 0) {
        sr__log(SR_LOG_ERROR, "out of memory for the log history at step %lld (%d entries kept)", step, t->hist.n);
        return -1;
    }
    return 0;
}

int sr__records_membership(sr__trainer *t) {
    if (!t->elastic_ranks) return 0;
    int local = sr_local_world_size(t->ctx);
    const char *names[] = {"world_size", "nodes", "gradient_accumulation_steps", "global_batch", "restart", "step"};
    double v[] = {(double)t->ws,
                  (double)(local > 0 ? t->ws / local : t->ws),
                  (double)t->elastic.accum,
                  (double)t->elastic.global_batch,
                  (double)sr_restart_count(t->ctx),
                  (double)t->ts.global_step};
    if (sr__history_add(&t->hist, 6, names, v) != 0) {
        sr__log(SR_LOG_ERROR, "out of memory for the log history's membership entry at step %lld (%d entries kept)",
                t->ts.global_step, t->hist.n);
        return -1;
    }
    return 0;
}

/* ---- trainer_state.json -------------------------------------------------------------------------- */

static int by_name(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return strcmp(sr__hist_keys[x], sr__hist_keys[y]);
}

/* TrainerState's members (sorted, indented by two, as HF writes them), without the braces. */
static void hf_members(const sr__trainer *t, sr__buf *b) {
    const sr__train_args *a = &t->a;
    const sr__history *h = &t->hist;
    char num[48];
    long long spe = t->plan.steps_per_epoch, total = t->plan.total_steps;
    sr__hist_number(num, sizeof num, sr__hist_key("loss"), h->best_metric);
    sr__buf_printf(b, "  \"best_metric\": %s,\n  \"best_model_checkpoint\": ", num);
    if (h->best_checkpoint) sr__buf_json_str(b, h->best_checkpoint);
    else sr__buf_printf(b, "null");
    sr__hist_number(num, sizeof num, sr__hist_key("epoch"), (double)t->ts.global_step / (double)spe);
    sr__buf_printf(b,
                   ",\n  \"epoch\": %s,\n  \"eval_steps\": %lld,\n  \"global_step\": %lld,\n"
                   "  \"is_hyper_param_search\": false,\n  \"is_local_process_zero\": true,\n"
                   "  \"is_world_process_zero\": true,\n  \"log_history\": [",
                   num, a->eval_steps, t->ts.global_step);
    for (int i = 0; i < h->n; i++) {
        const sr__hist_entry *e = &h->e[i];
        /* sorted by name, as json.dumps(sort_keys=True) */
        int keys[SR__HIST_MAX];
        for (int k = 0; k < e->n; k++) keys[k] = e->key[k];
        qsort(keys, (size_t)e->n, sizeof *keys, by_name);
        sr__buf_printf(b, "%s\n    {", i ? "," : "");
        for (int k = 0; k < e->n; k++) {
            int at = 0;
            while (e->key[at] != keys[k]) at++;
            sr__hist_number(num, sizeof num, keys[k], e->v[at]);
            sr__buf_printf(b, "%s\n      \"%s\": %s", k ? "," : "", sr__hist_keys[keys[k]], num);
        }
        sr__buf_printf(b, "\n    }");
    }
    sr__buf_printf(b,
                   "%s],\n  \"logging_steps\": %lld,\n  \"max_steps\": %lld,\n  \"num_input_tokens_seen\": 0,\n"
                   "  \"num_train_epochs\": %lld,\n  \"save_steps\": %lld,\n  \"total_flos\": 0,\n"
                   "  \"train_batch_size\": %lld,\n  \"trial_name\": null,\n  \"trial_params\": null",
                   h->n ? "\n  " : "", a->logging_steps, total, (total + spe - 1) / spe, a->save_steps,
                   a->per_device_train_batch_size);
}

/* output_dir/NAME from `text`, as every output file is written (base/out_file.h: a temporary and a
   rename for a regular file; rank 0).  0 or -1. */
static int write_atomic(const char *dir, const char *name, const char *text, size_t n) {
    char *p = sr__fmt("%s/%s", dir, name), why[4600];
    if (!p || !text) { /* text NULL: the caller's buffer ran out of memory */
        sr__log(SR_LOG_WARN, "cannot write %s/%s: out of memory", dir, name);
        free(p);
        return -1;
    }
    int rc = sr__out_write(p, text, n, why, sizeof why);
    if (rc) sr__log(SR_LOG_WARN, "%s", why);
    free(p);
    return rc;
}

/* output_dir/trainer_state.json and output_dir/loss.svg (rank 0); a failure is a warning: the
   checkpoints are what matters. */
static void write_outputs(sr__trainer *t) {
    if (t->rank != 0 || !t->a.output_dir) return;
    sr__buf b = {0};
    sr__buf_printf(&b, "{\n");
    hf_members(t, &b);
    sr__buf_printf(&b, ",\n  \"stateful_callbacks\": {}\n}\n");
    write_atomic(t->a.output_dir, "trainer_state.json", b.oom ? NULL : b.s, b.n);
    sr__buf_free(&b);
    char *svg = sr__fmt("%s/loss.svg", t->a.output_dir), why[512];
    if (!svg) {
        sr__log(SR_LOG_WARN, "cannot write %s/loss.svg: out of memory", t->a.output_dir);
        return;
    }
    const char *slash = strrchr(t->a.output_dir, '/');
    sr__plot_run run = {slash && slash[1] ? slash + 1 : t->a.output_dir, &t->hist};
    if (sr__loss_svg_write(svg, &run, 1, why, sizeof why) != 0) sr__log(SR_LOG_WARN, "%s", why);
    free(svg);
}

/* ---- save_total_limit ------------------------------------------------------------------------------ */

/* Deletes a checkpoint folder (output_dir.h: renamed out of the checkpoint-N names first); a failure
   is a warning. */
static void delete_folder(const char *outdir, const char *name) {
    char why[1024];
    if (sr__output_dir_remove(outdir, name, why, sizeof why) != 0) sr__log(SR_LOG_WARN, "save_total_limit: %s", why);
}

static int by_step(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

/* Keeps the newest save_total_limit checkpoints (and the best one), as transformers'
   _rotate_checkpoints: the best is moved next to the newest, and a limit of 1 keeps 2 when the
   best is not the newest. */
static void rotate(sr__trainer *t) {
    const char *outdir = t->a.output_dir;
    if (t->rank != 0 || t->a.save_total_limit <= 0 || !outdir) return;
    DIR *d = opendir(outdir);
    if (!d) return;
    long long *steps = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (!strncmp(de->d_name, "checkpoint-", 11) && l > 9 && !strcmp(de->d_name + l - 9, ".deleting")) {
            delete_folder(outdir, de->d_name); /* a deletion that was cut short */
            continue;
        }
        long long s = folder_step(de->d_name);
        if (s < 0) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            long long *g = sr__realloc(steps, cap * sizeof *g);
            if (!g) break;
            steps = g;
        }
        steps[n++] = s;
    }
    closedir(d);
    qsort(steps, n, sizeof *steps, by_step);
    long long best = t->hist.best_checkpoint ? folder_step(t->hist.best_checkpoint) : -1;
    size_t limit = (size_t)t->a.save_total_limit;
    for (size_t i = 0; i < n; i++)
        if (steps[i] == best) {
            for (size_t k = i; k + 2 < n; k++) { /* towards the newest, one before it */
                long long s = steps[k];
                steps[k] = steps[k + 1], steps[k + 1] = s;
            }
            if (limit == 1 && steps[n - 1] != best) limit = 2;
            break;
        }
    for (size_t i = 0; i + limit < n; i++) {
        char name[64];
        snprintf(name, sizeof name, "checkpoint-%lld", steps[i]);
        delete_folder(outdir, name);
        printf("shardrun: deleted %s/%s (save_total_limit = %lld)\n", outdir, name, t->a.save_total_limit);
    }
    free(steps);
}

/* ---- saving ------------------------------------------------------------------------------------------ */

int sr__records_save_checkpoint(sr__trainer *t) {
    const sr__train_args *a = &t->a;
    long long step = t->ts.global_step;
    int oom = 0;
    /* the best checkpoint, by the evaluation at this very step */
    if (a->track_best && t->eval_step == step && isfinite(t->eval_metric) && !(t->eval_metric >= t->hist.best_metric)) {
        t->hist.best_metric = t->eval_metric;
        free(t->hist.best_checkpoint);
        t->hist.best_checkpoint = sr__fmt("%s/checkpoint-%lld", a->output_dir, step);
        oom = !t->hist.best_checkpoint;
    }
    sr__buf b = {0};
    hf_members(t, &b);
    /* out of memory, the save still runs (it is collective) and fails on every rank */
    t->ts.incomplete = oom || b.oom;
    if (t->ts.incomplete)
        sr__log(SR_LOG_ERROR, "out of memory for trainer_state.json's members (checkpoint of step %lld)", step);
    t->ts.hf_members = b.s;
    int rc = sr__ckpt_save(t->e, a->output_dir, &t->ts);
    t->ts.hf_members = NULL;
    t->ts.incomplete = 0;
    sr__buf_free(&b);
    if (rc != 0) return -1;
    if (t->rank == 0)
        printf("shardrun: saved %s/checkpoint-%lld (%s)\n", a->output_dir, step,
               sr__state_dict_name(t->cfg->state_dict));
    write_outputs(t);
    rotate(t);
    fflush(stdout);
    return 0;
}

/* ---- the end -------------------------------------------------------------------------------------------- */

int sr__records_finish(sr__trainer *t, double runtime) {
    long long steps_run = t->loss_steps, step = t->ts.global_step;
    double epoch = (double)step / (double)t->plan.steps_per_epoch;
    double v[6] = {round(runtime * 1e4) / 1e4,
                   runtime > 0 ? round((double)t->samples_done * t->ws / runtime * 1e3) / 1e3 : 0,
                   runtime > 0 ? round((double)steps_run / runtime * 1e3) / 1e3 : 0,
                   steps_run ? t->loss_sum / (double)steps_run : NAN,
                   epoch,
                   (double)step};
    const char *names[6] = {
        "train_runtime", "train_samples_per_second", "train_steps_per_second", "train_loss", "epoch", "step"};
    if (sr__history_add(&t->hist, 6, names, v) != 0) {
        sr__log(SR_LOG_ERROR, "out of memory for the log history's summary at step %lld", step);
        return -1;
    }
    if (t->rank == 0) {
        const sr__hist_entry *e = &t->hist.e[t->hist.n - 1];
        printf("{");
        for (int i = 0; i < e->n - 1; i++) { /* HF's line: without the step */
            char num[48];
            sr__hist_number(num, sizeof num, e->key[i], e->v[i]);
            printf("%s'%s': %s", i ? ", " : "", sr__hist_keys[e->key[i]], !strcmp(num, "null") ? "nan" : num);
        }
        printf("}\n");
    }
    write_outputs(t);
    int rc = 0;
    if (t->a.load_best_model_at_end) {
        if (!t->hist.best_checkpoint) {
            if (t->rank == 0)
                printf("shardrun: note: load_best_model_at_end: no checkpoint had an evaluation; the model is the last "
                       "step's\n");
        } else {
            sr__train_state ts = {0};
            rc = sr__ckpt_load(t->e, t->hist.best_checkpoint, &ts);
            if (rc == 0 && t->rank == 0)
                printf("shardrun: loaded the best model: %s (eval_loss %.6g)\n", t->hist.best_checkpoint,
                       t->hist.best_metric);
        }
    }
    fflush(stdout);
    return rc;
}
