/*
 * Devices: where the FSDP engine keeps shards and does its elementwise work.
 *
 * Lifecycle: the engine picks a device once per run (sr__device_get: "cpu", or "cuda" loaded from
 * libshardrun_cuda.so when the run uses the nccl backend) -> allocates its persistent shards and
 * its buffer pool with alloc -> per step: cast (gathers in the compute dtype), accumulate (gradient
 * shards), sumsq/nonfinite (clipping, fp16 overflow), adamw -> free at the end.
 *
 * Every operation is elementwise or a reduction over flat arrays.  The per-element arithmetic is
 * written once in device/optim_math.h (and shardrun/half.h) and used by both the C loops of
 * device_cpu.c and the kernels of cuda/device_cuda.cu, so the CPU tests check what a GPU runs.
 * Pointers are device pointers; host <-> device copies go through to_host/to_device.
 */
#ifndef SR__CORE_DEVICE_H
#define SR__CORE_DEVICE_H

#include <stddef.h>

#include "shardrun/dtype.h"
#include "shardrun/model.h"

/* One AdamW step (torch.optim.AdamW's update, decoupled weight decay): the settings in double, as
   torch holds them (Python floats), and the 1-based step, from which sr__adamw_prepare derives the
   bias corrections 1 - beta^step; so the derivation is the kernels' own and the self-test's float64
   reference checks it (a wrong correction fails `math device.adamw`). */
typedef struct sr__adamw_args {
    double lr, beta1, beta2, eps, weight_decay;
    long long step; /* 1-based */
    float grad_mul; /* the gradient is multiplied by this first (clip coefficient / loss scale) */
} sr__adamw_args;

typedef struct sr__device {
    const char *name; /* "cpu", "cuda" */
    sr_device_kind kind;
    void *(*alloc)(size_t bytes); /* zero-filled; NULL when out of memory */
    void (*free)(void *p);
    int (*to_host)(void *host_dst, const void *dev_src, size_t bytes);
    int (*to_device)(void *dev_dst, const void *host_src, size_t bytes);
    void (*zero)(void *p, size_t bytes);
    /* dst[i] = (dst_dtype) src[i]; floating dtypes only (fp32, bf16, fp16) */
    void (*cast)(void *dst, sr_dtype dst_dtype, const void *src, sr_dtype src_dtype, size_t n);
    /* acc[i] += (float) src[i] */
    void (*accumulate)(float *acc, const void *src, sr_dtype src_dtype, size_t n);
    /* sum of x[i]^2, accumulated in double */
    double (*sumsq)(const float *x, size_t n);
    /* 1 when any x[i] is inf or NaN */
    int (*nonfinite)(const float *x, size_t n);
    /* AdamW on n elements (the engine calls it per parameter segment of a shard, with
       weight_decay 0 for SR_PARAM_NO_DECAY parameters) */
    void (*adamw)(float *param, const float *grad, float *exp_avg, float *exp_avg_sq, size_t n,
                  const sr__adamw_args *a);
    int (*sync)(void); /* waits for queued work; 0 or -1 */
} sr__device;

/* "cpu" or "cuda"; NULL with a message in err when the device cannot be used here. */
const sr__device *sr__device_get(const char *name, char *err, size_t errlen);

#endif
