/*
 * Core's device table (core/device/device.h), under test against the CPU's: every entry, on
 * sizes 0, 1, odd, and past one full grid of the CUDA kernels (1024 blocks x 256 threads, so the
 * grid-stride loop turns).  The per-element arithmetic is shared (optim_math.h, with _rn
 * intrinsics on the GPU), so every result must be bit-identical, except sumsq: a sum of doubles
 * in another order.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "checks.h"
#include "compare.h"
#include "rng.h"

static const sr_dtype FLOATS[3] = {SR_FLOAT32, SR_BFLOAT16, SR_FLOAT16};

/* n floats: random, then specials (inf, -inf, NaN, a subnormal, ties at bf16/fp16 precision,
   beyond fp16's range) mixed in at fixed places */
static void fill(float *x, size_t n, uint64_t seed) {
    st_rng r = {seed};
    static const float special[] = {INFINITY, -INFINITY, NAN, 1e-40f, 1.00390625f, 1.00146484375f, 70000.0f, -0.0f};
    for (size_t i = 0; i < n; i++) x[i] = st_uniform(&r, 4.0f);
    for (size_t s = 0; s < sizeof special / sizeof *special && s * 97 < n; s++) x[s * 97] = special[s];
}

static void *upload(const sr__device *dev, const void *host, size_t bytes) {
    void *p = dev->alloc(bytes);
    if (p && dev->to_device(p, host, bytes) != 0) {
        dev->free(p);
        return NULL;
    }
    return p;
}

/* The check's detail for a failed or passed comparison over sizes. */
static int line_cmp(st_report *r, const char *name, int ok, const st_cmp *c, size_t fail_n, const char *what) {
    if (ok) return st_line(r, 1, "device", name, NULL, "%s: %zu elements bit-identical to the CPU's", what, c->n);
    return st_line(r, 0, "device", name, NULL,
                   "%s: n=%zu: %zu elements differ from the CPU's, first [%zu]: got %.9g, want %.9g", what, fail_n,
                   c->bad, c->first_bad, c->got, c->want);
}

static void check_memory(st_report *r, const st_dut *d, const size_t *sizes, int ns) {
    const sr__device *dev = d->dev;
    int ok_alloc = 1, ok_copy = 1, ok_zero = 1;
    size_t bad_n = 0;
    for (int s = 0; s < ns; s++) {
        size_t n = sizes[s];
        unsigned char *h = sr__malloc(n + 1), *back = sr__malloc(n + 1);
        unsigned char *p = dev->alloc(n);
        if (!p || !h || !back) {
            ok_alloc = 0, bad_n = n;
            free(h), free(back);
            if (p) dev->free(p);
            continue;
        }
        /* zero-filled */
        if (dev->to_host(back, p, n) != 0) ok_alloc = 0, bad_n = n;
        for (size_t i = 0; i < n; i++)
            if (back[i]) {
                ok_alloc = 0, bad_n = n;
                break;
            }
        /* round trip */
        for (size_t i = 0; i < n; i++) h[i] = (unsigned char)(i * 131 + 7);
        if (dev->to_device(p, h, n) != 0 || dev->to_host(back, p, n) != 0 || (n && memcmp(h, back, n)))
            ok_copy = 0, bad_n = n;
        /* zero of an odd range inside */
        size_t off = n / 3, len = n > 2 ? n - off - 1 : 0;
        dev->zero(p + off, len);
        if (dev->sync() != 0 || dev->to_host(back, p, n) != 0) ok_zero = 0, bad_n = n;
        for (size_t i = 0; i < n; i++)
            if (back[i] != (i >= off && i < off + len ? 0 : h[i])) {
                ok_zero = 0, bad_n = n;
                break;
            }
        dev->free(p);
        free(h), free(back);
    }
    st_line(r, ok_alloc, "device", "device.alloc+free", NULL,
            ok_alloc ? "zero-filled allocations of every size" : "n=%zu: allocation failed or not zero-filled", bad_n);
    st_line(r, ok_copy, "device", "device.to_device+to_host", NULL,
            ok_copy ? "round trips byte for byte" : "n=%zu bytes: the round trip changed bytes", bad_n);
    st_line(r, ok_zero, "device", "device.zero", NULL,
            ok_zero ? "zeroes exactly the range asked, nothing around it" : "n=%zu bytes: wrong bytes after zero",
            bad_n);
}

