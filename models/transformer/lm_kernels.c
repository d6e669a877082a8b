/*
 * transformer lm_task: which kernel table a run computes with -- the CPU's (kernels_cpu.c, over
 * OpenBLAS or BLIS), or CUDA's when the run uses NCCL -- and what the start-up lines say about the
 * CPU's BLAS.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm_state.h"

/* The CUDA kernels live in transformer_cuda.so next to the task, so CPU runs never map cuBLAS. */
static const tf_kernels *load_cuda_kernels(const tf_lm *g) {
    Dl_info info;
    if (!dladdr((void *)tf_kernels_cpu, &info) || !info.dli_fname) return NULL;
    char path[4096];
    snprintf(path, sizeof path, "%s", info.dli_fname);
    char *slash = strrchr(path, '/');
    snprintf(slash ? slash + 1 : path, sizeof path - (size_t)(slash ? slash + 1 - path : 0), "transformer_cuda.so");
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        tf__lm_error(g,
                     "this run uses NCCL (GPUs) but the CUDA kernels cannot be loaded: %s; build "
                     "shardrun with nvcc available (-DSHARDRUN_CUDA=ON)\n",
                     dlerror());
        return NULL;
    }
    const tf_kernels *(*get)(void) = (const tf_kernels *(*)(void))dlsym(h, "tf_kernels_cuda");
    if (!get) tf__lm_error(g, "%s has no tf_kernels_cuda (%s); rebuild shardrun\n", path, dlerror());
    return get ? get() : NULL;
}

const tf_kernels *tf__lm_kernels(const tf_lm *g, int cuda) {
    const tf_kernels *k = cuda ? load_cuda_kernels(g) : tf_kernels_cpu();
    if (k && sr_profile_enabled()) k = tf_kernels_profiled(k); /* SHARDRUN_PROFILE=1 */
    return k;
}

#ifdef SHARDRUN_BLAS_BLIS
#define TF_BLAS_NAME "BLIS"
#else
#define TF_BLAS_NAME "OpenBLAS"
#endif

void tf__lm_cpu_desc(char *out, size_t len) {
    snprintf(out, len, " (%s, %d thread%s), its %s kernels", TF_BLAS_NAME, tf_cpu_threads(),
             tf_cpu_threads() == 1 ? "" : "s", tf_cpu_blas());
}

/* OpenBLAS 0.3.21 (Debian 12) does not know AMD's Zen 4 and Zen 5 and runs its AVX2 kernels there
   (core "Haswell" or "Zen"), although the CPU has AVX-512: its SkylakeX kernels ran the GPT-2 124M
   GEMMs 1.85x faster on a Zen 5 (docs/benchmarks.md, "GEMM throughput").  OpenBLAS picks its kernels
   when it loads, before this task runs, so only the environment can choose: say so. */
void tf__lm_blas_note(const tf_lm *g) {
#if defined(__x86_64__) && defined(__GNUC__) && !defined(SHARDRUN_BLAS_BLIS)
    const char *core = tf_cpu_blas();
    if (getenv("OPENBLAS_CORETYPE") || !core || (strcmp(core, "Haswell") && strcmp(core, "Zen"))) return;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vl"))
        printf("%s: note: this CPU has AVX-512 but OpenBLAS runs its %s (AVX2) kernels; OPENBLAS_CORETYPE=SkylakeX "
               "in shardrun's environment selects its AVX-512 ones (up to 1.85x faster GEMMs; docs/gpt2.md)\n",
               g->arch->name, core);
#else
    (void)g;
#endif
}
