/* This rank's results at the end of a run (see trainer_internal.h): the names transformers'
   Trainer and accelerate users know (train_runtime, train_samples_per_second, ...) and the
   engine's own (memory, parameter statistics for parity checks). */
#include <stdlib.h>
#include <sys/resource.h>

#include "trainer/trainer_internal.h"

static double peak_rss_gb(void) {
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return (double)r.ru_maxrss * 1024.0 / 1e9; /* ru_maxrss is in KiB on Linux */
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int sr__trainer_report(sr__trainer *t, double runtime) {
    sr_ctx *ctx = t->ctx;
    const sr__fsdp_config *cfg = t->cfg;
    sr__engine_mem mem;
    sr__engine_memory(t->e, &mem);
    double psum = 0, psq = 0;
    if (sr__engine_param_stats(t->e, &psum, &psq) != 0) return -1;
    qsort(t->step_times, (size_t)t->nst, sizeof *t->step_times, cmp_double);
    sr_report_bool(ctx, "fsdp_enabled", cfg->enabled);
    sr_report_int(ctx, "world_size", t->ws);
    sr_report_int(ctx, "model_params", (long long)mem.params);
    sr_report_num(ctx, "peak_mem_gb", (double)mem.peak / 1e9);
    sr_report_num(ctx, "final_loss", t->final_loss);
    sr_report_num(ctx, "train_runtime", runtime);
    sr_report_num(ctx, "train_samples_per_second", runtime > 0 ? (double)t->samples_done * t->ws / runtime : 0);
    sr_report_int(ctx, "global_step", t->ts.global_step);
    sr_report_str(ctx, "sharding_strategy", cfg->enabled ? sr__strategy_name(cfg->strategy) : "DDP");
    sr_report_int(ctx, "skipped_steps", t->skipped);
    sr_report_int(ctx, "nan_steps", t->nan_steps); /* loss or grad norm not finite (nan_policy) */
    if (t->a.nan_policy == SR__NAN_SKIP_STEP) sr_report_int(ctx, "nan_steps_skipped", t->nan_skipped);
    sr_report_num(ctx, "step_time_ms", t->nst ? t->step_times[t->nst / 2] * 1e3 : 0); /* the median */
    sr_report_int(ctx, "engine_persistent_bytes", (long long)mem.persistent);
    /* (frozen x 4 + trainable x 16) / shards: what persistent bytes should be (docs/model-tasks.md) */
    sr_report_int(ctx, "engine_persistent_formula_bytes", (long long)mem.expected);
    sr_report_int(ctx, "frozen_params", (long long)mem.frozen);
    sr_report_int(ctx, "trainable_params", (long long)(mem.params - mem.frozen));
    sr_report_int(ctx, "engine_reduce_scatter_bytes", (long long)mem.rs_bytes);
    sr_report_int(ctx, "engine_pool_bytes", (long long)mem.pool);
    sr_report_num(ctx, "peak_rss_gb", peak_rss_gb());
    if (t->a.init_weights && !t->a.resume_from_checkpoint)
        sr_report_int(ctx, "init_weights_bytes_read", t->weights_bytes);
    if (t->eval_step >= 0) { /* the last evaluation: the same on every rank */
        if (t->neval) sr_report_num(ctx, "eval_loss", t->eval_metric);
        if (t->choice.n) sr_report_num(ctx, "eval_accuracy", t->eval_accuracy); /* eval_files */
        sr_report_int(ctx, "eval_step", t->eval_step);
    }
    sr__profile_report(&t->prof, ctx);
    sr_report_num(ctx, "param_sum", psum);
    sr_report_num(ctx, "param_sumsq", psq);
    return 0;
}
