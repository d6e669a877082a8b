#define _GNU_SOURCE
#include "trainer/trainer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "base/strbuf.h"
#include "fsdp/checkpoint.h"
#include "fsdp/engine.h"
#include "task/ctx.h"
#include "trainer/sampler.h"
#include "trainer/train_args.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double peak_rss_gb(void) {
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return (double)r.ru_maxrss * 1024.0 / 1e9; /* ru_maxrss is in KiB on Linux */
}

/* Rank 0's progress bar, redrawn in place ('\r') when the output reaches a terminal. */
static void progress(long long step, long long total, double elapsed, double loss) {
    enum { W = 30 };
    char bar[W + 1];
    int fill = (int)((double)W * (double)step / (double)total);
    for (int i = 0; i < W; i++) bar[i] = i < fill ? '#' : '.';
    bar[W] = 0;
    double eta = step > 0 ? elapsed / (double)step * (double)(total - step) : 0;
    printf("\r[%s] %lld/%lld  loss %.4f  %.1fs elapsed, %.1fs left", bar, step, total, loss, elapsed, eta);
    fflush(stdout);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

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

typedef struct plan {
    long long steps_per_epoch, total_steps, micro_per_epoch;
} plan;

/* Steps per epoch as transformers' Trainer counts them: micro-batches per epoch (the sampler's
   share of this rank, DataLoader without drop_last) // gradient_accumulation_steps. */
static void make_plan(const sr__train_args *a, const sr__sampler *s, plan *p) {
    p->micro_per_epoch = (s->per_rank + a->per_device_train_batch_size - 1) / a->per_device_train_batch_size;
    p->steps_per_epoch = p->micro_per_epoch / a->gradient_accumulation_steps;
    if (p->steps_per_epoch < 1) p->steps_per_epoch = 1;
    /* at least 1: train_args requires max_steps or num_train_epochs to be positive */
    p->total_steps = a->max_steps > 0 ? a->max_steps : (long long)ceil(a->num_train_epochs * (double)p->steps_per_epoch);
}

/* output_dir/train_log.jsonl: one JSON line per logged step (rank 0).  A resumed run keeps the
   lines up to the step it resumed from and drops those a killed run wrote after it. */
static FILE *open_log(const sr__train_args *a, int rank, long long resumed_step) {
    if (!a->output_dir || rank != 0) return NULL;
    if (sr__make_output_dir(a->output_dir) != 0) return NULL;
    char *p = sr__fmt("%s/train_log.jsonl", a->output_dir);
    char *kept = NULL;
    size_t kept_len = 0;
    FILE *old = resumed_step > 0 ? fopen(p, "r") : NULL;
    if (old) {
        FILE *mem = open_memstream(&kept, &kept_len);
        char line[4096];
        long long st;
        while (fgets(line, sizeof line, old))
            if (sscanf(line, "{\"step\": %lld", &st) == 1 && st <= resumed_step) fputs(line, mem);
        fclose(mem);
        fclose(old);
    }
    FILE *f = fopen(p, "w");
    if (!f) sr__log(SR_LOG_WARN, "cannot write %s", p);
    if (f && kept) fwrite(kept, 1, kept_len, f);
    free(kept);
    free(p);
    return f;
}

int sr__trainer_run(sr_ctx *ctx, const char *task_name, const sr_model_ops *ops) {
    sr__train_args a;
    held_stderr held;
    hold_stderr(&held, sr_local_rank(ctx));
    if (sr__train_args_read(ctx, &a) != 0) {
        release_stderr(&held, 1);
        return SR_EXIT_CONFIG;
    }
    int rank = sr_rank(ctx), ws = sr_world_size(ctx), tty = sr__ctx_tty(ctx);
    sr_model *model = sr__model_new();
    void *state = ops->create(ctx, model);
    if (!state) {
        sr__log(SR_LOG_ERROR, "task %s: create() failed (see above)", task_name);
        sr__model_free(model);
        release_stderr(&held, 1);
        return SR_EXIT_FAILED;
    }
    int rc = SR_EXIT_FAILED;
    sr__engine *e = NULL;
    sr__sampler smp = {0};
    int64_t *idx = NULL;
    FILE *log = NULL;
    double *step_times = NULL;
    rc = SR_EXIT_CONFIG; /* a bad description or configuration: nothing has trained yet */
    if (sr__ctx_check_task_keys(ctx, task_name, sr__trainer_keys) != 0 || sr__model_check(model, task_name) != 0) goto out;
    e = sr__engine_create(ctx, task_name, ops, state, model, (uint64_t)a.seed);
    if (!e) goto out;
    rc = SR_EXIT_FAILED;
    const sr__fsdp_config *cfg = sr__engine_config(e);

    sr__train_state ts = {0, a.seed};
    long long weights_bytes = 0;
    char *resume = NULL;
    if (a.resume_from_checkpoint) {
        resume = strcmp(a.resume_from_checkpoint, "latest") ? strdup(a.resume_from_checkpoint) : sr__ckpt_latest(a.output_dir);
        if (!resume) {
            sr__log(SR_LOG_ERROR, "resume_from_checkpoint: no checkpoint-N folder in %s; train without "
                            "resume_from_checkpoint first, or name a checkpoint folder", a.output_dir);
            rc = SR_EXIT_CONFIG;
            goto out;
        }
    }
    if (resume) {
        int lrc = sr__ckpt_load(e, resume, &ts);
        if (rank == 0 && lrc == 0) printf("shardrun: resumed from %s at step %lld\n", resume, ts.global_step);
        free(resume);
        if (lrc != 0) goto out;
        if (ts.seed != a.seed && rank == 0)
            printf("shardrun: note: the checkpoint was trained with seed %lld; continuing with its data order\n", ts.seed);
        a.seed = ts.seed;
        if (a.init_weights && rank == 0)
            printf("shardrun: note: init_weights is not read: the checkpoint holds the parameters\n");
    } else if (a.init_weights) {
        if (sr__engine_load_weights(e, a.init_weights, &weights_bytes) != 0) goto out;
        if (rank == 0) printf("shardrun: initial weights from %s\n", a.init_weights);
    } else if (sr__engine_init_params(e) != 0) {
        goto out;
    }

    int64_t nsamples = ops->num_samples(state);
    if (nsamples <= 0) {
        sr__log(SR_LOG_ERROR, "task %s has no training samples", task_name);
        goto out;
    }
    release_stderr(&held, 0); /* set-up is over */
    sr__sampler_init(&smp, nsamples, ws, rank, (uint64_t)a.seed);
    plan pl;
    make_plan(&a, &smp, &pl);
    char desc[512];
    sr__engine_describe(e, desc, sizeof desc);
    if (rank == 0) {
        printf("shardrun: %s\n", desc);
        printf("shardrun: %lld samples, %lld per rank per epoch, batch %lld x %lld accumulation x %d ranks = %lld per "
               "step; %lld steps (%lld per epoch)\n", (long long)nsamples, (long long)smp.per_rank,
               a.per_device_train_batch_size, a.gradient_accumulation_steps, ws,
               a.per_device_train_batch_size * a.gradient_accumulation_steps * ws, pl.total_steps, pl.steps_per_epoch);
    }
    idx = malloc((size_t)a.per_device_train_batch_size * sizeof *idx);
    log = open_log(&a, rank, ts.global_step);
    sr__optim o = {0, a.adam_beta1, a.adam_beta2, a.adam_epsilon, a.weight_decay, a.max_grad_norm};
    step_times = calloc((size_t)(pl.total_steps + 1), sizeof *step_times);
    int nst = 0, skipped = 0;
    double t0 = now_s(), last_log_t = t0, final_loss = NAN;
    long long samples_done = 0, tokens_since_log = 0;
    for (long long step = ts.global_step; step < pl.total_steps; step++) {
        double ts0 = now_s(), loss_sum = 0;
        long long epoch = step / pl.steps_per_epoch, in_epoch = step % pl.steps_per_epoch;
        for (int m = 0; m < a.gradient_accumulation_steps; m++) {
            long long b = in_epoch * a.gradient_accumulation_steps + m;
            int64_t n = sr__sampler_take(&smp, epoch, b * a.per_device_train_batch_size, a.per_device_train_batch_size, idx);
            double loss;
            long long tokens;
            if (n <= 0) n = sr__sampler_take(&smp, epoch, 0, a.per_device_train_batch_size, idx); /* tiny datasets */
            if (sr__engine_micro_batch(e, step, m, (int)a.gradient_accumulation_steps, idx, (int)n, &loss, &tokens) != 0)
                goto out;
            loss_sum += loss;
            samples_done += n;
            tokens_since_log += tokens;
        }
        o.lr = sr__lr_at(&a, step, pl.total_steps);
        sr__step_result r;
        if (sr__engine_step(e, &o, &r) != 0) goto out;
        skipped += r.skipped;
        double loss = sr__engine_mean(e, loss_sum / (double)a.gradient_accumulation_steps);
        final_loss = loss;
        step_times[nst++] = now_s() - ts0;
        ts.global_step = step + 1;
        int last = step + 1 == pl.total_steps;
        if (rank == 0 && tty) progress(ts.global_step, pl.total_steps, now_s() - t0, loss);
        if (rank == 0 && (ts.global_step % a.logging_steps == 0 || last)) {
            if (tty) printf("\r"); /* the log line replaces the bar; the bar is drawn again below it */
            double t = now_s(), tok_s = (double)tokens_since_log * ws / (t - last_log_t);
            sr__engine_mem mem;
            sr__engine_memory(e, &mem);
            printf("step %lld/%lld  loss %.4f  lr %.3e  grad_norm %.4f  %.0f tokens/s  mem %.3f GB%s  epoch %.2f\n",
                   ts.global_step, pl.total_steps, loss, o.lr, r.grad_norm, tok_s, (double)mem.peak / 1e9,
                   r.skipped ? "  (fp16 overflow: step skipped)" : "", (double)ts.global_step / (double)pl.steps_per_epoch);
            if (log) {
                char gn[32] = "null"; /* JSON has no NaN: an overflowed step has no norm */
                if (isfinite(r.grad_norm)) snprintf(gn, sizeof gn, "%.9g", r.grad_norm);
                fprintf(log, "{\"step\": %lld, \"loss\": %.9g, \"learning_rate\": %.9g, \"grad_norm\": %s, "
                             "\"skipped\": %d, \"loss_scale\": %.9g}\n",
                        ts.global_step, loss, o.lr, gn, r.skipped, r.loss_scale);
                fflush(log);
            }
            last_log_t = t;
            tokens_since_log = 0;
        } else if (ts.global_step % a.logging_steps == 0 || last) {
            last_log_t = now_s();
            tokens_since_log = 0;
        }
        if ((a.save_steps > 0 && ts.global_step % a.save_steps == 0) || (last && a.save_final)) {
            if (sr__ckpt_save(e, a.output_dir, &ts) != 0) goto out;
            if (rank == 0) printf("shardrun: saved %s/checkpoint-%lld (%s)\n", a.output_dir, ts.global_step,
                                  sr__state_dict_name(cfg->state_dict));
        }
    }
    double runtime = now_s() - t0; /* (the last step is always logged: its line replaced the bar) */
    sr__engine_mem mem;
    sr__engine_memory(e, &mem);
    double psum = 0, psq = 0;
    if (sr__engine_param_stats(e, &psum, &psq) != 0) goto out;
    qsort(step_times, (size_t)nst, sizeof *step_times, cmp_double);
    sr_report_bool(ctx, "fsdp_enabled", cfg->enabled);
    sr_report_int(ctx, "world_size", ws);
    sr_report_int(ctx, "model_params", (long long)mem.params);
    sr_report_num(ctx, "peak_mem_gb", (double)mem.peak / 1e9);
    sr_report_num(ctx, "final_loss", final_loss);
    sr_report_num(ctx, "train_runtime", runtime);
    sr_report_num(ctx, "train_samples_per_second", runtime > 0 ? (double)samples_done * ws / runtime : 0);
    sr_report_int(ctx, "global_step", ts.global_step);
    sr_report_str(ctx, "sharding_strategy", cfg->enabled ? sr__strategy_name(cfg->strategy) : "DDP");
    sr_report_int(ctx, "skipped_steps", skipped);
    sr_report_num(ctx, "step_time_ms", nst ? step_times[nst / 2] * 1e3 : 0);
    sr_report_int(ctx, "engine_persistent_bytes", (long long)mem.persistent);
    sr_report_int(ctx, "engine_pool_bytes", (long long)mem.pool);
    sr_report_num(ctx, "peak_rss_gb", peak_rss_gb());
    if (a.init_weights && !a.resume_from_checkpoint) sr_report_int(ctx, "init_weights_bytes_read", weights_bytes);
    sr_report_num(ctx, "param_sum", psum);
    sr_report_num(ctx, "param_sumsq", psq);
    rc = SR_EXIT_OK;
out:
    release_stderr(&held, rc != 0);
    free(step_times);
    if (log) fclose(log);
    free(idx);
    sr__sampler_free(&smp);
    sr__engine_free(e);
    ops->destroy(state);
    sr__model_free(model);
    return rc;
}
