/*
 * shardrun model tasks: the task describes its layers, shardrun shards and trains them.
 *
 * Lifecycle, in each worker (after the environment is written and the world group exists):
 *
 *   task .so loaded -> `shardrun_task` of kind SR_TASK_MODEL (SR_MODEL_TASK below)
 *   -> create(ctx, model): the task reads its [task] keys (sr_config*), declares its modules in
 *      forward order (sr_model_module) and each module's parameters (sr_model_param, sr_model_tie),
 *      and returns its state.  It allocates no parameter memory: shardrun owns every parameter.
 *   -> the engine turns modules into wrap units (FSDP_AUTO_WRAP_POLICY), shards them, initialises
 *      or loads the shards, and the trainer runs.  Per optimizer step, per micro-batch:
 *        batch(state, sample indices)                 the task loads its inputs
 *        forward(state, call)   for each module, in declaration order
 *        loss(state, call)      the micro-batch's mean loss; seeds d(loss)/d(output) * grad_scale
 *        backward(state, call)  for each module, in reverse order
 *      and, when create() described eval data (sr_model_eval_data) and [task] eval_strategy asks,
 *      at the scheduled steps, per eval micro-batch: the eval batch(), forward(), loss() -- no backward
 *   -> destroy(state)
 *
 * A model task never calls a collective and never sees a shard: every callback receives plain
 * pointers to the module's gathered parameters (and, in backward, to its gradient buffers), valid
 * only inside that callback.  Parameters are row-major, in the declared shape, of element type
 * call->dtype (fp32, or bf16/fp16 under ACCELERATE_MIXED_PRECISION; see shardrun/half.h).
 */
#ifndef SHARDRUN_MODEL_H
#define SHARDRUN_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "shardrun/api.h"
#include "shardrun/dtype.h"
#include "shardrun/pg.h" /* sr_world(): a model task may ask which backend runs it */
#include "shardrun/task.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sr_model sr_model; /* the description the engine builds from create() */

/* How a parameter starts when no checkpoint or weights file provides it.  Values depend only on
   the trainer's seed, the parameter's name and the element's index: every world size and
   sharding strategy starts from the same model. */
typedef enum sr_init_kind {
    SR_INIT_ZEROS = 0,
    SR_INIT_ONES,
    SR_INIT_CONSTANT, /* every element = a */
    SR_INIT_NORMAL,   /* mean 0, standard deviation a */
    SR_INIT_UNIFORM   /* uniform in [-a, a) */
} sr_init_kind;

typedef struct sr_init {
    sr_init_kind kind;
    float a;
} sr_init;

#define SR_ZEROS ((sr_init){SR_INIT_ZEROS, 0.0f})
#define SR_ONES ((sr_init){SR_INIT_ONES, 0.0f})
#define SR_CONSTANT(v) ((sr_init){SR_INIT_CONSTANT, (v)})
#define SR_NORMAL(std) ((sr_init){SR_INIT_NORMAL, (std)})
#define SR_UNIFORM(a) ((sr_init){SR_INIT_UNIFORM, (a)})

/* sr_model_param flags */
#define SR_PARAM_NO_DECAY 1u /* AdamW applies no weight decay (biases, norm weights), as HF's Trainer */
/* The parameter is not trained (torch's requires_grad = False): it is sharded, gathered for forward
   and backward and saved like the others, but has no gradient, no optimizer state and takes no part
   in the gradient norm.  In backward, call->grads[i] is NULL for it.  [task] freeze sets it by name
   pattern too (docs/model-tasks.md, "Frozen parameters").  A tied name is frozen with its target. */
#define SR_PARAM_FROZEN 2u
#define SR_MODEL_HAS_FROZEN 1 /* this header has SR_PARAM_FROZEN */
/* An adapter's weight (HF PEFT's LoRA A and B): FULL checkpoints also write it to
   adapter_model.safetensors (sr_model_adapter below). */
#define SR_PARAM_ADAPTER 4u

/* Declares the next module, in forward order.  `name` is its dotted name ("transformer.h.3"),
   `class_name` what FSDP_TRANSFORMER_CLS_TO_WRAP matches ("GPT2Block").  Returns the module's
   index (0, 1, ...), or -1 with a message on stderr (duplicate name, empty name). */
