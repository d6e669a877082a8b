/*
 * Every enumeration the job file and the environment contract carry, spelled once.
 *
 * Each list below is one X-macro: X(IDENTIFIER, "TEXT") per member, in the order of its numbers.
 * It expands once into the C enum (the member's number is its place in the list) and once into
 * the '|'-separated choices an sr_key takes (config/value.h: sr__enum_index gives the number back,
 * and SR_KEY_ENUM_DIGITS makes the digits 1..n select too: torch's numbers for the sharding
 * strategy, as accelerate writes FSDP_SHARDING_STRATEGY).  The TEXT is what the job file takes,
 * what the environment carries and what messages and logs print.
 *
 * Users: the [shardrun] key table (config/env_table.c: log_level, elastic_join), the worker's settings reader
 * (config/fsdp_settings.c: the FSDP_* and ACCELERATE_* variables), the trainer's [task] key table
 * and its reader (trainer/train_keys.c, trainer/train_args.c: lr_scheduler_type, the strategies,
 * metric_for_best_model, nan_policy), the FSDP engine's logs and the trainer's (sr__strategy_name
 * and the like).  The plugins are built against include/shardrun/ only and keep their own copies:
 * accelerate of the FSDP lists (plugins/accelerate/accelerate.c), torch of [torch] backend and
 * transport (plugins/torch/torch.c), which reach core/pg as text (pg may not include config).
 */
#ifndef SR__CONFIG_ENUMS_H
#define SR__CONFIG_ENUMS_H

#include <stddef.h>

/* FSDP_SHARDING_STRATEGY ([accelerate] fsdp.sharding_strategy): digit = number + 1 */
#define SR__STRATEGY_LIST(X)                                                                                           \
    X(SR__FULL_SHARD, "FULL_SHARD")                                                                                    \
    X(SR__SHARD_GRAD_OP, "SHARD_GRAD_OP")                                                                              \
    X(SR__NO_SHARD, "NO_SHARD")                                                                                        \
    X(SR__HYBRID_SHARD, "HYBRID_SHARD")                                                                                \
    X(SR__HYBRID_SHARD_ZERO2, "HYBRID_SHARD_ZERO2")

/* FSDP_AUTO_WRAP_POLICY */
#define SR__WRAP_LIST(X)                                                                                               \
    X(SR__WRAP_NONE, "NO_WRAP")                                                                                        \
    X(SR__WRAP_TRANSFORMER, "TRANSFORMER_BASED_WRAP")                                                                  \
    X(SR__WRAP_SIZE, "SIZE_BASED_WRAP")

/* FSDP_BACKWARD_PREFETCH */
#define SR__PREFETCH_LIST(X)                                                                                           \
    X(SR__PREFETCH_NONE, "NO_PREFETCH")                                                                                \
    X(SR__PREFETCH_PRE, "BACKWARD_PRE")                                                                                \
    X(SR__PREFETCH_POST, "BACKWARD_POST")

/* FSDP_STATE_DICT_TYPE */
#define SR__STATE_DICT_LIST(X)                                                                                         \
    X(SR__SD_FULL, "FULL_STATE_DICT")                                                                                  \
    X(SR__SD_LOCAL, "LOCAL_STATE_DICT")                                                                                \
    X(SR__SD_SHARDED, "SHARDED_STATE_DICT")

/* ACCELERATE_MIXED_PRECISION, lowercase only (accelerate does not lowercase it); fp8 is refused by
   name (config/fsdp_settings.c) */
#define SR__PRECISION_LIST(X)                                                                                          \
    X(SR__PRECISION_NO, "no")                                                                                          \
    X(SR__PRECISION_FP16, "fp16")                                                                                      \
    X(SR__PRECISION_BF16, "bf16")

/* [shardrun] log_level: the numbers are sr_log_level's (shardrun/plugin.h), checked below */
#define SR__LOG_LEVEL_LIST(X)                                                                                          \
    X(SR__LEVEL_ERROR, "error")                                                                                        \
    X(SR__LEVEL_WARN, "warn")                                                                                          \
    X(SR__LEVEL_INFO, "info")                                                                                          \
    X(SR__LEVEL_DEBUG, "debug")

/* [shardrun] elastic_join: when an elastic job takes in a node that arrives while it runs */
#define SR__ELASTIC_JOIN_LIST(X)                                                                                       \
    X(SR__JOIN_NOW, "now")                                                                                             \
    X(SR__JOIN_NEXT_SAVE, "next_save")

/* [task] lr_scheduler_type: transformers' get_scheduler names (trainer/train_args.c: sr__lr_at) */
#define SR__SCHEDULE_LIST(X)                                                                                           \
    X(SR__SCHED_LINEAR, "linear")                                                                                      \
    X(SR__SCHED_COSINE, "cosine")                                                                                      \
    X(SR__SCHED_CONSTANT, "constant")                                                                                  \
    X(SR__SCHED_CONSTANT_WARMUP, "constant_with_warmup")

/* [task] logging_strategy and eval_strategy: transformers' IntervalStrategy.  No is the first, so
   that a zeroed sr__train_args evaluates never. */
