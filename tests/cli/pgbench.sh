# examples/pgbench on 3 ranks (uneven), small sizes: a full table, every result checked.
. "$(dirname "$0")/lib.sh"
run "$SHARDRUN" "$SRC/examples/pgbench/pgbench.ini" --nproc-per-node 3 --set task.max_bytes=1048576 \
    --set task.iters=2 --set task.latency_iters=50 --set torch.backend=gloo --set torch.transport=tcp
expect_rc 0 "pgbench on 3 ranks"
expect_in "$out" "[rank0]: # pgbench: 3 ranks, gloo over tcp, fp32, 2 iterations" "header"
for op in all_gather reduce_scatter all_reduce; do
    # 1 KiB .. 1 MiB is 11 sizes
    expect_eq "$(grep -cE "^\[rank0\]: +[0-9]+ +[0-9]+ $op +[0-9.]+ +[0-9.]+ +[0-9.]+ +0$" <<<"$out")" "11" "$op rows, no errors"
done
expect_in "$out" "[rank0]: # errors: 0;" "no errors in total"
expect_eq "$(grep -c '"errors": 0, "busbw_all_gather": ' <<<"$out")" "3" "every rank reports its results"
grep -qE '^\[rank0\]: # memcpy, one thread, 1048576 bytes: [0-9.]+ GB/s; bus bandwidth at that size / memcpy: all_gather [0-9.]+, reduce_scatter [0-9.]+, all_reduce [0-9.]+$' <<<"$out" \
    && pass || fail "the memcpy yardstick: $out"
grep -qE '^\[rank0\]: # latency: 8-byte all_reduce over tcp, mean of 50: [0-9.]+ us$' <<<"$out" && pass || fail "the latency line: $out"
# the same over shared memory, 2 ranks
run "$SHARDRUN" "$SRC/examples/pgbench/pgbench.ini" --set task.max_bytes=1048576 --set task.iters=2 \
    --set task.latency_iters=50 --set torch.backend=gloo --set torch.transport=shm
expect_rc 0 "pgbench over shm"
expect_in "$out" "[rank0]: # pgbench: 2 ranks, gloo over shm, fp32, 2 iterations" "header (shm)"
expect_in "$out" "[rank0]: # errors: 0;" "no errors over shm"
expect_in "$out" "[rank0]: # latency: 8-byte all_reduce over shm, mean of 50: " "the latency line (shm)"
done_checks
