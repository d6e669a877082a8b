/* The CUDA shared object loads and runs on a machine without a GPU (or driver): it must answer,
   not crash, so CPU machines can probe it. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "cannot load %s: %s\n", argv[1], dlerror());
        return 1;
    }
    int (*count)(char *, size_t) = (int (*)(char *, size_t))dlsym(h, "sr_cuda_device_count");
    if (!count) {
        fprintf(stderr, "no sr_cuda_device_count in %s\n", argv[1]);
        return 1;
    }
    char err[256] = "";
    int n = count(err, sizeof err);
    printf("CUDA devices: %d%s%s%s\n", n, err[0] ? " (" : "", err, err[0] ? ")" : "");
    if (n < 0 || (n == 0 && !err[0])) {
        fprintf(stderr, "zero devices must come with the CUDA runtime's reason\n");
        return 1;
    }
    return 0;
}
