# [task] nan_policy: a run whose loss turns NaN.  learning_rate = 1e30 with 2 warmup steps on the toy
# model, 2 ranks: step 1 (learning rate 0) and step 2 are finite, step 2's update leaves the
# parameters near 1e30, and every later step's loss is NaN.
#   stop (the default): exit 1 at step 3 before its update, naming the step and the last
#     checkpoint; nothing of step 3 is saved; the checkpoints resume (checkpoint-1, before the
#     update that diverged, with a sane learning rate to the end; checkpoint-2 to the same stop,
#     whose message then blames the checkpoint, not the learning rate); initial weights that
#     overflow at step 1 stop it with a message naming the weights, not the learning rate
#   skip_step: no update (parameters and AdamW moments byte-identical across the skipped steps), the
#     steps count, results say how many; more than 10 in a row stop the run as stop does
#   warn: the updates are applied (the parameters become NaN), a warning per step, exit 1 at the end
#   a bad value: exit 2 before any work, naming the key and the accepted values
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
toy_job toy.ini <<EOF
samples = 240
max_steps = 6
per_device_train_batch_size = 4
learning_rate = 1e30
warmup_steps = 2
logging_steps = 1
save_steps = 1
EOF
train() { # NAME [args...]
    local name=$1
    shift
    run "$SHARDRUN" "$T/toy.ini" --nproc-per-node 2 --set task.output_dir="$T/$name" "$@"
}
# same_state A B: two FULL checkpoint files hold the same tensors, byte for byte (their metadata,
# which names the step, aside)
same_state() {
    $PY - "$1" "$2" <<'PYEOF'
import json, struct, sys
def tensors(p):
    b = open(p, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    h = json.loads(b[8:8 + n])
    h.pop("__metadata__", None)
    return h, b[8 + n:]
sys.exit(0 if tensors(sys.argv[1]) == tensors(sys.argv[2]) else 1)
PYEOF
}
ckpts() { ls "$1" | grep '^checkpoint-' | sort -t- -k2 -n | tr '\n' ' '; }
# failed_results WHAT: no rank's results say success, and one says 1 (the agent may stop a rank that
# is still writing its results when the first one exits: its results are then the agent's, null)
failed_results() {
    expect_not_in "$out" '"exit_code": 0' "$1: no rank's results say success"
    expect_in "$out" '"exit_code": 1,' "$1: a rank's results say 1"
}

# 1. stop, the default
train stop
expect_rc 1 "stop: a loss that turns NaN fails the run"
expect_in "$err" "[task] nan_policy = stop: step 3 of 6 has a non-finite loss (loss nan, grad_norm nan)" \
    "stop: one message names the step, its loss and grad norm"
expect_in "$err" "The last checkpoint before it is $T/stop/checkpoint-2: continue from it (--set task.resume_from_checkpoint=$T/stop/checkpoint-2 --set task.resume_allow_changes=learning_rate)" \
    "stop: the message names the last checkpoint and how to resume"
expect_eq "$(grep -c '^\[rank.*nan_policy = stop: step' <<<"$err")" 1 "stop: the message is printed once (rank 0)"
expect_eq "$(ckpts "$T/stop")" "checkpoint-1 checkpoint-2 " "stop: no checkpoint of step 3 (nor a .tmp one); the earlier ones stay"
failed_results stop
expect_eq "$(result nan_step)" 3 "stop: the results name the step"
expect_eq "$(result final_loss)" null "stop: the results' final_loss is the NaN one"
expect_not_in "$(cat "$T/stop/train_log.jsonl")" '"step": 3' "stop: train_log.jsonl has nothing of step 3"
expect_in "$(cat "$T/stop/trainer_state.json")" '"global_step": 2,' "stop: trainer_state.json stays at step 2"
# the checkpoints left are intact: checkpoint-1, from before the update that diverged, trains to the
# end with a sane learning rate; checkpoint-2 loads and stops at step 3 again (what a restart would do)
train stop-resumed --set task.resume_from_checkpoint="$T/stop/checkpoint-1" --set task.learning_rate=1e-3 \
    --set task.resume_allow_changes=learning_rate
expect_rc 0 "stop: checkpoint-1 resumes"
expect_in "$out" "resumed from $T/stop/checkpoint-1 at step 1" "stop: resumed at step 1"
expect_eq "$(result nan_steps)" 0 "stop: the resumed run's steps are finite"
grep -qE '"final_loss": [0-9]' <<<"$out" && pass || fail "stop: the resumed run's final_loss is a number: $out"
train stop-again --set task.resume_from_checkpoint="$T/stop/checkpoint-2"
expect_rc 1 "stop: checkpoint-2 resumes and stops at the same step"
expect_in "$out" "resumed from $T/stop/checkpoint-2 at step 2" "stop: checkpoint-2 loads"
expect_in "$err" "nan_policy = stop: step 3 of 6 has a non-finite loss" "stop: the same step stops again"
# its first step, before any update of this run: the checkpoint's parameters are the cause, not the
# learning rate of this run, and resuming from that checkpoint again is no advice
expect_in "$err" "before this run applied any update: the parameters it started from give it, whatever the learning_rate.  They came from resume_from_checkpoint = $T/stop/checkpoint-2: its parameters had diverged already" \
    "stop at a resumed run's first step: the message blames the checkpoint"
expect_not_in "$err" "continue from it" "stop at a resumed run's first step: no advice to continue from the same checkpoint"
# initial weights that overflow at step 1 (every value of checkpoint-1 times 1e36: finite, but no
# forward pass survives them): the learning rate is no cause, and the message does not suggest it
$PY - "$T/stop/checkpoint-1/model.safetensors" "$T/huge.safetensors" <<'PYEOF' && pass || fail "writing huge weights"
import json, struct, sys
import numpy as np
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
data = (np.frombuffer(b[8 + n:], "<f4").astype(np.float64) * 1e36).astype("<f4")
assert np.isfinite(data).all()
open(sys.argv[2], "wb").write(b[:8 + n] + data.tobytes())
PYEOF
run "$SHARDRUN" "$T/toy.ini" --nproc-per-node 2 --set task.save_steps=0 --set task.learning_rate=1e-3 \
    --set task.warmup_steps=0 --set task.init_weights="$T/huge.safetensors"
expect_rc 1 "stop at step 1 of a run from huge weights"
expect_in "$err" "[task] nan_policy = stop: step 1 of 6 has a non-finite gradient norm" "huge weights: step 1 stops"
expect_in "$err" "before this run applied any update: the parameters it started from give it, whatever the learning_rate.  They came from init_weights = $T/huge.safetensors: check its values" \
    "huge weights: the message names the weights file as the cause"
expect_not_in "$err" "with a lower learning_rate" "huge weights: no advice to lower the learning rate"
# a stop is not retried: the same checkpoint and data order give the same step again
train stop-restarts --set shardrun.max_restarts=2
expect_rc 1 "stop with max_restarts = 2"
expect_not_in "$err" "restarting the job" "stop: no restart"
expect_in "$err" "not restarted (max_restarts = 2): a restart would fail the same way: rank 0 had a non-finite loss or gradient norm at step 3 (nan_policy = stop)" \
    "stop: the summary says why it is not restarted"
# no output_dir to save in: the message says so
run "$SHARDRUN" "$T/toy.ini" --nproc-per-node 2 --set task.save_steps=0
expect_rc 1 "stop without output_dir"
expect_in "$err" "No checkpoint was written before it (no output_dir): start again with a lower learning_rate (now 1e+30)" \
    "stop without output_dir: the message says there is no checkpoint"

# 2. skip_step: 4 steps skipped, the run finishes
train skip --set task.nan_policy=skip_step
expect_rc 0 "skip_step: skipped steps do not fail a run that finishes"
expect_in "$err" "step 3: non-finite loss (loss nan, grad_norm nan): its update was skipped (nan_policy = skip_step)" \
    "skip_step: a warning names the step"
expect_in "$err" "4 of this run's steps had a non-finite loss or gradient norm (skipped: nan_policy = skip_step)" \
    "skip_step: the closing warning counts them"
expect_eq "$(result nan_steps_skipped)" 4 "skip_step: results count the skipped steps"
expect_eq "$(result global_step)" 6 "skip_step: the skipped steps count as steps"
last=$(grep -o '"loss": [^,]*' "$T/skip/train_log.jsonl" | sed -n 2p | sed 's/.*: //')
grep -qE '^[0-9]' <<<"$last" && pass || fail "skip_step: step 2's loss is finite: $last"
expect_eq "$(result final_loss | cut -c1-6)" "$(cut -c1-6 <<<"$last")" "skip_step: final_loss is the last applied step's"
expect_in "$(sed -n 3p "$T/skip/train_log.jsonl")" '"skipped": 1' "skip_step: train_log.jsonl marks step 3 skipped"
for s in 3 4 6; do
    for f in model optimizer; do
        same_state "$T/skip/checkpoint-2/$f.safetensors" "$T/skip/checkpoint-$s/$f.safetensors" && pass ||
            fail "skip_step: checkpoint-$s's $f.safetensors holds the tensors of checkpoint-2 (no update applied)"
    done
done
grep -q '"adam_steps": 2,' "$T/skip/checkpoint-6/trainer_state.json" && pass ||
    fail "skip_step: no AdamW step is counted for a skipped step: $(grep -o '"adam_steps": [0-9]*' "$T/skip/checkpoint-6/trainer_state.json")"
# more than 10 in a row: steps 3-12 skipped, step 13 stops
train skip-limit --set task.nan_policy=skip_step --set task.max_steps=14
expect_rc 1 "skip_step: the 11th non-finite step in a row fails the run"
expect_in "$err" "[task] nan_policy = skip_step: step 13 of 14 has a non-finite loss (loss nan, grad_norm nan) (11 non-finite steps in a row; skip_step skips at most 10)" \
    "skip_step: the stop names the step and the count"
expect_in "$err" "The last checkpoint before it is $T/skip-limit/checkpoint-12" "skip_step: the stop names the last checkpoint"
expect_eq "$(ckpts "$T/skip-limit" | awk '{print $NF}')" "checkpoint-12" "skip_step: nothing of step 13 is saved"

# 3. warn: today's behaviour, said at every step and at the end, and exit 1
train warn --set task.nan_policy=warn --set task.max_steps=4
expect_rc 1 "warn: a final loss that is NaN fails the run"
expect_in "$err" "step 3: non-finite loss (loss nan, grad_norm nan): its update was applied (nan_policy = warn)" "warn: step 3 warned"
expect_in "$err" "step 4: non-finite loss" "warn: step 4 warned"
expect_in "$err" "the final loss is nan: training diverged (2 of this run's steps had a non-finite loss or gradient norm and were applied" \
    "warn: a loud final line"
failed_results warn
expect_eq "$(result final_loss)" null "warn: final_loss"
expect_eq "$(result param_sum)" null "warn: the NaN updates were applied"
expect_eq "$(ckpts "$T/warn")" "checkpoint-1 checkpoint-2 checkpoint-3 checkpoint-4 " "warn: checkpoints are written as before"

# 4. a bad value: a configuration error before any work
train bad --set task.nan_policy=ignore
expect_rc 2 "a bad nan_policy is a configuration error"
expect_in "$err" '[task] nan_policy = "ignore": expected one of stop, skip_step, warn' "the error names the key and the values"
[ ! -e "$T/bad" ] && pass || fail "a bad nan_policy: nothing is written"

done_checks
