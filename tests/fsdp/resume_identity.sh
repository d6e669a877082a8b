# A run resumes, rotates and loads "best" only from checkpoints of its own training run, with the
# settings it was trained with (trainer/resume.h), on the toy model task:
#  - the best checkpoint is found again in this output_dir: a copied output_dir loads its own best,
#    never the original folder's (which another run has overwritten meanwhile); a moved one too; a
#    best that is missing is refused before any step when load_best_model_at_end needs it;
#  - overwrite_output_dir removes another run's checkpoints before step 0; without it, or after a
#    Slurm requeue of an edited job, such an output_dir is refused;
#  - resuming at or past the last step is refused (it used to train nothing and report a NaN loss);
#  - changed settings: refused naming the key and both values, unless resume_allow_changes lists it;
#    max_steps and the world size (with the same global batch, or another) are notes;
#  - checkpoint names: leading zeros, a step past 10^18, a checkpoint-N holding another step;
#  - resume_from_checkpoint naming a missing folder or a file: exit 2 before the model is built.
. "$(dirname "$0")/lib.sh"
CHK="/usr/bin/python3 $SRC/tests/fsdp/check_records.py"
toy_job best.ini "fsdp.auto_wrap_policy = TRANSFORMER_BASED_WRAP" "fsdp.transformer_layer_cls_to_wrap = MLPBlock,MixerBlock" \
    "fsdp.state_dict_type = SHARDED_STATE_DICT" <<EOF
samples = 240
eval_samples = 50
per_device_eval_batch_size = 4
per_device_train_batch_size = 6
logging_steps = 1
learning_rate = 0.3
lr_scheduler_type = constant
max_grad_norm = 0
warmup_steps = 0
eval_strategy = steps
eval_steps = 2
save_steps = 2
save_total_limit = 1
load_best_model_at_end = true
EOF
# train NAME [shardrun args...]: 2 ranks into $T/NAME
train() {
    local name=$1
    shift
    run "$SHARDRUN" "$T/best.ini" --nproc-per-node 2 --set task.output_dir="$T/$name" "$@"
}
steps_logged() { grep -c '"loss"' "$T/$1/train_log.jsonl"; }

echo "== the best checkpoint of a copied or moved output_dir"
train a --set task.max_steps=8
expect_rc 0 "run a"
read -r best newest <<<"$($CHK best "$T/a")"
[ -n "$best" ] && [ "$best" != "$newest" ] && pass || fail "the scenario needs a best checkpoint before the newest (best $best, newest $newest)"
a_best_sum=$(result param_sum)
cp -a "$T/a" "$T/b"
cp -a "$T/a" "$T/m0"
train a --set task.max_steps=8 --set task.seed=7 --set task.overwrite_output_dir=true
expect_rc 0 "run a again, another seed, overwrite_output_dir"
expect_in "$out" "[rank0]: shardrun: overwrite_output_dir: removed $T/a/checkpoint-$best (a checkpoint of another run)" \
    "overwrite_output_dir removes the earlier run's checkpoints before step 0"
[ "$(result param_sum)" != "$a_best_sum" ] && pass || fail "the second run of a has another model (param_sum $(result param_sum))"
train b --set task.max_steps=9 --set task.resume_from_checkpoint=latest
expect_rc 0 "b (a copy of the first run of a) resumes"
expect_in "$out" "[rank0]: shardrun: resume_from_checkpoint = latest: $T/b/checkpoint-$newest (step $newest of run " \
    "latest says which checkpoint, run and launch it takes"
expect_in "$out" "written by launch " "latest names the launch that wrote it"
expect_in "$out" "loaded the best model: $T/b/checkpoint-$best" "b loads its own best checkpoint, not a's"
expect_eq "$(result param_sum)" "$a_best_sum" "b's best model is the first run's best (param_sum), not the second run's"
expect_in "$(cat "$T/b/trainer_state.json")" "\"best_model_checkpoint\": \"$T/b/checkpoint-$best\"" \
    "trainer_state.json records the best in b"
