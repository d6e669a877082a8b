/*
 * The "cuda" device: the CUDA runtime on the current device and its default stream.  Thin on
 * purpose: each kernel is a grid-stride loop around an element function of optim_math.h /
 * half.h, the same ones the CPU device's loops call and its unit tests check.
 *
 * Operations returning void report a failed launch on stderr (the engine sees it again at its
 * next sync); sumsq answers NaN and nonfinite 1 when they fail, so a step is never taken on a
 * norm that was not computed.
 */
#include <cuda_runtime.h>
#include <math.h>
#include <mutex>
#include <stdio.h>
#include <stdlib.h>

#include "cuda/cuda_parts.h"
#include "device/device.h"
#include "device/optim_math.h"

#define THREADS 256
#define MAX_BLOCKS 1024 /* grid-stride beyond this; also the size of the reduction's partials */

static int report(cudaError_t rc, const char *what) {
    if (rc == cudaSuccess) return 0;
    fprintf(stderr, "shardrun: device cuda: %s: %s\n", what, cudaGetErrorString(rc));
    return -1;
}

static unsigned blocks_for(size_t n) {
    size_t b = (n + THREADS - 1) / THREADS;
    return (unsigned)(b < MAX_BLOCKS ? b : MAX_BLOCKS);
}

#define GRID_STRIDE(i, n)                                                                                              \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

/* ---- kernels ---------------------------------------------------------------------------------- */

__global__ void sr__k_cast(void *dst, sr_dtype dt, const void *src, sr_dtype st, size_t n) {
    GRID_STRIDE(i, n) sr__store_float(dst, dt, i, sr__load_float(src, st, i));
}

__global__ void sr__k_accumulate(float *acc, const void *src, sr_dtype st, size_t n) {
    GRID_STRIDE(i, n) acc[i] = SR__FADD(acc[i], sr__load_float(src, st, i));
}

__global__ void sr__k_adamw(float *p, const float *g, float *m, float *v, size_t n, sr__adamw_coef c) {
    GRID_STRIDE(i, n) sr__adamw_elem(&p[i], g[i], &m[i], &v[i], &c);
}

/* One double per block (a tree in shared memory); the host adds the blocks' sums. */
__device__ double sr__partials[MAX_BLOCKS];
__device__ int sr__nonfinite_flag;

__global__ void sr__k_sumsq(const float *x, size_t n) {
    __shared__ double s[THREADS];
    double acc = 0;
    GRID_STRIDE(i, n) acc += (double)x[i] * (double)x[i];
    s[threadIdx.x] = acc;
    __syncthreads();
    for (unsigned w = THREADS / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
        __syncthreads();
    }
    if (threadIdx.x == 0) sr__partials[blockIdx.x] = s[0];
}

__global__ void sr__k_nonfinite(const float *x, size_t n) {
    int bad = 0;
    GRID_STRIDE(i, n) bad |= sr__nonfinite_f32(x[i]);
    if (bad) sr__nonfinite_flag = 1; /* every writer writes 1: no atomics needed */
}

/* ---- the device ------------------------------------------------------------------------------- */

static int launched(const char *what) { return report(cudaGetLastError(), what); }

static void *cu_alloc(size_t bytes) {
    void *p = NULL;
    if (!bytes) bytes = 256; /* NULL would mean out of memory */
    if (report(cudaMalloc(&p, bytes), "cudaMalloc")) return NULL;
    if (report(cudaMemset(p, 0, bytes), "cudaMemset")) {
        cudaFree(p);
        return NULL;
    }
    return p;
}

static void cu_free(void *p) {
    if (p) report(cudaFree(p), "cudaFree");
}

static int cu_to_host(void *dst, const void *src, size_t bytes) {
    return bytes ? report(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "copy to host") : 0;
}

static int cu_to_device(void *dst, const void *src, size_t bytes) {
    return bytes ? report(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "copy to device") : 0;
}

static void cu_zero(void *p, size_t bytes) {
    if (bytes) report(cudaMemsetAsync(p, 0, bytes), "cudaMemsetAsync");
}

static void cu_cast(void *dst, sr_dtype dt, const void *src, sr_dtype st, size_t n) {
    if (!n) return;
    if (dt == st) {
        if (dst != src) report(cudaMemcpyAsync(dst, src, n * sr_dtype_size(dt), cudaMemcpyDeviceToDevice), "cast");
        return;
    }
    if (!sr__is_float_dtype(dt) || !sr__is_float_dtype(st)) {
        fprintf(stderr, "shardrun: internal error: device cuda: cast %s -> %s (fp32, bf16, fp16 only)\n",
                sr_dtype_name(st), sr_dtype_name(dt));
        abort();
    }
    sr__k_cast<<<blocks_for(n), THREADS>>>(dst, dt, src, st, n);
    launched("cast");
}

static void cu_accumulate(float *acc, const void *src, sr_dtype st, size_t n) {
    if (!n) return;
    if (!sr__is_float_dtype(st)) {
        fprintf(stderr, "shardrun: internal error: device cuda: accumulate of %s (fp32, bf16, fp16 only)\n",
                sr_dtype_name(st));
        abort();
    }
    sr__k_accumulate<<<blocks_for(n), THREADS>>>(acc, src, st, n);
    launched("accumulate");
}

/* The reductions share module globals, so concurrent callers take turns. */
static std::mutex reduce_lock;

static double cu_sumsq(const float *x, size_t n) {
    if (!n) return 0;
    std::lock_guard<std::mutex> guard(reduce_lock);
    unsigned blocks = blocks_for(n);
    double part[MAX_BLOCKS];
    sr__k_sumsq<<<blocks, THREADS>>>(x, n);
    if (launched("sumsq") ||
        report(cudaMemcpyFromSymbol(part, sr__partials, blocks * sizeof(double)), "sumsq: copy to host"))
        return NAN;
    double s = 0;
    for (unsigned b = 0; b < blocks; b++) s += part[b];
    return s;
}

static int cu_nonfinite(const float *x, size_t n) {
    if (!n) return 0;
    std::lock_guard<std::mutex> guard(reduce_lock);
    int flag = 0;
    if (report(cudaMemcpyToSymbol(sr__nonfinite_flag, &flag, sizeof flag), "nonfinite: reset")) return 1;
    sr__k_nonfinite<<<blocks_for(n), THREADS>>>(x, n);
    if (launched("nonfinite") ||
        report(cudaMemcpyFromSymbol(&flag, sr__nonfinite_flag, sizeof flag), "nonfinite: copy to host"))
        return 1;
    return flag;
}

static void cu_adamw(float *param, const float *grad, float *exp_avg, float *exp_avg_sq, size_t n,
                     const sr__adamw_args *a) {
    if (!n) return;
    sr__k_adamw<<<blocks_for(n), THREADS>>>(param, grad, exp_avg, exp_avg_sq, n, sr__adamw_prepare(a));
    launched("adamw");
}

static int cu_sync(void) { return report(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); }

/* Handed to libshardrun in the library's table (cuda_lib_table.c); constant-initialised. */
const sr__device sr__cuda_device = {
    "cuda",  SR_DEVICE_CUDA, cu_alloc, cu_free,      cu_to_host, cu_to_device, cu_zero,
    cu_cast, cu_accumulate,  cu_sumsq, cu_nonfinite, cu_adamw,   cu_sync,
};
