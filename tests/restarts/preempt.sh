# Preemption: SIGTERM to shardrun (what Slurm, `scancel --signal=TERM` or a cloud sends before it
# takes a node) makes every rank, on every node, finish its optimizer step and write a checkpoint;
# the agent exits 143 naming it, and a resumed run ends byte for byte where an uninterrupted one
# ends.  A second SIGTERM, or preempt_grace running out, stops at once; SIGINT stops at once.
# Slurm's requeue (the same job run again, SLURM_RESTART_COUNT > 0) resumes by itself.
# Each signal reaches a run that waits for it: SHARDRUN_DEBUG_PAUSE_AT=RANK:STEP holds that rank
# after its step STEP until a signal asks it to stop (the other ranks wait for it where they agree
# whether to stop), so the run stops after exactly that step, however fast the steps are.
. "$(dirname "$0")/lib.sh"
restart_job 40
J=$T/job.ini

run "$SHARDRUN" "$J" --set task.output_dir="$T/ref"
expect_rc 0 "uninterrupted run"

# (d) SIGTERM to the agent after step 9
SHARDRUN_DEBUG_PAUSE_AT=0:9 "$SHARDRUN" "$J" --set task.output_dir="$T/d" >"$T/d.out" 2>"$T/d.err" &
p=$!
wait_for "$T/d.out" "step 9/40" 120 && pass || fail "the run reached step 9 ($(cat "$T/d.err"))"
kill -TERM $p
wait $p
rc=$?
expect_eq "$rc" "143" "SIGTERM: exit 143 ($(cat "$T/d.err"))"
step=$(sed -n 's/.*preempted (SIGTERM) after step \([0-9]*\) of 40.*/\1/p' "$T/d.out")
expect_eq "$step" 9 "rank 0 says after which step it stopped"
expect_in "$(cat "$T/d.err")" "preempted by SIGTERM: every rank stopped after step $step and $T/d/checkpoint-$step holds it" "the agent says where the checkpoint is"
[ -f "$T/d/checkpoint-$step/model.safetensors" ] && [ ! -e "$T/d/checkpoint-$step.tmp" ] && pass || fail "checkpoint-$step is complete: $(ls "$T/d")"
sed -n '/^\[$/,$p' "$T/d.out" | /usr/bin/python3 -c '
import json, sys
r = json.load(sys.stdin)
assert [x["exit_code"] for x in r] == [143, 143] and all(x["preempted"] and x["global_step"] == int(sys.argv[1]) for x in r), r' "$step" \
    && pass || fail "the results say both ranks were preempted at step $step"
run "$SHARDRUN" "$J" --set task.output_dir="$T/d" --set task.resume_from_checkpoint=latest
expect_rc 0 "the resumed run"
expect_in "$out" "[rank0]: shardrun: resumed from $T/d/checkpoint-$step at step $step" "it resumes from the preemption's checkpoint"
expect_same_file "$T/d/checkpoint-40/model.safetensors" "$T/ref/checkpoint-40/model.safetensors" "(d) the final model.safetensors"
expect_eq "$(steps_of "$T/d/train_log.jsonl")" "$(steps_of "$T/ref/train_log.jsonl")" "train_log.jsonl after preemption and resume"

# Slurm's requeue runs the same command again in the same job (SLURM_JOB_ID kept,
# SLURM_RESTART_COUNT=1): the model task resumes from the job's checkpoint by itself
SLURM_JOB_ID=4242 SHARDRUN_DEBUG_PAUSE_AT=0:7 "$SHARDRUN" "$J" --set task.output_dir="$T/rq" \
    >"$T/rq.out" 2>"$T/rq.err" &