#define SR__INTERVAL_LIST(X)                                                                                           \
    X(SR__EVERY_NEVER, "no")                                                                                           \
    X(SR__EVERY_STEPS, "steps")                                                                                        \
    X(SR__EVERY_EPOCH, "epoch")

/* [task] save_strategy: transformers' SaveStrategy, the intervals and best (which the trainer
   refuses by name, trainer/train_args.c); one C enum, sr__every, for the three keys */
#define SR__SAVE_STRATEGY_LIST(X) SR__INTERVAL_LIST(X) X(SR__EVERY_BEST, "best")

/* [task] metric_for_best_model: both name the eval loss (transformers prefixes loss with eval_) */
#define SR__METRIC_LIST(X)                                                                                             \
    X(SR__METRIC_LOSS, "loss")                                                                                         \
    X(SR__METRIC_EVAL_LOSS, "eval_loss")

/* [task] nan_policy (trainer/nan_policy.h) */
#define SR__NAN_POLICY_LIST(X)                                                                                         \
    X(SR__NAN_STOP, "stop")                                                                                            \
    X(SR__NAN_SKIP_STEP, "skip_step")                                                                                  \
    X(SR__NAN_WARN, "warn")

/* [shardrun] rdzv_backend (docs/elastic.md): node 0's own store, or an etcd cluster */
#define SR__RDZV_BACKEND_LIST(X)                                                                                       \
    X(SR__RDZV_BUILTIN, "builtin")                                                                                     \
    X(SR__RDZV_ETCD, "etcd")

#define SR__ENUM_MEMBER(id, text) id,
#define SR__ENUM_CHOICE(id, text) "|" text
/* "A|B|C": the list's choices (a constant, for static key tables) */
#define SR__CHOICES(LIST) (&(LIST(SR__ENUM_CHOICE))[1])

typedef enum { SR__STRATEGY_LIST(SR__ENUM_MEMBER) } sr__strategy;
typedef enum { SR__WRAP_LIST(SR__ENUM_MEMBER) } sr__wrap;
typedef enum { SR__PREFETCH_LIST(SR__ENUM_MEMBER) } sr__prefetch;
typedef enum { SR__STATE_DICT_LIST(SR__ENUM_MEMBER) } sr__state_dict;
typedef enum { SR__PRECISION_LIST(SR__ENUM_MEMBER) } sr__precision;
typedef enum { SR__LOG_LEVEL_LIST(SR__ENUM_MEMBER) } sr__level;
typedef enum { SR__ELASTIC_JOIN_LIST(SR__ENUM_MEMBER) } sr__elastic_join;
typedef enum { SR__SCHEDULE_LIST(SR__ENUM_MEMBER) } sr__schedule;
typedef enum { SR__SAVE_STRATEGY_LIST(SR__ENUM_MEMBER) } sr__every;
typedef enum { SR__METRIC_LIST(SR__ENUM_MEMBER) } sr__metric;
typedef enum { SR__NAN_POLICY_LIST(SR__ENUM_MEMBER) } sr__nan_policy;
typedef enum { SR__RDZV_BACKEND_LIST(SR__ENUM_MEMBER) } sr__rdzv_backend;

#define SR__STRATEGY_CHOICES SR__CHOICES(SR__STRATEGY_LIST)
#define SR__WRAP_CHOICES SR__CHOICES(SR__WRAP_LIST)
#define SR__PREFETCH_CHOICES SR__CHOICES(SR__PREFETCH_LIST)
#define SR__STATE_DICT_CHOICES SR__CHOICES(SR__STATE_DICT_LIST)
#define SR__PRECISION_CHOICES SR__CHOICES(SR__PRECISION_LIST)
#define SR__LOG_LEVEL_CHOICES SR__CHOICES(SR__LOG_LEVEL_LIST)
#define SR__ELASTIC_JOIN_CHOICES SR__CHOICES(SR__ELASTIC_JOIN_LIST)
#define SR__SCHEDULE_CHOICES SR__CHOICES(SR__SCHEDULE_LIST)
#define SR__INTERVAL_CHOICES SR__CHOICES(SR__INTERVAL_LIST)
#define SR__SAVE_STRATEGY_CHOICES SR__CHOICES(SR__SAVE_STRATEGY_LIST)
#define SR__METRIC_CHOICES SR__CHOICES(SR__METRIC_LIST)
#define SR__NAN_POLICY_CHOICES SR__CHOICES(SR__NAN_POLICY_LIST)
#define SR__RDZV_BACKEND_CHOICES SR__CHOICES(SR__RDZV_BACKEND_LIST)

/* A member's text, for messages and logs ("?" when out of range). */
const char *sr__strategy_name(sr__strategy s);
const char *sr__prefetch_name(sr__prefetch p);
const char *sr__state_dict_name(sr__state_dict s);
const char *sr__precision_name(sr__precision p);
const char *sr__every_name(sr__every e);
const char *sr__nan_policy_name(sr__nan_policy p);

#endif
