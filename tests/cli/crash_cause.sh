# The rank a signal killed is named as the cause of a failure, not the peer that exited non-zero
# because it saw that rank go (through a collective, as FSDP's shared-memory all-reduce does), even
# when the agent reaps the peer first, and even when the peer wrote an error line about it.
. "$(dirname "$0")/lib.sh"

# peer.sh: rank 1 says it is going and SIGKILLs itself 50 ms later; rank 0 waits for the word,
# reports the lost peer as an error and exits 1 at once, so it ends (and is reaped) first
cat >"$T/peer.sh" <<'SH'
#!/bin/sh
if [ "$RANK" = 1 ]; then
    sleep 0.2
    : >"$GO"
    sleep 0.05
    kill -KILL $$
fi
while [ ! -e "$GO" ]; do sleep 0.01; done
echo "shardrun: error: FSDP all-reduce failed: shm: rank 1 exited" >&2
exit 1
SH
chmod +x "$T/peer.sh"
printf '[shardrun]\ntask = exec:%s\nplugins = torch\nnproc_per_node = 2\n' "$T/peer.sh" >"$T/peer.ini"
GO=$T/go1 run "$SHARDRUN" "$T/peer.ini"
expect_rc 1 "rank 1 killed, rank 0 exits 1 just before it"
expect_in "$err" "shardrun: error: rank 1 (local rank 1, pid " "the summary names rank 1"
expect_in "$err" "was killed by signal SIGKILL (9)" "and its signal"
expect_not_in "$err" "rank 0 (local rank 0, pid" "not rank 0, which only saw rank 1 go"

# late.sh: rank 0 reports the lost peer first and exits a second later; rank 1 is killed (and
# reaped) first: its silence does not hand the blame to the rank that wrote about it
cat >"$T/late.sh" <<'SH'
#!/bin/sh
if [ "$RANK" = 1 ]; then
    while [ ! -e "$GO" ]; do sleep 0.01; done
    kill -KILL $$
fi
echo "shardrun: error: FSDP all-reduce failed: shm: rank 1 exited" >&2
: >"$GO"
sleep 1
exit 1
SH
chmod +x "$T/late.sh"
printf '[shardrun]\ntask = exec:%s\nplugins = torch\nnproc_per_node = 2\n' "$T/late.sh" >"$T/late.ini"
GO=$T/go2 run "$SHARDRUN" "$T/late.ini"
expect_rc 1 "rank 1 killed after rank 0 wrote an error line"
expect_in "$err" "shardrun: error: rank 1 (local rank 1, pid " "the summary names rank 1"
expect_in "$err" "was killed by signal SIGKILL (9)" "and its signal"
expect_not_in "$err" "reported an error, then rank 1" "not rank 0's error line as the cause"
done_checks