mv "$T/m0" "$T/c"
train c --set task.max_steps=9 --set task.resume_from_checkpoint=latest
expect_rc 0 "c (another copy of the first run of a, moved) resumes"
expect_in "$out" "loaded the best model: $T/c/checkpoint-$best" "the moved output_dir loads its own best"
expect_eq "$(result param_sum)" "$a_best_sum" "c's best model is the first run's best (param_sum)"
rm -rf "$T/c/checkpoint-$best"
logged=$(steps_logged c)
train c --set task.max_steps=11 --set task.resume_from_checkpoint=latest
expect_rc 2 "the best checkpoint is missing and load_best_model_at_end needs it"
expect_in "$err" "load_best_model_at_end: the best checkpoint of the run being resumed, $T/c/checkpoint-$best (as trainer_state.json recorded it), cannot be used" "it names the best checkpoint"
expect_in "$err" "nothing was trained" "before any step"
expect_eq "$(steps_logged c)" "$logged" "no step was trained"
train c --set task.max_steps=11 --set task.resume_from_checkpoint=latest --set task.load_best_model_at_end=false
expect_rc 0 "without load_best_model_at_end the missing best is a note"
expect_in "$out" "is not used (" "the note says the recorded best is not used"

echo "== overwrite_output_dir, requeues, the last step"
export SHARDRUN_TASK_SAVE_TOTAL_LIMIT=100 # keep every checkpoint from here on
train s1 --nproc-per-node 1 --set task.per_device_train_batch_size=12 --set task.max_steps=8
expect_rc 0 "s1 on one rank"
train s1 --set task.max_steps=4
expect_rc 2 "a new run in an output_dir with another run's checkpoints"
expect_in "$err" "already holds checkpoints of an earlier run" "refused as before"
train s1 --set task.max_steps=4 --set task.overwrite_output_dir=true
expect_rc 0 "a new run with overwrite_output_dir"
expect_eq "$(cd "$T/s1" && ls -d checkpoint-* | sort -t- -k2 -n | tr '\n' ' ')" "checkpoint-2 checkpoint-4 " \
    "only this run's checkpoints are left (before: the earlier run's checkpoint-8 stayed and latest took it)"
train s1 --set task.max_steps=4 --set task.resume_from_checkpoint=latest
expect_rc 2 "resuming at the last step"
expect_in "$err" "holds step 4 and this run plans 4 steps" "it says there is nothing left to train"
expect_not_in "$out" "train_loss" "no summary with a NaN train_loss"
SLURM_JOB_ID=99 train rq --set task.max_steps=4
expect_rc 0 "a run under Slurm"
SLURM_JOB_ID=99 SLURM_RESTART_COUNT=1 train rq --set task.max_steps=4 --set task.learning_rate=0.1
expect_rc 2 "the job file edited before a Slurm requeue: the requeue has no checkpoint of its own"
expect_in "$err" "already holds checkpoints of an earlier run" "it is refused like a new run"

echo "== changed settings on resume"
train s1 --set task.max_steps=6 --set task.resume_from_checkpoint=latest --set task.learning_rate=0.1
expect_rc 2 "another learning rate"
expect_in "$err" "[task] learning_rate: 0.3 in the checkpoint, 0.1 now" "it names the key and both values"
expect_in "$err" "resume_allow_changes" "it says how to allow it"
train s1 --set task.max_steps=6 --set task.resume_from_checkpoint=latest --set task.per_device_train_batch_size=3
expect_rc 2 "another per-device batch on the same world size (another global batch)"
expect_in "$err" "[task] per_device_train_batch_size: 6 in the checkpoint, 3 now" "it names the batch"
cp -a "$T/s1" "$T/s1-allowed"
train s1-allowed --set task.max_steps=6 --set task.resume_from_checkpoint=latest --set task.learning_rate=0.1 \
    --set task.resume_allow_changes=learning_rate
