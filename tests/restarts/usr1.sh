# SIGUSR1 is SIGTERM's preemption (Slurm's `--signal=USR1@120` asks with it ahead of the time
# limit; its default action killed shardrun with exit 138, no message, no results, no checkpoint):
# to the agent, to every process of the job at once (as Slurm signals a step), or to one worker
# only, every rank of a model task finishes its step, writes a checkpoint, and shardrun exits 143
# with the preemption's message and the results list.  A main or exec task stops as for SIGTERM.
# The toy model task keeps it fast; tests/restarts/preempt.sh checks the same with GPT-2 and
# SIGTERM, and that a resumed run ends where an uninterrupted one does.
. "$(dirname "$0")/../fsdp/lib.sh"
export OMP_NUM_THREADS=1
toy_job job.ini <<EOF
max_steps = 100000
num_train_epochs = 10000
logging_steps = 1
save_steps = 100000
EOF
sed -i 's/^plugins = torch,accelerate$/&\nnproc_per_node = 2/' "$T/job.ini"

# start NAME RANK: a run into $T/NAME (output in $T/NAME.out, .err, results in $T/NAME.json, pid in
# $p) until rank 0 logged step 5; rank RANK waits there until a signal asks it to stop
# (SHARDRUN_DEBUG_PAUSE_AT), so the run stops after exactly step 5 however fast the toy's steps are:
# the other rank waits for it where the ranks agree whether to stop
start() {
    SHARDRUN_DEBUG_PAUSE_AT=$2:5 "$SHARDRUN" "$T/job.ini" --set task.output_dir="$T/$1" --results "$T/$1.json" \
        >"$T/$1.out" 2>"$T/$1.err" &
    p=$!
    wait_for "$T/$1.out" "step 5/" 60 && pass || fail "$1: the run reached step 5 ($(cat "$T/$1.err"))"
}
# preempted NAME RC BY: exit RC, the agent's message naming BY and step 5, rank 0's, a complete
# checkpoint-5, and both ranks preempted at step 5 in the results list (stdout and --results)
preempted() {
    local name=$1 rc=$2 by=$3 step
    expect_eq "$rc" "143" "$name: exit 143 ($(cat "$T/$name.err"))"
    step=$(sed -n 's/.*preempted by .*: every rank stopped after step \([0-9]*\) and.*/\1/p' "$T/$name.err")
    expect_eq "$step" 5 "$name: the agent names the step the run stopped after"
    expect_in "$(cat "$T/$name.err")" "preempted by $by: every rank stopped after step $step and $T/$name/checkpoint-$step holds it" "$name: the agent says where the checkpoint is"
    [ -f "$T/$name/checkpoint-$step/model.safetensors" ] && [ ! -e "$T/$name/checkpoint-$step.tmp" ] && pass ||
        fail "$name: checkpoint-$step is complete: $(ls "$T/$name")"
    for results in "$(sed -n '/^\[$/,$p' "$T/$name.out")" "$(cat "$T/$name.json" 2>/dev/null)"; do
        /usr/bin/python3 -c '
import json, sys
r = json.loads(sys.argv[2])
assert [x["exit_code"] for x in r] == [143, 143] and all(x["preempted"] and x["global_step"] == int(sys.argv[1]) for x in r), r' \
            "$step" "$results" && pass || fail "$name: the results say both ranks were preempted at step $step: $results"
    done
    expect_not_in "$(cat "$T/$name.err")" "needed SIGKILL" "$name: the workers stopped by themselves"
}

# (a) SIGUSR1 to the agent
start agent 0
kill -USR1 $p
wait $p
preempted agent $? SIGUSR1
expect_in "$(cat "$T/agent.out")" "[rank0]: shardrun: preempted (SIGUSR1) after step 5 of " "rank 0 names SIGUSR1"
expect_in "$(cat "$T/agent.err")" "SIGUSR1: asking every rank to finish its step and write a checkpoint" "the agent says what it does"

# (b) SIGUSR1 to every process of the job at once, the agent, its guardian and the workers, as
# Slurm's --signal=USR1@120 does to the processes of a step
start all 0
kill -USR1 $p $(pgrep -P $p)
wait $p
preempted all $? SIGUSR1

# (c) SIGUSR1 to one worker only: every rank stops after the same step (they agree), and the agent
# takes it for the preemption it is instead of a failure that stops the others at once.  The rank
# that waits after step 5 is the one signalled (local rank 1): nothing asks the other one to stop
start worker 1
w=$(worker_of $p 1)
[ -n "$w" ] && pass || fail "no worker of local rank 1 under the agent $p: $(pgrep -P $p | tr '\n' ' ')"
kill -USR1 "$w"
wait $p
preempted worker $? "a signal to a worker"
expect_in "$(cat "$T/worker.err")" "a worker was asked to stop by a signal" "the agent says why the ranks stopped"

# (d) an exec task: SIGUSR1 stops it as SIGTERM does, exit 143
printf '[shardrun]\ntask = exec:/bin/sleep 30\nnproc_per_node = 2\n' >"$T/exec.ini"
"$SHARDRUN" "$T/exec.ini" >"$T/exec.out" 2>"$T/exec.err" &
p=$!
wait_for "$T/exec.err" "started 2 workers" 30 && pass || fail "the exec task started"
sleep 0.2
kill -USR1 $p
wait $p
expect_eq "$?" "143" "an exec task stopped by SIGUSR1: exit 143 ($(cat "$T/exec.err"))"
expect_in "$(cat "$T/exec.err")" "interrupted by SIGUSR1" "the agent names the signal"
expect_in "$(cat "$T/exec.out")" '"signal": "SIGTERM"' "the results list says the workers were stopped by SIGTERM"

# an exec task's worker killed by SIGUSR1 (Slurm signals every process of the step) was asked to
# stop: no restart, as for SIGTERM
"$SHARDRUN" "$T/exec.ini" --set shardrun.max_restarts=1 >"$T/er.out" 2>"$T/er.err" &
p=$!
wait_for "$T/er.err" "started 2 workers" 30 && pass || fail "the exec task started"
sleep 0.2
kill -USR1 "$(pgrep -P $p -x sleep | tail -1)"
wait $p
expect_eq "$?" "1" "a worker killed by SIGUSR1: exit 1 ($(cat "$T/er.err"))"
expect_in "$(cat "$T/er.err")" "not restarted (max_restarts = 1): the rank was asked to stop" "no restart"

# (e) before any worker starts (here node 1 waiting for node 0's store): the same exit as SIGTERM
P=$(free_port_pair)
SHARDRUN_RDZV_TOKEN=usr1-test "$SHARDRUN" "$T/exec.ini" --nnodes 2 --node-rank 1 --master-port "$P" \
    >"$T/wait.out" 2>"$T/wait.err" &
p=$!
# once it catches SIGUSR1 (bit 10 of SigCgt), before that its start-up is not over
for i in $(seq 1 500); do
    cgt=$(sed -n 's/^SigCgt:[[:space:]]*//p' /proc/$p/status 2>/dev/null)
    [ -n "$cgt" ] && (((0x$cgt >> 9) & 1)) && break
    sleep 0.02
done
sleep 0.2
kill -USR1 $p
wait $p
expect_eq "$?" "143" "SIGUSR1 while waiting for the rendezvous: exit 143 ($(cat "$T/wait.err"))"
done_checks
