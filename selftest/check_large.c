/*
 * Buffers past 2^31 bytes: an index or a byte count kept in 32 bits, a grid computed in int, shows
 * only there.  One entry of each table on n elements, moved and compared in chunks so the host
 * needs little memory: core's cast fp32 -> bf16 (n fp32 in, n bf16 out) and the GPT-2 table's add
 * (three fp32 buffers).  On a GPU n is 2^29 + 3 (2 GiB + 12 bytes of fp32); when the device has no
 * room the line says SKIP.  On the CPU a small n runs the same chunked path, so CI checks the code.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "checks.h"
#include "compare.h"

#define CHUNK ((size_t)1 << 22) /* elements per host chunk */

static float value_at(size_t i) { return (float)((long long)((i * 2654435761u) % 2001u) - 1000) / 7.0f; }
static void gen(float *x, size_t first, size_t n, float mul) {
    for (size_t i = 0; i < n; i++) x[i] = value_at(first + i) * mul;
}

static void large_cast(st_report *r, const st_dut *d, size_t n) {
    const sr__device *dev = d->dev;
    char *src = dev->alloc(n * 4), *dst = dev->alloc(n * 2);
    if (!src || !dst) {
        if (src) dev->free(src);
        if (dst) dev->free(dst);
        st_skip(r, "device", "device.cast fp32->bf16 large", "not run: the device has no room for %zu bytes", n * 6);
        return;
    }
    float *x = sr__malloc(CHUNK * 4);
    uint16_t *want = sr__malloc(CHUNK * 2), *got = sr__malloc(CHUNK * 2);
    int ok = x && want && got;
    for (size_t at = 0; ok && at < n; at += CHUNK) {
        size_t m = n - at < CHUNK ? n - at : CHUNK;
        gen(x, at, m, 1.0f);
        ok = dev->to_device(src + at * 4, x, m * 4) == 0;
    }
    if (ok) dev->cast(dst, SR_BFLOAT16, src, SR_FLOAT32, n);
    ok = ok && dev->sync() == 0;
    size_t bad_at = 0;
    for (size_t at = 0; ok && at < n; at += CHUNK) {
        size_t m = n - at < CHUNK ? n - at : CHUNK;
        gen(x, at, m, 1.0f);
        d->cpu_dev->cast(want, SR_BFLOAT16, x, SR_FLOAT32, m);
        ok = dev->to_host(got, dst + at * 2, m * 2) == 0;
        for (size_t i = 0; ok && i < m; i++)
            if (got[i] != want[i]) ok = 0, bad_at = at + i;
    }
    dev->free(src), dev->free(dst);
    free(x), free(want), free(got);
    st_line(r, ok, "device", "device.cast fp32->bf16 large", NULL,
            ok ? "n=%zu (%zu bytes of fp32): bit-identical to the CPU's"
               : "n=%zu (%zu bytes of fp32): wrong from element %zu on",
            n, n * 4, bad_at);
}

static void large_add(st_report *r, const st_dut *d, size_t n) {
    const tf_kernels *k = d->k;
    char *a = k->alloc(n * 4), *b = k->alloc(n * 4), *o = k->alloc(n * 4);
    if (!a || !b || !o) {
        if (a) k->free(a);
        if (b) k->free(b);
        if (o) k->free(o);
        st_skip(r, "kernel", "gpt2.add fp32 large", "not run: the device has no room for %zu bytes", n * 12);
        return;
    }
    float *x = sr__malloc(CHUNK * 4), *y = sr__malloc(CHUNK * 4), *want = sr__malloc(CHUNK * 4),
          *got = sr__malloc(CHUNK * 4);
    int ok = x && y && want && got;
    for (size_t at = 0; ok && at < n; at += CHUNK) {
        size_t m = n - at < CHUNK ? n - at : CHUNK;
        gen(x, at, m, 1.0f), gen(y, at, m, -0.5f);
        ok = k->ids_upload((int32_t *)(a + at * 4), (const int32_t *)x, m) == 0 &&
             k->ids_upload((int32_t *)(b + at * 4), (const int32_t *)y, m) == 0;
    }
    if (ok) k->add(o, a, b, n, SR_FLOAT32);
    ok = ok && k->sync() == 0;
    size_t bad_at = 0;
    for (size_t at = 0; ok && at < n; at += CHUNK) {
        size_t m = n - at < CHUNK ? n - at : CHUNK;
        gen(x, at, m, 1.0f), gen(y, at, m, -0.5f);
        d->cpu_k->add(want, x, y, m, SR_FLOAT32);
        ok = k->floats_download(got, (const float *)(o + at * 4), m) == 0;
        for (size_t i = 0; ok && i < m; i++)
            if (memcmp(&got[i], &want[i], 4)) ok = 0, bad_at = at + i;
    }
    k->free(a), k->free(b), k->free(o);
    free(x), free(y), free(want), free(got);
    st_line(r, ok, "kernel", "gpt2.add fp32 large", NULL,
            ok ? "n=%zu (%zu bytes each): bit-identical to the CPU's"
               : "n=%zu (%zu bytes each): wrong from element %zu on",
            n, n * 4, bad_at);
}

void st_check_large(st_report *r, const st_dut *d, size_t n) {
    large_cast(r, d, n);
    large_add(r, d, n);
}
