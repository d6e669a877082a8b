/*
 * The parts of libshardrun_cuda.so that its table gathers (cuda_lib_table.c), each defined in its
 * own file: the device probe (cuda_probe.cu), the "cuda" device (device_cuda.cu), the nccl backend
 * (pg_nccl.c).  They are hidden like everything in the library but shardrun_cuda_lib, the one
 * function it exports (device/cuda_lib.h).  C linkage: the .cu files are C++.
 */
#ifndef SR__CUDA_PARTS_H
#define SR__CUDA_PARTS_H

#include <stddef.h>

#include "device/cuda_lib.h"

#ifdef __cplusplus
extern "C" {
#endif

/* CUDA devices visible to this process: 0 with the CUDA runtime's reason in err when none. */
int sr__cuda_probe_count(char *err, size_t errlen);
extern const sr__device sr__cuda_device;
extern const struct sr__pg_backend_ops sr__nccl_backend;

/* The library's one exported function: its table (SR__CUDA_LIB_SYMBOL names it for dlsym). */
const sr__cuda_lib *shardrun_cuda_lib(void);

#ifdef __cplusplus
}
#endif

#endif
