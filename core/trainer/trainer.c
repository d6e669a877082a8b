/* The run (see trainer.h): set-up, the step loop, teardown.  The log is train_log.c's, the
   results report.c's. */
#define _GNU_SOURCE
#include "trainer/trainer.h"

#include <ftw.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/progress.h"
#include "base/watch.h"
#include "task/ctx.h"
#include "trainer/nan_policy.h"
#include "trainer/preempt.h"
#include "trainer/resume.h"
#include "trainer/trainer_internal.h"
#include "config/worker_settings.h"

/* Set-up errors are the same on every rank as a rule (one job file, one environment): ranks other
   than a node's local rank 0 hold back what they print to stderr until set-up is over.  When it
   failed they wait a moment first: if local rank 0 failed the same way, the agent stops them
   meanwhile and the message appears once per node instead of once per rank. */
typedef struct held_stderr {
    int saved_fd;
    FILE *tmp;
} held_stderr;

static void hold_stderr(held_stderr *h, int local_rank) {
    h->saved_fd = -1;
    h->tmp = local_rank > 0 ? tmpfile() : NULL;
    if (!h->tmp) return;
    fflush(stderr);
    h->saved_fd = dup(STDERR_FILENO);
    if (h->saved_fd < 0 || dup2(fileno(h->tmp), STDERR_FILENO) < 0) {
        if (h->saved_fd >= 0) close(h->saved_fd);
        h->saved_fd = -1;
    }
}

static void release_stderr(held_stderr *h, int failed) {
    if (h->saved_fd >= 0) {
        fflush(stderr);
        dup2(h->saved_fd, STDERR_FILENO);
        close(h->saved_fd);
        h->saved_fd = -1;
        if (failed) nanosleep(&(struct timespec){1, 0}, NULL);
        char buf[4096];
        size_t n;
        rewind(h->tmp);
        while ((n = fread(buf, 1, sizeof buf, h->tmp)) > 0) fwrite(buf, 1, n, stderr);
        fflush(stderr);
    }
    if (h->tmp) fclose(h->tmp);
    h->tmp = NULL;
}

/* ---- set-up ---------------------------------------------------------------------------------- */

/* The parameters training starts from: a checkpoint (resume_from_checkpoint), a safetensors file
   (init_weights) or the task's initialisers.  An exit code. */
static int start_params(sr__trainer *t) {
    sr__train_args *a = &t->a;
    /* a SHARDED checkpoint of a run with frozen parameters holds the trainable ones only: the frozen
       base comes from this run's own initialisation, as at the start of a fresh run, and the load
       checks it is the base the checkpoint was trained on (fsdp/ckpt_frozen.h) */
    int base = !t->resume_dir || (sr__model_frozen_numel(t->model) > 0 && sr__ckpt_without_base(t->resume_dir)), rc;
    if (t->resume_dir) {
        /* log_history and the best checkpoint first: a best checkpoint that load_best_model_at_end
           needs and cannot have is refused before the parameters are read */
        t->ts.global_step = t->resume_step;
        if ((rc = sr__records_resume(t, t->resume_dir)) != SR__EXIT_OK) return rc;
    }
    /* a resumed run's adapters are the checkpoint's */
    const char *adapters = t->resume_dir ? NULL : a->init_adapters;
    char ad_file[4200] = "";
    if (adapters) snprintf(ad_file, sizeof ad_file, "%s/adapter_model.safetensors", adapters);
    if (base) {
        if (!a->init_weights && !adapters) {
            if (sr__engine_init_params(t->e) != 0) return SR__EXIT_FAILED;
        } else {
            if ((rc = sr__engine_load_weights(t->e, a->init_weights, adapters ? ad_file : NULL, &t->weights_bytes)) !=
                0)
                return rc == -2 ? SR__EXIT_CONFIG : SR__EXIT_FAILED;
            if (t->rank == 0 && a->init_weights)
                printf("shardrun: %s from %s\n", t->resume_dir ? "the frozen base" : "initial weights",
                       a->init_weights);
            if (t->rank == 0 && adapters) printf("shardrun: the adapters from %s\n", ad_file);
        }
    }
    if (!t->resume_dir) return SR__EXIT_OK;
    rc = sr__ckpt_load(t->e, t->resume_dir, &t->ts);
    if (rc != 0) return rc == -2 ? SR__EXIT_CONFIG : SR__EXIT_FAILED;
    if (t->rank == 0) printf("shardrun: resumed from %s at step %lld\n", t->resume_dir, t->ts.global_step);
    if (t->rank == 0 && t->ts.frozen_digest[0])
        printf("shardrun: the frozen base (%s) is the checkpoint's: frozen_digest %s\n",
               a->init_weights ? a->init_weights : "the task's initialisers", t->ts.frozen_digest);
    if (t->ts.seed != a->seed && t->rank == 0)
        printf("shardrun: note: the checkpoint was trained with seed %lld; continuing with its data order\n",
               t->ts.seed);
    a->seed = t->ts.seed;
    if (a->init_weights && !base && t->rank == 0)
        printf("shardrun: note: init_weights is not read: the checkpoint holds the parameters\n");
    if (a->init_adapters && t->rank == 0)
        printf("shardrun: note: init_adapters is not read: the checkpoint holds the adapters\n");
    return SR__EXIT_OK;
}

