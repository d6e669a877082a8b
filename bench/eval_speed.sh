#!/usr/bin/env bash
# Evaluation against training, per token, on the same model in the same run (docs/benchmarks.md
# "Evaluation speed"): GPT-2 tiny (models/gpt2, size = tiny) on byte-level token shards of
# /usr/share/common-licenses (shardrun prepare; every sample a full 128 tokens, nothing padded),
# batch 8, one rank, FULL_SHARD.  The run evaluates after every step (eval_steps = 1) on the first 64
# samples of the val shard (max_eval_samples: 8 batches), so that training and evaluation take turns
# and a load that changes meanwhile weighs on both alike.  Training tokens/s: a step's tokens / the
# median step time (the results' step_time_ms); evaluation tokens/s: 64 x 128 / the median
# eval_runtime (trainer_state.json), the first of each left out (warm-up).  A step's forward is a
# third of its model FLOPs (2 of 6 per parameter and token), so an evaluation that runs as fast as
# the training forward gives a ratio near 3; below 1 it would be slower than a whole training step.
# Usage: bench/eval_speed.sh [BUILD (default build)]   env: STEPS (default 20)
set -euo pipefail
b=$(cd "${1:-$(dirname "$0")/../build}" && pwd)
STEPS=${STEPS:-20}
[ -x "$b/shardrun" ] && [ -f "$b/examples/gpt2.so" ] || { echo "$0: build $b first" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat /usr/share/common-licenses/* >"$dir/corpus.txt"
"$b/shardrun" prepare -o "$dir/c" --progress none "$dir/corpus.txt" >/dev/null
cat >"$dir/job.ini" <<EOT
[shardrun]
task = $b/examples/gpt2.so
plugins = torch,accelerate
[accelerate]
fsdp.auto_wrap_policy = TRANSFORMER_BASED_WRAP
fsdp.transformer_layer_cls_to_wrap = GPT2Block
[task]
size = tiny
data = $dir/c_train_000001.bin
eval_data = $dir/c_val_000000.bin
max_length = 128
max_eval_samples = 64
per_device_train_batch_size = 8
per_device_eval_batch_size = 8
max_steps = $STEPS
logging_steps = $STEPS
eval_strategy = steps
eval_steps = 1
output_dir = $dir/out
save_final = false
EOT
echo "load before: $(uptime)"
"$b/shardrun" "$dir/job.ini" --nproc-per-node 1 --results "$dir/r.json" >"$dir/log" 2>&1 ||
    { cat "$dir/log"; echo "$0: the run failed" >&2; exit 1; }
echo "load after:  $(uptime)"
python3 - "$dir/r.json" "$dir/out/trainer_state.json" <<'PY'
import json, statistics, sys
r = json.load(open(sys.argv[1]))
r = (r if isinstance(r, list) else r["ranks"])[0]
ev = [e["eval_runtime"] for e in json.load(open(sys.argv[2]))["log_history"] if "eval_runtime" in e][1:]
train = 8 * 128 / (r["step_time_ms"] / 1e3)
evals = 64 * 128 / statistics.median(ev)
print("GPT-2 tiny (%d parameters), sequence 128, batch 8, 1 rank, %d threads" % (r["model_params"], r["cpu_threads"]))
print("training: %.0f tokens/s (median step %.1f ms over %d steps)" % (train, r["step_time_ms"], r["global_step"]))
print("evaluation: %.0f tokens/s (median of %d evaluations of 8192 tokens: %.1f ms)" % (evals, len(ev), 1e3 * statistics.median(ev)))
print("evaluation / training per token: %.2fx (a forward alone: about 3x)" % (evals / train))
PY