expect_rc 0 "another learning rate, allowed"
expect_in "$out" "warning: [task] learning_rate changes from 0.3 to 0.1 (allowed by resume_allow_changes)" "with a warning"
expect_in "$out" "note: [task] max_steps was 4 in the checkpoint and is 6 now" "a longer run is a note"
cp -a "$T/s1" "$T/s1-ws3"
run "$SHARDRUN" "$T/best.ini" --nproc-per-node 3 --set task.output_dir="$T/s1-ws3" --set task.max_steps=6 \
    --set task.resume_from_checkpoint=latest --set task.per_device_train_batch_size=4
expect_rc 0 "3 ranks with the same global batch"
expect_in "$out" "note: [task] per_device_train_batch_size was 6 in the checkpoint and is 4 now; the global batch is the same, 12 samples per step" "the batch change is a note"
expect_in "$out" "was saved by 2 ranks and this run has 3 (a resharded resume)" "so is the world size"
run "$SHARDRUN" "$T/best.ini" --nproc-per-node 3 --set task.output_dir="$T/s1" --set task.max_steps=6 \
    --set task.resume_from_checkpoint=latest --set accelerate.fsdp.sharding_strategy=SHARD_GRAD_OP
expect_rc 0 "3 ranks with the same per-device batch, SHARD_GRAD_OP"
expect_in "$out" "a step now takes 18 samples instead of 12" "the note says the global batch changed"
expect_in "$out" "was saved under FULL_SHARD and this run shards with SHARD_GRAD_OP" "another sharding strategy is a note"

echo "== checkpoint names"
mkdir -p "$T/n1" && cp -a "$T/s1/checkpoint-6" "$T/n1/checkpoint-0006"
train n1 --set task.max_steps=8 --set task.resume_from_checkpoint=latest
expect_rc 2 "checkpoint-0006"
expect_in "$err" "$T/n1/checkpoint-0006 is not a checkpoint name shardrun writes" "leading zeros are named"
train n1 --set task.max_steps=8
expect_rc 2 "a new run beside checkpoint-0006"
mkdir -p "$T/n2" && cp -a "$T/s1/checkpoint-6" "$T/n2/checkpoint-99999999999999999999"
train n2 --set task.max_steps=8 --set task.resume_from_checkpoint=latest
expect_rc 2 "checkpoint-99999999999999999999"
expect_in "$err" "checkpoint-99999999999999999999 is not a checkpoint name shardrun writes" "a step past 10^18 is named"
mkdir -p "$T/n3" && cp -a "$T/s1/checkpoint-6" "$T/n3/checkpoint-6" && cp -a "$T/s1/checkpoint-2" "$T/n3/checkpoint-20"
train n3 --set task.max_steps=30 --set task.resume_from_checkpoint=latest
expect_rc 2 "a checkpoint-20 holding step 2"
expect_in "$err" "$T/n3/checkpoint-20 holds step 2, which its name does not say" "the step inside is the truth"
expect_eq "$(cd "$T/n3" && ls -d checkpoint-* | sort | tr '\n' ' ')" "checkpoint-20 checkpoint-6 " "nothing was overwritten"

echo "== resume_from_checkpoint that is not a folder"
train m --set task.resume_from_checkpoint="$T/nonexistent"
expect_rc 2 "a missing folder"
expect_in "$err" "[task] resume_from_checkpoint = $T/nonexistent: no such folder" "it says so"
train m --set task.resume_from_checkpoint="$T/best.ini"
expect_rc 2 "a file"
expect_in "$err" "[task] resume_from_checkpoint = $T/best.ini: not a folder" "it says so"
train m --set task.resume_from_checkpoint="$T"
expect_rc 2 "a folder that is no checkpoint"
expect_in "$err" "is not a shardrun checkpoint folder" "it says so"
done_checks