/* An elastic run (SHARDRUN_ELASTIC_RANKS set): the accumulation that keeps the job file's global
   batch on this membership replaces the job file's (elastic_batch.h), and rank 0 says so in one
   line, a warning when the global batch cannot be kept.  An exit code. */
static int elastic_setup(sr__trainer *t) {
    sr__train_args *a = &t->a;
    t->elastic_ranks = sr__worker_settings_get()->elastic_ranks;
    if (!t->elastic_ranks) return SR__EXIT_OK;
    char why[400];
    long long bs = a->per_device_train_batch_size;
    if (sr__elastic_batch_rule(bs, a->gradient_accumulation_steps, t->elastic_ranks, t->ws, &t->elastic, why,
                               sizeof why) != 0) {
        sr__log(SR_LOG_ERROR,
                "elastic run: %s; nothing was trained; the job file's per_device_train_batch_size and "
                "gradient_accumulation_steps describe the largest membership (nnodes = MIN:MAX: MAX nodes x "
                "nproc_per_node ranks): lower them or MAX",
                why);
        return SR__EXIT_CONFIG;
    }
    t->job_accum = a->gradient_accumulation_steps;
    a->gradient_accumulation_steps = t->elastic.accum;
    if (t->rank != 0) return SR__EXIT_OK;
    int local = sr_local_world_size(t->ctx), nodes = local > 0 ? t->ws / local : t->ws;
    char accum[64];
    if (t->elastic.accum == t->job_accum) snprintf(accum, sizeof accum, "%lld", t->job_accum);
    else snprintf(accum, sizeof accum, "%lld -> %lld", t->job_accum, t->elastic.accum);
    if (t->elastic.kept)
        printf("shardrun: elastic: %d node%s, %d of %d ranks: gradient_accumulation_steps %s, the global batch stays "
               "%lld samples per step\n",
               nodes, nodes == 1 ? "" : "s", t->ws, t->elastic_ranks, accum, t->elastic.global_batch);
    else
        printf("shardrun: warning: elastic: %d node%s, %d of %d ranks: gradient_accumulation_steps %s (%lld x %d / %d, "
               "rounded up): a step takes %lld samples instead of the job file's %lld, so a run resumed on %d ranks "
               "no longer reproduces the uninterrupted one\n",
               nodes, nodes == 1 ? "" : "s", t->ws, t->elastic_ranks, accum, t->job_accum, t->elastic_ranks, t->ws,
               t->elastic.global_batch, t->elastic.job_batch, t->ws);
    return SR__EXIT_OK;
}

/* Everything that can go wrong before training: the arguments, the task's model, the engine, the
   starting parameters, a dataset.  An exit code: SR__EXIT_CONFIG for a bad description or
   configuration (nothing has trained yet), SR__EXIT_FAILED otherwise. */
