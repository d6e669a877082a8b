# The hang watchdog on one node: rank 1 of the GPT-2 demo stopped with kill -STOP (as a rank stuck
# in a driver would be) is named, with its host, pid and state, within hang_timeout and a few
# seconds, with where every rank is; the run exits 1 and leaves no process behind.  Before the
# watchdog the run stayed silent until [torch] timeout (1800 s).
. "$(dirname "$0")/lib.sh"
[ -f "$BUILD/examples/gpt2.so" ] || { echo "FAIL: no $BUILD/examples/gpt2.so: build the whole tree" >&2; exit 1; }
HT=4
start_bg demo "$SHARDRUN" "$SRC/examples/gpt2/fsdp_cpu.ini" --set task.output_dir="$T/demo" \
    --set shardrun.hang_timeout=$HT --set task.logging_steps=1
agent=$bg
wait_for "$T/demo.out" "step 3/" 120 && pass || fail "the demo logged no third step within 120s: $(cat "$T/demo.err")"
r1=$(worker_pid "$agent" 1) && pass || fail "no worker with RANK=1 under the agent $agent"
kill -STOP "$r1"
stopped_at=$(date +%s.%N)
finish "$agent" 60
elapsed_since=$(since "$stopped_at")
err=$(cat "$T/demo.err")
expect_rc 1 "the demo with rank 1 stopped"
at_most "$elapsed_since" $((HT + 5)) "the hang is reported and the run ends within hang_timeout ($HT s) + 5 s"
expect_in "$err" "shardrun: hang: rank 1 (node 0, host $HOST, pid $r1) is behind: stopped" "the report names rank 1, its host, pid and state"
expect_in "$err" "shardrun: where each rank is" "and says where each rank is"
grep -Eq "rank 0 \(node 0, host [^,]+, pid [0-9]+\): [a-z ]+.*; step [0-9]+ \(micro-step 0\), (forward|backward|optimizer|eval|checkpoint)(, unit [0-9]+)?; waits in [a-z_]+ #[0-9]+" <<<"$err" \
    && pass || fail "rank 0's line says its step, phase, unit and the collective it waits in: $err"
expect_eq "$(grep -c 'shardrun: hang:' <<<"$err")" 1 "one report"
expect_in "$err" "the run hung: rank 1" "the summary says the run hung"
[ -n "${HANG_REPORT_COPY:-}" ] && cp "$T/demo.err" "$HANG_REPORT_COPY"
kill -0 "$r1" 2>/dev/null && fail "the stopped rank $r1 is still there" || pass
kill -CONT "$r1" 2>/dev/null

# Rank 1 stopped INSIDE a collective that every rank has entered (SIGSTOP raised by the rank
# itself, right after it entered its 40th collective): still rank 1 is named, as the rank that
# cannot run to finish the collective, not "the collective itself does not complete".
SHARDRUN_DEBUG_PG_FAULT=stop_in_collective start_bg inside "$SHARDRUN" "$SRC/examples/gpt2/fsdp_cpu.ini" --set task.output_dir="$T/inside" \
    --set shardrun.hang_timeout=$HT --set task.logging_steps=1
agent=$bg
wait_for "$T/inside.err" "started 2 workers" 60 || true
r1=$(worker_pid "$agent" 1) || true
finish "$agent" 120
err=$(cat "$T/inside.err")
expect_rc 1 "the demo with rank 1 stopped inside a collective"
expect_in "$err" "shardrun: hang: rank 1 (node 0, host $HOST, pid $r1) is behind: stopped" "the report names rank 1 stopped inside the collective"
grep -Eq "it entered [a-z_]+ #40 but cannot run to finish it" <<<"$err" && pass || fail "the report says rank 1 entered collective #40: $err"
expect_in "$err" "the run hung: rank 1" "the summary names rank 1"
kill -CONT "$r1" 2>/dev/null

# hang_timeout is checked like every duration
run "$SHARDRUN" "$SRC/examples/hello/hello.ini" --set shardrun.hang_timeout=-1
expect_rc 2 "a negative hang_timeout"
expect_in "$err" "[shardrun] hang_timeout: expected a number >= 0" "names the key and what it expects"
echo "hang_stop: $checks checks, $failed failed"
[ "$failed" -eq 0 ]
