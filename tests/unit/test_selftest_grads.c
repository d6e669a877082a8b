/* The selftest's FSDP step comparison (core/cli/selftest_fsdp.c): gradients recovered from
   checkpoints before and after one AdamW step with learning rate 1 and epsilon 1 (each parameter
   moves by -g / (|g| + 1)), compared per tensor and per element.  Checkpoints written here: the same
   gradients pass; one element off, every gradient 1% off, a NaN, a missing tensor are each caught. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/selftest_fsdp.h"
#include "check.h"
#include "io/safetensors.h"

#define NA 1000
#define NB 3

static char dir[64];

static void save(const char *name, const float *a, const float *b, int with_b) {
    char path[128], err[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    sr__st_tensor t[2] = {{.name = "a", .dtype = SR_FLOAT32, .ndim = 2, .shape = {40, 25}},
                          {.name = "b", .dtype = SR_FLOAT32, .ndim = 1, .shape = {NB}}};
    sr__st_writer *w = sr__st_create(path, t, with_b ? 2 : 1, NULL, 0, err, sizeof err);
    CHECK(w != NULL);
    if (!w) return;
    CHECK(sr__st_write(w, 0, 0, a, NA * 4, err, sizeof err) == 0);
    if (with_b) CHECK(sr__st_write(w, 1, 0, b, NB * 4, err, sizeof err) == 0);
    CHECK(sr__st_finish(w, err, sizeof err) == 0);
}

/* the parameters after the step, from the weights before it and the gradients */
static void step(float *p1, const float *p0, const double *g, int n) {
    for (int i = 0; i < n; i++) p1[i] = (float)(p0[i] - g[i] / (fabs(g[i]) + 1.0));
}

static int compare(const char *run, const sr__selftest_tols *t, sr__selftest_diff *d) {
    char p0[128], ref[128], cand[128], err[600] = "";
    snprintf(p0, sizeof p0, "%s/p0", dir);
    snprintf(ref, sizeof ref, "%s/ref", dir);
    snprintf(cand, sizeof cand, "%s/%s", dir, run);
    int rc = sr__selftest_compare_grads(p0, ref, cand, t, d, err, sizeof err);
    if (rc) printf("  %s: %s\n", run, err);
    return rc;
}

int main(void) {
    snprintf(dir, sizeof dir, "/tmp/selftest-grads-XXXXXX");
    if (!mkdtemp(dir)) return 1;
    float a0[NA], b0[NB] = {1.0f, 1.0f, 0.0f}, a1[NA], b1[NB], a2[NA], b2[NB];
    double ga[NA], gb[NB] = {0.02, -0.5, 3.0}, g2[NA];
    for (int i = 0; i < NA; i++) {
        a0[i] = 0.02f * (float)sin(i * 0.7);
        ga[i] = 0.1 * cos(i * 1.3) * (i % 7 ? 1.0 : 0.01);
    }
    save("p0", a0, b0, 1);
    step(a1, a0, ga, NA), step(b1, b0, gb, NB);
    save("ref", a1, b1, 1);
    const sr__selftest_tols fp32 = {1e-5, 1e-4, 1e-4, 1e-4}, bf16 = {2e-2, 5e-2, 5e-2, 0};
    sr__selftest_diff d;

    /* the same gradients, stored again: nothing off; the recovery is exact to fp32's rounding */
    save("same", a1, b1, 1);
    CHECK(compare("same", &fp32, &d) == 0);
    CHECK(d.tensors == 2 && d.elements == NA + NB && d.bad_tensors == 0 && d.bad_elems == 0);
    CHECK(d.worst_rel < 1e-6 && d.worst[0]);
    printf("same gradients: worst relative L2 difference %.2g in %s\n", d.worst_rel, d.worst);

    /* one element's gradient off by 10% of the largest: caught in fp32 and named */
    for (int i = 0; i < NA; i++) g2[i] = ga[i];
    g2[417] += 0.01;
    step(a2, a0, g2, NA);
    save("one_off", a2, b1, 1);
    CHECK(compare("one_off", &fp32, &d) == 0);
    CHECK(d.bad_elems == 1);
    CHECK(strstr(d.first_bad, "a[417]") != NULL);
    printf("one element off: %zu element(s), first: %s; tensor %s relative %.2g\n", d.bad_elems, d.first_bad, d.worst,
           d.worst_rel);
    /* ... which the coarse bf16 bound lets through (it checks tensors, not elements) */
    CHECK(compare("one_off", &bf16, &d) == 0);
    CHECK(d.bad_elems == 0 && d.bad_tensors == 0);

    /* every gradient 1% too large: every tensor is 1e-2 off, beyond the fp32 bound (1e-4) and
       within bf16's (5e-2) */
    for (int i = 0; i < NA; i++) g2[i] = ga[i] * 1.01;
    double gb2[NB];
    for (int i = 0; i < NB; i++) gb2[i] = gb[i] * 1.01;
    step(a2, a0, g2, NA), step(b2, b0, gb2, NB);
    save("scaled", a2, b2, 1);
    CHECK(compare("scaled", &fp32, &d) == 0);
    CHECK(d.bad_tensors == 2);
    CHECK(fabs(d.worst_rel - 0.01) < 1e-4);
    CHECK(compare("scaled", &bf16, &d) == 0);
    CHECK(d.bad_tensors == 0);

    /* a gradient 2x too large fails bf16's bound too */
    for (int i = 0; i < NA; i++) g2[i] = ga[i] * 2;
    step(a2, a0, g2, NA);
    save("doubled", a2, b1, 1);
    CHECK(compare("doubled", &bf16, &d) == 0);
    CHECK(d.bad_tensors == 1 && !strcmp(d.worst, "a"));

    /* a NaN */
    for (int i = 0; i < NA; i++) a2[i] = a1[i];
    a2[5] = NAN;
    save("nan", a2, b1, 1);
    CHECK(compare("nan", &bf16, &d) == 0);
    CHECK(d.bad_tensors == 1 && d.bad_elems == 1 && strstr(d.first_bad, "a[5] is NaN"));

    /* a tensor missing: no comparison */
    save("missing", a1, b1, 0);
    CHECK(compare("missing", &fp32, &d) == -1);

    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) return 1;
    return CHECK_DONE();
}
