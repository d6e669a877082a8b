# What a task or plugin author meets when something is off, each found before any worker starts
# (exit 2, one message naming the file and line or the variable, and what to do):
#  - a task with an undefined symbol (the agent loads it once in a child, as the worker will);
#  - a source file given as the task ("build it first", with the command);
#  - a misspelt plugin name in plugins = (file:line, did you mean);
#  - a misspelt SHARDRUN_* variable of [shardrun], of a plugin's section (did you mean); shardrun's
#    own variables (SHARDRUN_PROFILE) are not refused;
#  - a task built for a newer task ABI: one sentence that says so;
#  - --version names both ABIs; a model task whose loss is no cross-entropy gets no eval_perplexity;
#    "x 1 rank".
. "$(dirname "$0")/lib.sh"
INC=$SRC/include

echo "== a task with an undefined symbol"
cat >"$T/undef.c" <<'EOF'
#include "shardrun/task.h"
int lab_missing_function(int);
static int undef_main(sr_ctx *ctx, int argc, char **argv) { (void)ctx, (void)argv; return lab_missing_function(argc); }
SR_MAIN_TASK("undef", undef_main);
EOF
cc -std=c11 -fPIC -shared -fvisibility=hidden -I"$INC" -o "$T/undef.so" "$T/undef.c" -L"$BUILD" -lshardrun || fail "cc undef.so"
printf '[shardrun]\ntask = undef.so\nplugins = torch\nnproc_per_node = 2\n' >"$T/undef.ini"
run "$SHARDRUN" "$T/undef.ini"
expect_rc 2 "an undefined symbol is a configuration error"
expect_in "$err" "$T/undef.ini:2: task $T/undef.so cannot be loaded: " "it names the job file's line and the task"
expect_in "$err" "undefined symbol: lab_missing_function" "and the symbol"
expect_not_in "$err" "started 2 workers" "before any worker starts"

echo "== a source file as the task"
printf '[shardrun]\ntask = pi_task.c\nplugins = torch\n' >"$T/src.ini"
run "$SHARDRUN" "$T/src.ini"
expect_rc 2 "a .c file as the task"
expect_in "$err" "$T/src.ini:2: task = pi_task.c is a source file; a task is the shared object built from it: build it first" "says to build it"
expect_in "$err" "-o pi_task.so pi_task.c" "with the command"
expect_not_in "$err" "pi_task.c.so" "not searched for as pi_task.c.so"

echo "== a misspelt plugin"
printf '[shardrun]\ntask = hello\nplugins = torch,acelerate\n' >"$T/typo.ini"
run "$SHARDRUN" "$T/typo.ini"
expect_rc 2 "plugins = torch,acelerate"
expect_in "$err" "$T/typo.ini:3: plugin \"acelerate\" not found (did you mean \"accelerate\"?)" "file:line and did you mean"

echo "== misspelt SHARDRUN_* variables"
J=$SRC/examples/hello/hello.ini
run env SHARDRUN_NPROC_PER_NOD=3 "$SHARDRUN" "$J"
expect_rc 2 "SHARDRUN_NPROC_PER_NOD"
expect_in "$err" "environment variable SHARDRUN_NPROC_PER_NOD matches no key of this run (did you mean SHARDRUN_NPROC_PER_NODE?)" "[shardrun]: did you mean"
expect_not_in "$err" "started" "before any worker starts"
run env SHARDRUN_TORCH_BACKEN=nccl "$SHARDRUN" env "$J"
expect_rc 2 "SHARDRUN_TORCH_BACKEN"
expect_in "$err" "(did you mean SHARDRUN_TORCH_BACKEND?)" "a plugin's section: did you mean"
run env SHARDRUN_ACCELERATE_MIXED_PRECISON=bf16 "$SHARDRUN" env "$J"
expect_rc 2 "SHARDRUN_ACCELERATE_MIXED_PRECISON"
expect_in "$err" "(did you mean SHARDRUN_ACCELERATE_MIXED_PRECISION?)" "another plugin's section"
run env SHARDRUN_PROFILE=1 SHARDRUN_TORCH_BACKEND=gloo "$SHARDRUN" env "$J"
expect_rc 0 "shardrun's own variables and real keys are accepted"

echo "== the task ABI"
run "$SHARDRUN" --version
expect_in "$out" "(plugin ABI 1, task ABI " "--version names both ABIs"
sed 's/SR_TASK_ABI_VERSION, sizeof(sr_task)/SR_TASK_ABI_VERSION + 1, sizeof(sr_task)/' "$INC/shardrun/task.h" >"$T/task_newer.h"
grep -q 'SR_TASK_ABI_VERSION + 1' "$T/task_newer.h" || fail "the test could not make a newer task header"
mkdir -p "$T/newer/shardrun" && cp "$INC"/shardrun/*.h "$T/newer/shardrun/" && cp "$T/task_newer.h" "$T/newer/shardrun/task.h"
cc -std=c11 -fPIC -shared -fvisibility=hidden -I"$T/newer" -o "$T/newer.so" "$SRC/examples/hello/hello.c" -L"$BUILD" -lshardrun \
    || fail "cc newer.so"
printf '[shardrun]\ntask = newer.so\nplugins = torch\n' >"$T/newer.ini"
run "$SHARDRUN" "$T/newer.ini"
expect_rc 2 "a task built for a newer task ABI"
expect_in "$err" "was built against a newer shardrun (task ABI version " "one sentence: newer"
expect_in "$err" "upgrade shardrun, or rebuild the task against this shardrun's headers" "and what to do"

echo "== eval_perplexity for cross-entropy losses only; 1 rank"
cat >"$T/toy.ini" <<EOF
[shardrun]
task = $BUILD/examples/toy.so
plugins = torch,accelerate
[task]
samples = 64
eval_samples = 16
max_steps = 2
eval_strategy = steps
eval_steps = 2
EOF
run "$SHARDRUN" "$T/toy.ini" --nproc-per-node 1
expect_rc 0 "the toy model (a cross-entropy)"
expect_in "$out" "'eval_perplexity': " "reports eval_perplexity"
expect_in "$out" "x 1 accumulation x 1 rank = " "one rank is \"1 rank\""
echo "== [task] paths relative to the job file"
mkdir -p "$T/jobs" "$T/cwd"
head -c 20000 /usr/share/common-licenses/GPL-3 >"$T/jobs/corpus.txt"
cat >"$T/jobs/rel.ini" <<EOF
[shardrun]
task = gpt2
plugins = torch,accelerate
nproc_per_node = 2
[task]
size = tiny
data = corpus.txt
max_length = 32
max_steps = 2
per_device_train_batch_size = 2
output_dir = out
EOF
cd "$T/cwd" || exit 1
run "$SHARDRUN" ../jobs/rel.ini
expect_rc 0 "data = corpus.txt and output_dir = out, from another folder"
[ -f "$T/jobs/out/checkpoint-2/model.safetensors" ] && pass || fail "output_dir = out is the job file's folder's out ($(ls -R "$T/jobs" "$T/cwd" | head -20))"
run "$SHARDRUN" ../jobs/rel.ini --set task.output_dir=here
expect_rc 0 "output_dir given with --set"
[ -f "$T/cwd/here/checkpoint-2/model.safetensors" ] && pass || fail "--set task.output_dir=here is the current folder's here"
cp "$T/jobs/corpus.txt" "$T/cwd/env.txt"
run env SHARDRUN_TASK_DATA=env.txt "$SHARDRUN" ../jobs/rel.ini --set task.overwrite_output_dir=true
expect_rc 0 "data from the environment is the current folder's (env.txt is only there)"
cd "$T" || exit 1
done_checks
