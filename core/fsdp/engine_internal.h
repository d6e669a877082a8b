/*
 * The engine's state, shared by engine.c (the step), ckpt_*.c (saving and loading shards) and
 * weights.c (initial weights from a safetensors file).
 */
#ifndef SR_FSDP_ENGINE_INTERNAL_H
#define SR_FSDP_ENGINE_INTERNAL_H

#include "shardrun/pg.h"
#include "device/device.h"
#include "fsdp/engine.h"
#include "fsdp/units.h"

typedef enum { SR_U_RELEASED = 0, SR_U_GATHERING, SR_U_GATHERED } sr__ustate;

typedef struct sr__pool {
    size_t bytes; /* of each buffer */
    void **free;
    int nfree, allocated;
} sr__pool;

typedef struct sr__uslot {
    /* persistent, shard-sized, fp32 (memory of hdev) */
    float *master, *grad, *exp_avg, *exp_avg_sq;
    /* per step */
    sr__ustate st;
    void *full;        /* gathered parameters, param dtype, padded length */
    void *gather_send; /* cast shard being sent (mixed precision), or NULL */
    sr_work *gather_work;
    void *gfull;    /* full gradients, param dtype */
    void *gdst;     /* what the task adds this micro-batch's gradients into: gfull, or grad
                             itself when get_grad_buffer can skip the separate buffer */
    int grad_clean; /* grad holds zeros (zero_grads ran, nothing was added since): the first
                             micro-batch's gradients can go into it without an addition pass */
    void *rs_recv;  /* reduce-scatter result, shard-sized, param dtype: a temporary, or NULL when
                             the pending reduce-scatter writes the grad shard itself (grad held zeros,
                             fp32 on the device) */
    sr_work *rs_work;
    int rs_pending;
    double issued, issued_rs; /* the profile: when the gather and the reduce-scatter were issued */
} sr__uslot;

struct sr__engine {
    sr_ctx *ctx;
    const char *task;
    const sr_model_ops *ops;
    void *state;
    sr_model *model;
    sr__fsdp_config cfg;
    sr__units units;
    sr__uslot *slot;
    const sr__device *dev;  /* where units are gathered and the task computes */
    const sr__device *hdev; /* where the shards live: dev, or the CPU under FSDP_OFFLOAD_PARAMS */
    int offload;            /* hdev != dev: shards travel through host staging buffers */
    void *stage;            /* host staging, one shard in fp32 (offload) */
    float *xfer;            /* device buffer, one shard in fp32 (offload: replica all-reduce, FULL save) */
    uint64_t seed;
    sr_dtype dtype; /* gather/compute/reduce dtype */
    size_t dsize;
    sr_pg *world, *shard_pg, *rep_pg; /* NULL when the group would have one rank */
    int shard_size, shard_rank, rep_size, rep_rank;
    int rank, world_size;
    int *fwd_units; /* non-root units in forward order */
    int nfwd;
    int *mod_pos; /* module -> position of its unit in fwd_units (-1: root) */
    /* pools */
    /* temp_pool: shard-sized buffers of the wrapped units; root_temp_pool: the root's, sized for its
       shard alone (a root holding the token embedding can be 20x a block's) */
    /* companion_pool: the gathered buffers of frozen companions (units.h), sized for them alone: a
       LoRA unit's adapters and its frozen base would otherwise both take the larger size */
    sr__pool param_pool, companion_pool, grad_pool, temp_pool, root_temp_pool;
    int grad_limit;  /* full-gradient buffers at most (see get_grad_buffer) */
    int *pending_rs; /* FIFO of units with a reduce-scatter in flight */
    int npending;
    /* scalars for collectives (device memory) */
    float *scalar;
    /* loss scaling (fp16) */
    double loss_scale;
    int good_steps;
    long long adam_steps; /* updates taken (skipped fp16 steps do not count), AdamW's t */
    /* accounting */
    size_t persistent, pool_peak, peak;
    double rs_bytes; /* bytes this rank sent into reduce-scatters (frozen units send none) */
    /* per-call pointer arrays */
    void **pptr, **gptr;
    int max_mod_params;
    /* The frozen base (fsdp/ckpt_frozen.h): where its values came from, for messages ("" until the
       master shards are filled), and its digest, computed once it is needed and kept (frozen values
       never change; filling the shards or loading them from a checkpoint forgets it). */
    char base_from[600];
    uint64_t frozen_digest;
    int frozen_digest_known;
};

/* Fills elements [lo, lo + n) of unit u's flat buffer (host memory, padding zeroed). */
typedef void (*sr__unit_filler)(sr__engine *e, int u, float *dst, size_t lo, size_t n, void *arg);
/* Sets every unit's fp32 master shard: with from_rank0 (and several ranks), rank 0 fills whole
   units one at a time and broadcasts them (FSDP_SYNC_MODULE_STATES: no rank holds the whole model);
   otherwise each rank fills its own shard.  Collective; 0 or -1. */
int sr__engine_fill_master(sr__engine *e, sr__unit_filler fill, void *arg, int from_rank0);
/* Every rank of `pg` learns whether any of them failed (a checkpoint, a weights file: all or
   nothing).  0 when none did; collective over pg (NULL: just this rank). */
int sr__engine_agree(sr__engine *e, sr_pg *pg, int failed);
/* every rank's `mine` in rank order (engine.c); collective, agreeing on `failed` first; 0 or -1 */
int sr__engine_gather_u64(sr__engine *e, int failed, uint64_t mine, const char *what, uint64_t **all, size_t *n);
/* Copies a shard-sized fp32 array from the shards' memory (hdev) to device memory, or back. */
void sr__engine_shard_to_dev(sr__engine *e, float *dev_dst, const float *shard, size_t n);
void sr__engine_shard_from_dev(sr__engine *e, float *shard, const float *dev_src, size_t n);
/* The initialisers' values of elements [lo, lo + n) of unit u. */
void sr__engine_init_range(const sr__engine *e, int u, float *dst, size_t lo, size_t n);

#endif
