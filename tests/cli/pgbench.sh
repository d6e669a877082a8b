# examples/pgbench on 3 ranks (uneven), small sizes: a full table, every result checked.
. "$(dirname "$0")/lib.sh"
run "$SHARDRUN" "$SRC/examples/pgbench/pgbench.ini" --nproc-per-node 3 --set task.max_bytes=1048576 \
    --set task.iters=2 --set torch.backend=gloo
expect_rc 0 "pgbench on 3 ranks"
expect_in "$out" "[rank0]: # pgbench: 3 ranks, gloo, fp32, 2 iterations" "header"
for op in all_gather reduce_scatter all_reduce; do
    # 1 KiB .. 1 MiB is 11 sizes
    expect_eq "$(grep -cE "^\[rank0\]: +[0-9]+ +[0-9]+ $op +[0-9.]+ +[0-9.]+ +[0-9.]+ +0$" <<<"$out")" "11" "$op rows, no errors"
done
expect_in "$out" "[rank0]: # errors: 0;" "no errors in total"
expect_eq "$(grep -c '"errors": 0, "busbw_all_gather": ' <<<"$out")" "3" "every rank reports its results"
done_checks