static int setup(sr__trainer *t, sr_ctx *ctx, const char *task, const sr_model_ops *ops) {
    memset(t, 0, sizeof *t);
    t->ctx = ctx, t->task = task, t->ops = ops;
    t->final_loss = NAN;
    if (sr__train_args_read(ctx, &t->a) != 0) return SR__EXIT_CONFIG;
    t->rank = sr_rank(ctx), t->ws = sr_world_size(ctx), t->tty = sr__ctx_tty(ctx);
    const sr__worker_settings *ws = sr__worker_settings_get();
    snprintf(t->ts.job_id, sizeof t->ts.job_id, "%s", ws->job_id);
    snprintf(t->ts.requeue_key, sizeof t->ts.requeue_key, "%s", ws->requeue_key);
    int rc = elastic_setup(t);                        /* before anything reads the accumulation */
    if (rc == SR__EXIT_OK) rc = sr__resume_choose(t); /* output_dir, and the checkpoint the run starts from */
    if (rc != SR__EXIT_OK) return rc;
    t->ts.settings = t->settings;
    t->model = sr__model_new();
    if (!t->model) {
        sr__log(SR_LOG_ERROR, "task %s: out of memory for the model's description", task);
        return SR__EXIT_FAILED;
    }
    t->state = ops->create(ctx, t->model);
    if (!t->state) {
        sr__log(SR_LOG_ERROR, "task %s: create() failed (see above)", task);
        /* create() reads the task's keys and data: what fails there is the run's input, found
           before any step */
        return SR__EXIT_CONFIG;
    }
    if (sr__ctx_check_task_keys(ctx, task, sr__trainer_keys) != 0 ||
        sr__resume_check_allow_names(ctx, t->a.resume_allow_changes) != 0 || sr__model_check(t->model, task) != 0 ||
        sr__model_freeze(t->model, t->a.freeze, task) != 0)
        return SR__EXIT_CONFIG;
    if ((rc = sr__resume_data(t)) != SR__EXIT_OK) return rc;
    t->e = sr__engine_create(ctx, task, ops, t->state, t->model, (uint64_t)t->a.seed);
    if (!t->e) return SR__EXIT_CONFIG;
    t->cfg = sr__engine_config(t->e);
    sr__resume_note_strategy(t);
    t->ts.seed = t->a.seed;
    rc = sr__records_setup(t); /* the eval data the configuration asks for */
    if (rc == SR__EXIT_OK) rc = start_params(t);
    if (rc != SR__EXIT_OK) return rc;
    t->nsamples = t->task_samples = ops->num_samples(t->state);
    if (t->nsamples <= 0) {
        sr__log(SR_LOG_ERROR, "task %s has no training samples", task);
        return SR__EXIT_FAILED;
    }
    /* max_train_samples: the first N (the sampler permutes 0 .. nsamples-1 only) */
    if (t->a.max_train_samples > 0 && t->a.max_train_samples < t->nsamples) t->nsamples = t->a.max_train_samples;
    return SR__EXIT_OK;
}

static int out_of_memory(const char *what, unsigned long long bytes) {
    sr__log(SR_LOG_ERROR, "out of memory for %s (%llu bytes); nothing was trained", what, bytes);
    return SR__EXIT_CONFIG;
}

/* The data split and the step count, checked (the step count and the samples it plans within the
   bounds of train_args.h) and announced by rank 0; the buffers and the log of the loop.  An exit
   code: SR__EXIT_CONFIG when the plan is out of bounds or its buffers cannot be allocated. */
