/*
 * The device under test: the device tables a check compares with the CPU's.
 *
 * Lifecycle: st_dut_load() once per worker, after the world group exists -> the checks read it.
 *
 * On a run whose world group is NCCL, the device under test is "cuda": core's device table from
 * libshardrun_cuda.so (what the FSDP engine uses on a GPU) and the GPT-2 kernel table from
 * transformer_cuda.so (what the GPT-2 task uses).  On Gloo it is the CPU itself: the checks then compare
 * the CPU with itself, which proves the harness, not a GPU.  SHARDRUN_SELFTEST_DUT=FILE.so (a
 * testing aid) takes both tables from a test library instead, which exports
 *   const sr__device *selftest_dut_device(const sr__device *cpu);
 *   const tf_kernels *selftest_dut_kernels(const tf_kernels *cpu);
 * so the tests can hand the harness deliberately broken kernels and check that it fails.  A library
 * that also exports `const int selftest_dut_shared = 1` stands for a build whose formulas both
 * devices share: its tables replace the CPU's as well, so the device is compared with itself as in
 * the CPU half, and only the float64 references (check_math.c) can tell a wrong formula.
 */
#ifndef SELFTEST_DUT_H
#define SELFTEST_DUT_H

#include <stddef.h>

#include "device/device.h"
#include "kernels.h"
#include "shardrun/pg.h"

typedef struct st_dut {
    char label[64];                  /* "cuda", "cpu", "test:NAME.so" */
    const sr__device *dev, *cpu_dev; /* core's device table: under test, and the CPU's */
    const tf_kernels *k, *cpu_k;     /* the GPT-2 kernel table: under test, and the CPU's */
    const sr__device *pg_mem;        /* where collective buffers live: cuda for nccl, cpu for gloo */
} st_dut;

/* 0, or -1 with why in err. */
int st_dut_load(st_dut *d, sr_pg *world, char *err, size_t errlen);

#endif
