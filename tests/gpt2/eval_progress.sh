# What a terminal shows while the trainer evaluates: the progress line says "evaluating B/N batches"
# (not a bar frozen at the step before), and the time left of the run counts the evaluations still
# due at the last one's runtime: with evaluations far longer than a step, the time left after step 2
# of 3 (one step and one evaluation to go) is at least the evaluation's runtime.  The run's output
# goes to a terminal (script), as a user's does.
. "$(dirname "$0")/lib.sh"
command -v script >/dev/null || { echo "FAIL: no script(1) to give the run a terminal (apt-get install bsdutils)"; exit 1; }
for i in {1..400}; do printf 'Held-out paragraph number %d of the evaluation, as long as a line of text.\n\n' "$i"; done >"$T/eval.txt"
gpt2_job g.ini <<EOF2
size = tiny
data = /usr/share/common-licenses/*
max_length = 48
min_chars = 16
max_samples = 40
max_steps = 3
logging_steps = 3
per_device_train_batch_size = 2
eval_data = $T/eval.txt
per_device_eval_batch_size = 8
eval_strategy = steps
eval_steps = 1
output_dir = $T/out
save_final = false
EOF2
script -qec "$(printf '%q ' "$SHARDRUN" "$T/g.ini" --nproc-per-node 1)" /dev/null >"$T/screen"
rc=$? err=$(tail -c 2000 "$T/screen")
screen=$(tr '\r' '\n' <"$T/screen")
expect_rc 0 "the run on a terminal"
expect_in "$screen" "evaluating 0/50 batches" "the progress line says an evaluation of 400 samples in 50 batches began"
expect_in "$screen" "/50 batches, " "and how far it is, with the time it has left"
# the run's time left on every line drawn after step 2 (the bar, the second evaluation's lines; the
# output's relay may show only the latest of lines drawn in quick succession) against the first
# evaluation's runtime (trainer_state.json)
left=$(grep -a '\] 2/3  ' <<<"$screen" | grep -o '[0-9.]*s left$' | tr -d 's left' | sort -g | head -1)
eval1=$(/usr/bin/python3 -c 'import json, sys
h = [e for e in json.load(open(sys.argv[1]))["log_history"] if "eval_runtime" in e]
print(h[0]["eval_runtime"])' "$T/out/trainer_state.json")
echo "  after step 2 of 3: at least ${left:-?} s left; the evaluation at step 1 took $eval1 s"
[ -n "$left" ] && awk -v l="$left" -v e="$eval1" 'BEGIN { exit !(l + 0.05 >= e) }' && pass ||
    fail "the time left after step 2 (${left:-none}) does not count the evaluation still due (the last took $eval1 s)"
done_checks
