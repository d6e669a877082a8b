# shardrun selftest against a collective bug that shows on one rank only, and against a wrong Gloo
# average: it fails within seconds, naming the collective and the transport, and the ranks stay
# in step (the other collectives still pass), where it used to wait silently for [torch] timeout.
# The bugs come from the testing aid SHARDRUN_DEBUG_PG_FAULT (core/pg/fault.h).
. "$(dirname "$0")/lib.sh"

# within LIMIT seconds, or the test fails saying so (a hang is what this test catches)
LIMIT=60
timed_selftest() {
    local t0=$SECONDS
    run timeout $((LIMIT + 30)) "$SHARDRUN" selftest --quick
    took=$((SECONDS - t0))
}

# an index error in the shared-memory reduce-scatter that only ranks above 0 hit
SHARDRUN_DEBUG_PG_FAULT=shm_reduce_scatter_index timed_selftest
expect_rc 1 "selftest with a one-rank reduce_scatter bug (124: it hung); took ${took}s; output: $(tail -5 <<<"$out")"
[ "$took" -le "$LIMIT" ] && pass || fail "the one-rank bug took ${took}s to report (limit ${LIMIT}s)"
fails=$(grep '^FAIL' <<<"$out")
expect_in "$out" "SHARDRUN_DEBUG_PG_FAULT=shm_reduce_scatter_index is set" "the testing aid is announced"
expect_in "$fails" "FAIL  collective reduce_scatter fp32 sum over shm   rank 1: count 1: element [0] on rank 1" \
    "the broken collective is named, with its transport, rank, count and element"
expect_eq "$(grep -c '^FAIL  collective' <<<"$fails")" 13 \
    "every reduce_scatter line over shm fails (5 dtypes x sum, max + 3 float avg), no other collective line: $fails"
expect_eq "$(grep '^FAIL  collective' <<<"$fails" | grep -vc 'reduce_scatter .* over shm')" 0 "only reduce_scatter over shm fails"
# the ranks stayed in step: everything checked after the failures still passes on both ranks
for l in "all_reduce fp32 sum over shm" "broadcast int64 over shm" "barrier over shm" \
         "split + all_reduce in the child over shm" "reduce_scatter fp32 sum over tcp" "all_gather bf16 over tcp"; do
    expect_in "$(grep '^PASS' <<<"$out")" "$l" "PASS after the failures: $l"
done
expect_in "$(grep 'all_reduce int64 max over shm' <<<"$out")" "[2 ranks]" "both ranks checked the later collectives"
expect_in "$out" "verdict: FAIL: " "the verdict"

# Gloo's TCP path dividing averages by the wrong number: the selftest runs the collectives over
# TCP too, so it is caught there (and only there)
SHARDRUN_DEBUG_PG_FAULT=gloo_avg_divisor timed_selftest
expect_rc 1 "selftest with a wrong Gloo average divisor; took ${took}s; output: $(tail -5 <<<"$out")"
[ "$took" -le "$LIMIT" ] && pass || fail "the wrong divisor took ${took}s to report (limit ${LIMIT}s)"
fails=$(grep '^FAIL' <<<"$out")
expect_in "$fails" "FAIL  collective all_reduce fp32 avg over tcp" "the TCP all_reduce avg is named"
expect_in "$fails" "FAIL  collective reduce_scatter bf16 avg over tcp" "the TCP reduce_scatter avg is named"
expect_eq "$(wc -l <<<"$fails")" 6 "exactly the 6 averages over tcp fail (all_reduce, reduce_scatter x fp32, fp16, bf16): $fails"
expect_in "$(grep '^PASS' <<<"$out")" "all_reduce fp32 avg over shm" "averages over shared memory pass"

done_checks
