#define _GNU_SOURCE
#include "device/cuda_lib.h"

#include <dlfcn.h>
#include <stdio.h>

#include "base/lib_dir.h"

void *sr__cuda_symbol(const char *symbol, char *err, size_t errlen) {
    char path[4200];
    snprintf(path, sizeof path, "%s/libshardrun_cuda.so", sr__lib_dir());
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(err, errlen, "%s cannot be loaded: %s (build shardrun with -DSHARDRUN_CUDA=ON)", path, dlerror());
        return NULL;
    }
    void *sym = dlsym(h, symbol);
    if (!sym) snprintf(err, errlen, "%s has no %s", path, symbol);
    return sym;
}

int sr__cuda_device_count(char *err, size_t errlen) {
    int (*count)(char *, size_t) = (int (*)(char *, size_t))sr__cuda_symbol("sr_cuda_device_count", err, errlen);
    return count ? count(err, errlen) : 0;
}

const sr__device *sr__cuda_device_table(char *err, size_t errlen) {
    return (const sr__device *)sr__cuda_symbol("sr__cuda_device", err, errlen);
}