p=$!
wait_for "$T/rq.out" "step 7/40" 120 && pass || fail "the run reached step 7 ($(cat "$T/rq.err"))"
kill -TERM $p
wait $p
expect_eq "$?" "143" "requeue: the first run is preempted"
step=$(sed -n 's/.*preempted (SIGTERM) after step \([0-9]*\) of 40.*/\1/p' "$T/rq.out")
expect_eq "$step" 7 "requeue: the first run stopped after step 7"
SLURM_JOB_ID=4242 SLURM_RESTART_COUNT=1 run "$SHARDRUN" "$J" --set task.output_dir="$T/rq"
expect_rc 0 "requeue: the same command again with SLURM_RESTART_COUNT=1"
expect_in "$out" "[rank0]: shardrun: restart 1: resuming from this job's newest checkpoint, $T/rq/checkpoint-$step" "requeue: it resumes without resume_from_checkpoint"
expect_same_file "$T/rq/checkpoint-40/model.safetensors" "$T/ref/checkpoint-40/model.safetensors" "requeue: the final model.safetensors"
# another job's checkpoints are not this one's: a restart with another job id has none of its own,
# so it is a new run in an output_dir that holds another run's checkpoints: refused as a new run is
# (before, it said "starting from the beginning", overwrote checkpoint-5 and left the rest beside it)
SLURM_JOB_ID=4243 SLURM_RESTART_COUNT=1 run "$SHARDRUN" "$J" --set task.output_dir="$T/rq" --set task.max_steps=3
expect_rc 2 "another job with SLURM_RESTART_COUNT=1 in the same output_dir"
expect_in "$out" "[rank0]: shardrun: restart 1: no checkpoint in $T/rq yet; starting from the beginning" "another job's checkpoints are not taken"
expect_in "$err" "output_dir = $T/rq already holds checkpoints of an earlier run ($T/rq/checkpoint-5, " "the requeued job is refused like a new run"
expect_same_file "$T/rq/checkpoint-40/model.safetensors" "$T/ref/checkpoint-40/model.safetensors" "the other job's checkpoint is untouched"

# two nodes: SIGTERM to node 1's agent stops both, after the same step, with one checkpoint
export SHARDRUN_RDZV_TOKEN=preempt-test
# start_two DIR NAME RANK: two agents of one rank each on a fresh port pair, training into DIR
# (output in $T/NAME0.* and $T/NAME1.*, pids in pid[]), until node 0's rank logs step 6; rank RANK
# waits there for the signal
start_two() {
    local n
    P=$(free_port_pair)
    for n in 0 1; do
        SHARDRUN_DEBUG_PAUSE_AT=$3:6 "$SHARDRUN" "$J" --nnodes 2 --node-rank $n --nproc-per-node 1 \
            --master-addr 127.0.0.1 --master-port "$P" --set task.output_dir="$1" >"$T/$2$n.out" 2>"$T/$2$n.err" &
        pid[$n]=$!
    done
    wait_for "$T/${2}0.out" "step 6/40" 120 && pass || fail "the two-node run into $1 reached step 6"
}
# (rank 1, node 1's, waits: node 0's rank learns of the signal only through the agreement)
start_two "$T/two" t 1
kill -TERM "${pid[1]}"
wait "${pid[0]}"; rc0=$?
wait "${pid[1]}"; rc1=$?
expect_eq "$rc0/$rc1" "143/143" "both agents exit 143 ($(cat "$T/t0.err" "$T/t1.err"))"
step=$(sed -n 's/.*preempted (SIGTERM) after step \([0-9]*\) of 40.*/\1/p' "$T/t0.out")
expect_eq "$step" 6 "node 0's rank stopped after step 6"
expect_in "$(cat "$T/t0.err")" "every rank stopped after step $step and $T/two/checkpoint-$step holds it" "node 0 names the checkpoint"
expect_in "$(cat "$T/t1.err")" "every rank stopped after step $step" "node 1 stopped after the same step"
[ -f "$T/two/checkpoint-$step/model.safetensors" ] && pass || fail "the two-node checkpoint exists"

# two nodes, SIGTERM to every process of the job at once (both agents and their workers), as
# `scancel --signal=TERM` does: both exit 143 after the same step, with one checkpoint
start_two "$T/all" a 0
workers=$(for n in 0 1; do pgrep -P "${pid[$n]}"; done | tr '\n' ' ')
kill -TERM "${pid[0]}" "${pid[1]}" $workers
wait "${pid[0]}"; rc0=$?
wait "${pid[1]}"; rc1=$?
expect_eq "$rc0/$rc1" "143/143" "SIGTERM to every process: both agents exit 143 ($(cat "$T/a0.err" "$T/a1.err"))"
step=$(sed -n 's/.*preempted (SIGTERM) after step \([0-9]*\) of 40.*/\1/p' "$T/a0.out")
expect_eq "$step" 6 "SIGTERM to every process: node 0's rank stopped after step 6"
for n in 0 1; do
    expect_in "$(cat "$T/a$n.err")" "preempted by SIGTERM: every rank stopped after step $step and $T/all/checkpoint-$step holds it" "node $n names the checkpoint"
    expect_not_in "$(cat "$T/a$n.err")" "needed SIGKILL" "node $n's workers stopped by themselves"
