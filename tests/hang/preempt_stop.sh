# A preemption (SIGTERM to shardrun) while rank 1 of a model task is stopped (SIGSTOP): the
# stopped rank can neither finish its step nor write its part of the checkpoint, and rank 0 waits
# for it in a collective.  Before, the run said nothing until preempt_grace ran out (30 s here;
# 60 s by default), then SIGKILL; now the hang watchdog goes on watching during the preemption:
# rank 1 is named, stopped, within hang_timeout + 5 s, every rank is stopped (shutdown_grace), and
# shardrun exits 143 (the preemption's code) saying the run hung and that no checkpoint was written.
. "$(dirname "$0")/../fsdp/lib.sh"
. "$(dirname "$0")/lib.sh"
HT=3
toy_job job.ini <<EOF2
max_steps = 100000
num_train_epochs = 10000
logging_steps = 1
EOF2
sed -i 's/^plugins = torch,accelerate$/&\nnproc_per_node = 2\npreempt_grace = 30/' "$T/job.ini"
start_bg run "$SHARDRUN" "$T/job.ini" --set task.output_dir="$T/out" --set shardrun.hang_timeout=$HT
agent=$bg
wait_for "$T/run.out" "step 3/" 60 && pass || fail "the run logged no third step within 60s: $(cat "$T/run.err")"
r1=$(worker_pid "$agent" 1) && pass || fail "no worker with RANK=1 under the agent $agent"
kill -STOP "$r1"
kill -TERM "$agent"
term_at=$(date +%s.%N)
finish "$agent" 60
elapsed_since=$(since "$term_at")
echo "the run ended ${elapsed_since}s after SIGTERM (hang_timeout $HT s, preempt_grace 30 s)"
err=$(cat "$T/run.err")
expect_rc 143 "a preemption with rank 1 stopped: the preemption's exit code"
at_most "$elapsed_since" $((HT + 5)) "the run ends within hang_timeout ($HT s) + 5 s, not after preempt_grace (30 s)"
expect_in "$err" "shardrun: hang: rank 1 (node 0, host $HOST, pid $r1) is behind: stopped" "rank 1 named, stopped"
expect_in "$err" "the preemption cannot finish: a rank that makes no progress writes no checkpoint; stopping every rank now" "what the agent does"
expect_in "$err" "the run hung while it was preempted: rank 1" "the summary says the run hung"
expect_in "$err" "before a checkpoint could be written" "and that no checkpoint was written"
expect_eq "$(grep -c 'shardrun: hang:' <<<"$err")" 1 "one report"
expect_in "$err" "(SIGTERM, then SIGKILL after 2s)" "the workers were stopped after shutdown_grace"
kill -0 "$r1" 2>/dev/null && fail "the stopped rank $r1 is still there" || pass
kill -CONT "$r1" 2>/dev/null
[ -n "${SHOW:-}" ] && cat "$T/run.err"
echo "hang_preempt_stop: $checks checks, $failed failed"
[ "$failed" -eq 0 ]
