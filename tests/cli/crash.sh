# Crash handling with real processes: the first failure stops every worker, the summary names
# the rank and the cause, and no process of the run survives shardrun.
. "$(dirname "$0")/lib.sh"
BEHAVE=$BUILD/tests/tasks/behave.so
mkjob() { # mkjob ACT_RANK ACT [EXTRA LINES...]
    rm -rf "$T/pids" && mkdir -p "$T/pids"
    printf '[shardrun]\ntask = %s\nnproc_per_node = 4\n' "$BEHAVE" >"$T/c.ini"
    printf '[task]\npid_dir = %s\nact_rank = %s\nact = %s\nsay = about to act\n' "$T/pids" "$1" "$2" >>"$T/c.ini"
    shift 2
    printf '%s\n' "$@" >>"$T/c.ini"
}
now() { date +%s%N; }
elapsed_ms() { echo $((($(now) - $1) / 1000000)); }
no_survivors() { # every pid the workers wrote is gone (not even a zombie, unless $2 = dead-ok)
    local left="" state
    for f in "$T"/pids/rank*.pid; do
        [ -e "$f" ] || continue
        p=$(cat "$f")
        state=$(cut -d' ' -f3 "/proc/$p/stat" 2>/dev/null)
        [ -n "$state" ] && ! { [ "$state" = Z ] && [ "${2:-}" = dead-ok ]; } && left="$left $p($state)"
    done
    [ -z "$left" ] && pass || fail "$1: processes survived:$left"
}
wait_pids() { # wait until N pid files exist
    for _ in $(seq 1 200); do
        [ "$(ls "$T"/pids/rank*.pid 2>/dev/null | wc -l)" -ge "$1" ] && return 0
        sleep 0.02
    done
    fail "workers did not start"
}

# 1. a segfault on rank 1 while the others sleep
mkjob 1 segv
t0=$(now)
run "$SHARDRUN" "$T/c.ini"
ms=$(elapsed_ms "$t0")
expect_rc 1 "segfault run"
[ "$ms" -lt 3000 ] && pass || fail "segfault run took ${ms} ms (limit 3000)"
expect_in "$err" "shardrun: error: rank 1 (local rank 1, pid " "summary names rank 1"
expect_in "$err" "was killed by signal SIGSEGV (11)" "summary names SIGSEGV"
expect_in "$err" "shardrun:   [rank1]: about to act (rank 1)" "summary shows rank 1's last line"
expect_in "$err" "stopped the other 3 workers of this node" "summary counts the stopped workers"
# the results list says what became of every rank, also after a failure
sed -n '/^\[$/,$p' <<<"$out" | /usr/bin/python3 -c '
import json, sys
r = {x["rank"]: x for x in json.load(sys.stdin)}
assert sorted(r) == [0, 1, 2, 3], r
assert r[1]["exit_code"] is None and r[1]["signal"] == "SIGSEGV", r[1]
assert all(r[k]["exit_code"] is None and r[k]["signal"] == "SIGTERM" for k in (0, 2, 3)), r' \
    && pass || fail "results after a failure: every rank, rank 1 SIGSEGV, the others SIGTERM: $out"
no_survivors "segfault"

# signal_run SIGNAL WHO: runs the job in the background, waits for its 4 workers, sends SIGNAL to
# WHO (`agent`, or a rank number) and waits for shardrun; sets rc, err, ms (from the signal), victim
signal_run() {
    "$SHARDRUN" "$T/c.ini" >"$T/o" 2>"$T/e" &
    local spid=$!
    wait_pids 4
    if [ "$2" = agent ]; then victim=$spid; else victim=$(cat "$T/pids/rank$2.pid"); fi
    local t0=$(now)
    kill -"$1" "$victim"
    wait "$spid" 2>/dev/null
    rc=$?
    ms=$(elapsed_ms "$t0")
    err=$(cat "$T/e")
}

# 2. SIGKILL sent to one worker from outside
mkjob -1 ok "others = sleep"
signal_run KILL 2
expect_rc 1 "worker killed from outside"
[ "$ms" -lt 3000 ] && pass || fail "SIGKILL run took ${ms} ms to end (limit 3000)"
expect_in "$err" "rank 2 (local rank 2, pid $victim) was killed by signal SIGKILL (9)" "summary names rank 2 and SIGKILL"
no_survivors "SIGKILL from outside"

# 3. SIGINT to shardrun: forwarded, then exit 130
mkjob -1 ok "others = sleep"
signal_run INT agent
expect_rc 130 "SIGINT to shardrun"
[ "$ms" -lt 3000 ] && pass || fail "SIGINT run took ${ms} ms to end (limit 3000)"
expect_in "$err" "shardrun: interrupted by SIGINT" "summary names SIGINT"
expect_in "$err" "stopped the 4 workers of this node (SIGINT" "SIGINT forwarded to the workers"
no_survivors "SIGINT"

