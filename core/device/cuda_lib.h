/*
 * libshardrun_cuda.so, the one object that links the CUDA runtime, cuBLAS and NCCL: loaded on
 * first use from next to libshardrun.so, only by a run that needs a GPU, so CPU runs never map
 * CUDA.  Every lookup of its symbols goes through here, each with its type written once.
 */
#ifndef SR_DEVICE_CUDA_LIB_H
#define SR_DEVICE_CUDA_LIB_H

#include <stddef.h>

#include "device/device.h"

/* A symbol of libshardrun_cuda.so, or NULL with why in err (not built, no such symbol). */
void *sr__cuda_symbol(const char *symbol, char *err, size_t errlen);
/* CUDA devices visible to this process: 0 with why in err when there are none or when
   libshardrun_cuda.so or the driver cannot be loaded. */
int sr__cuda_device_count(char *err, size_t errlen);
/* The "cuda" device table, or NULL with why in err. */
const sr__device *sr__cuda_device_table(char *err, size_t errlen);

#endif
