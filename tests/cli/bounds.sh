# Bounds where input meets memory (each check failed before the change that added it):
#  - a job file must be a regular file of at most 4 MiB: /dev/zero, a directory, a pipe and a 5 MB
#    file are refused at once (exit 2), saying why;
#  - 20,000 [task] keys are read in well under a second (the reading was quadratic);
#  - the trainer's numeric keys are bounded (max_steps = 5000000000 and a batch of 2147483647 are
#    refused by the agent, exit 2), and a plan that cannot be allocated fails before step 0 with
#    "out of memory for ..." and the worker's exit code 2 instead of SIGSEGV;
#  - the GPT-2 task refuses data = /dev/zero at once as not a regular file;
#  - output_dir: unwritable -> refused before step 0; holding checkpoints of an earlier run ->
#    refused unless resume_from_checkpoint or overwrite_output_dir = true;
#  - every JSON shardrun writes parses strictly (no NaN): a diverged run's loss is null, flagged;
#  - results print the shortest float that round-trips;
#  - `shardrun evn JOB.ini` says "unknown command evn; did you mean env?".
. "$(dirname "$0")/../fsdp/lib.sh"
PY=/usr/bin/python3

# ---- the job file ----
run timeout 10 "$SHARDRUN" /dev/zero
expect_rc 2 "/dev/zero as the job file"
expect_in "$err" "job file /dev/zero is a character device, not a regular file" "/dev/zero: says why"
mkdir "$T/jobdir"
run timeout 10 "$SHARDRUN" "$T/jobdir"
expect_rc 2 "a directory as the job file"
expect_in "$err" "job file $T/jobdir is a directory, not a regular file" "a directory: says it is one"
mkfifo "$T/fifo"
run timeout 10 "$SHARDRUN" "$T/fifo"
expect_rc 2 "a pipe as the job file (no writer: must not block)"
expect_in "$err" "is a pipe (FIFO), not a regular file" "a pipe: says why"
head -c 5000000 /dev/zero | tr '\0' ';' >"$T/big.ini"
run timeout 10 "$SHARDRUN" "$T/big.ini"
expect_rc 2 "a 5 MB job file"
expect_in "$err" "is larger than a job file may be (4194304 bytes, 4 MiB): 5000000 bytes" "a 5 MB job file: the cap"

# ---- 20,000 [task] keys ----
{ printf '[shardrun]\ntask = exec:/bin/true\n[task]\n'; seq 0 19999 | sed 's/.*/key_& = &/'; } >"$T/keys.ini"
start=$EPOCHREALTIME
run timeout 60 "$SHARDRUN" env "$T/keys.ini"
secs=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.3f", b - a }')
expect_rc 0 "20,000 [task] keys"
awk -v s="$secs" 'BEGIN { exit !(s < 1) }' && pass || fail "20,000 [task] keys took $secs s (want well under 1 s)"
echo "20,000 [task] keys: $secs s"
echo "key_19998 = again" >>"$T/keys.ini"
run timeout 60 "$SHARDRUN" env "$T/keys.ini"
expect_rc 2 "20,000 [task] keys and a duplicate"
expect_in "$err" "$T/keys.ini:20004: [task] key_19998 is given twice (first at line 20002); keep one" \
    "20,000 [task] keys: every one is read (the duplicate at the end is found)"

# ---- the trainer's bounds ----
toy_job toy.ini <<EOF2
max_steps = 2
logging_steps = 1
EOF2
run timeout 60 "$SHARDRUN" "$T/toy.ini" --nproc-per-node 1 --set task.max_steps=5000000000
expect_rc 2 "max_steps = 5000000000"
expect_in "$err" "max_steps = \"5000000000\": expected an integer from -1 to 1000000000" "max_steps: the bound"
run timeout 60 "$SHARDRUN" "$T/toy.ini" --nproc-per-node 1 --set task.per_device_train_batch_size=2147483647
expect_rc 2 "per_device_train_batch_size = 2147483647"
expect_in "$err" "expected an integer from 1 to 1048576" "per_device_train_batch_size: the bound"
# the toy makes its samples on the fly: 2^40 of them need an 8 TiB permutation
# (under AddressSanitizer, whose allocator would stop the process at such a request: let malloc say no)
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}allocator_may_return_null=1 \
    run timeout 60 "$SHARDRUN" "$T/toy.ini" --nproc-per-node 2 --set task.samples=1099511627776 --results "$T/oom.json"
