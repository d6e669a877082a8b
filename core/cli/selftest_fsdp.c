/*
 * selftest's FSDP step (see selftest.h): the GPT-2 task (models/gpt2) trains one step of a small
 * model -- 2 blocks, 64 channels, 64 tokens -- FULL_SHARD on the ranks under test, fp32 with and
 * without offload (and bf16 on GPUs), and the same step in fp32 on one CPU rank; the losses, the
 * grad norms and every gradient are compared.
 *
 * How the checkpoints give every gradient: the step is AdamW with learning rate 1, epsilon 1, no
 * weight decay, no clipping.  After its first step bias correction makes m = g and sqrt(v) = |g|,
 * so each parameter moves by exactly d = -g / (|g| + 1), and g = -d / (1 - |d|).  The weights
 * before the step come from one more CPU run with learning rate 0 (initial weights depend only on
 * the seed, on every world size and device).
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/selftest_fsdp.h"
#include "cli/selftest_lines.h"
#include "cli/selftest_subrun.h"
#include "base/alloc.h"
#include "config/enums.h"
#include "io/safetensors.h"

/* a deterministic corpus: paragraphs of 20-40 words, each longer than the 64 tokens a sample takes */
static int write_corpus(const char *path) {
    static const char *const words[] = {"the",     "model",     "shards",     "every",  "block",   "and",
                                        "gathers", "its",       "parameters", "before", "forward", "pass",
                                        "while",   "optimizer", "updates",    "only",   "local",   "gradients"};
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
static int train(const sr__selftest_fsdp_args *f, const char *name, const char *backend, int nproc, int batch,
                 const char *strategy, int offload, const char *precision, const char *lr) {
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
            "[accelerate]\nmixed_precision = %s\nfsdp.sharding_strategy = %s\nfsdp.auto_wrap_policy = "
            "TRANSFORMER_BASED_WRAP\n"
            "fsdp.transformer_layer_cls_to_wrap = GPT2Block\nfsdp.state_dict_type = FULL_STATE_DICT\n"
            "fsdp.offload_params = %s\n\n"
            "[task]\nsize = tiny\nn_layer = 2\nn_embd = 64\nn_head = 4\nmax_length = 64\nmin_chars = 100\n"
            "data = %s/corpus.txt\nmax_steps = 1\nper_device_train_batch_size = %d\nlearning_rate = %s\n"
            "adam_epsilon = 1\nweight_decay = 0\nmax_grad_norm = 0\nlr_scheduler_type = constant\nwarmup_steps = 0\n"
            "logging_steps = 1\noutput_dir = %s\nsave_final = true\n",
            nproc, single ? "master_port = 0\n" : "", backend, precision, strategy, offload ? "true" : "false", f->dir,
            batch, lr, out);
    fclose(j);
    /* on a CPU, offload takes the GPU's staging path only when asked (the engine's testing aid) */
    const char *env = offload && !strcmp(backend, "gloo") ? "SHARDRUN_DEBUG_OFFLOAD_STAGING=1" : NULL;
    int rc = sr__selftest_subrun(job, log, env, f->passthrough);
    if (rc != 0 && !sr__selftest_stopped()) sr__selftest_show_log(log);
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

static float *tensor_f32(const sr__st_file *f, const char *name, size_t *n) {
    const void *data;
    const sr__st_tensor *t = sr__st_find(f, name, &data);
    if (!t) return NULL;
    *n = t->nbytes / sr_dtype_size(t->dtype);
    float *x = sr__malloc(*n * 4 + 4);
    if (x && sr__st_to_f32(t, data, 0, *n, x) != 0) {
        free(x);
        return NULL;
    }
    return x;
}

/* The gradient element behind a parameter's move d = after - before: d = -g / (|g| + 1). */
static double grad_of(float before, float after) {
    double d = (double)after - before;
    return -d / (1.0 - fabs(d));
}

/* every gradient of a run (its checkpoint after the step, with the initial weights) against the
   reference's, tensor by tensor and element by element */
int sr__selftest_compare_grads(const char *p0_path, const char *ref_path, const char *path, const sr__selftest_tols *t,
                               sr__selftest_diff *d, char *err, size_t errlen) {
    memset(d, 0, sizeof *d);
    sr__st_file *p0 = sr__st_open(p0_path, err, errlen), *a = p0 ? sr__st_open(ref_path, err, errlen) : NULL,
                *b = a ? sr__st_open(path, err, errlen) : NULL;
    int rc = -1;
    if (!b) goto done;
    if (sr__st_count(a) != sr__st_count(b) || sr__st_count(a) != sr__st_count(p0)) {
        snprintf(err, errlen, "%zu tensors against %zu", sr__st_count(b), sr__st_count(a));
        goto done;
    }
    for (size_t i = 0; i < sr__st_count(a); i++) {
        const char *name = sr__st_at(a, i)->name;
        size_t n0 = 0, na = 0, nb = 0;
        float *x0 = tensor_f32(p0, name, &n0), *xa = tensor_f32(a, name, &na), *xb = tensor_f32(b, name, &nb);
        if (!x0 || !xa || !xb || n0 != na || na != nb) {
            free(x0), free(xa), free(xb);
            snprintf(err, errlen, "tensor %s is missing, unreadable or of another size", name);
            goto done;
        }
        double num = 0, den = 0, gmax = 0;
        for (size_t e = 0; e < na; e++) {
            double ga = grad_of(x0[e], xa[e]);
            if (fabs(ga) > gmax) gmax = fabs(ga);
        }
        for (size_t e = 0; e < na; e++) {
            double ga = grad_of(x0[e], xa[e]), gb = grad_of(x0[e], xb[e]), dv = fabs(gb - ga);
            num += dv * dv, den += ga * ga;
            if (!(dv <= t->elem_atol * gmax) && t->elem_atol > 0 && !d->bad_elems++)
                snprintf(d->first_bad, sizeof d->first_bad, "gradient %s[%zu] %.7g, reference %.7g", name, e, gb, ga);
            if (dv != dv && !d->bad_elems++) /* NaN */
                snprintf(d->first_bad, sizeof d->first_bad, "gradient %s[%zu] is NaN", name, e);
        }
        double rel = den > 0 ? sqrt(num / den) : sqrt(num);
        if (!(rel <= t->tensor_rtol)) d->bad_tensors++;
        if (!d->tensors || !(rel <= d->worst_rel)) d->worst_rel = rel, snprintf(d->worst, sizeof d->worst, "%s", name);
        d->tensors++, d->elements += na;
        free(x0), free(xa), free(xb);
    }
    rc = 0;
done:
    if (p0) sr__st_close(p0);
    if (a) sr__st_close(a);
    if (b) sr__st_close(b);
    return rc;
}

static void one_case(sr__selftest_lines *l, const sr__selftest_fsdp_args *f, int batch, int offload,
                     const char *precision) {
    char name[96], line[128], detail[1500];
    int bf16 = !strcmp(precision, sr__precision_name(SR__PRECISION_BF16));
    snprintf(name, sizeof name, "fsdp-%s-full_shard%s%s", f->half, offload ? "-offload" : "", bf16 ? "-bf16" : "");
    snprintf(line, sizeof line, "gpt2 step FULL_SHARD%s%s x%d vs 1 CPU rank", offload ? " + offload" : "",
             bf16 ? " bf16" : "", f->nproc);
    int rc = train(f, name, f->backend, f->nproc, batch, sr__strategy_name(SR__FULL_SHARD), offload, precision, "1");
    if (rc != 0) {
        snprintf(detail, sizeof detail, "the run failed (exit %d); its output: %s/%s.log", rc, f->dir, name);
        sr__selftest_add(l, f->half, "FAIL", "fsdp", line, detail, NULL);
        return;
    }
    double lr, gr, lc, gc;
    char err[600] = "", p0[4200], ref_ck[4200], ck[4200];
    char ref[64];
    snprintf(ref, sizeof ref, "fsdp-reference-batch%d", batch * f->nproc);
    if (read_log(f->dir, ref, &lr, &gr) != 0 || read_log(f->dir, name, &lc, &gc) != 0) {
        snprintf(detail, sizeof detail, "no step-1 line in %s/%s/train_log.jsonl", f->dir, name);
        sr__selftest_add(l, f->half, "FAIL", "fsdp", line, detail, NULL);
        return;
    }
    snprintf(p0, sizeof p0, "%s/fsdp-initial/checkpoint-1/model.safetensors", f->dir);
    snprintf(ref_ck, sizeof ref_ck, "%s/%s/checkpoint-1/model.safetensors", f->dir, ref);
    snprintf(ck, sizeof ck, "%s/%s/checkpoint-1/model.safetensors", f->dir, name);
    const sr__selftest_tols t =
        bf16 ? (sr__selftest_tols){2e-2, 5e-2, 5e-2, 0} : (sr__selftest_tols){1e-5, 1e-4, 1e-4, 1e-4};
    sr__selftest_diff d;
    if (sr__selftest_compare_grads(p0, ref_ck, ck, &t, &d, err, sizeof err) != 0) {
        snprintf(detail, sizeof detail, "checkpoints cannot be compared: %s", err);
        sr__selftest_add(l, f->half, "FAIL", "fsdp", line, detail, NULL);
        return;
    }
    double dl = fabs(lc - lr) / fabs(lr), dg = fabs(gc - gr) / (gr > 0 ? gr : 1);
    int ok = dl <= t.loss_rtol && dg <= t.norm_rtol && d.bad_tensors == 0 && d.bad_elems == 0;
    char metrics[300];
    snprintf(metrics, sizeof metrics,
             "loss=%.9g loss_ref=%.9g grad_norm=%.9g grad_norm_ref=%.9g worst_tensor_grad_rel=%.3g", lc, lr, gc, gr,
             d.worst_rel);
    char elems[120] = "";
    if (t.elem_atol > 0)
        snprintf(elems, sizeof elems, ", %zu elements off by more than %.0e of their tensor's largest", d.bad_elems,
                 t.elem_atol);
    snprintf(detail, sizeof detail,
             "loss %.7g vs %.7g (rel %.2g, tol %.0e); grad_norm %.7g vs %.7g (rel %.2g, tol %.0e); every gradient of "
             "%zu tensors (%zu elements): worst relative L2 difference %.2g in %s (tol %.0e)%s%s%s",
             lc, lr, dl, t.loss_rtol, gc, gr, dg, t.norm_rtol, d.tensors, d.elements, d.worst_rel, d.worst,
             t.tensor_rtol, elems, d.bad_elems ? "; first: " : "", d.bad_elems ? d.first_bad : "");
    sr__selftest_add(l, f->half, ok ? "PASS" : "FAIL", "fsdp", line, detail, metrics);
}

/* A one-CPU-rank run (reference or initial weights), once per selftest. */
static int cpu_run(sr__selftest_lines *l, const sr__selftest_fsdp_args *f, const char *name, int batch, const char *lr,
                   const char *what) {
    char path[4200];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s/checkpoint-1/model.safetensors", f->dir, name);
    if (stat(path, &st) == 0) return 0;
    char *none[] = {NULL};
    sr__selftest_fsdp_args one = *f;
    one.passthrough = none; /* one rank on this node */
    int rc = train(&one, name, "gloo", 1, batch, sr__strategy_name(SR__NO_SHARD), 0,
                   sr__precision_name(SR__PRECISION_NO), lr);
    if (rc != 0) {
        char detail[600];
        snprintf(detail, sizeof detail, "%s failed (exit %d); its output: %s/%s.log%s", what, rc, f->dir, name,
                 rc == 2 ? " (is models/gpt2 built? it needs OpenBLAS)" : "");
        sr__selftest_add(l, f->half, "FAIL", "fsdp", "gpt2 step reference (1 CPU rank)", detail, NULL);
    }
    return rc;
}

void sr__selftest_fsdp(sr__selftest_lines *l, const sr__selftest_fsdp_args *f) {
    char path[4200];
    snprintf(path, sizeof path, "%s/corpus.txt", f->dir);
    struct stat st;
    if (stat(path, &st) != 0 && write_corpus(path) != 0) {
        sr__selftest_add(l, f->half, "FAIL", "fsdp", "gpt2 step", "cannot write the corpus", NULL);
        return;
    }
    /* once per selftest, on one CPU rank with the whole batch: the step, and the initial weights
       (the same run with learning rate 0) */
    int batch = f->nproc >= 8 ? 1 : 8 / f->nproc;
    /* the reference of this global batch (the halves may differ: 2 CPU ranks, any number of GPUs) */
    char ref[64];
    snprintf(ref, sizeof ref, "fsdp-reference-batch%d", batch * f->nproc);
    if (cpu_run(l, f, ref, batch * f->nproc, "1", "the one-rank CPU reference") != 0 ||
        cpu_run(l, f, "fsdp-initial", batch * f->nproc, "0", "the one-rank CPU run that saves the initial weights") !=
            0)
        return;
    if (!sr__selftest_stopped()) one_case(l, f, batch, 0, sr__precision_name(SR__PRECISION_NO));
    if (!sr__selftest_stopped()) one_case(l, f, batch, 1, sr__precision_name(SR__PRECISION_NO));
    /* what the GPT-2 XL job computes in; the CPU table has fp32 only, so only a GPU runs it */
    if (!sr__selftest_stopped() && !strcmp(f->backend, "nccl"))
        one_case(l, f, batch, 0, sr__precision_name(SR__PRECISION_BF16));
}