SR_API int sr_model_module(sr_model *m, const char *name, const char *class_name);

/* Declares a parameter of the last declared module: its full dotted name
   ("transformer.h.3.attn.c_attn.weight"), `ndim` (1..4) sizes, initialiser and flags.  The
   module's call->params[i] is its i-th declared (or tied) parameter.  Returns 0 or -1 (an
   initialiser value that is not finite is refused: the model would start from NaN). */
SR_API int sr_model_param(sr_model *m, const char *name, int ndim, const int64_t *shape, sr_init init, unsigned flags);

/* Declares that the last declared module also uses the earlier parameter `target` under the
   name `name` (lm_head.weight tied to transformer.wte.weight): one storage, one gradient (both
   modules' backward add into it), saved once under `target`.  Both modules must end up in the
   same wrap unit, or the run fails before the first step saying so. */
SR_API int sr_model_tie(sr_model *m, const char *name, const char *target);

/* Declares that the parameters flagged SR_PARAM_ADAPTER are adapters in HF PEFT's sense (LoRA): every
   FULL_STATE_DICT checkpoint then also holds adapter_model.safetensors -- those parameters alone,
   fp32, each named `prefix` + its name ("base_model.model." + "transformer.h.0.attn.c_attn.lora_A.weight")
   -- and adapter_config.json with `config_json` as its text, which PEFT's PeftModel.from_pretrained
   reads.  Both strings are copied.  Call it in create(), at most once.  0, or -1 with a message. */
#define SR_MODEL_HAS_ADAPTER 1 /* this header has sr_model_adapter and SR_PARAM_ADAPTER */
SR_API int sr_model_adapter(sr_model *m, const char *prefix, const char *config_json);

/* Files every FULL_STATE_DICT checkpoint (and the final save) also holds, beside model.safetensors, as
   HF's save_pretrained lays a model folder out: a tokenizer's files (tokenizer.json, or vocab.json and
   merges.txt), config.json.  sr_model_file reads the file at `path` now, whole, and the checkpoints
   get those bytes (what the run trained with, even if the file changes later); sr_model_file_data
   takes `size` bytes from `data` (copied).  `name` is the file's name in the checkpoint folder: a
   plain name (no '/'), not one of the checkpoint's own files (model.safetensors, optimizer.safetensors,
   trainer_state.json, adapter_*, shard-*), each name once.  The checkpoint's model.safetensors lists
   every such file with its XXH3-64 hash (docs/checkpoint-format.md), so damage to one is caught.
   Call them in create().  0, or -1 with a message naming the file. */
#define SR_MODEL_HAS_FILES 1 /* this header has sr_model_file and sr_model_file_data */
SR_API int sr_model_file(sr_model *m, const char *name, const char *path);
SR_API int sr_model_file_data(sr_model *m, const char *name, const void *data, size_t size);

typedef enum sr_device_kind { SR_DEVICE_CPU = 0, SR_DEVICE_CUDA } sr_device_kind;

/* What a callback gets.  Pointers are valid only during the call. */
typedef struct sr_module_call {
    int module;          /* index of the module, in declaration order (loss: the last module's) */
    const char *name;    /* its dotted name */
    int nparams;         /* declared + tied parameters of the module */
    void *const *params; /* gathered parameter values, in declaration order */
    void *const *grads;  /* backward: gradient buffers to ADD into (+=; the engine zeroes them);
                            NULL in forward and loss.  grads[i] is NULL for a frozen parameter
                            (SR_PARAM_FROZEN): write no gradient for it, skip computing it (the
                            weight-gradient GEMM), and still compute the input's gradient */
    sr_dtype dtype;      /* element type of params and grads */
    sr_device_kind device;
    int batch_size;       /* samples in this micro-batch */
    int save_activations; /* forward: 0 when the engine will call forward again (recompute = 1)
                             before this module's backward, so intermediates need not be kept; the
                             module's input must always be kept (and the last module's output, which
                             loss() reads) */
    int recompute;        /* forward: 1 for the recomputation under activation checkpointing.  It is
                             done a wrap unit at a time: right before the backward of a unit's last
                             module, forward runs again (save_activations = 1) for every module of
                             the unit, in forward order; then backward runs for them in reverse */
    float grad_scale;     /* loss: multiply d(loss)/d(output) by this (gradient accumulation and the
                             fp16 loss scale are folded in) */
    long long step;       /* optimizer step, from 0; counts every step, also fp16 steps that were
                             skipped for an overflow */
    int micro_step;       /* micro-batch within the step, from 0 (evaluation: the eval batch, from 0) */
    /* Appended later (a task built against an older header never reads it): */
    int eval; /* 1: an evaluation pass (sr_model_eval_data): forward and loss only, on eval
                             batches, nothing backward; loss() gets grad_scale 0 and need not seed a
                             gradient.  0 in training. */
} sr_module_call;

