/* Wrong formulas that the CPU and CUDA kernels would share, for tests/cli/selftest_math.sh, loaded
   by the selftest task through SHARDRUN_SELFTEST_DUT: the CPU's tables compiled again from their
   own sources (tests/CMakeLists.txt) with two fault macros, in place of the CPU's as well
   (selftest_dut_shared), as a build with the bug would be on both sides:
     TF_TEST_FAULT_GELU_GRAD  (kernel_math.h)  GELU's derivative with 1 - tanh for 1 - tanh^2
     SR__TEST_FAULT_ADAMW_BC2 (optim_math.h)   AdamW's bias correction 2 taken from beta1: 1 - beta1^t
   Comparing the device with the CPU cannot see either; the float64 references must. */
#include "base/lib_dir.h"
#include "device/device.h"
#include "models/transformer/kernels.h"

/* core/device/cpu.c finds libshardrun_cuda.so through it; this module hands out "cpu" only */
const char *sr__lib_dir(void) { return "."; }

__attribute__((visibility("default"))) const int selftest_dut_shared = 1;

__attribute__((visibility("default"))) const sr__device *selftest_dut_device(const sr__device *cpu) {
    (void)cpu;
    char err[200];
    return sr__device_get("cpu", err, sizeof err); /* this module's own build of core/device/cpu.c */
}

__attribute__((visibility("default"))) const tf_kernels *selftest_dut_kernels(const tf_kernels *cpu) {
    (void)cpu;
    return tf_kernels_cpu(); /* this module's own build of kernels_cpu.c */
}
