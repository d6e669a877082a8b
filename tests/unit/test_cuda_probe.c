/* The CUDA shared object loads and runs on a machine without a GPU (or driver): it must answer,
   not crash, so CPU machines can probe it.  Its one entry, shardrun_cuda_lib, hands out the table
   of device/cuda_lib.h, complete and of this build. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "device/cuda_lib.h"
#include "pg/backend.h"

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "cannot load %s: %s\n", argv[1], dlerror());
        return 1;
    }
    sr__cuda_lib_fn entry = (sr__cuda_lib_fn)dlsym(h, SR__CUDA_LIB_SYMBOL);
    const sr__cuda_lib *lib = entry ? entry() : NULL;
    if (!lib) {
        fprintf(stderr, "no %s table in %s\n", SR__CUDA_LIB_SYMBOL, argv[1]);
        return 1;
    }
    if (lib->abi_version != SR__CUDA_LIB_ABI_VERSION || lib->struct_size != sizeof(sr__cuda_lib)) {
        fprintf(stderr, "table of version %u, %zu bytes; this build's: version %u, %zu bytes\n", lib->abi_version,
                lib->struct_size, SR__CUDA_LIB_ABI_VERSION, sizeof(sr__cuda_lib));
        return 1;
    }
    if (!lib->device_count || !lib->device || strcmp(lib->device->name, "cuda") || !lib->nccl_backend ||
        strcmp(lib->nccl_backend->name, "nccl")) {
        fprintf(stderr, "the table lacks the device count, the \"cuda\" device or the \"nccl\" backend\n");
        return 1;
    }
    char err[256] = "";
    int n = lib->device_count(err, sizeof err);
    printf("CUDA devices: %d%s%s%s\n", n, err[0] ? " (" : "", err, err[0] ? ")" : "");
    if (n < 0 || (n == 0 && !err[0])) {
        fprintf(stderr, "zero devices must come with the CUDA runtime's reason\n");
        return 1;
    }
    return 0;
}
