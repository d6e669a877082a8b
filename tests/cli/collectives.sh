# Every collective x dtype x size (0, 1, 7, 1000, 65537, 1048576 elements) against a local
# expectation, for world sizes 1, 2, 3 (uneven chunks) and 4 (plus 2x2 sub-groups), over Gloo.
. "$(dirname "$0")/lib.sh"
printf '[shardrun]\ntask = %s\nplugins = torch\n[torch]\nbackend = gloo\ntimeout = 60\n' \
    "$BUILD/tests/tasks/collectives.so" >"$T/c.ini"
for n in 1 2 3 4; do
    run "$SHARDRUN" "$T/c.ini" --nproc-per-node $n
    expect_rc 0 "collectives on $n rank(s)"
    for r in $(seq 0 $((n - 1))); do
        expect_in "$out" "[rank$r]: collectives: " "rank $r of $n reports"
        expect_not_in "$out" "MISMATCH" "no mismatch on $n ranks"
    done
    [ "$(grep -c "checks, 0 failed on rank" <<<"$out")" -eq "$n" ] && pass || fail "all $n ranks passed every check: $out"
done
# a rank that never joins: the others fail within the timeout, naming the operation and the rank
t0=$(date +%s%N)
run "$SHARDRUN" "$T/c.ini" --nproc-per-node 4 --set torch.timeout=2 --set task.stall_rank=3
ms=$((($(date +%s%N) - t0) / 1000000))
expect_rc 1 "a stalled rank fails the run"
[ "$ms" -lt 8000 ] && pass || fail "the timeout took ${ms} ms to end the run (timeout 2 s)"
# the first rank to time out ends the run, so which of ranks 0-2 gets to print first varies
grep -qE "all_reduce failed as it should: all_reduce #1 \(1 x fp32\) on group world \(rank [012] of 4\): rank 3 did not arrive within 2s" <<<"$out" \
    && pass || fail "a waiting rank names the operation and rank 3: $out"
# the nccl backend on a machine without a GPU: a clear error, not a crash or a hang
run "$SHARDRUN" "$T/c.ini" --nproc-per-node 2 --set torch.backend=nccl --set torch.timeout=10
expect_rc 1 "nccl without a GPU fails"
if [ -e "$BUILD/libshardrun_cuda.so" ]; then
    expect_in "$out$err" "process group world: nccl backend: no CUDA device is visible" "nccl names the missing device"
else
    expect_in "$out$err" "the nccl backend needs $BUILD/libshardrun_cuda.so cannot be loaded" "nccl needs the CUDA build"
fi
done_checks
