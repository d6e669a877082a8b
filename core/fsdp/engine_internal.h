/*
 * The engine's state, shared by its own pieces (engine_*.c, listed below with what each holds),
 * ckpt_*.c (saving and loading shards) and weights.c (initial weights from a safetensors file);
 * and the sr__engine_* internals the pieces share (compiled hidden, as every sr__ internal).
 */
#ifndef SR__FSDP_ENGINE_INTERNAL_H
#define SR__FSDP_ENGINE_INTERNAL_H

#include "shardrun/pg.h"
#include "device/device.h"
#include "fsdp/engine.h"
#include "fsdp/units.h"

typedef enum { SR__U_RELEASED = 0, SR__U_GATHERING, SR__U_GATHERED } sr__ustate;

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
                             itself when sr__engine_get_grad_buffer can skip the separate buffer */
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
    int grad_limit;  /* full-gradient buffers at most (see sr__engine_get_grad_buffer) */
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
/* The same for a return code: 0, -1 (failed) or -2 (bad input: the run's configuration or files);
   every rank gets -2 when any rank had it, else -1 when any failed, else 0. */
int sr__engine_agree_rc(sr__engine *e, sr_pg *pg, int rc);
/* every rank's `mine` in rank order (engine_failure.c); collective, agreeing on `failed` first; 0 or -1 */
int sr__engine_gather_u64(sr__engine *e, int failed, uint64_t mine, const char *what, uint64_t **all, size_t *n);
/* Copies a shard-sized fp32 array from the shards' memory (hdev) to device memory, or back. */
void sr__engine_shard_to_dev(sr__engine *e, float *dev_dst, const float *shard, size_t n);
void sr__engine_shard_from_dev(sr__engine *e, float *shard, const float *dev_src, size_t n);
/* The initialisers' values of elements [lo, lo + n) of unit u. */
void sr__engine_init_range(const sr__engine *e, int u, float *dst, size_t lo, size_t n);

/* ---- what the engine's pieces share -------------------------------------------------------------

   engine_setup.c        sr__engine_create, sr__engine_free
   engine_init_params.c  the master shards' first values (sr__engine_init_params, _fill_master)
   engine_passes.c       a micro-batch's forward, loss and backward through the task
   engine_gather.c       the buffer pools; gathering a unit's parameters, releasing them
   engine_reduce.c       the full-gradient buffers; reduce-scattering gradients into the shards
   engine_step.c         the optimizer step; scalars reduced over a group
   engine_eval.c         evaluation batches; sums over every rank
   engine_failure.c      error messages; the ranks agreeing on failure
   engine_report.c       memory figures, parameter statistics, the description */

static inline int sr__engine_is_root(const sr__engine *e, int u) { return e->units.u[u].root; }
static inline int sr__engine_is_frozen(const sr__engine *e, int u) { return e->units.u[u].frozen; }

/* where wrapped unit u's gathered buffer comes from */
static inline sr__pool *sr__engine_param_pool_of(sr__engine *e, int u) {
    return e->units.u[u].owner >= 0 ? &e->companion_pool : &e->param_pool;
}

/* where unit u's shard-sized temporaries come from */
static inline sr__pool *sr__engine_temp_pool_of(sr__engine *e, int u) {
    return sr__engine_is_root(e, u) ? &e->root_temp_pool : &e->temp_pool;
}

/* The call a training micro-batch (micro) or an eval batch (eval = 1, micro: the eval batch) of n
   samples starts from at `step`; the passes fill in the module, parameters and flags. */
static inline sr_module_call sr__engine_call_of(const sr__engine *e, int n, long long step, int micro, int eval) {
    sr_module_call c = {0};
    c.dtype = e->dtype;
    c.device = e->dev->kind;
    c.batch_size = n;
    c.step = step;
    c.micro_step = micro;
    c.eval = eval;
    return c;
}

/* engine_failure.c: log that a collective over pg failed ("FSDP <what> failed: ..."), or that the
   task's <what> of module mi (-1: the loss) did; both return -1 */
int sr__engine_pg_fail(sr_pg *pg, const char *what);
int sr__engine_task_fail(sr__engine *e, const char *what, int mi);

/* engine_gather.c: a buffer from the pool (allocated, and counted in the peak, when none is free;
   NULL after logging when out of memory), one given back (NULL: nothing), every free one freed */
void *sr__engine_pool_get(sr__engine *e, sr__pool *p);
void sr__engine_pool_put(sr__pool *p, void *b);
void sr__engine_pool_drain(sr__engine *e, sr__pool *p);
/* engine_gather.c: the profile of a collective issued at `issued`, waited for from t0 until now */
void sr__engine_wait_done(double issued, double t0, size_t bytes);
/* engine_gather.c: unit u's gather (and its companion's) issued, waited for, both, or released;
   sr__engine_wait_gather_one waits for u alone.  0 or -1 */
int sr__engine_issue_gather(sr__engine *e, int u);
int sr__engine_wait_gather(sr__engine *e, int u);
int sr__engine_wait_gather_one(sr__engine *e, int u);
int sr__engine_ensure_gathered(sr__engine *e, int u);
void sr__engine_release_params(sr__engine *e, int u);

/* engine_reduce.c: unit u's full-gradient buffer, zeroed, before its backward; its reduce-scatter
   issued after it; a pending reduce-scatter finished into the gradient shard.  0 or -1 */
int sr__engine_get_grad_buffer(sr__engine *e, int u);
int sr__engine_issue_reduce(sr__engine *e, int u);
int sr__engine_complete_reduce(sr__engine *e, int u);

/* engine_passes.c: the task's call for module mi (parameter and, with_grads, gradient pointers),
   and the forward over every module (keep_root, keep_wrapped: activations kept; reshard: wrapped
   units released after their last module).  0 or -1 */
void sr__engine_module_call(sr__engine *e, int mi, sr_module_call *c, int with_grads);
int sr__engine_forward_pass(sr__engine *e, sr_module_call *c, int keep_root, int keep_wrapped, int reshard);

/* engine_step.c: *v reduced with op over pg (NULL: unchanged) through device memory; 0 or -1 */
int sr__engine_reduce_scalar(sr__engine *e, sr_pg *pg, double *v, sr_redop op);

#endif
