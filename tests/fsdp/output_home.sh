# "~" in a path key is the user's home, as HF's TrainingArguments expands output_dir
# (os.path.expanduser), so the shipped demos give each user a folder of their own
# (~/shardrun-demo/NAME) instead of one fixed /tmp path that one user's demo, with
# overwrite_output_dir = true, would empty under another's feet.
#  - the toy demo, unchanged but for its steps, writes under $HOME, two users' under their own;
#  - "~/..." given with --set and in SHARDRUN_TASK_OUTPUT_DIR is the home's too, "~user" and "a~b" are not.
. "$(dirname "$0")/../cli/lib.sh"
TOY=$SRC/examples/toy/toy_fsdp.ini
short=(--nproc-per-node 1 --set task.max_steps=2 --set task.save_steps=0 --set task.eval_strategy=no)

for u in ann bob; do
    mkdir -p "$T/$u"
    HOME=$T/$u run "$SHARDRUN" "$TOY" "${short[@]}"
    expect_rc 0 "the toy demo as $u"
    [ -f "$T/$u/shardrun-demo/toy/trainer_state.json" ] && pass ||
        fail "the toy demo as $u: no $T/$u/shardrun-demo/toy/trainer_state.json; $(ls -R "$T/$u" | head)"
done

mkdir -p "$T/cli"
HOME=$T/cli run "$SHARDRUN" "$TOY" "${short[@]}" --set 'task.output_dir=~/from-set'
expect_rc 0 "--set task.output_dir=~/from-set"
[ -f "$T/cli/from-set/trainer_state.json" ] && pass || fail "--set task.output_dir=~/from-set: not under HOME"

HOME=$T/cli SHARDRUN_TASK_OUTPUT_DIR='~/from-env' run "$SHARDRUN" "$TOY" "${short[@]}"
expect_rc 0 "SHARDRUN_TASK_OUTPUT_DIR=~/from-env"
[ -f "$T/cli/from-env/trainer_state.json" ] && pass || fail "SHARDRUN_TASK_OUTPUT_DIR=~/from-env: not under HOME"

# a job file's "~user/x" and "a~b" are ordinary relative paths, next to the job file
mkdir -p "$T/jobdir"
sed 's|^output_dir = .*|output_dir = a~b|' "$TOY" >"$T/jobdir/toy.ini"
HOME=$T/cli run "$SHARDRUN" "$T/jobdir/toy.ini" "${short[@]}"
expect_rc 0 "output_dir = a~b"
[ -f "$T/jobdir/a~b/trainer_state.json" ] && pass || fail "output_dir = a~b: not next to the job file"
done_checks
