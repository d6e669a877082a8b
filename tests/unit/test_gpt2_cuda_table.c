/* The GPT-2 task's CUDA kernel table (models/transformer/kernels_cuda.cu, in transformer_cuda.so) is complete:
   it fills the table by position (C++ has no designated initialisers), so a member added to
   kernels.h and forgotten there would be NULL, and a GPU run would crash on it.  Loading the
   .so needs no GPU; every member after `dtypes` is a function pointer and must be set. */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "models/transformer/kernels.h"

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s PATH/transformer_cuda.so\n", argv[0]);
        return 2;
    }
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "cannot load %s: %s\n", argv[1], dlerror());
        return 1;
    }
    const tf_kernels *(*get)(void) = (const tf_kernels *(*)(void))dlsym(h, "tf_kernels_cuda");
    CHECK(get != NULL);
    const tf_kernels *k = get ? get() : NULL;
    CHECK(k != NULL);
    if (k) {
        CHECK(k->name && !strcmp(k->name, "cuda"));
        CHECK(k->dtypes == ((1u << SR_FLOAT32) | (1u << SR_BFLOAT16) | (1u << SR_FLOAT16)));
        /* the function pointers, from the first to the end of the struct */
        typedef void (*fn)(void);
        size_t first = offsetof(tf_kernels, alloc), n = (sizeof *k - first) / sizeof(fn);
        int set = 0;
        for (size_t i = 0; i < n; i++) {
            fn f;
            memcpy(&f, (const char *)k + first + i * sizeof(fn), sizeof f);
            if (f) set++;
            else fprintf(stderr, "member %zu after dtypes is NULL\n", i);
        }
        CHECK(set == (int)n);
        printf("transformer_cuda.so: %d of %zu kernel functions set\n", set, n);
    }
    return CHECK_DONE();
}
