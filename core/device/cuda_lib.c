#define _GNU_SOURCE
#include "device/cuda_lib.h"

#include <dlfcn.h>
#include <stdio.h>

#include "base/abi.h"
#include "base/fail.h"
#include "base/lib_dir.h"

/* dlopen counts references: the library is mapped once, and later calls find it already there. */
const sr__cuda_lib *sr__cuda_lib_get(char *err, size_t errlen) {
    char path[4200];
    snprintf(path, sizeof path, "%s/libshardrun_cuda.so", sr__lib_dir());
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        sr__fail(err, errlen, "%s cannot be loaded: %s (build shardrun with -DSHARDRUN_CUDA=ON)", path, dlerror());
        return NULL;
    }
    sr__cuda_lib_fn entry = (sr__cuda_lib_fn)dlsym(h, SR__CUDA_LIB_SYMBOL);
    const sr__cuda_lib *lib = entry ? entry() : NULL;
    if (!lib) {
        sr__fail(err, errlen,
                 "%s exports no %s table: it is not a libshardrun_cuda.so of this shardrun; install both "
                 "from one build",
                 path, SR__CUDA_LIB_SYMBOL);
        return NULL;
    }
    if (lib->abi_version != SR__CUDA_LIB_ABI_VERSION || !SR__REACHES(sr__cuda_lib, lib->struct_size, nccl_backend)) {
        sr__fail(err, errlen,
                 "%s is of another build (its table: version %u, %zu bytes; this libshardrun reads version %u, %zu "
                 "bytes): install libshardrun.so and libshardrun_cuda.so from one build",
                 path, lib->abi_version, lib->struct_size, SR__CUDA_LIB_ABI_VERSION, sizeof(sr__cuda_lib));
        return NULL;
    }
    return lib;
}

int sr__cuda_device_count(char *err, size_t errlen) {
    const sr__cuda_lib *lib = sr__cuda_lib_get(err, errlen);
    return lib ? lib->device_count(err, errlen) : 0;
}

const sr__device *sr__cuda_device_table(char *err, size_t errlen) {
    const sr__cuda_lib *lib = sr__cuda_lib_get(err, errlen);
    return lib ? lib->device : NULL;
}

const struct sr__pg_backend_ops *sr__cuda_nccl_backend(char *err, size_t errlen) {
    const sr__cuda_lib *lib = sr__cuda_lib_get(err, errlen);
    return lib ? lib->nccl_backend : NULL;
}
