# No silent spin under a memory limit: with `ulimit -v` at 390 MiB and two OpenMP threads per rank,
# OpenBLAS cannot allocate its 128 MiB buffer in the first GEMM and retries without end, saying
# nothing (the rank spins at 100% CPU).  The hang watchdog ends it: the run exits 1 within
# hang_timeout and a few seconds with a message that names the cause, on 1 rank and on 2, and
# `shardrun selftest` fails the same way (hang_timeout from SHARDRUN_HANG_TIMEOUT).  Before the
# watchdog each of these ran until killed.
. "$(dirname "$0")/lib.sh"
[ -f "$BUILD/examples/gpt2.so" ] || { echo "FAIL: no $BUILD/examples/gpt2.so: build the whole tree" >&2; exit 1; }
export OMP_NUM_THREADS=2
HT=4
LIMIT_KB=400000
cause="under a memory limit of 390 MiB (ulimit -v): most likely an allocation that failed inside the BLAS"
for n in 1 2; do
    start_bg mem$n bash -c "ulimit -v $LIMIT_KB && exec \"\$@\"" - "$SHARDRUN" "$SRC/examples/gpt2/fsdp_cpu.ini" \
        --nproc-per-node $n --set task.output_dir="$T/mem$n" --set task.max_steps=3 --set shardrun.hang_timeout=$HT
    finish $bg 90
    err=$(cat "$T/mem$n.err")
    expect_rc 1 "$n rank(s) under ulimit -v $LIMIT_KB"
    expect_in "$err" "$cause" "$n rank(s): the message names the memory limit and the BLAS"
    expect_in "$err" "the run hung: rank 0 (node 0, host $HOST, pid" "$n rank(s): the summary names rank 0"
done

start_bg st bash -c "ulimit -v $LIMIT_KB && exec \"\$@\"" - env SHARDRUN_HANG_TIMEOUT=$HT "$SHARDRUN" selftest --quick
finish $bg 240
out=$(cat "$T/st.out" "$T/st.err")
expect_rc 1 "selftest --quick under ulimit -v $LIMIT_KB"
expect_in "$out" "FAIL  setup      selftest task" "the selftest says which part failed"
expect_in "$out" "$cause" "and shows the cause from its log"
rm -rf $(grep -o '/tmp/shardrun-selftest-[A-Za-z0-9]*' <<<"$out" | sort -u) # the folders it kept for the failure
echo "hang_memory: $checks checks, $failed failed"
[ "$failed" -eq 0 ]
