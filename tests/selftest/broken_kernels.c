/* Deliberately broken kernels for tests/cli/selftest.sh, loaded by the selftest task through
   SHARDRUN_SELFTEST_DUT: the CPU's tables with three entries replaced by classic bugs, so the test
   can check that `shardrun selftest` fails and names each of them (and passes the rest).
     gpt2.add           off by one: the last element is never written
     gpt2.gemm          wrong stride: A read as if packed (lda = its row count), ignoring lda
     device.accumulate  off by one: element i is added into acc[i + 1] */
#include <string.h>

#include "device/device.h"
#include "models/transformer/kernels.h"

static const sr__device *cpu_dev;
static const tf_kernels *cpu_k;
static sr__device dev;
static tf_kernels k;

static void add_off_by_one(void *out, const void *a, const void *b, size_t n, sr_dtype dt) {
    if (n) cpu_k->add(out, a, b, n - 1, dt);
}

static void gemm_packed(int ta, int tb, int m, int n, int kk, float alpha, const void *A, int lda, const void *B,
                        int ldb, float beta, void *C, int ldc, sr_dtype dt) {
    (void)lda;
    int packed = ta ? kk : m;
    cpu_k->gemm(ta, tb, m, n, kk, alpha, A, packed > 0 ? packed : 1, B, ldb, beta, C, ldc, dt);
}

static void accumulate_shifted(float *acc, const void *src, sr_dtype st, size_t n) {
    if (n > 1) cpu_dev->accumulate(acc + 1, src, st, n - 1);
}

__attribute__((visibility("default"))) const sr__device *selftest_dut_device(const sr__device *cpu) {
    cpu_dev = cpu;
    dev = *cpu;
    dev.name = "broken";
    dev.accumulate = accumulate_shifted;
    return &dev;
}

__attribute__((visibility("default"))) const tf_kernels *selftest_dut_kernels(const tf_kernels *cpu) {
    cpu_k = cpu;
    k = *cpu;
    k.name = "broken";
    k.add = add_off_by_one;
    k.gemm = gemm_packed;
    return &k;
}
