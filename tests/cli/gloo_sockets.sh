# A Gloo world of 128 ranks on one host (one agent, [torch] transport = tcp) opens O(N) sockets at
# creation, not a pair per peer: groups past 64 ranks connect each pair the first time an operation
# needs it (core/pg/gloo_shim.h).  Counted in /proc/<worker>/fd once every rank created the world
# and sleeps: at most 4 sockets a rank (its store connection, Gloo's pairs: none yet).  Before, every
# rank connected all 127 peers at creation (16,512 sockets at 128 ranks; 256 ranks ran out of
# ephemeral ports).  Then the collectives on 128 ranks, the pairs connected as they come: ring
# all-reduce, reduce-scatter, all-gather, a broadcast's tree, a barrier, every result checked; and a
# rank that never comes, named after the timeout.
. "$(dirname "$0")/lib.sh"
N=128
printf '[shardrun]\ntask = %s\nplugins = torch\n[torch]\ntransport = tcp\ntimeout = 120\n[task]\nsay = world ready\nothers = sleep\n' \
    "$BUILD/tests/tasks/behave.so" >"$T/idle.ini"
"$SHARDRUN" "$T/idle.ini" --nproc-per-node $N >"$T/idle.out" 2>"$T/idle.err" &
spid=$!
trap 'kill -KILL "$spid" 2>/dev/null; rm -rf "$T"' EXIT
ready=0
for i in $(seq 2400); do
    ready=$(grep -c '^\[rank[0-9]*\]: world ready' "$T/idle.out")
    [ "$ready" = $N ] && break
    kill -0 "$spid" 2>/dev/null || break
    sleep 0.05
done
sockets=0
for c in $(pgrep -P "$spid"); do
    s=$(ls -l "/proc/$c/fd" 2>/dev/null | grep -c 'socket:')
    sockets=$((sockets + s))
done
kill -TERM "$spid" 2>/dev/null
wait "$spid" 2>/dev/null
expect_eq "$ready" $N "ranks that created the Gloo world of $N within 120 s"
echo "sockets of the $N workers once the world was created: $sockets"
[ "$sockets" -gt 0 ] && [ "$sockets" -le $((4 * N)) ] && pass \
    || fail "the $N workers held $sockets sockets after creating the world: want at most $((4 * N)) (4 a rank)"
# the collectives, checked, on the lazily connected world (fp32 and int64: 128 ranks' sums of small
# integers are not all exact in fp16 or bf16)
printf '[shardrun]\ntask = %s\nplugins = torch\n[torch]\nbackend = gloo\ntransport = tcp\ntimeout = 120\n' \
    "$BUILD/tests/tasks/collectives.so" >"$T/c.ini"
run "$SHARDRUN" "$T/c.ini" --nproc-per-node $N --set task.sizes=1,1000 --set task.dtypes=fp32,int64
expect_rc 0 "the collectives on $N ranks over tcp"
expect_not_in "$out" "MISMATCH" "no mismatch on $N ranks"
expect_eq "$(grep -c "checks, 0 failed on rank" <<<"$out")" $N "ranks that passed every check"
# a rank that never comes to its first operation: its neighbours wait for its pair's address, not
# for a connection, and time out naming it (66 ranks: past the 64 that connect at creation)
run "$SHARDRUN" "$T/c.ini" --nproc-per-node 66 --set torch.timeout=3 --set task.stall_rank=65
expect_rc 1 "a stalled rank fails the lazily connected run"
grep -qE "all_reduce failed as it should: all_reduce #1 \(1 x fp32\) on group world \(rank (0|64) of 66\): rank 65 did not arrive within 3s" <<<"$out" \
    && pass || fail "a neighbour of the stalled rank names the operation and rank 65 alone: $out"
done_checks