# 4. SIGTERM to shardrun, with a worker that ignores SIGTERM: SIGKILL after the grace period
mkjob 3 ignore_term "others = sleep"
sed -i 's/^nproc_per_node = 4$/nproc_per_node = 4\nshutdown_grace = 0.5/' "$T/c.ini"
signal_run TERM agent
expect_rc 143 "SIGTERM to shardrun"
[ "$ms" -ge 400 ] && [ "$ms" -lt 3000 ] && pass || fail "grace then SIGKILL: took ${ms} ms (expected 500..3000)"
expect_in "$err" "some needed SIGKILL" "summary says SIGKILL was needed"
no_survivors "SIGTERM with a worker ignoring it"

# 5. a non-zero exit code
mkjob 0 exit3 "others = sleep"
run "$SHARDRUN" "$T/c.ini"
expect_rc 1 "exit code 3"
expect_in "$err" "rank 0 (local rank 0, pid " "summary names rank 0"
expect_in "$err" "exited with code 3" "summary names the exit code"
no_survivors "exit code"

# 6. what a worker leaves behind in its process group dies with it, even on success
printf '[shardrun]\ntask = exec:/bin/sh -c "sleep 60 & echo \\$! > %s/bg.pid; echo started"\n' "$T" >"$T/bg.ini"
t0=$(now)
run "$SHARDRUN" "$T/bg.ini"
ms=$(elapsed_ms "$t0")
expect_rc 0 "worker with a background child"
expect_in "$out" "[rank0]: started" "worker output"
bg=$(cat "$T/bg.pid")
[ ! -e "/proc/$bg" ] && pass || fail "the worker's background child $bg survived"
[ "$ms" -lt 3000 ] && pass || fail "run with a background child took ${ms} ms"

# 7. shardrun itself killed with SIGKILL: its workers die too (parent-death signal)
mkjob -1 ok "others = sleep"
signal_run KILL agent
sleep 0.3
# the orphans are dead; reaping them is their new parent's job (init, or this sandbox's pid 1)
no_survivors "shardrun killed with SIGKILL" dead-ok

# 8. shardrun killed with SIGKILL while a task's own background child runs: the guardian stops
#    the worker's process group, so nothing the task started is left behind
printf '[shardrun]\ntask = exec:/bin/sh -c "sleep 300 & echo \\$! > %s/bg2.pid; wait"\n' "$T" >"$T/bg2.ini"
"$SHARDRUN" "$T/bg2.ini" >"$T/bg2.out" 2>&1 &
agent=$!
disown $agent # its death by SIGKILL is the point: no job notice
for _ in $(seq 1 250); do [ -s "$T/bg2.pid" ] && break; sleep 0.02; done
bg=$(cat "$T/bg2.pid" 2>/dev/null)
[ -n "$bg" ] && [ -e "/proc/$bg" ] && pass || fail "the task's background child did not start"
kill -KILL "$agent"
for _ in $(seq 1 100); do [ -e "/proc/$bg" ] && [ "$(awk '{print $3}' "/proc/$bg/stat" 2>/dev/null)" != Z ] || break; sleep 0.02; done
alive=0
[ -e "/proc/$bg" ] && [ "$(awk '{print $3}' "/proc/$bg/stat" 2>/dev/null)" != Z ] && alive=1
[ "$alive" = 0 ] && pass || { fail "the task's background child $bg survived shardrun's SIGKILL"; kill -KILL "$bg"; }
# 9. the rank that reports an error is named, not a peer that exits first without a word (as
#    when a save hits a full disk on rank 0 and rank 1 sees it through a collective)
cat >"$T/blame.sh" <<'SH'
#!/bin/sh
if [ "$RANK" = 0 ]; then echo "checkpoint: error: cannot write shard-00000: No space left on device" >&2; sleep 1; exit 1; fi
sleep 0.3
exit 1
SH
chmod +x "$T/blame.sh"
printf '[shardrun]\ntask = exec:%s\nplugins = torch\nnproc_per_node = 2\n' "$T/blame.sh" >"$T/blame.ini"
run "$SHARDRUN" "$T/blame.ini"
expect_rc 1 "a rank reports an error, a silent peer exits first"
expect_in "$err" "rank 0 (local rank 0, pid" "the rank that reported the error is named"
expect_in "$err" "reported an error, then rank 1 (local rank 1, pid" "and the peer that exited first"
expect_in "$err" "[rank0]: checkpoint: error: cannot write shard-00000: No space left on device" "its error line is shown"
expect_not_in "$err" "rank 1 printed nothing" "not the silent rank's empty tail"
done_checks
