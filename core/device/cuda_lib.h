/*
 * libshardrun_cuda.so, the one object that links the CUDA runtime, cuBLAS and NCCL: loaded on
 * first use from next to libshardrun.so, only by a run that needs a GPU, so CPU runs never map
 * CUDA.  Every lookup of it goes through here.
 *
 * Its ABI is one exported function, shardrun_cuda_lib (SR__CUDA_LIB_SYMBOL), which answers a
 * versioned table of what it offers: the device count, the "cuda" device table, the nccl process
 * group backend.  Nothing else leaves the library (core/cuda/libshardrun_cuda.map), so its
 * internals cannot clash with a task's names or be bound by mistake, and one lookup checks that
 * the library and libshardrun come from the same build:
 *
 *   libshardrun: sr__cuda_lib() -> dlopen, dlsym(SR__CUDA_LIB_SYMBOL) -> the table, its
 *                abi_version equal to SR__CUDA_LIB_ABI_VERSION and its struct_size reaching every
 *                field read (the struct_size rule of base/abi.h) -> the accessors below.
 */
#ifndef SR__DEVICE_CUDA_LIB_H
#define SR__DEVICE_CUDA_LIB_H

#include <stddef.h>

#include "device/device.h"

/* The one symbol libshardrun_cuda.so exports; tests/cli/naming.sh checks that nothing else is. */
#define SR__CUDA_LIB_SYMBOL "shardrun_cuda_lib"
/* Changes when a field changes meaning or goes away; appending a field keeps it (base/abi.h).  It
   also covers what libshardrun hands the library's nccl backend (pg/backend.h's setup and store
   calls, which carry no size): 2 since the backend calls sr__pg_store_ops.nccl_id. */
#define SR__CUDA_LIB_ABI_VERSION 2u

struct sr__pg_backend_ops; /* pg/backend.h: device/ sits below pg/, so only the tag here */

typedef struct sr__cuda_lib {
    unsigned abi_version; /* SR__CUDA_LIB_ABI_VERSION of the build that made the library */
    size_t struct_size;   /* sizeof(sr__cuda_lib) there */
    /* CUDA devices visible to this process: 0 with the CUDA runtime's reason in err when none */
    int (*device_count)(char *err, size_t errlen);
    const sr__device *device;                      /* "cuda" (cuda/device_cuda.cu) */
    const struct sr__pg_backend_ops *nccl_backend; /* "nccl" (cuda/pg_nccl.c) */
} sr__cuda_lib;

/* The type of shardrun_cuda_lib, for dlsym. */
typedef const sr__cuda_lib *(*sr__cuda_lib_fn)(void);

/* libshardrun_cuda.so's table, checked, or NULL with why in err (not built, not loadable, or from
   another build). */
const sr__cuda_lib *sr__cuda_lib_get(char *err, size_t errlen);
/* CUDA devices visible to this process: 0 with why in err when there are none or when
   libshardrun_cuda.so or the driver cannot be loaded. */
int sr__cuda_device_count(char *err, size_t errlen);
/* The "cuda" device table, or NULL with why in err. */
const sr__device *sr__cuda_device_table(char *err, size_t errlen);
/* The nccl process group backend, or NULL with why in err. */
const struct sr__pg_backend_ops *sr__cuda_nccl_backend(char *err, size_t errlen);

#endif
