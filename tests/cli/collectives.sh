# Every collective x dtype x size (0, 1, 7, 1000, 65537, 1048576 elements) against a local
# expectation, for world sizes 1, 2, 3 (uneven chunks) and 4 (plus 2x2 sub-groups and a rank in
# no group), over both gloo transports: Gloo's TCP and shared memory.  Then the failures: a rank
# that never comes, a rank that exits, a worker killed; and no segment left in /dev/shm.
. "$(dirname "$0")/lib.sh"
printf '[shardrun]\ntask = %s\nplugins = torch\n[torch]\nbackend = gloo\ntimeout = 60\n' \
    "$BUILD/tests/tasks/collectives.so" >"$T/c.ini"
# Under the sanitizers the sweep stops at 65537 elements: the million-element sizes run the same code
# on more memory (3 to 10 times slower there); the odd large sizes over shm below still run the
# large-buffer path sanitized
sweep=()
[ "$SANITIZED" = 1 ] && sweep=(--set task.sizes=0,1,7,1000,65537)
segments() { ls /dev/shm 2>/dev/null | grep '^shardrun\.' | sort; }
[ -d /dev/shm ] && pass || fail "this test needs /dev/shm"
segments >"$T/shm.before"
for tr in tcp shm; do
    for n in 1 2 3 4; do
        run "$SHARDRUN" "$T/c.ini" --nproc-per-node $n --set torch.transport=$tr "${sweep[@]}"
        expect_rc 0 "collectives on $n rank(s) over $tr"
        for r in $(seq 0 $((n - 1))); do
            expect_in "$out" "[rank$r]: collectives: " "rank $r of $n reports ($tr)"
            expect_in "$out" "[rank$r]: world over $tr" "rank $r of $n runs over $tr"
            expect_not_in "$out" "MISMATCH" "no mismatch on $n ranks ($tr)"
        done
        [ "$(grep -c "checks, 0 failed on rank" <<<"$out")" -eq "$n" ] && pass || fail "all $n ranks passed every check over $tr: $out"
    done
    [ "$(grep -c "sub-groups: shard over $tr, replicate over $tr" <<<"$out")" -eq 4 ] && pass \
        || fail "the 2x2 sub-groups run over $tr: $out"
    # a rank that never joins: the others fail within the timeout, naming the operation and the rank
    t0=$(date +%s%N)
    run "$SHARDRUN" "$T/c.ini" --nproc-per-node 4 --set torch.timeout=2 --set task.stall_rank=3 --set torch.transport=$tr
    ms=$((($(date +%s%N) - t0) / 1000000))
    expect_rc 1 "a stalled rank fails the run ($tr)"
    [ "$ms" -lt 8000 ] && pass || fail "the timeout took ${ms} ms to end the run (timeout 2 s, $tr)"
    # the first rank to time out ends the run, so which of ranks 0-2 gets to print first varies
    grep -qE "all_reduce failed as it should: all_reduce #1 \(1 x fp32\) on group world \(rank [012] of 4\): rank 3 did not arrive within 2s" <<<"$out" \
        && pass || fail "a waiting rank names the operation and rank 3 ($tr): $out"
    # a rank that exits instead of joining: noticed at once, not after the timeout (60 s)
    t0=$(date +%s%N)
    run "$SHARDRUN" "$T/c.ini" --nproc-per-node 4 --set task.exit_rank=3 --set torch.transport=$tr
    ms=$((($(date +%s%N) - t0) / 1000000))
    expect_rc 1 "a rank that left fails the run ($tr)"
    [ "$ms" -lt 10000 ] && pass || fail "a dead peer took ${ms} ms to end the run (timeout 60 s, $tr)"
    grep -qE "all_reduce failed as it should: all_reduce #1 \(1 x fp32\) on group world \(rank [012] of 4\)(: rank 3 did not arrive| failed: shm: rank 3 \(pid [0-9]+\) exited)" <<<"$out" \
        && pass || fail "a waiting rank names the operation and rank 3, which left ($tr): $out"
done
# large outputs go out with streaming stores (from 8 MiB): odd sizes put each rank's part at
# unaligned addresses
run "$SHARDRUN" "$T/c.ini" --nproc-per-node 3 --set torch.transport=shm --set task.sizes=1048579
expect_rc 0 "odd large sizes over shm"
[ "$(grep -c "checks, 0 failed on rank" <<<"$out")" -eq 3 ] && pass || fail "odd large sizes over shm: $out"
# SIGKILL of a worker while the others wait in a collective (rank 2 sleeps 30 s instead of joining):
# the run fails at once, long before rank 2 would come, and no segment stays
t0=$(date +%s%N)
"$SHARDRUN" "$T/c.ini" --nproc-per-node 3 --set task.stall_rank=2 --set torch.transport=shm >"$T/k.out" 2>"$T/k.err" &
spid=$!
victim=""
wait_for "$T/k.out" "[rank0]: joining all_reduce #1" 60 && victim=$(worker_of "$spid" 0)
[ -n "$victim" ] && pass || fail "rank 0 of the run reached the all_reduce and its pid was found: $(cat "$T/k.out" "$T/k.err")"
sleep 0.3
[ -n "$victim" ] && kill -KILL "$victim"
wait "$spid"
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
expect_rc 1 "a worker killed during a collective fails the run"
[ "$ms" -lt 15000 ] && pass || fail "the killed worker ended the run after ${ms} ms, not before the stalled rank's 30 s"
# (which failure the summary names first races: the kill, or a peer that noticed it)
grep -qE "rank 0 \(local rank 0, pid $victim\) (was )?killed by signal SIGKILL|shm: rank 0 \(pid $victim\) exited" "$T/k.err" && pass \
    || fail "the summary names the killed worker or a peer that saw it go: $(cat "$T/k.err")"
# the kernel's work for a world is linear in its size: every rank maps the group's one file once,
# not one segment per peer (16 ranks, rank 15 stalls so that the others hold the world meanwhile)
"$SHARDRUN" "$T/c.ini" --nproc-per-node 16 --set task.stall_rank=15 --set torch.transport=shm >"$T/m.out" 2>"$T/m.err" &
spid=$!
maps=""
if wait_for "$T/m.out" "[rank0]: joining all_reduce #1" 60; then
    for r in $(seq 0 15); do
        w=$(worker_of "$spid" "$r")
        maps="$maps $(grep -c ' /dev/shm/shardrun\.' "/proc/$w/maps" 2>/dev/null)"
    done
    kill -KILL "$(worker_of "$spid" 15)"
fi
wait "$spid"
[ "$maps" = "$(printf ' 1%.0s' $(seq 16))" ] && pass \
    || fail "each of 16 ranks maps /dev/shm once (mappings per rank:${maps:- none, the world did not come: $(tail -3 "$T/m.err")})"
segments >"$T/shm.after"
left=$(comm -13 "$T/shm.before" "$T/shm.after")
[ -z "$left" ] && pass || fail "segments left in /dev/shm after the runs: $left"
# the nccl backend on a machine without a GPU: a clear error, not a crash or a hang
run "$SHARDRUN" "$T/c.ini" --nproc-per-node 2 --set torch.backend=nccl --set torch.timeout=10
expect_rc 1 "nccl without a GPU fails"
if [ -e "$BUILD/libshardrun_cuda.so" ]; then
    expect_in "$out$err" "process group world: nccl backend: no CUDA device is visible" "nccl names the missing device"
else
    expect_in "$out$err" "the nccl backend needs $BUILD/libshardrun_cuda.so cannot be loaded" "nccl needs the CUDA build"
fi
done_checks
