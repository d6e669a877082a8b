/*
 * The FSDP engine: shards a model task's parameters over the ranks and runs its forward and
 * backward with every unit gathered just in time.
 *
 * Lifecycle, in each worker (driven by the trainer):
 *   sr__engine_create: read FSDP_* (fsdp_config.h), build units (units.h), split the process
 *     groups (shard group, replicate group), allocate each rank's persistent shards
 *   -> sr__engine_init_params (seeded init or broadcast from rank 0) or a checkpoint load
 *   -> per optimizer step: sr__engine_micro_batch once per micro-batch (forward, loss, backward,
 *      gradient reduce-scatters issued asynchronously), then sr__engine_step (wait reductions,
 *      replicate all-reduce, overflow check, clipping, AdamW)
 *   -> sr__engine_free.
 * Per rank only the fp32 master shard, fp32 gradient shard and the two AdamW moments persist.
 * Gathered parameters and full gradients (compute dtype, a whole unit each) come from pools of
 * reused buffers: with reshard-after-forward (FULL_SHARD) at most the current and the prefetched
 * unit are gathered at once, SHARD_GRAD_OP keeps each unit gathered from its forward to its
 * backward, and at most two full-gradient buffers exist (a third unit's backward first finishes
 * the oldest reduce-scatter).  The root unit (modules no wrap claimed) keeps its two buffers for
 * the whole run.
 */
#ifndef SR__FSDP_ENGINE_H
#define SR__FSDP_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "shardrun/model.h"
#include "config/fsdp_settings.h"
#include "fsdp/model_desc.h"

typedef struct sr__engine sr__engine;

typedef struct sr__optim {
    double lr, beta1, beta2, eps, weight_decay, max_grad_norm; /* max_grad_norm <= 0: no clipping */
    /* guard_nonfinite (the trainer's nan_policy stop and skip_step): a step whose gradient norm is
       not finite, or whose loss was not (nonfinite_loss, the caller's all-reduced verdict), leaves
       the parameters and AdamW moments as they are.  0: the update is applied whatever the values. */
    int guard_nonfinite, nonfinite_loss;
} sr__optim;

typedef struct sr__step_result {
    double grad_norm; /* before clipping, unscaled; NaN when the step overflowed */
    int skipped;      /* fp16 overflow: no update on any rank */
    int withheld;     /* guard_nonfinite: the loss or the gradient norm was not finite, no update on any rank */
    double loss_scale;
} sr__step_result;

typedef struct sr__engine_mem {
    size_t persistent; /* master + grad + 2 moment shards of trainable units, master of frozen ones, bytes */
    size_t pool;       /* high-water mark of gathered-parameter, full-gradient and transfer buffers */
    size_t peak;       /* high-water mark of persistent + pool in use */
    size_t params;     /* parameters of the model, frozen ones included */
    size_t frozen;     /* of them frozen (SR_PARAM_FROZEN) */
    /* what persistent should be: (frozen x 4 + trainable x 16) bytes / shard-group size (fp32 shards;
       padding to the group size aside) */
    size_t expected;
    double rs_bytes; /* gradient bytes this rank put into reduce-scatters so far */
} sr__engine_mem;

/* NULL after printing why (bad FSDP_* value, unknown wrap class, unsupported dtype, ...). */
sr__engine *sr__engine_create(sr_ctx *ctx, const char *task, const sr_model_ops *ops, void *state, sr_model *model,
                              uint64_t seed);
void sr__engine_free(sr__engine *e);

const sr__fsdp_config *sr__engine_config(const sr__engine *e);
/* Fresh parameters: the initialisers (or rank 0's values, with FSDP_SYNC_MODULE_STATES). */
int sr__engine_init_params(sr__engine *e);
/* Initial parameters from a safetensors file (HF model.safetensors, or a FULL checkpoint's), by
   name, F32/BF16/F16.  With FSDP_CPU_RAM_EFFICIENT_LOADING (several ranks, FSDP on) only rank 0
   reads the file and broadcasts it unit by unit; otherwise each rank reads its shard's ranges.
   Parameters the file lacks keep their initialiser (a warning lists them); a shape mismatch is an
   error, and so is a NaN or infinite value (the first one is named).  *bytes_read: bytes of tensor
   data this rank read.  Collective; 0, -2 (the file does not fit the model or holds non-finite
   values: bad input, before any step) or -1.
   path NULL: every parameter but the adapters from its initialiser.  adapters (init_adapters; NULL:
   none): a PEFT adapter file the SR_PARAM_ADAPTER parameters come from instead, under the model's
   adapter prefix + their names ("base_model.model.transformer.h.0.attn.c_attn.lora_A.weight"); it must
   hold exactly the model's adapters, with their shapes. */
int sr__engine_load_weights(sr__engine *e, const char *path, const char *adapters, long long *bytes_read);
/* One micro-batch of `step`: *loss = this rank's mean loss.  accum: micro-batches per step. */
int sr__engine_micro_batch(sr__engine *e, long long step, int micro, int accum, const int64_t *samples, int n,
                           double *loss, long long *tokens);
/* Finishes the step: reductions, overflow check, gradient norm, the non-finite guard (sr__optim),
   clipping, AdamW.  lr for this step.  The norm is a sum all-reduced over the shard group of
   gradients already averaged across replicas, so every rank sees the same norm and takes the same
   decision. */
int sr__engine_step(sr__engine *e, const sr__optim *o, sr__step_result *out);
/* Evaluation, forward only: loads eval batch `batch` (the model's sr_model_eval source) and runs every
   module's forward with units gathered as in training (and resharded after their forward), then
   loss() with call->eval = 1 and grad_scale 0.  No gradient buffer is touched, no optimizer state.
   *loss: this rank's batch loss; *tokens: its weight.  Collective (gathers); 0 or -1. */
int sr__engine_eval_batch(sr__engine *e, long long step, int batch, const int64_t *samples, int n, double *loss,
                          long long *tokens);
/* Multiple-choice evaluation (sr_model_eval.choice_batch): loads the n sequences, runs forward and
   loss() as sr__engine_eval_batch does, then losses[i] = sequence i's mean loss over its scored
   tokens (choice_losses).  Collective (gathers); 0 or -1. */
int sr__engine_choice_batch(sr__engine *e, long long step, int batch, const sr_choice_seq *seqs, int n, double *losses);
/* v[0..n) summed over every rank in double precision, the same on every rank.  Collective; 0 or -1. */
int sr__engine_sum(sr__engine *e, double *v, int n);
/* Mean of `v` over every rank (for logging). */
double sr__engine_mean(sr__engine *e, double v);
/* *v becomes its mean over every rank, the same number on every rank (the value sr__engine_mean
   gives).  Collective; 0 or -1 (the collective failed: *v is unchanged). */
int sr__engine_avg(sr__engine *e, double *v);
void sr__engine_memory(const sr__engine *e, sr__engine_mem *out);
/* Sum and sum of squares of every trained parameter (fp32 master, all ranks), for parity checks. */
int sr__engine_param_stats(sr__engine *e, double *sum, double *sumsq);
/* One line describing units, strategy, dtype: for the log. */
void sr__engine_describe(const sr__engine *e, char *buf, size_t len);

#endif