/* cast src_dt -> dst_dt on the device and on the CPU, compared as floats */
static void check_cast(st_report *r, const st_dut *d, const size_t *sizes, int ns) {
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++) {
            sr_dtype st = FLOATS[a], dt = FLOATS[b];
            st_cmp all = {0};
            int ok = 1;
            size_t fail_n = 0;
            for (int s = 0; s < ns && ok; s++) {
                size_t n = sizes[s];
                float *x = sr__malloc(n * 4 + 4), *src = sr__malloc(n * 4 + 4), *want = sr__malloc(n * 4 + 4),
                      *got = sr__malloc(n * 4 + 4);
                unsigned char *tmp = sr__malloc(n * 4 + 4);
                if (!x || !src || !want || !got || !tmp) { /* out of memory on the host: the line fails */
                    st_cmp c = {.n = n, .bad = n ? n : 1};
                    st_cmp_merge(&all, &c), ok = 0, fail_n = n;
                    free(x), free(src), free(want), free(got), free(tmp);
                    break;
                }
                fill(x, n, 11 + n);
                d->cpu_dev->cast(src, st, x, SR_FLOAT32, n); /* the source, in its dtype */
                d->cpu_dev->cast(tmp, dt, src, st, n);
                d->cpu_dev->cast(want, SR_FLOAT32, tmp, dt, n);
                void *ds = upload(d->dev, src, n * sr_dtype_size(st)), *dd = d->dev->alloc(n * sr_dtype_size(dt));
                int io = ds && dd;
                if (io) {
                    d->dev->cast(dd, dt, ds, st, n);
                    io = d->dev->sync() == 0 && d->dev->to_host(tmp, dd, n * sr_dtype_size(dt)) == 0;
                }
                d->cpu_dev->cast(got, SR_FLOAT32, tmp, dt, n);
                st_cmp c;
                if (!io) c = (st_cmp){.n = n, .bad = n ? n : 1}, ok = 0, fail_n = n;
                else if (!st_compare(got, want, n, ST_EXACT, &c)) ok = 0, fail_n = n;
                st_cmp_merge(&all, &c);
                if (ds) d->dev->free(ds);
                if (dd) d->dev->free(dd);
                free(x), free(src), free(want), free(got), free(tmp);
            }
            char name[64], what[64];
            snprintf(name, sizeof name, "device.cast %s->%s", sr_dtype_name(st), sr_dtype_name(dt));
            snprintf(what, sizeof what, "%s", a == b ? "same dtype: a copy" : "with inf, NaN, subnormals, ties");
            line_cmp(r, name, ok, &all, fail_n, what);
        }
}

static void check_accumulate(st_report *r, const st_dut *d, const size_t *sizes, int ns) {
    for (int a = 0; a < 3; a++) {
        sr_dtype st = FLOATS[a];
        st_cmp all = {0};
        int ok = 1;
        size_t fail_n = 0;
        for (int s = 0; s < ns && ok; s++) {
            size_t n = sizes[s];
            float *x = sr__malloc(n * 4 + 4), *acc = sr__malloc(n * 4 + 4), *want = sr__malloc(n * 4 + 4),
                  *got = sr__malloc(n * 4 + 4);
            void *src = sr__malloc(n * 4 + 4);
            if (!x || !acc || !want || !got || !src) { /* out of memory on the host: the line fails */
                st_cmp c = {.n = n, .bad = n ? n : 1};
                st_cmp_merge(&all, &c), ok = 0, fail_n = n;
                free(x), free(acc), free(want), free(got), free(src);
                break;
            }
            st_rng g = {5 + n};
            for (size_t i = 0; i < n; i++) x[i] = st_uniform(&g, 3.0f), acc[i] = st_uniform(&g, 100.0f);
            d->cpu_dev->cast(src, st, x, SR_FLOAT32, n);
            memcpy(want, acc, n * 4);
            d->cpu_dev->accumulate(want, src, st, n);
            void *ds = upload(d->dev, src, n * sr_dtype_size(st)), *da = upload(d->dev, acc, n * 4);
            int io = ds && da;
            if (io) {
                d->dev->accumulate(da, ds, st, n);
                io = d->dev->sync() == 0 && d->dev->to_host(got, da, n * 4) == 0;
            }
            st_cmp c;
            if (!io) c = (st_cmp){.n = n, .bad = n ? n : 1}, ok = 0, fail_n = n;
            else if (!st_compare(got, want, n, ST_EXACT, &c)) ok = 0, fail_n = n;
            st_cmp_merge(&all, &c);
            if (ds) d->dev->free(ds);
            if (da) d->dev->free(da);
            free(x), free(acc), free(want), free(got), free(src);
        }
        char name[64];
        snprintf(name, sizeof name, "device.accumulate %s", sr_dtype_name(st));
        line_cmp(r, name, ok, &all, fail_n, "acc += src into a non-zero fp32 accumulator");
    }
}

