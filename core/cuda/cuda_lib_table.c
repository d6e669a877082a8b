/*
 * libshardrun_cuda.so's ABI: the table of its parts and the one function that hands it out
 * (device/cuda_lib.h says how libshardrun checks and reads it).  The link's version script,
 * core/cuda/libshardrun_cuda.map, keeps every other name of the library inside it.
 */
#include "cuda/cuda_parts.h"
#include "pg/backend.h"

static const sr__cuda_lib table = {
    .abi_version = SR__CUDA_LIB_ABI_VERSION,
    .struct_size = sizeof(sr__cuda_lib),
    .device_count = sr__cuda_probe_count,
    .device = &sr__cuda_device,
    .nccl_backend = &sr__nccl_backend,
};

__attribute__((visibility("default"))) const sr__cuda_lib *shardrun_cuda_lib(void) { return &table; }
