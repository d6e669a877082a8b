# A full disk is not retried: max_restarts restarts a run whose rank crashed, but a checkpoint that
# cannot be written for lack of space (or a read-only file system) fails the same way every time.
# The run stops at once (exit 1), says which file could not be written and why, once, and leaves no
# half-written checkpoint.  The output_dir is a 120 KiB tmpfs this test mounts (as root) and unmounts.
. "$(dirname "$0")/lib.sh"
toy_job toy.ini <<EOF2
samples = 240
max_steps = 8
save_steps = 2
logging_steps = 1
EOF2
M=$T/full
mkdir -p "$M"
if ! mount -t tmpfs -o size=120k shardrun-test-full "$M"; then
    fail "cannot mount a small tmpfs at $M (this test runs as root)"
    done_checks
    exit 1
fi
trap 'umount "$M" 2>/dev/null' EXIT
run "$SHARDRUN" "$T/toy.ini" --nproc-per-node 2 --set task.output_dir="$M/out" --set shardrun.max_restarts=2
expect_rc 1 "the checkpoint does not fit"
expect_not_in "$err" "restarting the job" "no restart"
expect_eq "$(grep -c 'started 2 workers' <<<"$err")" "1" "one attempt"
expect_in "$err" "shardrun: not restarted (max_restarts = 2): a restart would fail the same way: rank 0 could not write $M/out/checkpoint-2.tmp/" \
    "the summary names the file that could not be written"
expect_in "$err" "No space left on device; make room (or choose another output_dir)" "and what to do"
expect_eq "$(cd "$M/out" && ls -d checkpoint-* 2>/dev/null | wc -l)" "0" "no checkpoint folder, complete or not, is left"
# a read-only file system: the same
mount -o remount,ro "$M"
run "$SHARDRUN" "$T/toy.ini" --nproc-per-node 2 --set task.output_dir="$M/out2" --set shardrun.max_restarts=2
expect_rc 2 "a read-only output_dir is refused before any work"
expect_in "$err" "output_dir = $M/out2 cannot be created" "it says so"
done_checks