typedef struct sr_model_ops {
    /* Compute dtypes forward/backward accept: bits (1u << SR_FLOAT32) | (1u << SR_BFLOAT16) | ... */
    uint32_t dtypes;
    /* Devices whose memory the callbacks can compute on: bits (1u << SR_DEVICE_CPU) | ... */
    uint32_t devices;
    /* Reads [task] keys, declares modules and parameters, returns the state (NULL = error, after
       printing why: the run fails as a configuration error, exit 2). */
    void *(*create)(sr_ctx *ctx, sr_model *model);
    /* After training (or a failure), before this rank's results are collected: the task may
       still sr_report_*() through the ctx it got in create(). */
    void (*destroy)(void *state);
    /* Number of training samples; the trainer shuffles and shards indices 0..n-1 over the
       data-parallel ranks like torch's DistributedSampler. */
    int64_t (*num_samples)(void *state);
    /* Loads the micro-batch made of these sample indices; *tokens = tokens in it (for tokens/s).
       0 or -1. */
    int (*batch)(void *state, const int64_t *samples, int n, long long *tokens);
    int (*forward)(void *state, const sr_module_call *call);
    /* After the last module's forward: *loss = the micro-batch's mean loss (fp32/double); seeds
       the gradient of the last module's output, multiplied by call->grad_scale. */
    int (*loss)(void *state, const sr_module_call *call, double *loss);
    int (*backward)(void *state, const sr_module_call *call);
} sr_model_ops;

/* Evaluation data, optional: a task that has held-out samples describes them in create() with
   sr_model_eval_data().  The trainer then evaluates ([task] eval_strategy): every rank loads its own
   share of the eval samples through batch() below and runs forward (the engine gathers parameters
   as in training) and loss() with call->eval = 1; no backward, no optimizer.  eval_loss is the mean
   of the batches' losses weighted by their *tokens, over all ranks.
   Versioned like sr_task: struct_size = sizeof(sr_model_eval); fields appended later are read only
   when struct_size reaches them.  A task that never calls it loads and trains as before. */
#define SR_MODEL_HAS_EVAL 1 /* this header has sr_model_eval_data and sr_module_call.eval */

struct sr_choice_seq;

typedef struct sr_model_eval {
    uint32_t struct_size; /* sizeof(sr_model_eval) */
    /* Number of eval samples (0: none; evaluation is then skipped with a note). */
    int64_t (*num_samples)(void *state);
    /* Loads the eval micro-batch made of these eval sample indices (0..num_samples-1, not training
       indices); *tokens = the tokens loss() averages over (predicted tokens), the batch's weight in
       eval_loss.  0 or -1. */
    int (*batch)(void *state, const int64_t *samples, int n, long long *tokens);
    /* Appended later (read only when struct_size reaches it; 0 otherwise): 1 when loss() is a mean
       cross-entropy in nats, so that evaluation also reports eval_perplexity = exp(eval_loss), as
       HF's run_clm.py does.  Leave it 0 for any other loss (an MSE's exp means nothing). */
    int cross_entropy;
    /* Appended later (SR_MODEL_HAS_CHOICE; read only when struct_size reaches them; 0/NULL
       otherwise): multiple-choice evaluation ([task] eval_files: files in llm.c's eval format,
       HellaSwag/MMLU style; docs/model-tasks.md).  The trainer reads and checks the files and picks
       the answers; the task only scores token sequences.  A task that leaves choice_batch NULL
       cannot be given eval_files (the run is refused before step 0). */
    int64_t vocab_size; /* token ids the model takes: 0 .. vocab_size-1 (checked in every file) */
    int64_t max_tokens; /* the most tokens one sequence may hold (context + completion) */
    /* Loads an eval micro-batch of n token sequences (sr_choice_seq below).  The trainer then runs
       forward() and loss() as for an eval batch (call->eval = 1); loss()'s value is not used. */
    int (*choice_batch)(void *state, const struct sr_choice_seq *seqs, int n);
    /* After that loss(): losses[i] = the mean loss of sequence i over its scored tokens (the mean
       cross-entropy of predicting tokens first_scored .. length-1, each from those before it). */
    int (*choice_losses)(void *state, double *losses, int n);
} sr_model_eval;