static int plan_run(sr__trainer *t) {
    const sr__train_args *a = &t->a;
    sr__plan *p = &t->plan;
    long long bs = a->per_device_train_batch_size;
    p->micro_per_epoch = (((long long)t->nsamples + t->ws - 1) / t->ws + bs - 1) / bs;
    p->steps_per_epoch = p->micro_per_epoch / a->gradient_accumulation_steps;
    if (p->steps_per_epoch < 1) p->steps_per_epoch = 1;
    /* at least 1: train_args requires max_steps or num_train_epochs to be positive */
    double steps = a->max_steps > 0 ? (double)a->max_steps : ceil(a->num_train_epochs * (double)p->steps_per_epoch);
    if (steps > (double)SR__TRAIN_MAX_STEPS) {
        sr__log(SR_LOG_ERROR,
                "[task] num_train_epochs = %g makes %.4g steps (%lld per epoch), more than the %lld a run "
                "may have; lower num_train_epochs or set max_steps",
                a->num_train_epochs, steps, p->steps_per_epoch, SR__TRAIN_MAX_STEPS);
        return SR__EXIT_CONFIG;
    }
    p->total_steps = (long long)steps;
    /* save_strategy / logging_strategy = epoch: at the end of every epoch; logging no: the last step */
    if (a->save_every == SR__EVERY_EPOCH) t->a.save_steps = p->steps_per_epoch;
    if (a->log_every == SR__EVERY_EPOCH) t->a.logging_steps = p->steps_per_epoch;
    if (a->log_every == SR__EVERY_NEVER) t->a.logging_steps = p->total_steps > 0 ? p->total_steps : 1;
    long long planned;
    if (__builtin_mul_overflow(p->total_steps, bs, &planned) ||
        __builtin_mul_overflow(planned, a->gradient_accumulation_steps, &planned) ||
        __builtin_mul_overflow(planned, (long long)t->ws, &planned) || planned > SR__TRAIN_MAX_SAMPLES) {
        sr__log(SR_LOG_ERROR,
                "[task] %lld steps x per_device_train_batch_size %lld x gradient_accumulation_steps %lld "
                "x %d ranks is more than the %lld samples (2^40) a run may plan, so that its sample and "
                "token counts stay within 64 bits; lower max_steps (or num_train_epochs) or the batch",
                p->total_steps, bs, a->gradient_accumulation_steps, t->ws, SR__TRAIN_MAX_SAMPLES);
        return SR__EXIT_CONFIG;
    }
    if (sr__sampler_init(&t->smp, t->nsamples, t->ws, t->rank, (uint64_t)a->seed) != 0)
        return out_of_memory("the sampler's permutation of the dataset's samples",
                             (unsigned long long)t->nsamples * sizeof *t->smp.perm);
    t->idx = sr__malloc((size_t)bs * sizeof *t->idx);
    if (!t->idx) return out_of_memory("a micro-batch's sample indices", (unsigned long long)bs * sizeof *t->idx);
    long long remaining = p->total_steps - t->ts.global_step;
    t->st_cap = remaining < 4096 ? (remaining > 0 ? remaining : 1) : 4096; /* grown as steps are done */
    t->step_times = sr__malloc((size_t)t->st_cap * sizeof *t->step_times);
    if (!t->step_times) return out_of_memory("the step times", (unsigned long long)t->st_cap * sizeof *t->step_times);
    char desc[512];
    sr__engine_describe(t->e, desc, sizeof desc);
    if (t->rank == 0) {
        printf("shardrun: %s\n", desc);
        char first[96] = "";
        if (t->nsamples < t->task_samples)
            snprintf(first, sizeof first, " (the first of %lld: max_train_samples)", (long long)t->task_samples);
        printf("shardrun: %lld samples%s, %lld per rank per epoch, batch %lld x %lld accumulation x %d rank%s = %lld "
               "per step; %lld steps (%lld per epoch)\n",
               (long long)t->nsamples, first, (long long)t->smp.per_rank, bs, a->gradient_accumulation_steps, t->ws,
               t->ws == 1 ? "" : "s", bs * a->gradient_accumulation_steps * t->ws, p->total_steps, p->steps_per_epoch);
    }
    t->log = sr__train_log_open(a, t->rank, t->ts.global_step);
    t->o = (sr__optim){0, a->adam_beta1, a->adam_beta2, a->adam_epsilon, a->weight_decay, a->max_grad_norm, 0, 0};
    t->t0 = t->last_log_t = sr__now_s();
    return SR__EXIT_OK;
}

/* Keeps one step's time; when the array cannot grow, the median is that of the steps kept. */
static void keep_step_time(sr__trainer *t, double seconds) {
    if (t->nst == t->st_cap) {
        double *g = sr__realloc(t->step_times, (size_t)(2 * t->st_cap) * sizeof *g);
        if (!g) return;
        t->step_times = g, t->st_cap *= 2;
    }
    t->step_times[t->nst++] = seconds;
}

/* ---- the loop -------------------------------------------------------------------------------- */

/* Optimizer step `step` (0-based): its micro-batches through the engine, then the update.  *loss:
   the step's mean loss over micro-batches and ranks.  0 or -1. */
