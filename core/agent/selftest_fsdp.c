/*
 * selftest's FSDP step (see selftest.h): the GPT-2 task (examples/gpt2) trains one step of a small
 * model -- 2 blocks, 64 channels, 64 tokens, fp32 -- FULL_SHARD on the ranks under test, with and
 * without offload, and the same step on one CPU rank; the losses and the parameters after the step
 * are compared.
 *
 * Why the parameters show every gradient: the step is AdamW with learning rate 1, epsilon 1, no
 * weight decay, no clipping.  After its first step bias correction makes m = g and sqrt(v) = |g|,
 * so each parameter moves by exactly -g / (|g| + 1): a monotone function of its own gradient
 * element, computed on the host for offloaded shards and on the device otherwise.  Two runs that
 * start from the same weights (they depend only on the seed) agree on every parameter after the
 * step exactly when they agree on every gradient (within the tolerance).
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "agent/selftest.h"
#include "io/safetensors.h"

/* a deterministic corpus: paragraphs of 20-40 words, each longer than the 64 tokens a sample takes */
static int write_corpus(const char *path) {
    static const char *const words[] = {"the", "model", "shards", "every", "block", "and", "gathers", "its",
                                        "parameters", "before", "forward", "pass", "while", "optimizer", "updates",
                                        "only", "local", "gradients"};
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    unsigned long long s = 7;
    for (int p = 0; p < 120; p++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        int n = 20 + (int)((s >> 33) % 21);
        for (int w = 0; w < n; w++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            fprintf(f, "%s%s", w ? " " : "", words[(s >> 33) % (sizeof words / sizeof *words)]);
        }
        fprintf(f, ".\n\n");
    }
    return fclose(f);
}

/* One GPT-2 run: 0 when it trained its step and saved, else its exit code (log shown). */
static int train(const sr_st_fsdp *f, const char *name, const char *backend, int nproc, int batch,
                 const char *strategy, int offload) {
    char job[4200], log[4200], out[4200];
    snprintf(job, sizeof job, "%s/%s.ini", f->dir, name);
    snprintf(log, sizeof log, "%s/%s.log", f->dir, name);
    snprintf(out, sizeof out, "%s/%s", f->dir, name);
    FILE *j = fopen(job, "w");
    if (!j) return -1;
    int single = !f->passthrough || !f->passthrough[0];
    fprintf(j,
            "[shardrun]\ntask = gpt2\nplugins = torch,accelerate\nnproc_per_node = %d\n%s\n"
            "[torch]\nbackend = %s\n\n"
            "[accelerate]\nmixed_precision = no\nfsdp.sharding_strategy = %s\nfsdp.auto_wrap_policy = TRANSFORMER_BASED_WRAP\n"
            "fsdp.transformer_layer_cls_to_wrap = GPT2Block\nfsdp.state_dict_type = FULL_STATE_DICT\n"
            "fsdp.offload_params = %s\n\n"
            "[task]\nsize = tiny\nn_layer = 2\nn_embd = 64\nn_head = 4\nmax_length = 64\nmin_chars = 100\n"
            "data = %s/corpus.txt\nmax_steps = 1\nper_device_train_batch_size = %d\nlearning_rate = 1\n"
            "adam_epsilon = 1\nweight_decay = 0\nmax_grad_norm = 0\nlr_scheduler_type = constant\nwarmup_steps = 0\n"
            "logging_steps = 1\noutput_dir = %s\nsave_final = true\n",
            nproc, single ? "master_port = 0\n" : "", backend, strategy, offload ? "true" : "false", f->dir, batch, out);
    fclose(j);
    /* on a CPU, offload takes the GPU's staging path only when asked (the engine's testing aid) */
    const char *env = offload && !strcmp(backend, "gloo") ? "SHARDRUN_DEBUG_OFFLOAD_STAGING=1" : NULL;
    int rc = sr__st_subrun(job, log, env, f->passthrough);
    if (rc != 0 && !sr__st_stopped()) sr__st_show_log(log);
    return rc;
}

