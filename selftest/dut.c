/* The device under test (see dut.h). */
#define _GNU_SOURCE
#include "dut.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/lib_dir.h"
#include "device/pool.h"

/* selftest.so compiles core/device/cpu.c and cuda_lib.c (the device tables are libshardrun
   internals no task can reach; the copy is the same source).  They find libshardrun_cuda.so
   through sr__lib_dir(), which here must answer libshardrun's folder, not this task's. */
const char *sr__lib_dir(void) {
    static char dir[4096];
    if (!dir[0]) {
        Dl_info info;
        snprintf(dir, sizeof dir, ".");
        if (dladdr((void *)sr_world, &info) && info.dli_fname) {
            char *real = realpath(info.dli_fname, NULL);
            snprintf(dir, sizeof dir, "%s", real ? real : info.dli_fname);
            free(real);
            char *slash = strrchr(dir, '/');
            if (slash) *slash = 0;
        }
    }
    return dir;
}

/* A library next to this task (transformer_cuda.so is built next to it). */
static void *open_beside(const char *name, char *path, size_t len) {
    Dl_info info;
    snprintf(path, len, "%s", name);
    if (dladdr((void *)open_beside, &info) && info.dli_fname) {
        snprintf(path, len, "%s", info.dli_fname);
        char *slash = strrchr(path, '/');
        snprintf(slash ? slash + 1 : path, len - (size_t)(slash ? slash + 1 - path : 0), "%s", name);
    }
    return dlopen(path, RTLD_NOW | RTLD_LOCAL);
}

int st_dut_load(st_dut *d, sr_pg *world, char *err, size_t errlen) {
    memset(d, 0, sizeof *d);
    /* this task links its own copy of the CPU device and its pool (shardrun_device), which the
       worker's start-up does not reach: give it OMP_NUM_THREADS's first number as that start-up
       gives libshardrun's (config/worker_settings.c), so that ranks sharing a node share its cores */
    const char *omp = getenv("OMP_NUM_THREADS");
    if (omp && atoi(omp) >= 1) sr__pool_set_threads(atoi(omp));
    d->cpu_dev = sr__device_get("cpu", err, errlen);
    d->cpu_k = tf_kernels_cpu();
    if (!d->cpu_dev) return -1;
    int nccl = world && !strcmp(sr_pg_backend(world), "nccl");
    d->pg_mem = d->cpu_dev;
    if (nccl && !(d->pg_mem = sr__device_get("cuda", err, errlen))) return -1;
    const char *test = getenv("SHARDRUN_SELFTEST_DUT");
    if (test && *test) {
        void *h = dlopen(test, RTLD_NOW | RTLD_LOCAL);
        const sr__device *(*dev)(const sr__device *) =
            h ? (const sr__device *(*)(const sr__device *))dlsym(h, "selftest_dut_device") : NULL;
        const tf_kernels *(*k)(const tf_kernels *) =
            h ? (const tf_kernels *(*)(const tf_kernels *))dlsym(h, "selftest_dut_kernels") : NULL;
        if (!dev || !k) {
            snprintf(err, errlen, "SHARDRUN_SELFTEST_DUT=%s: %s", test,
                     h ? "exports no selftest_dut_device and selftest_dut_kernels" : dlerror());
            return -1;
        }
        d->dev = dev(d->cpu_dev);
        d->k = k(d->cpu_k);
        const int *shared = (const int *)dlsym(h, "selftest_dut_shared");
        if (shared && *shared) d->cpu_dev = d->dev, d->cpu_k = d->k;
        const char *base = strrchr(test, '/');
        snprintf(d->label, sizeof d->label, "test:%s", base ? base + 1 : test);
        return 0;
    }
    if (!nccl) {
        d->dev = d->cpu_dev, d->k = d->cpu_k;
        snprintf(d->label, sizeof d->label, "cpu");
        return 0;
    }
    d->dev = d->pg_mem;
    char path[4200];
    void *h = open_beside("transformer_cuda.so", path, sizeof path);
    const tf_kernels *(*get)(void) = h ? (const tf_kernels *(*)(void))dlsym(h, "tf_kernels_cuda") : NULL;
    if (!get || !(d->k = get())) {
        snprintf(err, errlen, "%s: %s (build shardrun with nvcc: it makes examples/transformer_cuda.so)", path,
                 h ? "no tf_kernels_cuda" : dlerror());
        return -1;
    }
    snprintf(d->label, sizeof d->label, "cuda");
    return 0;
}