expect_rc 2 "a plan that cannot be allocated"
expect_not_in "$err" "signal" "a plan that cannot be allocated: no rank crashed"
expect_in "$err" "out of memory for the sampler's permutation of the dataset's samples (8796093022208 bytes)" \
    "a plan that cannot be allocated: says what and how much"
expect_not_in "$out" "step 1/" "a plan that cannot be allocated: fails before step 1"
expect_in "$(cat "$T/oom.json" 2>/dev/null)" '"exit_code": 2' "a plan that cannot be allocated: configuration exit code"
run timeout 60 "$SHARDRUN" "$T/toy.ini" --nproc-per-node 1 --set task.max_steps=1000000000 \
    --set task.per_device_train_batch_size=1048576 --set task.gradient_accumulation_steps=1048576
expect_rc 2 "steps x batch beyond 2^40 samples"
expect_in "$err" "is more than the 1099511627776 samples (2^40) a run may plan" "steps x batch: the bound"
run timeout 60 "$SHARDRUN" "$T/toy.ini" --nproc-per-node 1 --set task.max_steps=-1 --set task.num_train_epochs=1e300
expect_rc 2 "num_train_epochs = 1e300"
expect_in "$err" "num_train_epochs = 1e+300 makes" "num_train_epochs = 1e300: the steps it makes are refused"

# ---- GPT-2 data ----
if [ -f "$BUILD/examples/gpt2.so" ]; then
    printf 'a text long enough to be a sample of the corpus.\n' >"$T/corpus.txt"
    cat >"$T/g.ini" <<EOF2
[shardrun]
task = $BUILD/examples/gpt2.so
plugins = torch,accelerate
nproc_per_node = 1
[accelerate]
mixed_precision = no
[task]
size = tiny
n_layer = 1
n_embd = 32
n_head = 2
max_length = 16
data = /dev/zero
max_steps = 1
EOF2
    run timeout 20 "$SHARDRUN" "$T/g.ini"
    expect_rc 2 "GPT-2 data = /dev/zero"
    expect_in "$err" "data file /dev/zero (matched by \"/dev/zero\") is a character device, not a regular file" \
        "GPT-2 data = /dev/zero: refused at once"
    truncate -s 5G "$T/sparse.txt"
    run timeout 20 "$SHARDRUN" "$T/g.ini" --set task.data="$T/sparse.txt"
    expect_in "$err" "more than the 4294967296 bytes (4 GiB) the gpt2 task reads" "GPT-2 data over 4 GiB: refused"
    rm -f "$T/sparse.txt"
fi

# ---- output_dir ----
touch "$T/afile"
run timeout 60 "$SHARDRUN" "$T/toy.ini" --nproc-per-node 2 --set task.output_dir="$T/afile/out" --results "$T/od.json"
expect_rc 2 "an output_dir that cannot be created"
expect_in "$err" "[task] output_dir = $T/afile/out cannot be created" "an output_dir that cannot be created: named"
expect_not_in "$out" "step 1/" "an output_dir that cannot be created: nothing trains"
expect_in "$(cat "$T/od.json" 2>/dev/null)" '"exit_code": 2' "an output_dir that cannot be created: configuration exit code"
run timeout 60 "$SHARDRUN" "$T/toy.ini" --nproc-per-node 2 --set task.output_dir="$T/out"
expect_rc 0 "a first run into output_dir"
cp "$T/out/train_log.jsonl" "$T/log1"
run timeout 60 "$SHARDRUN" "$T/toy.ini" --nproc-per-node 2 --set task.output_dir="$T/out" --set task.max_steps=1
expect_rc 2 "a second run into the same output_dir"
expect_in "$err" "already holds checkpoints of an earlier run ($T/out/checkpoint-2)" "the second run: says why"
expect_in "$err" "resume_from_checkpoint = latest" "the second run: names resume_from_checkpoint"
expect_in "$err" "overwrite_output_dir = true" "the second run: names overwrite_output_dir"
expect_not_in "$out" "step 1/" "the second run: nothing trains"
expect_same_file "$T/out/train_log.jsonl" "$T/log1" "the refused run left train_log.jsonl"
run timeout 60 "$SHARDRUN" "$T/toy.ini" --nproc-per-node 2 --set task.output_dir="$T/out" --set task.max_steps=1 \
    --set task.overwrite_output_dir=true
