/*
 * The GPT-2 kernel table (models/gpt2/kernels.h), under test against the CPU table, on
 * awkward shapes: empty, one element, odd sizes that are no multiple of a warp, a block or a
 * vector width, and leading dimensions wider than the matrix (a stride bug shows).  Inputs are
 * random, rounded to the dtype under test, so both sides read the same values; "+=" kernels add
 * into random non-zero accumulators.  The CPU table computes in fp32: bf16/fp16 results are
 * compared within a few units in their last place; fp32 within what the order of a reduction
 * (or a fused multiply-add) changes, bit-identical where the kernels compute the same sum.
 * GEMMs: every transpose combination the GPT-2 model calls (gemm: NN, NT, TN; batched: NN, NT,
 * TN), against cblas_sgemm itself.
 */
#include <cblas.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "checks.h"
#include "compare.h"
#include "rng.h"
#include "shardrun/half.h"

/* ---- device buffers of the table under test (moved as 4-byte words, the table's own copies) -- */

static size_t words(size_t n, sr_dtype dt) { return (n * sr_dtype_size(dt) + 3) / 4; }

static void *up(const tf_kernels *k, const float *h, size_t n, sr_dtype dt) {
    size_t w = words(n, dt);
    uint32_t *packed = sr__calloc(w + 1, 4);
    void *d = k->alloc(w * 4);
    if (!packed || !d) {
        free(packed);
        if (d) k->free(d);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        if (dt == SR_FLOAT32) memcpy((float *)packed + i, &h[i], 4);
        else ((uint16_t *)packed)[i] = dt == SR_BFLOAT16 ? sr_f32_to_bf16(h[i]) : sr_f32_to_f16(h[i]);
    }
    int rc = w ? k->ids_upload(d, (const int32_t *)packed, w) : 0;
    free(packed);
    if (rc) {
        k->free(d);
        return NULL;
    }
    return d;
}

static void *up_i32(const tf_kernels *k, const int32_t *h, size_t n) {
    void *d = k->alloc(n * 4);
    if (d && n && k->ids_upload(d, h, n) != 0) {
        k->free(d);
        return NULL;
    }
    return d;
}

static int down(const tf_kernels *k, float *h, const void *d, size_t n, sr_dtype dt) {
    size_t w = words(n, dt);
    uint32_t *packed = sr__calloc(w + 1, 4);
    if (!packed) return -1;
    int rc = k->sync();
    if (!rc && w) rc = k->floats_download((float *)packed, d, w);
    for (size_t i = 0; !rc && i < n; i++) {
        if (dt == SR_FLOAT32) memcpy(&h[i], (float *)packed + i, 4);
        else
            h[i] = dt == SR_BFLOAT16 ? sr_bf16_to_f32(((uint16_t *)packed)[i]) : sr_f16_to_f32(((uint16_t *)packed)[i]);
    }
    free(packed);
    return rc;
}

static float *rnd(size_t n, float a, uint64_t seed, sr_dtype dt) {
    float *x = sr__malloc(n * 4 + 4);
    st_rng g = {seed};
    for (size_t i = 0; x && i < n; i++) x[i] = st_round(st_uniform(&g, a), dt);
    return x;
}

/* ---- one line: a kernel x dtype over its shapes ------------------------------------------------ */

typedef struct acc {
    int ok, shapes;
    st_cmp c;
    char where[160]; /* the first failing shape and output */
    char list[200];  /* the shapes checked */
    char last[64];   /* the shape being checked */
} acc;

