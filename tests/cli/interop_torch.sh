# torch as a real client of shardrun's environment (Debian python3-torch under /usr/bin/python3;
# .ci/run installs it): 4 ranks form a Gloo group with env:// and all_reduce; and the FSDP
# variables are exactly what accelerate reads.
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
if ! $PY -c 'import torch' 2>/dev/null; then
    echo "FAIL: $PY cannot import torch: install Debian's python3-torch (apt-get install python3-torch)"
    exit 1
fi
REF=$SRC/tests/jobs/reference.ini

run "$SHARDRUN" "$REF" --master-port 0 --set "shardrun.task=exec:$PY $SRC/tests/interop/allreduce.py"
expect_rc 0 "torch all_reduce on 4 ranks"
for r in 0 1 2 3; do
    expect_in "$out" "[rank$r]: all_reduce ok: rank $r of 4 got 10" "rank $r all_reduce"
done

run "$SHARDRUN" "$REF" --set "shardrun.task=exec:$PY $SRC/tests/interop/fsdp_env.py"
expect_rc 0 "FSDP environment as accelerate reads it"
for r in 0 1 2 3; do
    expect_in "$out" "[rank$r]: fsdp env ok on rank $r" "rank $r FSDP environment"
done

# a torch failure on one rank ends the run with that rank named
run "$SHARDRUN" "$REF" --master-port 0 --set "shardrun.task=exec:$PY -c 'import os,sys; sys.exit(7 if os.environ[\"RANK\"]==\"2\" else 0)'"
expect_rc 1 "a python rank exiting 7"
expect_in "$err" "rank 2 (local rank 2, pid" "the failing python rank named"
expect_in "$err" "exited with code 7" "its exit code"
done_checks