static int train_step(sr__trainer *t, long long step, double *loss, sr__step_result *r) {
    const sr__train_args *a = &t->a;
    long long bs = a->per_device_train_batch_size, accum = a->gradient_accumulation_steps;
    long long epoch = step / t->plan.steps_per_epoch, in_epoch = step % t->plan.steps_per_epoch;
    double started = sr__now_s(), loss_sum = 0;
    long long step_tokens = 0;
    sr__profile_step_begin(&t->prof);
    for (int m = 0; m < accum; m++) {
        long long b = in_epoch * accum + m;
        int64_t n = sr__sampler_take(&t->smp, epoch, b * bs, bs, t->idx);
        double micro_loss;
        long long tokens;
        if (n <= 0) n = sr__sampler_take(&t->smp, epoch, 0, bs, t->idx); /* tiny datasets */
        if (sr__engine_micro_batch(t->e, step, m, (int)accum, t->idx, (int)n, &micro_loss, &tokens) != 0) return -1;
        loss_sum += micro_loss;
        t->samples_done += n;
        t->tokens_since_log += tokens;
        step_tokens += tokens;
    }
    /* the mean loss before the update: with nan_policy stop or skip_step a non-finite one withholds
       it (the same verdict on every rank: the mean is all-reduced) */
    double mean = loss_sum / (double)accum;
    if (sr__engine_avg(t->e, &mean) != 0) return -1;
    t->o.lr = sr__lr_at(a, step, t->plan.total_steps);
    t->o.guard_nonfinite = a->nan_policy != SR__NAN_WARN;
    t->o.nonfinite_loss = !isfinite(mean);
    if (sr__engine_step(t->e, &t->o, r) != 0) return -1;
    t->skipped += r->skipped;
    *loss = mean;
    if (!r->withheld) t->final_loss = mean; /* skip_step: the last applied step's */
    double seconds = sr__now_s() - started;
    keep_step_time(t, seconds);
    sr__engine_mem mem;
    sr__engine_memory(t->e, &mem);
    /* for `shardrun status` and the metrics: a few stores (base/watch.h) */
    sr__watch_trained(step + 1, mean, seconds > 0 ? (double)step_tokens * t->ws / seconds : 0, seconds, mem.peak);
    sr__profile_step_end(&t->prof, step + 1, seconds);
    t->ts.global_step = step + 1;
    return 0;
}

/* The bytes of the files under dir (a checkpoint's size for the metrics); 0 when unreadable. */
static unsigned long long tree_total;
static int add_file(const char *path, const struct stat *sb, int type, struct FTW *ftw) {
    (void)path, (void)ftw;
    if (type == FTW_F) tree_total += (unsigned long long)sb->st_size;
    return 0;
}
static unsigned long long tree_bytes(const char *dir) {
    tree_total = 0;
    if (nftw(dir, add_file, 16, FTW_PHYS) != 0) return 0;
    return tree_total;
}

/* Writes checkpoint-<global_step> (with trainer_state.json, loss.svg, save_total_limit), tells the
   agent.  0 or -1. */
static int save_now(sr__trainer *t, sr__progress_kind kind) {
    const sr__train_args *a = &t->a;
    long long step = t->ts.global_step;
    sr__watch_phase(SR__PHASE_CHECKPOINT);
    double began = sr__now_s();
    if (sr__records_save_checkpoint(t) != 0) return -1;
    t->saved_step = step;
    char what[1100];
    snprintf(what, sizeof what, "%lld %s/checkpoint-%lld", step, a->output_dir, step);
    sr__watch_checkpoint(sr__now_s() - began, t->rank == 0 ? tree_bytes(what + strcspn(what, " ") + 1) : 0);
    sr__progress_send(kind, what);
    return 0;
}

/* A checkpoint every save_steps steps and after the last one (save_final).  0 or -1. */
static int save_if_due(sr__trainer *t) {
    const sr__train_args *a = &t->a;
    long long step = t->ts.global_step;
    int last = step == t->plan.total_steps;
    if (!(a->save_steps > 0 && step % a->save_steps == 0) && !(last && a->save_final)) return 0;
    return save_now(t, SR__PROGRESS_CHECKPOINT);
}

/* Every rank was asked to stop (SIGTERM or SIGUSR1): the step just taken is saved, unless it
   already was, and the worker exits as a SIGTERM would have it, 143. */