static void acc_shape(acc *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void acc_shape(acc *a, const char *fmt, ...) {
    char s[64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s, sizeof s, fmt, ap);
    va_end(ap);
    snprintf(a->last, sizeof a->last, "%s", s);
    size_t l = strlen(a->list);
    if (l + strlen(s) + 3 < sizeof a->list) snprintf(a->list + l, sizeof a->list - l, "%s%s", l ? " " : "", s);
    a->shapes++;
}

/* Compares `n` elements of device buffer d (dtype dt) with want. */
static void cmp(acc *a, const tf_kernels *k, const char *what, const void *d, const float *want, size_t n, sr_dtype dt,
                st_tol tol) {
    float *got = sr__malloc(n * 4 + 4);
    st_cmp c;
    if (!d || !got || down(k, got, d, n, dt) != 0) {
        c = (st_cmp){.n = n, .bad = 1};
        if (a->ok)
            snprintf(a->where, sizeof a->where, "%s %s: %s", a->last, what,
                     got ? "the device failed (see its message above)" : "out of memory on the host");
        a->ok = 0;
    } else if (!st_compare(got, want, n, tol, &c) && a->ok) {
        snprintf(a->where, sizeof a->where, "%s %s: %zu of %zu elements off, first [%zu]: got %.7g, want %.7g", a->last,
                 what, c.bad, n, c.first_bad, c.got, c.want);
        a->ok = 0;
    }
    st_cmp_merge(&a->c, &c);
    free(got);
}

static void acc_line(st_report *r, const char *group, const char *name, sr_dtype dt, const acc *a, st_tol tol) {
    char full[96];
    snprintf(full, sizeof full, "%s %s", name, sr_dtype_name(dt));
    if (a->ok)
        st_line(r, 1, group, full, NULL, "%s: %zu elements, max |err| %.3g (%s)", a->list, a->c.n, a->c.max_err,
                tol.rtol == 0 && tol.atol == 0 ? "bit-identical" : "within tolerance");
    else
        st_line(r, 0, group, full, NULL, "%s (tolerance rtol %.3g, atol %.3g x max|want|)", a->where, tol.rtol,
                tol.atol);
}

#define BEGIN(a) acc a = {.ok = 1}
/* The shape's host data found no memory: a failure of the line (the shape is not run). */
static void acc_oom(acc *a) {
    if (a->ok) snprintf(a->where, sizeof a->where, "%s: out of memory on the host for the test data", a->last);
    a->ok = 0;
}
#define FREE_D(...)                                                                                                    \
    do {                                                                                                               \
        void *ptrs_[] = {__VA_ARGS__};                                                                                 \
        for (size_t i_ = 0; i_ < sizeof ptrs_ / sizeof *ptrs_; i_++)                                                   \
            if (ptrs_[i_]) k->free(ptrs_[i_]);                                                                         \
    } while (0)

/* One formula per element, but nvcc fuses multiply-adds (1 - th*th in gelu's gradient, the
   exponential's polynomial) where the CPU rounds twice: a last-bit difference that cancellation
   (1 + tanh near -1) lifts to ~5e-7 of the largest value.  A wrong kernel is off by far more. */
static const st_tol TOL_ELEM = {1e-6, 1e-6};
static const st_tol TOL_REDUCE = {2e-5, 2e-6}; /* sums in another order */

/* ---- elementwise --------------------------------------------------------------------------------- */

static void elementwise(st_report *r, const st_dut *d, sr_dtype dt, int quick) {
    const tf_kernels *k = d->k, *c = d->cpu_k;
    const size_t sizes[] = {0, 1, 1023, 70001};
    int ns = quick ? 3 : 4;
    BEGIN(copy);
    BEGIN(add);
    BEGIN(gf);
    BEGIN(gb);
    BEGIN(zero);
    for (int s = 0; s < ns; s++) {
        size_t n = sizes[s];
        float *x = rnd(n, 4.0f, 100 + n, dt), *y = rnd(n, 2.0f, 200 + n, dt), *w = sr__malloc(n * 4 + 4);
        acc_shape(&copy, "n=%zu", n), acc_shape(&add, "n=%zu", n), acc_shape(&gf, "n=%zu", n);
        acc_shape(&gb, "n=%zu", n), acc_shape(&zero, "n=%zu", n);
        if (!x || !y || !w) {
            acc_oom(&copy), acc_oom(&add), acc_oom(&gf), acc_oom(&gb), acc_oom(&zero);
            free(x), free(y), free(w);
            continue;
        }
        void *dx = up(k, x, n, dt), *dy = up(k, y, n, dt), *dz = up(k, y, n, dt);
        if (dz && dx) k->copy(dz, dx, n, dt);
        cmp(&copy, k, "dst", dz, x, n, dt, ST_EXACT);
        if (dz && dx && dy) k->add(dz, dx, dy, n, dt);
        c->add(w, x, y, n, SR_FLOAT32);
        cmp(&add, k, "out", dz, w, n, dt, st_tol_for(dt, ST_EXACT, 1));
        if (dz && dx) k->gelu_forward(dz, dx, n, dt);
        c->gelu_forward(w, x, n, SR_FLOAT32);
        cmp(&gf, k, "out", dz, w, n, dt, st_tol_for(dt, TOL_ELEM, 2));
        if (dz && dx && dy) k->gelu_backward(dz, NULL, dx, dy, 1, (int)n, dt);
        c->gelu_backward(w, NULL, x, y, 1, (int)n, SR_FLOAT32);
        cmp(&gb, k, "dx", dz, w, n, dt, st_tol_for(dt, TOL_ELEM, 2));
        /* in place, as the model calls them: add(out = a), gelu_backward(dx = dout) */
        void *da = up(k, x, n, dt), *dd = up(k, y, n, dt);
        if (da && dy) k->add(da, da, dy, n, dt);
        c->add(w, x, y, n, SR_FLOAT32);
        cmp(&add, k, "out (in place)", da && dy ? da : NULL, w, n, dt, st_tol_for(dt, ST_EXACT, 1));
        if (dd && dx) k->gelu_backward(dd, NULL, dx, dd, 1, (int)n, dt);
        c->gelu_backward(w, NULL, x, y, 1, (int)n, SR_FLOAT32);
        cmp(&gb, k, "dx (in place)", dd && dx ? dd : NULL, w, n, dt, st_tol_for(dt, TOL_ELEM, 2));
        FREE_D(da, dd);
        /* zero: the bytes of an inner range only */
        size_t off = n / 3, len = n > 2 ? n - off - 1 : 0;
        if (dx) k->zero((char *)dx + off * sr_dtype_size(dt), len * sr_dtype_size(dt));
        for (size_t i = off; i < off + len; i++) x[i] = 0;
        cmp(&zero, k, "buffer", dx, x, n, dt, ST_EXACT);
        FREE_D(dx, dy, dz);
        free(x), free(y), free(w);
    }
    acc_line(r, "kernel", "gpt2.copy", dt, &copy, ST_EXACT);
    acc_line(r, "kernel", "gpt2.add", dt, &add, st_tol_for(dt, ST_EXACT, 1));
    acc_line(r, "kernel", "gpt2.gelu_forward", dt, &gf, st_tol_for(dt, TOL_ELEM, 2));
    acc_line(r, "kernel", "gpt2.gelu_backward", dt, &gb, st_tol_for(dt, TOL_ELEM, 2));
    acc_line(r, "kernel", "gpt2.zero", dt, &zero, ST_EXACT);
}

/* ---- LoRA dropout: lora.h's hashed mask times the input, written or added ------------------------ */

static void lora_drop(st_report *r, const st_dut *d, sr_dtype dt, int quick) {
    const tf_kernels *k = d->k, *c = d->cpu_k;
    /* N rows of F features, T positions a sample: a last sample cut short, F no multiple of a warp */
    const int shapes[][3] = {{0, 5, 1}, {1, 1, 1}, {7, 33, 3}, {130, 100, 13}};
    int ns = quick ? 3 : 4;
    const uint64_t threshold = (uint64_t)(0.3 * 9007199254740992.0); /* p = 0.3 */
    const float keep = (float)(1.0 / 0.7);
    BEGIN(a);
    for (int s = 0; s < ns; s++) {
        int N = shapes[s][0], F = shapes[s][1], T = shapes[s][2], B = (N + T - 1) / T;
        size_t n = (size_t)N * F;
        float *x = rnd(n, 2.0f, 300 + n, dt), *y = rnd(n, 1.0f, 400 + n, dt), *w = sr__malloc(n * 4 + 4);
        int32_t *keys = sr__malloc(2 * (size_t)B * 4 + 4);
        acc_shape(&a, "%dx%d/%d", N, F, T);
        if (!x || !y || !w || !keys) {
            acc_oom(&a);
            free(x), free(y), free(w), free(keys);
            continue;
        }
        st_rng g = {500 + n};
        for (int i = 0; i < 2 * B; i++) keys[i] = (int32_t)(uint32_t)st_next(&g);
        void *dx = up(k, x, n, dt), *dy = up(k, y, n, dt), *dk = up_i32(k, keys, 2 * (size_t)B);
        int all = dx && dy && dk;
        for (int accumulate = 0; accumulate < 2; accumulate++) { /* y = drop(x), then y += drop(x) */
            if (all) k->lora_dropout(dy, dx, N, F, T, (const uint32_t *)dk, 259, threshold, keep, accumulate, dt);
            c->lora_dropout(w, x, N, F, T, (const uint32_t *)keys, 259, threshold, keep, accumulate, SR_FLOAT32);
            for (size_t i = 0; i < n; i++) w[i] = st_round(w[i], dt);
            cmp(&a, k, accumulate ? "y (+=)" : "y", all ? dy : NULL, w, n, dt, st_tol_for(dt, ST_EXACT, 1));
        }
        FREE_D(dx, dy, dk);
        free(x), free(y), free(w), free(keys);
    }
    acc_line(r, "kernel", "gpt2.lora_dropout", dt, &a, st_tol_for(dt, ST_EXACT, 1));
}

/* ---- rows: embeddings, LayerNorm, biases ----------------------------------------------------------- */

static void rows(st_report *r, const st_dut *d, sr_dtype dt, int quick) {
    const tf_kernels *k = d->k, *c = d->cpu_k;
    /* N x C; C = 769: 24 warps and one lane, no multiple of 32, 256 or a vector width */
    const int shapes[][2] = {{0, 5}, {1, 1}, {3, 33}, {7, 769}, {130, 100}};
    int ns = quick ? 4 : 5;
    st_tol t_exact = st_tol_for(dt, ST_EXACT, 1), t_red = st_tol_for(dt, TOL_REDUCE, 4);
    BEGIN(lnf);
    BEGIN(lnb);
    BEGIN(bf);
    BEGIN(bb);
    BEGIN(gbb);
    BEGIN(ef);
    BEGIN(eb);
    for (int s = 0; s < ns; s++) {
        int N = shapes[s][0], C = shapes[s][1];
        size_t nc = (size_t)N * C;
        uint64_t seed = 1000 + (uint64_t)nc;
        float *x = rnd(nc, 3.0f, seed, dt), *w = rnd((size_t)C, 1.5f, seed + 1, dt),
              *b = rnd((size_t)C, 0.5f, seed + 2, dt);
        float *dout = rnd(nc, 1.0f, seed + 3, dt);
        float *out = sr__malloc(nc * 4 + 4), *mean = sr__malloc((size_t)N * 4 + 4),
              *rstd = sr__malloc((size_t)N * 4 + 4);
        float *gx = rnd(nc, 1.0f, seed + 4, dt), *gw = rnd((size_t)C, 1.0f, seed + 5, dt),
              *gb = rnd((size_t)C, 1.0f, seed + 6, dt);
        float *acc_b = rnd((size_t)C, 1.0f, seed + 7, dt);
        float *acc_g = rnd((size_t)C, 1.0f, seed + 8, dt), *gdx = sr__malloc(nc * 4 + 4);
        acc_shape(&lnf, "%dx%d", N, C), acc_shape(&lnb, "%dx%d", N, C), acc_shape(&bf, "%dx%d", N, C);
        acc_shape(&bb, "%dx%d", N, C), acc_shape(&gbb, "%dx%d", N, C);
        if (!x || !w || !b || !dout || !out || !mean || !rstd || !gx || !gw || !gb || !acc_b || !acc_g || !gdx) {
            acc_oom(&lnf), acc_oom(&lnb), acc_oom(&bf), acc_oom(&bb), acc_oom(&gbb);
            free(x), free(w), free(b), free(dout), free(out), free(mean), free(rstd), free(gx), free(gw), free(gb),
                free(acc_b), free(acc_g), free(gdx);
            continue;
        }
        /* LayerNorm forward: out, and the saved statistics (float) */
        void *dx = up(k, x, nc, dt), *dw = up(k, w, (size_t)C, dt), *db = up(k, b, (size_t)C, dt);
        void *dout_d = up(k, dout, nc, dt), *o = k->alloc(nc * sr_dtype_size(dt) + 4);
        float *dmean = k->alloc((size_t)N * 4 + 4), *drstd = k->alloc((size_t)N * 4 + 4);
        int all = dx && dw && db && dout_d && o && dmean && drstd;
        if (all) k->layernorm_forward(o, dmean, drstd, dx, dw, db, N, C, dt);
        c->layernorm_forward(out, mean, rstd, x, w, b, N, C, SR_FLOAT32);
        cmp(&lnf, k, "out", all ? o : NULL, out, nc, dt, t_red);
        cmp(&lnf, k, "mean", all ? dmean : NULL, mean, (size_t)N, SR_FLOAT32, t_red);
        cmp(&lnf, k, "rstd", all ? drstd : NULL, rstd, (size_t)N, SR_FLOAT32, t_red);
        /* LayerNorm backward into non-zero dx, dw, db (statistics: the CPU's, uploaded) */
        void *dgx = up(k, gx, nc, dt), *dgw = up(k, gw, (size_t)C, dt), *dgb = up(k, gb, (size_t)C, dt);
        void *m2 = up(k, mean, (size_t)N, SR_FLOAT32), *r2 = up(k, rstd, (size_t)N, SR_FLOAT32);
        all = all && dgx && dgw && dgb && m2 && r2;
        if (all) k->layernorm_backward(dgx, dgw, dgb, dout_d, dx, m2, r2, dw, N, C, dt);
        c->layernorm_backward(gx, gw, gb, dout, x, mean, rstd, w, N, C, SR_FLOAT32);
        cmp(&lnb, k, "dx", all ? dgx : NULL, gx, nc, dt, t_red);
        cmp(&lnb, k, "dw", all ? dgw : NULL, gw, (size_t)C, dt, t_red);
        cmp(&lnb, k, "db", all ? dgb : NULL, gb, (size_t)C, dt, t_red);
        /* bias fill: the bias alone; bias + residual (x); the residual alone; bias + residual in
           place (out = the residual, as a layer adding onto its input would call it) */
        if (o && db) k->bias_fill(o, db, NULL, N, C, dt);
        c->bias_fill(out, b, NULL, N, C, SR_FLOAT32);
        cmp(&bf, k, "out", o && db ? o : NULL, out, nc, dt, ST_EXACT);
        if (o && db && dx) k->bias_fill(o, db, dx, N, C, dt);
        c->bias_fill(out, b, x, N, C, SR_FLOAT32);
        cmp(&bf, k, "out (bias + res)", o && db && dx ? o : NULL, out, nc, dt, t_exact);
        if (o && dx) k->bias_fill(o, NULL, dx, N, C, dt);
        cmp(&bf, k, "out (res only)", o && dx ? o : NULL, x, nc, dt, ST_EXACT);
        void *dres = up(k, x, nc, dt);
        if (dres && db) k->bias_fill(dres, db, dres, N, C, dt);
        c->bias_fill(out, b, x, N, C, SR_FLOAT32);
        cmp(&bf, k, "out (in place)", dres && db ? dres : NULL, out, nc, dt, t_exact);
        /* bias backward (+= column sums) */
        void *dacc = up(k, acc_b, (size_t)C, dt);
        if (dacc && dout_d) k->bias_backward(dacc, dout_d, N, C, dt);
        c->bias_backward(acc_b, dout, N, C, SR_FLOAT32);
        cmp(&bb, k, "dbias", dacc && dout_d ? dacc : NULL, acc_b, (size_t)C, dt, t_red);
        /* GELU backward with the bias gradient, in place (dx = dout) as the model calls it, against
           the CPU's GELU backward then bias_backward: dx, and dbias += the column sums of dx */
        void *dacc_g = up(k, acc_g, (size_t)C, dt), *dgd = up(k, dout, nc, dt);
        if (dacc_g && dgd && dx) k->gelu_backward(dgd, dacc_g, dx, dgd, N, C, dt);
        c->gelu_backward(gdx, NULL, x, dout, N, C, SR_FLOAT32);
        c->bias_backward(acc_g, gdx, N, C, SR_FLOAT32);
        int gall = dacc_g && dgd && dx;
        cmp(&gbb, k, "dx", gall ? dgd : NULL, gdx, nc, dt, st_tol_for(dt, TOL_ELEM, 2));
        cmp(&gbb, k, "dbias", gall ? dacc_g : NULL, acc_g, (size_t)C, dt, t_red);
        FREE_D(dx, dw, db, dout_d, o, dmean, drstd, dgx, dgw, dgb, m2, r2, dacc, dres, dacc_g, dgd);
        free(x), free(w), free(b), free(dout), free(out), free(mean), free(rstd), free(gx), free(gw), free(gb),
            free(acc_b);
        free(acc_g), free(gdx);
    }
    /* embeddings: B x T tokens of C channels, ids repeating (rows of dwte gather several positions) */
    const int eshapes[][4] = {{1, 1, 1, 3}, {2, 5, 33, 7}, {3, 17, 130, 11}}; /* B, T, C, V */
    for (int s = 0; s < 3; s++) {
        int B = eshapes[s][0], T = eshapes[s][1], C = eshapes[s][2], V = eshapes[s][3], N = B * T;
        int32_t *ids = sr__malloc((size_t)N * 4);
        float *wte = rnd((size_t)V * C, 1.0f, 300 + (uint64_t)s, dt),
              *wpe = rnd((size_t)T * C, 1.0f, 310 + (uint64_t)s, dt);
        float *dout = rnd((size_t)N * C, 1.0f, 320 + (uint64_t)s, dt), *out = sr__malloc((size_t)N * C * 4);
        float *gte = rnd((size_t)V * C, 1.0f, 330 + (uint64_t)s, dt),
              *gpe = rnd((size_t)T * C, 1.0f, 340 + (uint64_t)s, dt);
        acc_shape(&ef, "B%dT%dC%dV%d", B, T, C, V), acc_shape(&eb, "B%dT%dC%dV%d", B, T, C, V);
        if (!ids || !wte || !wpe || !dout || !out || !gte || !gpe) {
            acc_oom(&ef), acc_oom(&eb);
            free(ids), free(wte), free(wpe), free(dout), free(out), free(gte), free(gpe);
            continue;
        }
        for (int i = 0; i < N; i++) ids[i] = (i * 7 + 3) % V;
        void *di = up_i32(k, ids, (size_t)N), *dte = up(k, wte, (size_t)V * C, dt),
             *dpe = up(k, wpe, (size_t)T * C, dt);
        void *ddo = up(k, dout, (size_t)N * C, dt), *o = k->alloc((size_t)N * C * 4);
        void *dgte = up(k, gte, (size_t)V * C, dt), *dgpe = up(k, gpe, (size_t)T * C, dt);
        int all = di && dte && dpe && ddo && o && dgte && dgpe;
        if (all) k->embed_forward(o, di, dte, dpe, B, T, C, dt);
        c->embed_forward(out, ids, wte, wpe, B, T, C, SR_FLOAT32);
        cmp(&ef, k, "out", all ? o : NULL, out, (size_t)N * C, dt, t_exact);
        if (all) k->embed_backward(dgte, dgpe, di, ddo, B, T, C, dt);
        c->embed_backward(gte, gpe, ids, dout, B, T, C, SR_FLOAT32);
        cmp(&eb, k, "dwte", all ? dgte : NULL, gte, (size_t)V * C, dt, t_red);
        cmp(&eb, k, "dwpe", all ? dgpe : NULL, gpe, (size_t)T * C, dt, t_red);
        FREE_D(di, dte, dpe, ddo, o, dgte, dgpe);
        free(ids), free(wte), free(wpe), free(dout), free(out), free(gte), free(gpe);
    }
    acc_line(r, "kernel", "gpt2.layernorm_forward", dt, &lnf, t_red);
    acc_line(r, "kernel", "gpt2.layernorm_backward", dt, &lnb, t_red);
    acc_line(r, "kernel", "gpt2.bias_fill", dt, &bf, t_exact);
    acc_line(r, "kernel", "gpt2.bias_backward", dt, &bb, t_red);
    acc_line(r, "kernel", "gpt2.gelu_backward_bias", dt, &gbb, t_red);
    acc_line(r, "kernel", "gpt2.embed_forward", dt, &ef, t_exact);
    acc_line(r, "kernel", "gpt2.embed_backward", dt, &eb, t_red);
}

/* ---- attention softmax and the loss ---------------------------------------------------------------- */

static void softmax_ce(st_report *r, const st_dut *d, sr_dtype dt, int quick) {
    const tf_kernels *k = d->k, *c = d->cpu_k;
    /* T, count, ALiBi heads: rows of one warp, and longer; ALiBi (BLOOM) with 3 heads and 6, whose
       slopes follow the rule for head counts that are not a power of two */
    const int sshapes[][3] = {{1, 1, 0}, {5, 3, 3}, {67, 2, 0}, {129, 3, 6}};
    int ns = quick ? 3 : 4;
    st_tol t = st_tol_for(dt, TOL_REDUCE, 4);
    BEGIN(sf);
    BEGIN(sb);
    BEGIN(ce);
    for (int s = 0; s < ns; s++) {
        int T = sshapes[s][0], cnt = sshapes[s][1], alibi = sshapes[s][2];
        size_t n = (size_t)T * T * cnt;
        float *S = rnd(n, 4.0f, 400 + n, dt), *dP = rnd(n, 1.0f, 410 + n, dt), *P = sr__malloc(n * 4 + 4),
              *dS = sr__malloc(n * 4 + 4), *P2 = sr__malloc(n * 4 + 4);
        acc_shape(&sf, alibi ? "T%dx%d alibi" : "T%dx%d", T, cnt), acc_shape(&sb, "T%dx%d", T, cnt);
        if (!S || !dP || !P || !dS || !P2) {
            acc_oom(&sf), acc_oom(&sb);
            free(S), free(dP), free(P), free(dS), free(P2);
            continue;
        }
        void *dSin = up(k, S, n, dt), *dPo = k->alloc(n * 4 + 4);
        if (dSin && dPo) k->softmax_causal_forward(dPo, dSin, T, 0.125f, alibi, cnt, dt);
        c->softmax_causal_forward(P, S, T, 0.125f, alibi, cnt, SR_FLOAT32);
        cmp(&sf, k, "P", dSin && dPo ? dPo : NULL, P, n, dt, t);
        /* backward from the CPU's P (rounded to dt), so both sides start from the same values */
        for (size_t i = 0; i < n; i++) P[i] = st_round(P[i], dt);
        void *dPin = up(k, P, n, dt), *ddP = up(k, dP, n, dt), *ddS = k->alloc(n * 4 + 4);
        if (dPin && ddP && ddS) k->softmax_causal_backward(ddS, dPin, ddP, T, 0.125f, cnt, dt);
        c->softmax_causal_backward(dS, P, dP, T, 0.125f, cnt, SR_FLOAT32);
        cmp(&sb, k, "dS", dPin && ddP && ddS ? ddS : NULL, dS, n, dt, t);
        /* in place, as the model calls them: P over S, dS over dP */
        void *dSP = up(k, S, n, dt), *ddPS = up(k, dP, n, dt);
        if (dSP) k->softmax_causal_forward(dSP, dSP, T, 0.125f, alibi, cnt, dt);
        c->softmax_causal_forward(P2, S, T, 0.125f, alibi, cnt, SR_FLOAT32);
        cmp(&sf, k, "P (in place)", dSP, P2, n, dt, t);
        if (ddPS && dPin) k->softmax_causal_backward(ddPS, dPin, ddPS, T, 0.125f, cnt, dt);
        cmp(&sb, k, "dS (in place)", ddPS && dPin ? ddPS : NULL, dS, n, dt, t);
        FREE_D(dSP, ddPS);
        free(P2);
        FREE_D(dSin, dPo, dPin, ddP, ddS);
        free(S), free(dP), free(P), free(dS);
    }
    /* cross-entropy: N rows of V logits; one target ignored (-1), targets at the first and last class */
    const int cshapes[][2] = {{0, 7}, {1, 1}, {5, 1031}, {9, 5000}};
    for (int s = 0; s < ns; s++) {
        int N = cshapes[s][0], V = cshapes[s][1];
        size_t n = (size_t)N * V;
        float *L = rnd(n, 6.0f, 500 + n, dt), *loss = sr__malloc((size_t)N * 4 + 4);
        int32_t *tg = sr__malloc((size_t)N * 4 + 4);
        acc_shape(&ce, "%dx%d", N, V);
        if (!L || !loss || !tg) {
            acc_oom(&ce);
            free(L), free(loss), free(tg);
            continue;
        }
        for (int i = 0; i < N; i++) tg[i] = i == 2 ? -1 : i == 0 ? 0 : i == 1 ? V - 1 : (i * 37) % V;
        void *dL = up(k, L, n, dt), *dt_ = up_i32(k, tg, (size_t)N);
        float *dloss = k->alloc((size_t)N * 4 + 4);
        int all = dL && dt_ && dloss;
        if (all) k->cross_entropy(dL, dloss, dt_, N, V, 0.25f, dt);
        c->cross_entropy(L, loss, tg, N, V, 0.25f, SR_FLOAT32);
        cmp(&ce, k, "losses", all ? dloss : NULL, loss, (size_t)N, SR_FLOAT32, t);
        cmp(&ce, k, "dlogits", all ? dL : NULL, L, n, dt, t);
        FREE_D(dL, dt_, dloss);
        free(L), free(loss), free(tg);
    }
    acc_line(r, "kernel", "gpt2.softmax_causal_forward", dt, &sf, t);
    acc_line(r, "kernel", "gpt2.softmax_causal_backward", dt, &sb, t);
    acc_line(r, "kernel", "gpt2.cross_entropy", dt, &ce, t);
}

/* ---- GEMMs against cblas_sgemm --------------------------------------------------------------------- */

/* C = alpha op(A) op(B) + beta C, column-major, `batch` matrices at strides; the reference is
   cblas_sgemm per matrix on the same (rounded) values. */
static void gemm_case(acc *a, const st_dut *d, sr_dtype dt, int batched, int ta, int tb, int m, int n, int kk,
                      int batch, float beta, st_tol tol) {
    const tf_kernels *k = d->k;
    /* leading dimensions wider than the matrices: a kernel that ignores them reads the wrong rows */
    int lda = (ta ? kk : m) + 3, ldb = (tb ? n : kk) + 2, ldc = m + 1;
    long long sA = (long long)lda * (ta ? m : kk) + 5, sB = (long long)ldb * (tb ? kk : n) + 1,
              sC = (long long)ldc * n + 3;
    size_t nA = (size_t)(sA * batch), nB = (size_t)(sB * batch), nC = (size_t)(sC * batch);
    uint64_t seed = (uint64_t)(m * 131 + n * 17 + kk + ta * 2 + tb + batch * 7);
    float *A = rnd(nA, 1.0f, seed, dt), *B = rnd(nB, 1.0f, seed + 1, dt), *C = rnd(nC, 1.0f, seed + 2, dt);
    acc_shape(a, "%dx%dx%d%s", m, n, kk, beta != 0 ? "+C" : "");
    if (!A || !B || !C) {
        acc_oom(a);
        free(A), free(B), free(C);
        return;
    }
    void *dA = up(k, A, nA, dt), *dB = up(k, B, nB, dt), *dC = up(k, C, nC, dt);
    int all = dA && dB && dC;
    if (all && batched) k->gemm_batched(ta, tb, m, n, kk, 1.0f, dA, lda, sA, dB, ldb, sB, beta, dC, ldc, sC, batch, dt);
    else if (all) k->gemm(ta, tb, m, n, kk, 1.0f, dA, lda, dB, ldb, beta, dC, ldc, dt);
    for (int i = 0; i < (batched ? batch : 1); i++)
        if (m && n)
            cblas_sgemm(CblasColMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, kk, 1.0f,
                        A + i * sA, lda, B + i * sB, ldb, beta, C + i * sC, ldc);
    cmp(a, k, "C", all ? dC : NULL, C, nC, dt, tol);
    FREE_D(dA, dB, dC);
    free(A), free(B), free(C);
}

static void gemms(st_report *r, const st_dut *d, sr_dtype dt, int quick) {
    /* the model's calls: gemm NN (+bias via beta 1), NT (weight gradients, += ), TN (input
       gradients, lm_head); batched TN, NN, NT (attention) */
    static const int combos[3][2] = {{0, 0}, {0, 1}, {1, 0}};
    const int dims[][3] = {{1, 1, 1}, {17, 33, 65}, {67, 129, 31}, {0, 3, 4}};
    int nd = quick ? 3 : 4;
    st_tol tol = st_tol_for(dt, TOL_REDUCE, 4);
    for (int batched = 0; batched < 2; batched++)
        for (int cmb = 0; cmb < 3; cmb++) {
            BEGIN(a);
            for (int s = 0; s < nd; s++)
                for (int bi = 0; bi < 2; bi++)
                    gemm_case(&a, d, dt, batched, combos[cmb][0], combos[cmb][1], dims[s][0], dims[s][1], dims[s][2],
                              batched ? 3 : 1, bi ? 1.0f : 0.0f, tol);
            char name[64];
            snprintf(name, sizeof name, "%s %c%c", batched ? "gpt2.gemm_batched" : "gpt2.gemm",
                     combos[cmb][0] ? 'T' : 'N', combos[cmb][1] ? 'T' : 'N');
            acc_line(r, "gemm", name, dt, &a, tol);
        }
}

void st_check_kernels(st_report *r, const st_dut *d, int quick) {
    for (int dt = SR_FLOAT32; dt <= SR_BFLOAT16; dt++) {
        if (!(d->k->dtypes & (1u << dt))) continue;
        elementwise(r, d, (sr_dtype)dt, quick);
        lora_drop(r, d, (sr_dtype)dt, quick);
        rows(r, d, (sr_dtype)dt, quick);
        softmax_ce(r, d, (sr_dtype)dt, quick);
        gemms(r, d, (sr_dtype)dt, quick);
    }
    st_line(r, d->k->sync() == 0, "kernel", "gpt2.sync", NULL, "no error pending after the kernel checks");
}
