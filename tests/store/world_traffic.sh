# The store traffic of a shared-memory world grows like its ranks, not their square: one agent
# with 4, then 16 ranks over [torch] transport = shm, each rank creating the world and then
# sleeping; once every rank said so, the agent's write system calls so far (its store sends one
# reply per request; the rest, its own files and the ranks' relayed lines, is a few per rank).
# Per rank they must not grow from 4 to 16 ranks.  Before, the shm backend's two meetings waited on
# every rank's key and then read each one, from every rank: 2 (n + 2) requests per rank (23.75
# writes per rank at 4 ranks, 47.2 at 16); now a counter and one table key per meeting (pg/meet.h).
# The bytes it wrote (/proc/<pid>/io's wchar) must not grow per rank either (by more than 256 a
# rank: longer rank numbers in keys and lines): before, every rank read every rank's host identity
# (~100 bytes each: 719 bytes a rank at 4 ranks, 1,922 at 16); now one rank reads them and every
# rank reads the host table (pg/host_table.h), a few bytes (447 and 507 a rank).
. "$(dirname "$0")/../cli/lib.sh"
[ -d /dev/shm ] && pass || fail "this test needs /dev/shm"
printf '[shardrun]\ntask = %s\nplugins = torch\n[torch]\ntransport = shm\ntimeout = 60\n[task]\nsay = world ready\nothers = sleep\n' \
    "$BUILD/tests/tasks/behave.so" >"$T/job.ini"
spid=""
trap '[ -n "$spid" ] && kill -KILL "$spid" 2>/dev/null; rm -rf "$T"' EXIT
# replies N: node 0's writes and the bytes they wrote until N ranks built the shm world ("W B"), or
# "" when they did not within 60 s
replies() {
    local n=$1 w="" i
    "$SHARDRUN" "$T/job.ini" --nproc-per-node "$n" >"$T/$n.out" 2>"$T/$n.err" &
    spid=$!
    for i in $(seq 1200); do
        [ "$(grep -c '^\[rank[0-9]*\]: world ready' "$T/$n.out")" = "$n" ] && {
            w=$(awk '/^syscw/ { w = $2 } /^wchar/ { b = $2 } END { print w, b }' "/proc/$spid/io")
            break
        }
        kill -0 "$spid" 2>/dev/null || break
        sleep 0.05
    done
    kill -TERM "$spid" 2>/dev/null
    wait "$spid" 2>/dev/null
    spid=""
    echo "$w"
}
read -r w4 b4 <<<"$(replies 4)"
read -r w16 b16 <<<"$(replies 16)"
[ -n "$b4" ] && [ -n "$b16" ] && pass || {
    fail "the worlds of 4 and 16 ranks were not all ready within 60 s: $(tail -n 3 "$T/4.err" "$T/16.err")"
    done_checks
    exit
}
per4=$(awk -v w="$w4" 'BEGIN { printf "%.2f", w / 4 }')
per16=$(awk -v w="$w16" 'BEGIN { printf "%.2f", w / 16 }')
echo "node 0's writes until the shm world was ready: $w4 at 4 ranks ($per4 a rank), $w16 at 16 ($per16 a rank)"
awk -v a="$per4" -v b="$per16" 'BEGIN { exit !(b <= a + 2) }' && pass \
    || fail "store replies per rank grew with the ranks over shm: $per4 at 4 ranks, $per16 at 16"
bper4=$(awk -v b="$b4" 'BEGIN { printf "%.0f", b / 4 }')
bper16=$(awk -v b="$b16" 'BEGIN { printf "%.0f", b / 16 }')
echo "node 0's bytes written until then: $b4 at 4 ranks ($bper4 a rank), $b16 at 16 ($bper16 a rank)"
awk -v a="$bper4" -v b="$bper16" 'BEGIN { exit !(b <= a + 256) }' && pass \
    || fail "the bytes node 0 wrote per rank grew with the ranks over shm: $bper4 at 4 ranks, $bper16 at 16"
done_checks