static int stop_preempted(sr__trainer *t) {
    long long step = t->ts.global_step;
    char what[1100];
    const char *sig = sr__preempt_signal() == SIGUSR1 ? "SIGUSR1" : "SIGTERM";
    if (!t->a.output_dir) {
        if (t->rank == 0) printf("shardrun: preempted (%s) after step %lld; no output_dir, nothing saved\n", sig, step);
        return SR__EXIT_SIGNAL_BASE + SIGTERM;
    }
    if (t->saved_step != step && save_now(t, SR__PROGRESS_CHECKPOINT) != 0) return SR__EXIT_FAILED;
    snprintf(what, sizeof what, "%lld %s/checkpoint-%lld", step, t->a.output_dir, step);
    sr__progress_send(SR__PROGRESS_PREEMPTED, what);
    sr_report_bool(t->ctx, "preempted", 1);
    sr_report_int(t->ctx, "global_step", step);
    sr_report_str(t->ctx, "checkpoint", what + strcspn(what, " ") + 1);
    if (t->rank == 0)
        printf("shardrun: preempted (%s) after step %lld of %lld: %s/checkpoint-%lld holds it; the same job with "
               "resume_from_checkpoint = latest continues from there\n",
               sig, step, t->plan.total_steps, t->a.output_dir, step);
    return SR__EXIT_SIGNAL_BASE + SIGTERM;
}

static int train(sr__trainer *t) {
    char text[32];
    if (sr__records_membership(t) != 0) return SR__EXIT_FAILED; /* an elastic run's, first at its step */
    if (sr__eval_if_due(t, 1) != 0) return SR__EXIT_FAILED;     /* eval_on_start */
    sr__progress_send(SR__PROGRESS_STARTED, "training");
    t->saved_step = -1;
    sr__watch_plan(t->plan.total_steps);
    t->first_step = t->ts.global_step;
    for (long long step = t->ts.global_step; step < t->plan.total_steps; step++) {
        double loss;
        sr__step_result r;
        if (train_step(t, step, &loss, &r) != 0) return SR__EXIT_FAILED;
        int nan_rc = sr__nan_policy_after_step(t, loss, &r); /* stop: before anything of the step is kept */
        if (nan_rc != SR__EXIT_OK) return nan_rc;
        snprintf(text, sizeof text, "%lld", t->ts.global_step);
        sr__progress_send(SR__PROGRESS_STEP, text);
        sr__debug_kill_at(t->rank, sr_restart_count(t->ctx), t->ts.global_step);
        if (sr__trainer_log_step(t, loss, &r) != 0) return SR__EXIT_FAILED;
        sr__debug_pause_at(t->rank, sr_restart_count(t->ctx), t->ts.global_step); /* after the step's line */
        if (sr__eval_if_due(t, 0) != 0) return SR__EXIT_FAILED;
        if (save_if_due(t) != 0) return SR__EXIT_FAILED;
        int stop = sr__preempt_agreed(t->e);
        if (stop < 0) return SR__EXIT_FAILED;
        if (stop && step + 1 < t->plan.total_steps) return stop_preempted(t);
    }
    double runtime = sr__now_s() - t->t0; /* (the last step is always logged: its line replaced the bar) */
    if (t->rank == 0) sr__profile_print(&t->prof, 1);
    if (sr__records_finish(t, runtime) != 0) return SR__EXIT_FAILED; /* summary, load_best_model_at_end */
    if (sr__trainer_report(t, runtime) != 0) return SR__EXIT_FAILED;
    return sr__nan_policy_finish(t); /* warn: a final loss that is not finite fails the run */
}

static void teardown(sr__trainer *t) {
    free(t->step_times);
    free(t->resume_dir);
    free(t->settings);
    sr__records_free(t);
    if (t->log) fclose(t->log);
    free(t->idx);
    sr__sampler_free(&t->smp);
    sr__engine_free(t->e);
    if (t->state) t->ops->destroy(t->state);
    sr__model_free(t->model);
}

int sr__trainer_run(sr_ctx *ctx, const char *task_name, const sr_model_ops *ops) {
    sr__trainer t;
    held_stderr held;
    sr__preempt_install();
    hold_stderr(&held, sr_local_rank(ctx));
    int rc = setup(&t, ctx, task_name, ops);
    if (rc == SR__EXIT_OK) rc = plan_run(&t);
    if (rc == SR__EXIT_OK) rc = sr__resume_check_plan(&t);
    release_stderr(&held, rc != SR__EXIT_OK); /* set-up is over */
    if (rc == SR__EXIT_OK) rc = train(&t);
    teardown(&t);
    return rc;
}