#define SR_MODEL_HAS_CHOICE 1 /* this header has sr_model_eval.choice_batch and sr_choice_seq */

/* One sequence of a multiple-choice batch: an example's context followed by one of its
   completions.  tokens[0 .. length) (host memory, valid during choice_batch only); the tokens
   scored are first_scored .. length-1 (the completion; first_scored >= 1).  This layout never
   changes: a later one would come with a callback of its own. */
typedef struct sr_choice_seq {
    const int32_t *tokens;
    int length;
    int first_scored;
} sr_choice_seq;

/* Called in create(): the model's eval data source (copied; the callbacks get the state create()
   returns).  0, or -1 with a message (NULL callbacks, a struct_size too small for them). */
SR_API int sr_model_eval_data(sr_model *m, const sr_model_eval *eval);

/* ---- the step profile (SHARDRUN_PROFILE=1) -------------------------------------------------------
   With SHARDRUN_PROFILE=1 in its environment, rank 0 prints at every logging step and at the end a
   table of where the step went, and every rank reports it in its results (docs/model-tasks.md).
   The engine times its own work (optimizer, clipping, casts, collectives, data); a task that wants
   its kernels shown by class, not as one "task" row, reports each kernel with sr_profile_kernel().
   Typical use: read sr_profile_enabled() once in create() and, when it is 1, route kernels through
   a timing wrapper (models/transformer/kernels_profile.c), so a run without profiling pays nothing or
   one predictable branch per kernel.  Time a GPU kernel only after the device finished it. */
#define SR_MODEL_HAS_PROFILE 1 /* this header has sr_profile_* */

typedef enum sr_kernel_class {
    SR_KERNEL_GEMM = 0,   /* the layers' matrix products (GFLOP/s) */
    SR_KERNEL_ATTENTION,  /* attention: its score and value products and its softmax (GFLOP/s) */
    SR_KERNEL_SOFTMAX_CE, /* the output softmax and cross-entropy, with its gradient (GB/s) */
    SR_KERNEL_NORM_ACT,   /* norms, activations, bias, residual adds, embeddings (GB/s) */
    SR_KERNEL_COPY,       /* copies, casts and zeroing (GB/s) */
    SR_KERNEL_CLASSES     /* the number of classes; not a class */
} sr_kernel_class;

/* 1 when this run profiles (SHARDRUN_PROFILE=1 in the worker's environment), else 0; the same for
   the whole run. */
SR_API int sr_profile_enabled(void);
/* Seconds on a monotonic clock (only differences mean anything): to time a kernel. */
SR_API double sr_profile_clock(void);
/* Adds one kernel call to its class: its time in seconds, its floating-point operations and the
   bytes it read and wrote (0 when not known).  Does nothing when profiling is off or cls is not a
   class.  Call it from the thread that calls the task's callbacks. */
SR_API void sr_profile_kernel(sr_kernel_class cls, double seconds, double flops, double bytes);

/* Defines the exported symbol for a model task (ops: a `const sr_model_ops` object). */
#define SR_MODEL_TASK(task_name, ops)                                                                                  \
    __attribute__((visibility("default")))                                                                             \
    const sr_task shardrun_task = {SR_TASK_ABI_VERSION, sizeof(sr_task), SR_TASK_MODEL, (task_name), 0, &(ops)}

#ifdef __cplusplus
}
#endif
#endif