expect_rc 0 "overwrite_output_dir = true"
expect_eq "$(wc -l <"$T/out/train_log.jsonl")" 1 "overwrite_output_dir = true: train_log.jsonl restarts"
run timeout 60 "$SHARDRUN" "$T/toy.ini" --nproc-per-node 2 --set task.output_dir="$T/out" --set task.max_steps=3 \
    --set task.resume_from_checkpoint=latest
expect_rc 0 "resume_from_checkpoint = latest in an output_dir with checkpoints"

# ---- JSON: no NaN; shortest floats ----
strict='import json, sys
def bad(c): raise ValueError("not JSON: " + c)
for p in sys.argv[1:]:
    t = open(p).read()
    for l in (t.splitlines() if p.endswith(".jsonl") else [t]): json.loads(l, parse_constant=bad)'
# (nan_policy = warn trains on with the NaN loss, as before nan_policy existed, and fails at the end:
# tests/fsdp/nan_policy.sh has the policies themselves)
run timeout 60 "$SHARDRUN" "$T/toy.ini" --nproc-per-node 2 --set task.learning_rate=1e30 --set task.max_steps=3 \
    --set task.output_dir="$T/nan" --results "$T/nan.json" --set task.nan_policy=warn
expect_rc 1 "a diverging run (nan_policy = warn: exit 1 for the final NaN loss)"
r=$($PY -c "$strict" "$T/nan/train_log.jsonl" "$T/nan.json" 2>&1) && pass || fail "a diverged run's JSON parses strictly: $r"
expect_in "$(cat "$T/nan/train_log.jsonl")" '"loss": null' "train_log.jsonl: a nan loss is null"
expect_in "$(cat "$T/nan/train_log.jsonl")" '"nonfinite": ["loss"' "train_log.jsonl: ... and flagged"
expect_in "$(cat "$T/nan.json")" '"final_loss": null' "results: a nan final_loss is null"
expect_in "$(cat "$T/nan.json")" '"nonfinite": ["final_loss"' "results: ... and flagged"
r=$($PY -c '
import json, re, sys
t = open(sys.argv[1]).read()
for num in re.findall(r":\s*(-?[0-9][0-9.eE+-]*)", t):
    v = float(num)
    short = next(s for s in ("%.15g" % v, "%.16g" % v, "%.17g" % v) if float(s) == v)
    if "." in num or "e" in num.lower():
        assert num == short, (num, short)
print("ok")' "$T/nan.json" 2>&1) && pass || fail "results print the shortest float that round-trips: $r"

# ---- commands ----
run "$SHARDRUN" evn "$T/toy.ini"
expect_rc 2 "shardrun evn JOB.ini"
expect_in "$err" "unknown command evn; did you mean env?" "a misspelt command: did you mean"
# the documented SHARDRUN_DEBUG_* variables are read, so they are not called stray
run env SHARDRUN_DEBUG_SAVE_DELAY_MS=1 "$SHARDRUN" env "$SRC/examples/hello/hello.ini"
expect_rc 0 "shardrun env with SHARDRUN_DEBUG_SAVE_DELAY_MS"
expect_not_in "$err" "matches no key" "SHARDRUN_DEBUG_SAVE_DELAY_MS is not reported as ignored"
done_checks
