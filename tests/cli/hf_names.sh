# transformers' names in [task], on the toy model task:
#  - a misspelt [task] key is refused with the nearest key the task or the trainer reads;
#  - save_strategy and logging_strategy (no|steps|epoch) do what transformers' do; save_strategy =
#    best, and a save_steps/logging_steps the strategy would ignore, are refused before any step;
#  - the console's dict and trainer_state.json write floats as Python's repr does ('epoch': 10.0,
#    never 1e+01), and train_loss in full, as transformers' Trainer prints them.
. "$(dirname "$0")/../fsdp/lib.sh"
toy_job toy.ini <<EOF2
per_device_train_batch_size = 64
learning_rate = 0.00001
EOF2
# 256 samples, 64 a step: 4 steps an epoch
train() { run "$SHARDRUN" "$T/toy.ini" "$@"; }

# ---- misspelt keys ---------------------------------------------------------------------------------
train --set task.max_steps=1 --set task.learning_rat=0.1
expect_rc 2 "a misspelt trainer key"
expect_in "$err" '[task] learning_rat is read by neither; check its spelling (did you mean "learning_rate"?)' \
    "the trainer's key is suggested"
train --set task.max_steps=1 --set task.data_sed=3
expect_rc 2 "a misspelt key of the task's"
expect_in "$err" '[task] data_sed is read by neither; check its spelling (did you mean "data_seed"?)' \
    "the task's own key is suggested"
train --set task.max_steps=1 --set task.save_strategie=epoch
expect_in "$err" '(did you mean "save_strategy"?)' "save_strategie: save_strategy suggested"
train --set task.max_steps=1 --set task.evaluation_strategy=steps
expect_in "$err" '(did you mean "eval_strategy"?)' "transformers' old evaluation_strategy: eval_strategy suggested"

# ---- save_strategy, logging_strategy -----------------------------------------------------------------
train --set task.num_train_epochs=3 --set task.output_dir="$T/epoch" --set task.save_strategy=epoch \
    --set task.logging_strategy=epoch
expect_rc 0 "save_strategy = epoch, logging_strategy = epoch"
expect_eq "$(cd "$T/epoch" && ls -d checkpoint-* | sort -t- -k2 -n | tr '\n' ' ')" "checkpoint-4 checkpoint-8 checkpoint-12 " \
    "save_strategy = epoch: a checkpoint after each epoch"
expect_eq "$(grep -o 'step [0-9]*/12 ' <<<"$out" | tr '\n' ',')" "step 4/12 ,step 8/12 ,step 12/12 ," \
    "logging_strategy = epoch: a line after each epoch"
train --set task.num_train_epochs=2 --set task.output_dir="$T/no" --set task.save_strategy=no \
    --set task.logging_strategy=no
expect_rc 0 "save_strategy = no, logging_strategy = no"
expect_eq "$(ls -d "$T"/no/checkpoint-* 2>/dev/null)" "" "save_strategy = no: no checkpoint, not even the last step's"
expect_eq "$(grep -o 'step [0-9]*/8 ' <<<"$out" | tr '\n' ',')" "step 8/8 ," "logging_strategy = no: the last step only"
train --set task.max_steps=4 --set task.output_dir="$T/steps" --set task.save_strategy=steps --set task.save_steps=2 \
    --set task.save_final=false
expect_rc 0 "save_strategy = steps with save_steps"
expect_eq "$(cd "$T/steps" && ls -d checkpoint-* | sort -t- -k2 -n | tr '\n' ' ')" "checkpoint-2 checkpoint-4 " \
    "save_strategy = steps: every save_steps"

refused() { # WHAT EXPECTED [--set ...]
    local what=$1 expected=$2
    shift 2
    train --set task.max_steps=4 --set task.output_dir="$T/refused" "$@"
    expect_rc 2 "$what"
    expect_in "$err" "$expected" "$what: named"
    [ ! -e "$T/refused" ] && pass || fail "$what: $T/refused was written"
}
refused "save_strategy = best" \
    "command line --set task.save_strategy=best: [task] save_strategy = best (a checkpoint whenever the metric improves) is not supported" \
    --set task.save_strategy=best
refused "save_strategy = epoch with save_steps" \
    "[task] save_steps = 2 has no effect with save_strategy = epoch (command line --set task.save_strategy=epoch); remove one of the two" \
    --set task.save_strategy=epoch --set task.save_steps=2
refused "save_strategy = steps with save_steps = 0" "[task] save_strategy = steps needs save_steps >= 1" \
    --set task.save_strategy=steps --set task.save_steps=0
refused "logging_strategy = epoch with logging_steps" \
    "[task] logging_steps = 1 has no effect with logging_strategy = epoch" \
    --set task.logging_strategy=epoch --set task.logging_steps=1
refused "save_strategy = often" "save_strategy" --set task.save_strategy=often

# ---- floats as Python writes them ----------------------------------------------------------------
train --set task.num_train_epochs=10 --set task.output_dir="$T/ten" --set task.save_final=true
expect_rc 0 "10 epochs"
line=$(grep -o "{'train_runtime'.*}" <<<"$out")
expect_in "$line" "'epoch': 10.0}" "the summary's epoch as transformers prints it"
/usr/bin/python3 - "$line" "$T/ten/trainer_state.json" <<'PY' && pass || fail "floats as Python's repr"
import ast, json, re, sys
line, state = sys.argv[1], sys.argv[2]
bad = []
# every number of the console's dict reads back as the text Python writes for it
for key, text in re.findall(r"'(\w+)': ([^,}]+)", line):
    if repr(float(text)) != text:
        bad.append("console %s: %s, Python writes %r" % (key, text, float(text)))
d = ast.literal_eval(line)
digits = len(re.sub(r"[^0-9]", "", repr(d["train_loss"]).split("e")[0]).lstrip("0"))
if digits < 12:
    bad.append("train_loss %r: cut short (transformers prints the mean in full)" % d["train_loss"])
# trainer_state.json as json.dump writes it
text = open(state).read()
for key, num in re.findall(r'"(\w+)": (-?[0-9][0-9.e+-]*)', text):
    if re.search(r"[.e]", num) and repr(float(num)) != num:
        bad.append("trainer_state.json %s: %s, Python writes %r" % (key, num, float(num)))
if json.load(open(state))["epoch"] != 10.0 or '"epoch": 10.0,' not in text:
    bad.append("trainer_state.json: epoch is not 10.0")
print("\n".join(bad) or "all floats as Python writes them")
sys.exit(1 if bad else 0)
PY
done_checks
