/* What rank 0 shows and keeps of each step (see trainer_internal.h). */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/strbuf.h"
#include "io/json.h"
#include "trainer/trainer_internal.h"

/* Seconds the rest of the run should take after the current step: the steps left at this run's mean
   training step time (evaluations taken out), plus each evaluation still due at the last one's
   runtime (none yet: not counted).  Negative: not known yet (no step taken). */
static double run_left(const sr__trainer *t, double elapsed) {
    long long step = t->ts.global_step, done = step - t->first_step;
    if (done <= 0) return -1;
    double per_step = (elapsed - t->eval_s) / (double)done;
    if (per_step < 0) per_step = 0;
    return per_step * (double)(t->plan.total_steps - step) + (double)sr__evals_left(t, step) * t->last_eval_s;
}

void sr__trainer_bar(sr__trainer *t, double loss, const char *doing, double doing_left) {
    enum { W = 30 };
    long long step = t->ts.global_step, total = t->plan.total_steps;
    char bar[W + 1], line[256];
    int fill = total > 0 ? (int)((double)W * (double)step / (double)total) : 0;
    for (int i = 0; i < W; i++) bar[i] = i < fill ? '#' : '.';
    bar[W] = 0;
    double elapsed = sr__now_s() - t->t0, left = run_left(t, elapsed);
    if (left >= 0 && doing_left > 0) left += doing_left;
    int n = snprintf(line, sizeof line, "[%s] %lld/%lld  ", bar, step, total);
    if (doing) n += snprintf(line + n, sizeof line - (size_t)n, "%s;", doing);
    else n += snprintf(line + n, sizeof line - (size_t)n, "loss %.4f ", loss);
    if (left >= 0) snprintf(line + n, sizeof line - (size_t)n, " %.1fs elapsed, %.1fs left", elapsed, left);
    else snprintf(line + n, sizeof line - (size_t)n, " %.1fs elapsed", elapsed);
    int len = (int)strlen(line);
    /* spaces over what a longer line before it left on the screen */
    printf("\r%s%*s", line, t->bar_len > len ? t->bar_len - len : 0, "");
    t->bar_len = len;
    fflush(stdout);
}

/* The step of a train_log.jsonl line: a whole line (a killed run may leave its last one cut
   short) holding an object whose first member is "step", a non-negative integer; else -1.  The
   rest is not read: a record an older shardrun wrote of a step whose loss was inf or nan (bare
   words, not JSON) is still that step's record. */
static long long line_step(const char *line, size_t len) {
    sr__json j;
    sr__json_num num;
    const char *key;
    size_t klen;
    long long step = -1;
    if (!len || line[len - 1] != '\n') return -1;
    sr__json_init(&j, line, len, NULL);
    if (sr__json_object(&j) == 0 && sr__json_member(&j, &key, &klen) == 1 && sr__json_key_is(key, klen, "step") &&
        sr__json_number(&j, &num) == 0 && num.is_uint && num.uint <= (uint64_t)INT64_MAX)
        step = (long long)num.uint;
    sr__json_free(&j);
    return step;
}

FILE *sr__train_log_open(const sr__train_args *a, int rank, long long resumed_step) {
    if (!a->output_dir || rank != 0) return NULL;
    if (sr__make_output_dir(a->output_dir) != 0) return NULL;
    char *p = sr__fmt("%s/train_log.jsonl", a->output_dir);
    if (!p) {
        sr__log(SR_LOG_WARN, "out of memory for the name of %s/train_log.jsonl; it is not written", a->output_dir);
        return NULL;
    }
    sr__buf kept = {0};
    FILE *old = resumed_step > 0 ? fopen(p, "r") : NULL;
    if (old) {
        char *line = NULL;
        size_t cap = 0;
        ssize_t n;
        while ((n = getline(&line, &cap, old)) > 0) {
            long long st = line_step(line, (size_t)n);
            if (st >= 0 && st <= resumed_step) sr__buf_add(&kept, line, (size_t)n);
        }
        free(line);
        fclose(old);
    }
    if (kept.oom) { /* the steps up to the resumed one would be lost: the file stays as it was */
        sr__log(SR_LOG_WARN, "out of memory keeping the first %lld steps of %s; it is not written", resumed_step, p);
        sr__buf_free(&kept);
        free(p);
        return NULL;
    }
    FILE *f = fopen(p, "w");
    if (!f) sr__log(SR_LOG_WARN, "cannot write %s", p);
    if (f && kept.n) fwrite(kept.s, 1, kept.n, f);
    sr__buf_free(&kept);
    free(p);
    return f;
}