/* loss and grad_norm of step 1 in NAME/train_log.jsonl */
static int read_log(const char *dir, const char *name, double *loss, double *gnorm) {
    char path[4200], line[1024];
    snprintf(path, sizeof path, "%s/%s/train_log.jsonl", dir, name);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int ok = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    const char *l = ok ? strstr(line, "\"loss\": ") : NULL, *g = ok ? strstr(line, "\"grad_norm\": ") : NULL;
    if (!l || !g) return -1;
    *loss = strtod(l + 8, NULL);
    *gnorm = strtod(g + 13, NULL);
    return 0;
}

typedef struct diff {
    size_t tensors, elements, bad;
    double max_abs;
    char worst[200], first_bad[300];
} diff;

/* every tensor of two FULL_STATE_DICT checkpoints, element by element */
static int compare_ckpt(const char *a_path, const char *b_path, double atol, diff *d, char *err, size_t errlen) {
    memset(d, 0, sizeof *d);
    sr_st_file *a = sr__st_open(a_path, err, errlen), *b = a ? sr__st_open(b_path, err, errlen) : NULL;
    int rc = -1;
    if (!a || !b) goto done;
    if (sr__st_count(a) != sr__st_count(b)) {
        snprintf(err, errlen, "%zu tensors against %zu", sr__st_count(b), sr__st_count(a));
        goto done;
    }
    for (size_t i = 0; i < sr__st_count(a); i++) {
        const sr_st_tensor *ta = sr__st_at(a, i);
        const void *da, *db;
        sr__st_find(a, ta->name, &da);
        const sr_st_tensor *tb = sr__st_find(b, ta->name, &db);
        if (!tb || tb->nbytes != ta->nbytes || tb->dtype != ta->dtype) {
            snprintf(err, errlen, "tensor %s is missing or has another shape", ta->name);
            goto done;
        }
        size_t n = ta->nbytes / sr_dtype_size(ta->dtype);
        float *x = malloc(n * 4 + 4), *y = malloc(n * 4 + 4);
        if (!x || !y || sr__st_to_f32(ta, da, 0, n, x) != 0 || sr__st_to_f32(tb, db, 0, n, y) != 0) {
            free(x), free(y);
            snprintf(err, errlen, "tensor %s cannot be read as floats", ta->name);
            goto done;
        }
        for (size_t e = 0; e < n; e++) {
            double dv = fabs((double)x[e] - y[e]);
            if (!(dv <= atol)) {
                if (!d->bad++)
                    snprintf(d->first_bad, sizeof d->first_bad, "%s[%zu]: %.9g against %.9g", ta->name, e, y[e], x[e]);
            }
            if (dv > d->max_abs) d->max_abs = dv, snprintf(d->worst, sizeof d->worst, "%s[%zu]", ta->name, e);
        }
        d->tensors++, d->elements += n;
        free(x), free(y);
    }
    rc = 0;
done:
    if (a) sr__st_close(a);
    if (b) sr__st_close(b);
    return rc;
}