static void check_reductions(st_report *r, const st_dut *d, const size_t *sizes, int ns) {
    int ok_sum = 1, ok_nf = 1;
    double worst = 0;
    size_t bad_sum = 0, bad_nf = 0;
    for (int s = 0; s < ns; s++) {
        size_t n = sizes[s];
        float *x = sr__malloc(n * 4 + 4);
        st_rng g = {17 + n};
        for (size_t i = 0; x && i < n; i++) x[i] = st_uniform(&g, 2.0f);
        void *dx = x ? upload(d->dev, x, n * 4) : NULL; /* NULL: out of memory here or there, the lines fail */
        if (!dx) {
            ok_sum = ok_nf = 0, bad_sum = bad_nf = n;
            free(x);
            continue;
        }
        double want = d->cpu_dev->sumsq(x, n), got = d->dev->sumsq(dx, n);
        double rel = fabs(got - want) / (want > 0 ? want : 1);
        if (rel > worst) worst = rel;
        if (!(rel <= 1e-12)) ok_sum = 0, bad_sum = n;
        /* all finite; then inf / NaN / -inf at the last, the first and a middle element */
        if (d->dev->nonfinite(dx, n) != 0) ok_nf = 0, bad_nf = n;
        const float bad[3] = {INFINITY, NAN, -INFINITY};
        size_t at[3] = {n ? n - 1 : 0, 0, n / 2};
        for (int k = 0; k < 3 && n; k++) {
            float keep = x[at[k]];
            x[at[k]] = bad[k];
            if (d->dev->to_device((float *)dx + at[k], &x[at[k]], 4) != 0 || d->dev->nonfinite(dx, n) != 1)
                ok_nf = 0, bad_nf = n;
            x[at[k]] = keep;
            d->dev->to_device((float *)dx + at[k], &keep, 4);
        }
        d->dev->free(dx);
        free(x);
    }
    if (ok_sum)
        st_line(r, 1, "device", "device.sumsq", NULL,
                "relative difference from the CPU's at most %.2g (tolerance 1e-12: doubles summed in another order)",
                worst);
    else st_line(r, 0, "device", "device.sumsq", NULL, "n=%zu: relative difference %.3g > 1e-12", bad_sum, worst);
    if (ok_nf)
        st_line(r, 1, "device", "device.nonfinite", NULL,
                "finds inf, NaN and -inf at the last, first and middle element, and none in finite data");
    else st_line(r, 0, "device", "device.nonfinite", NULL, "n=%zu: wrong answer", bad_nf);
}

static void check_adamw(st_report *r, const st_dut *d, const size_t *sizes, int ns) {
    int ok = 1;
    size_t fail_n = 0;
    st_cmp all = {0};
    const sr__adamw_args a = {1e-3, 0.9, 0.999, 1e-8, 0.01, 3, 0.5f};
    for (int s = 0; s < ns && ok; s++) {
        size_t n = sizes[s], b = n * 4 + 4;
        float *p = sr__malloc(b), *gr = sr__malloc(b), *m = sr__malloc(b), *v = sr__malloc(b), *got = sr__malloc(b);
        if (!p || !gr || !m || !v || !got) { /* out of memory on the host: the line fails */
            st_cmp c = {.n = n, .bad = n ? n : 1};
            st_cmp_merge(&all, &c), ok = 0, fail_n = n;
            free(p), free(gr), free(m), free(v), free(got);
            break;
        }
        st_rng g = {23 + n};
        for (size_t i = 0; i < n; i++)
            p[i] = st_uniform(&g, 1.0f), gr[i] = st_uniform(&g, 0.1f), m[i] = st_uniform(&g, 0.01f),
            v[i] = fabsf(st_uniform(&g, 1e-4f));
        void *dp = upload(d->dev, p, n * 4), *dg = upload(d->dev, gr, n * 4), *dm = upload(d->dev, m, n * 4),
             *dv = upload(d->dev, v, n * 4);
        int io = dp && dg && dm && dv;
        if (io) d->dev->adamw(dp, dg, dm, dv, n, &a);
        d->cpu_dev->adamw(p, gr, m, v, n, &a);
        io = io && d->dev->sync() == 0;
        float *want[3] = {p, m, v};
        void *dev[3] = {dp, dm, dv};
        for (int k = 0; k < 3; k++) {
            st_cmp c;
            if (!io || d->dev->to_host(got, dev[k], n * 4) != 0)
                c = (st_cmp){.n = n, .bad = n ? n : 1}, ok = 0, fail_n = n;
            else if (!st_compare(got, want[k], n, ST_EXACT, &c)) ok = 0, fail_n = n;
            st_cmp_merge(&all, &c);
        }
        for (int k = 0; k < 3; k++)
            if (dev[k]) d->dev->free(dev[k]);
        if (dg) d->dev->free(dg);
        free(p), free(gr), free(m), free(v), free(got);
    }
    line_cmp(r, "device.adamw", ok, &all, fail_n, "parameter, exp_avg, exp_avg_sq after one step");
}

void st_check_device(st_report *r, const st_dut *d, int quick) {
    /* 262145: one element past a full grid of 1024 blocks x 256 threads */
    const size_t sizes[] = {0, 1, 1023, 262145};
    int ns = quick ? 3 : 4;
    check_memory(r, d, sizes, ns);
    check_cast(r, d, sizes, ns);
    check_accumulate(r, d, sizes, ns);
    check_reductions(r, d, sizes, ns);
    check_adamw(r, d, sizes, ns);
    st_line(r, d->dev->sync() == 0, "device", "device.sync", NULL, "no error pending after the checks");
}
