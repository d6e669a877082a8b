/* libshardrun_cuda: everything that links the CUDA runtime lives in this shared object, which
   shardrun loads only when a run needs a GPU (so CPU runs never map CUDA).  At this stage it
   answers how many devices are visible and proves the nvcc toolchain in CI. */
#include <cuda_runtime.h>
#include <stdio.h>

#include "cuda/cuda_parts.h"

int sr__cuda_probe_count(char *err, size_t errlen) {
    int n = 0;
    cudaError_t rc = cudaGetDeviceCount(&n);
    if (rc != cudaSuccess) {
        if (err && errlen) snprintf(err, errlen, "%s", cudaGetErrorString(rc));
        return 0;
    }
    return n;
}

/* A kernel, so the build exercises device code generation and not only the host compiler. */
__global__ void sr__cuda_fill(float *x, float v, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = v;
}