static void one_case(sr_st_lines *l, const sr_st_fsdp *f, int batch, int offload) {
    char name[64], line[96], detail[1200];
    snprintf(name, sizeof name, "fsdp-%s-full_shard%s", f->half, offload ? "-offload" : "");
    snprintf(line, sizeof line, "gpt2 step FULL_SHARD%s x%d vs 1 CPU rank", offload ? " + offload" : "", f->nproc);
    int rc = train(f, name, f->backend, f->nproc, batch, "FULL_SHARD", offload);
    if (rc != 0) {
        snprintf(detail, sizeof detail, "the run failed (exit %d); its output: %s/%s.log", rc, f->dir, name);
        sr__st_add(l, f->half, "FAIL", "fsdp", line, detail, NULL);
        return;
    }
    double lr, gr, lc, gc;
    char err[600] = "", ref_ck[4200], ck[4200];
    if (read_log(f->dir, "fsdp-reference", &lr, &gr) != 0 || read_log(f->dir, name, &lc, &gc) != 0) {
        snprintf(detail, sizeof detail, "no step-1 line in %s/%s/train_log.jsonl", f->dir, name);
        sr__st_add(l, f->half, "FAIL", "fsdp", line, detail, NULL);
        return;
    }
    snprintf(ref_ck, sizeof ref_ck, "%s/fsdp-reference/checkpoint-1/model.safetensors", f->dir);
    snprintf(ck, sizeof ck, "%s/%s/checkpoint-1/model.safetensors", f->dir, name);
    /* fp32 on both sides: sums in another order (ranks, kernels) move a loss by ~1e-7 relative
       and a parameter after the step by ~1e-7 absolute; a wrong kernel moves them by far more */
    const double loss_rtol = 1e-5, norm_rtol = 1e-4, atol = 1e-5;
    diff d;
    if (compare_ckpt(ref_ck, ck, atol, &d, err, sizeof err) != 0) {
        snprintf(detail, sizeof detail, "checkpoints cannot be compared: %s", err);
        sr__st_add(l, f->half, "FAIL", "fsdp", line, detail, NULL);
        return;
    }
    double dl = fabs(lc - lr) / fabs(lr), dg = fabs(gc - gr) / (gr > 0 ? gr : 1);
    int ok = dl <= loss_rtol && dg <= norm_rtol && d.bad == 0;
    char metrics[200];
    snprintf(metrics, sizeof metrics, "loss=%.9g loss_ref=%.9g grad_norm=%.9g grad_norm_ref=%.9g max_param_diff=%.3g", lc,
             lr, gc, gr, d.max_abs);
    snprintf(detail, sizeof detail,
             "loss %.7g vs %.7g (rel %.2g, tol %.0e); grad_norm %.7g vs %.7g (rel %.2g, tol %.0e); %zu tensors, %zu "
             "elements after the step: %zu off by more than %.0e (max %.2g at %s)%s%s",
             lc, lr, dl, loss_rtol, gc, gr, dg, norm_rtol, d.tensors, d.elements, d.bad, atol, d.max_abs, d.worst,
             d.bad ? "; first: " : "", d.bad ? d.first_bad : "");
    sr__st_add(l, f->half, ok ? "PASS" : "FAIL", "fsdp", line, detail, metrics);
}

void sr__st_fsdp(sr_st_lines *l, const sr_st_fsdp *f) {
    char path[4200];
    snprintf(path, sizeof path, "%s/corpus.txt", f->dir);
    struct stat st;
    if (stat(path, &st) != 0 && write_corpus(path) != 0) {
        sr__st_add(l, f->half, "FAIL", "fsdp", "gpt2 step", "cannot write the corpus", NULL);
        return;
    }
    /* the reference, once per selftest: one CPU rank, the whole batch */
    int batch = f->nproc >= 8 ? 1 : 8 / f->nproc;
    snprintf(path, sizeof path, "%s/fsdp-reference/checkpoint-1/model.safetensors", f->dir);
    if (stat(path, &st) != 0) {
        char *none[] = {NULL};
        char name[] = "fsdp-reference";
        sr_st_fsdp ref = *f;
        ref.passthrough = none; /* one rank on this node */
        int rc = train(&ref, name, "gloo", 1, batch * f->nproc, "NO_SHARD", 0);
        if (rc != 0) {
            char detail[300];
            snprintf(detail, sizeof detail, "the one-rank CPU reference failed (exit %d); its output: %s/%s.log%s", rc,
                     f->dir, name, rc == 2 ? " (is examples/gpt2 built? it needs OpenBLAS)" : "");
            sr__st_add(l, f->half, "FAIL", "fsdp", "gpt2 step reference (1 CPU rank)", detail, NULL);
            return;
        }
    }
    if (!sr__st_stopped()) one_case(l, f, batch, 0);
    if (!sr__st_stopped()) one_case(l, f, batch, 1);
}
