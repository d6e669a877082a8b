#include "trainer/train_args.h"

#include <limits.h>
#include <stddef.h>

#include "config/enums.h"

#define NOLIM 0, 0
/* [task] keys the trainer reads when the task is a model task: transformers' TrainingArguments
   names and defaults (save_steps excepted: nothing is saved unless asked). */
const sr_key sr__trainer_keys[] = {
    {"num_train_epochs", SR_KEY_FLOAT, "3", NULL, 0, NOLIM, NULL,
     "epochs over the dataset (when max_steps is not set)"},
    {"max_steps", SR_KEY_INT, "-1", NULL, 0, -1, SR__TRAIN_MAX_STEPS, NULL,
     "optimizer steps to train; overrides num_train_epochs when > 0 (at most 10^9)"},
    {"per_device_train_batch_size", SR_KEY_INT, "8", NULL, 0, 1, SR__TRAIN_MAX_BATCH, NULL,
     "samples per micro-batch on each rank (at most 2^20)"},
    {"gradient_accumulation_steps", SR_KEY_INT, "1", NULL, 0, 1, SR__TRAIN_MAX_BATCH, NULL,
     "micro-batches per optimizer step (at most 2^20)"},
    {"learning_rate", SR_KEY_FLOAT, "5e-05", NULL, 0, NOLIM, NULL, "AdamW's peak learning rate"},
    {"lr_scheduler_type", SR_KEY_ENUM, "linear", SR__SCHEDULE_CHOICES, 0, NOLIM, NULL,
     "learning-rate schedule after warmup (transformers' get_scheduler)"},
    {"warmup_steps", SR_KEY_INT, "0", NULL, 0, 0, LLONG_MAX, NULL, "steps of linear warmup from 0"},
    {"weight_decay", SR_KEY_FLOAT, "0", NULL, 0, NOLIM, NULL,
     "AdamW's decoupled weight decay (not applied to parameters declared SR_PARAM_NO_DECAY)"},
    {"adam_beta1", SR_KEY_FLOAT, "0.9", NULL, 0, NOLIM, NULL, "AdamW beta1"},
    {"adam_beta2", SR_KEY_FLOAT, "0.999", NULL, 0, NOLIM, NULL, "AdamW beta2"},
    {"adam_epsilon", SR_KEY_FLOAT, "1e-08", NULL, 0, NOLIM, NULL, "AdamW epsilon"},
    {"max_grad_norm", SR_KEY_FLOAT, "1", NULL, 0, NOLIM, NULL, "gradient clipping by global norm; 0 disables it"},
    {"logging_steps", SR_KEY_INT, "500", NULL, 0, 1, LLONG_MAX, NULL,
     "rank 0 prints step, loss, learning rate, grad norm, tokens/s and memory every N steps"},
    {"logging_strategy", SR_KEY_ENUM, "steps", SR__INTERVAL_CHOICES, 0, NOLIM, NULL,
     "transformers' name for when rank 0 logs: steps (every logging_steps steps), epoch (after every epoch), no "
     "(the last step only); the last step is always logged"},
    {"seed", SR_KEY_INT, "42", NULL, 0, 0, LLONG_MAX, NULL,
     "parameter initialisation and data order (DistributedSampler: seed + epoch)"},
    {"init_weights", SR_KEY_STRING, NULL, NULL, 0, NOLIM, NULL,
     "a safetensors file to start from (HF model.safetensors, or a FULL checkpoint's): parameters by name, "
     "fp32/bf16/fp16; with cpu_ram_efficient_loading only rank 0 reads it"},
    {"init_adapters", SR_KEY_STRING, NULL, NULL, 0, NOLIM, NULL,
     "a PEFT adapter folder (adapter_config.json, adapter_model.safetensors: PEFT's save_pretrained or a LoRA "
     "checkpoint) the LoRA adapters start from; the base comes from init_weights"},
    {"output_dir", SR_KEY_STRING, NULL, NULL, 0, NOLIM, NULL,
     "where checkpoint-N folders and train_log.jsonl go (relative: to the job file's folder, or to the current "
     "folder when given with --set or SHARDRUN_TASK_OUTPUT_DIR)"},
    {"overwrite_output_dir", SR_KEY_BOOL, "false", NULL, 0, NOLIM, NULL,
     "an output_dir that holds checkpoint-N folders may be written over (its train_log.jsonl restarts); without it, "
     "or resume_from_checkpoint, such a run is refused before it starts"},
    {"save_steps", SR_KEY_INT, "0", NULL, 0, 0, LLONG_MAX, NULL, "save a checkpoint every N steps (0: never)"},
    {"save_strategy", SR_KEY_ENUM, NULL, SR__SAVE_STRATEGY_CHOICES, 0, NOLIM, NULL,
     "transformers' name for when checkpoints are saved: no (none; save_final then defaults to false), steps "
     "(every save_steps steps; 500 unless save_steps is given, as transformers), epoch (after every epoch); best is "
     "refused (metric_for_best_model with save_total_limit keeps the best checkpoint); default: save_steps decides"},
    {"save_final", SR_KEY_BOOL, NULL, NULL, 0, NOLIM, NULL,
     "save a checkpoint after the last step; default: true when output_dir is set"},
    {"resume_from_checkpoint", SR_KEY_STRING, NULL, NULL, 0, NOLIM, NULL,
     "a checkpoint folder, or true for the latest checkpoint-N in output_dir"},
    {"resume_allow_changes", SR_KEY_STRING, NULL, NULL, 0, NOLIM, NULL,
     "[task] keys (comma-separated; also mixed_precision and data, or all) whose value may differ from the one the "
     "resumed checkpoint was trained with; any other change of a training setting is refused on resume "
     "(docs/clusters.md); a name that is no [task] key of the run is refused before it starts"},
    {"eval_strategy", SR_KEY_ENUM, "no", SR__INTERVAL_CHOICES, 0, NOLIM, NULL,
     "evaluate on the task's eval data: never, every eval_steps steps, or after every epoch (the task must have "
     "eval data: gpt2's eval_data or validation_split_percentage)"},
    {"eval_steps", SR_KEY_INT, NULL, NULL, 0, 1, LLONG_MAX, NULL,
     "with eval_strategy = steps: evaluate every N steps; default: logging_steps"},
    {"per_device_eval_batch_size", SR_KEY_INT, "8", NULL, 0, 1, SR__TRAIN_MAX_BATCH, NULL,
     "eval samples per forward on each rank (at most 2^20)"},
    {"max_train_samples", SR_KEY_INT, NULL, NULL, 0, 1, LLONG_MAX, NULL,
     "train on the first N samples of the task's training data only (HF's max_train_samples; after "
     "validation_split_percentage took its share); default: all"},
    {"max_eval_samples", SR_KEY_INT, NULL, NULL, 0, 1, LLONG_MAX, NULL,
     "evaluate on the first N samples of the task's eval data only (HF's max_eval_samples): a shorter "
     "evaluation; default: all"},
    {"eval_on_start", SR_KEY_BOOL, "false", NULL, 0, NOLIM, NULL,
     "also evaluate before the first step (a sanity check)"},
    {"save_total_limit", SR_KEY_INT, NULL, NULL, 0, 1, LLONG_MAX, NULL,
     "keep only the newest N checkpoint-N folders (and the best one when metric_for_best_model is set); "
     "default: keep all"},
    {"eval_files", SR_KEY_STRING, NULL, NULL, 0, NOLIM, NULL,
     "multiple-choice eval files in llm.c's eval format (HellaSwag, MMLU; glob patterns separated by whitespace, "
     "relative to the job file): at each evaluation, eval_accuracy = the share of examples whose completion with the "
     "lowest mean loss is the right one; the task must score token sequences (docs/model-tasks.md)"},
    {"metric_for_best_model", SR_KEY_ENUM, NULL, SR__METRIC_CHOICES, 0, NOLIM, NULL,
     "track the best checkpoint by eval loss (lower is better): trainer_state.json's best_metric and "
     "best_model_checkpoint; default: eval_loss when load_best_model_at_end is set"},
    {"load_best_model_at_end", SR_KEY_BOOL, "false", NULL, 0, NOLIM, NULL,
     "after training, load the best checkpoint's parameters (the results' param_sum describe it) and keep that "
     "checkpoint under save_total_limit; needs eval_strategy = steps and save_steps a multiple of eval_steps"},
    {"freeze", SR_KEY_STRING, NULL, NULL, 0, NOLIM, NULL,
     "parameters not to train (requires_grad = False): comma-separated fnmatch globs on the full dotted names, such "
     "as transformer.h.*.attn.*; each must match a parameter. Frozen parameters get no gradient, no optimizer state "
     "and no place in the gradient norm (docs/model-tasks.md)"},
    {"nan_policy", SR_KEY_ENUM, "stop", SR__NAN_POLICY_CHOICES, 0, NOLIM, NULL,
     "a step whose loss or gradient norm is NaN or infinite: stop (exit 1 before its update, naming the step and "
     "the last checkpoint), skip_step (no update; more than 10 such steps in a row stop), or warn (update anyway; "
     "exit 1 when the final loss is not finite)"},
    {NULL, 0, NULL, NULL, 0, NOLIM, NULL, NULL},
};