int sr__trainer_log_step(sr__trainer *t, double loss, const sr__step_result *r) {
    long long step = t->ts.global_step, total = t->plan.total_steps;
    int last = step == total;
    if (!r->withheld) t->loss_sum += loss, t->loss_steps++; /* the summary's train_loss: applied steps */
    if (t->rank == 0 && t->tty) sr__trainer_bar(t, loss, NULL, 0);
    if (step % t->a.logging_steps != 0 && !last) return 0;
    if (sr__records_train_entry(t, loss, r) != 0) return -1; /* log_history, on every rank */
    /* the log line replaces the bar; the bar is drawn again below it */
    if (t->rank == 0 && t->tty) printf("\r%*s\r", t->bar_len, "");
    t->bar_len = 0;
    double now = sr__now_s();
    if (t->rank == 0) {
        double tok_s = (double)t->tokens_since_log * t->ws / (now - t->last_log_t);
        sr__engine_mem mem;
        sr__engine_memory(t->e, &mem);
        printf("step %lld/%lld  loss %.4f  lr %.3e  grad_norm %.4f  %.0f tokens/s  mem %.3f GB%s  epoch %.2f\n", step,
               total, loss, t->o.lr, r->grad_norm, tok_s, (double)mem.peak / 1e9,
               r->skipped    ? "  (fp16 overflow: step skipped)"
               : r->withheld ? "  (not finite: step skipped)"
                             : "",
               (double)step / (double)t->plan.steps_per_epoch);
        if (t->log) {
            /* JSON has no NaN or infinity: such a number is null, and its name is listed in
               "nonfinite" (an fp16 overflow's skipped step has no grad_norm; a diverged run's loss
               is nan) */
            const char *names[4] = {"loss", "learning_rate", "grad_norm", "loss_scale"};
            double v[4] = {loss, t->o.lr, r->grad_norm, r->loss_scale};
            char num[4][32];
            sr__buf nf = {0};
            for (int i = 0; i < 4; i++) {
                if (isfinite(v[i])) snprintf(num[i], sizeof num[i], "%.9g", v[i]);
                else
                    snprintf(num[i], sizeof num[i], "null"),
                        sr__buf_printf(&nf, "%s\"%s\"", nf.n ? ", " : "", names[i]);
            }
            int list = nf.n && !nf.oom;
            if (nf.oom)
                sr__log(SR_LOG_WARN,
                        "out of memory for the names of step %lld's values that are not finite: its "
                        "train_log.jsonl record has no \"nonfinite\" list",
                        step);
            fprintf(t->log,
                    "{\"step\": %lld, \"loss\": %s, \"learning_rate\": %s, \"grad_norm\": %s, "
                    "\"skipped\": %d, \"loss_scale\": %s%s%s%s}\n",
                    step, num[0], num[1], num[2], r->skipped || r->withheld, num[3], list ? ", \"nonfinite\": [" : "",
                    list ? nf.s : "", list ? "]" : "");
            sr__buf_free(&nf);
            fflush(t->log);
        }
    }
    if (t->rank == 0) sr__profile_print(&t->prof, 0);
    t->last_log_t = now;
    t->tokens_since_log = 0;
    return 0;
}
