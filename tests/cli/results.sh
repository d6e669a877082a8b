# Results and output: the JSON list of per-rank results (stdout and --results FILE), rank
# prefixes on every line of both streams, task arguments after `--`.
. "$(dirname "$0")/lib.sh"
HELLO=$SRC/examples/hello/hello.ini

run "$SHARDRUN" "$HELLO" --results "$T/res.json"
expect_rc 0 "hello on 2 ranks"
expect_in "$out" "[rank0]: hello from rank 0 of 2 (local rank 0 of 2, node 0 of 1)" "rank 0 greets"
expect_in "$out" "[rank1]: hello from rank 1 of 2 (local rank 1 of 2, node 0 of 1)" "rank 1 greets"
expect_in "$out" "[rank1]:   FSDP_TRANSFORMER_CLS_TO_WRAP=GPT2Block" "rank 1 sees the FSDP environment"
expect_in "$out" "[rank0]:   ACCELERATE_MIXED_PRECISION=bf16" "rank 0 sees the mixed precision"
# the JSON list ends stdout; the same text is in the file
json=$(sed -n '/^\[$/,$p' <<<"$out")
expect_eq "$json" "$(cat "$T/res.json")" "stdout's results equal --results FILE"
/usr/bin/python3 - "$T/res.json" <<'PY' && pass || fail "results JSON content"
import json, sys
r = json.load(open(sys.argv[1]))
assert [x["rank"] for x in r] == [0, 1], r
assert all(x["exit_code"] == 0 and x["sharding_strategy"] == "FULL_SHARD" and x["fsdp_vars"] == 14 for x in r), r
PY
expect_eq "$(ls "$T")" "res.json" "no temporary file left next to the results"

# log_level = debug: each worker logs which plugin set each variable
run "$SHARDRUN" "$HELLO" --set shardrun.log_level=debug
expect_in "$err" "[rank1]: shardrun: debug: torch sets RANK=1" "debug log names the plugin (torch)"
expect_in "$err" "[rank0]: shardrun: debug: accelerate sets FSDP_SHARDING_STRATEGY=FULL_SHARD" "debug log names the plugin (accelerate)"

# an unwritable results path is found before any worker starts (exit 2), and named
run "$SHARDRUN" "$HELLO" --results "$T/no/such/dir/r.json"
expect_rc 2 "unwritable --results"
expect_in "$err" "--results: $T/no/such/dir/r.json: the folder $T/no/such/dir does not exist; create it first (checked before any worker starts)" "results error named"
expect_not_in "$out" "hello from rank" "no worker started"
expect_not_in "$err" "started 2 workers" "no worker started (stderr)"
# stdout on a full disk: the results are lost, so the run fails
"$SHARDRUN" "$HELLO" >/dev/full 2>"$T/full.err"
rc=$?
expect_rc 1 "stdout on a full disk"
expect_in "$(cat "$T/full.err")" "cannot write the results to stdout: No space left on device" "full stdout named"

# stderr lines are prefixed too, and go to stderr; a last line without newline still arrives
printf '[shardrun]\nplugins = torch\nnproc_per_node = 2\ntask = exec:/bin/sh -c "echo out-$RANK; echo err-$RANK >&2; printf tail-$RANK"\n' >"$T/o.ini"
run "$SHARDRUN" "$T/o.ini"
expect_rc 0 "output run"
expect_in "$out" "[rank1]: out-1" "stdout prefixed"
expect_in "$err" "[rank1]: err-1" "stderr prefixed, on stderr"
expect_not_in "$out" "err-1" "stderr stays off stdout"
expect_in "$out" "[rank0]: tail-0" "a final line without newline"
expect_in "$out" '{"rank": 1, "exit_code": 0}' "exec tasks get a result per rank"

# task arguments after --, quoting inside exec:
printf '[shardrun]\ntask = %s\n[task]\nact_rank = -1\nothers = ok\n' "$BUILD/tests/tasks/behave.so" >"$T/a.ini"
run "$SHARDRUN" "$T/a.ini" -- first "second word"
expect_in "$out" "[rank0]: arg1=first" "first task argument"
expect_in "$out" "[rank0]: arg2=second word" "second task argument"
printf '[shardrun]\ntask = exec:/usr/bin/printf "%%s|" "a b" '"'"'c d'"'"' e\\ f\n' >"$T/q.ini"
run "$SHARDRUN" "$T/q.ini" -- g
expect_in "$out" "[rank0]: a b|c d|e f|g|" "exec words and quotes"

# a result object per rank, with reported values typed
run "$SHARDRUN" "$T/a.ini" --nproc-per-node 3
expect_eq "$(grep -c '^  {"rank": [0-2], "exit_code": 0, "pid": [0-9]*}' <<<"$out")" "3" "three result objects with pid"
done_checks