done

# a second SIGTERM while the checkpoint is being written: stop at once, no checkpoint of this step
SHARDRUN_DEBUG_SAVE_DELAY_MS=3000 SHARDRUN_DEBUG_PAUSE_AT=0:3 "$SHARDRUN" "$J" --set task.output_dir="$T/twice" \
    --set task.save_steps=100 >"$T/w.out" 2>"$T/w.err" &
p=$!
wait_for "$T/w.out" "step 3/40" 120 && pass || fail "the run reached step 3"
kill -TERM $p
sleep 1
t0=$(date +%s%N)
kill -TERM $p
wait $p
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
expect_eq "$rc" "143" "two SIGTERMs: exit 143"
[ "$ms" -lt 3000 ] && pass || fail "the second SIGTERM stopped the run in ${ms} ms"
expect_in "$(cat "$T/w.err")" "preempted by SIGTERM before a checkpoint could be written" "the agent says no checkpoint was written"
[ -z "$(ls "$T/twice" | grep -x 'checkpoint-[0-9]*')" ] && pass || fail "no complete checkpoint: $(ls "$T/twice")"

# preempt_grace runs out: SIGKILL after it
SHARDRUN_DEBUG_SAVE_DELAY_MS=3000 SHARDRUN_DEBUG_PAUSE_AT=0:3 "$SHARDRUN" "$J" --set task.output_dir="$T/grace" \
    --set task.save_steps=100 --set shardrun.preempt_grace=1 >"$T/g.out" 2>"$T/g.err" &
p=$!
wait_for "$T/g.out" "step 3/40" 120 && pass || fail "the run reached step 3"
t0=$(date +%s%N)
kill -TERM $p
wait $p
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
expect_eq "$rc" "143" "preempt_grace = 1: exit 143"
[ "$ms" -lt 4000 ] && pass || fail "preempt_grace = 1 ended the run in ${ms} ms"
expect_in "$(cat "$T/g.err")" "some needed SIGKILL" "the workers needed SIGKILL"

# SIGTERM during the last step (after its line, before its checkpoint is written): every rank
# finishes the run, which succeeded (exit 0)
SHARDRUN_DEBUG_PAUSE_AT=0:6 "$SHARDRUN" "$J" --set task.output_dir="$T/last" --set task.max_steps=6 \
    --set task.save_steps=100 >"$T/l.out" 2>"$T/l.err" &
p=$!
wait_for "$T/l.out" "step 6/6" 120 && pass || fail "the run reached its last step"
kill -TERM $p
wait $p
expect_eq "$?" "0" "SIGTERM after the last step's line: the run completed ($(cat "$T/l.err"))"
expect_in "$(cat "$T/l.err")" "SIGTERM arrived during the last step: every rank finished the run" "the agent says so"
[ -f "$T/last/checkpoint-6/model.safetensors" ] && pass || fail "checkpoint-6 is complete"

# SIGINT stops at once, without a checkpoint
SHARDRUN_DEBUG_PAUSE_AT=0:3 "$SHARDRUN" "$J" --set task.output_dir="$T/int" --set task.save_steps=100 \
    >"$T/i.out" 2>"$T/i.err" &
p=$!
wait_for "$T/i.out" "step 3/40" 120 && pass || fail "the run reached step 3"
kill -INT $p
wait $p
rc=$?
expect_eq "$rc" "130" "SIGINT: exit 130"
expect_in "$(cat "$T/i.err")" "interrupted by SIGINT" "the agent says it was interrupted"
[ -z "$(ls "$T/int" | grep 'checkpoint-')" ] && pass || fail "SIGINT wrote no checkpoint: $(ls "$T/int")"
done_checks
