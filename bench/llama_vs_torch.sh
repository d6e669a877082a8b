#!/usr/bin/env bash
# SmolLM2-135M training throughput on one process: shardrun's llama task (models/llama, size
# smollm2-135m, from random weights, byte-level tokens) against the same model in PyTorch
# (bench/llama_torch_peer.py: tests/llama/llama_torch.py's Llama), same machine, same run.
#   shardrun: OMP_NUM_THREADS=2 BUILD_DIR/shardrun examples/llama/fsdp_cpu.ini --nproc-per-node 1,
#             NO_SHARD, max_length 128 with min_chars 200 (every sample a full 128 tokens), batch 1,
#             STEPS steps, logging_steps 1, no eval, no save, AdamW lr 1e-4 constant, weight decay
#             0.01, max_grad_norm 1.0; a step's tokens/s is the trainer's step line, the figure the
#             median of steps 3 .. STEPS.
#   torch:    OMP_NUM_THREADS=2 /usr/bin/python3 bench/llama_torch_peer.py --batch 1 --seq 128
#             --warmup 2 --steps STEPS-2 --threads 2 (its own per-step timing, median).
# Each of ROUNDS rounds runs both, the order reversed every other round.  The machine's load
# average is printed before and after: other work on the machine slows both sides.
# The summary puts each side's median over the rounds against OpenBLAS's sgemm ceiling, measured
# first in the same run (bench/gemm_throughput.sh --ceiling --shape 1536x128x576: cblas_sgemm on
# the MLP's gate/up forward at 128 token rows, the shape most of the step's FLOP run at), as
# bench/gpt2_vs_torch.sh does for GPT-2: model FLOP per token = 6 x parameters + 12 x n_layer x T x
# hidden (the attention's QK^T and PV products; 30 x 128 x 576 for SmolLM2-135M).
#   bench/llama_vs_torch.sh [BUILD_DIR] [ROUNDS] [STEPS]     (defaults: build 2 8)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
ROUNDS=${2:-2}
STEPS=${3:-8}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
CEIL=$(bench/gemm_throughput.sh "$BUILD" --ceiling --shape 1536x128x576)
echo "sgemm ceiling (cblas_sgemm 1536 x 128 x 576 NN), THREADS GFLOP/s:" $CEIL
: >"$T/medians"
ours() {
    OMP_NUM_THREADS=2 "$BUILD/shardrun" examples/llama/fsdp_cpu.ini --nproc-per-node 1 \
        --set accelerate.fsdp.sharding_strategy=NO_SHARD --set task.size=smollm2-135m --set task.max_length=128 \
        --set task.min_chars=200 --set task.per_device_train_batch_size=1 --set task.max_steps="$STEPS" \
        --set task.logging_steps=1 --set task.eval_strategy=no --set task.validation_split_percentage=0 \
        --set task.save_final=false --set task.learning_rate=1e-4 --set task.warmup_steps=0 \
        --set task.lr_scheduler_type=constant --set task.output_dir="$T/out" --set task.overwrite_output_dir=true \
        >"$T/ours.txt" 2>&1 || { cat "$T/ours.txt"; exit 1; }
    grep -q "0.0% padding" "$T/ours.txt" || { echo "the samples are padded:"; grep "data:" "$T/ours.txt"; exit 1; }
    grep -o '[0-9]* tokens/s' "$T/ours.txt" | awk '{print $1}' | tail -n +3 | sort -n |
        awk '{a[NR] = $1} END {m = NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2;
                              printf "shardrun: median %.1f tokens/s over steps 3-%d\n", m, NR + 2}' |
        tee -a "$T/medians"
}
theirs() {
    OMP_NUM_THREADS=2 /usr/bin/python3 bench/llama_torch_peer.py --batch 1 --seq 128 --warmup 2 \
        --steps $((STEPS - 2)) --threads 2 | tee -a "$T/medians"
}
for r in $(seq "$ROUNDS"); do
    echo "round $r"
    if [ $((r % 2)) -eq 1 ]; then ours; theirs; else theirs; ours; fi
done
grep -m1 "parameters" "$T/ours.txt" || true
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
/usr/bin/python3 - "$T/medians" $CEIL <<'PY'
import re, statistics, sys
lines = open(sys.argv[1]).read().splitlines()
ceil = dict(zip(sys.argv[2::2], map(float, sys.argv[3::2])))
params = int(re.search(r"torch: (\d+) parameters", "\n".join(lines)).group(1))
flop = 6 * params + 12 * 30 * 128 * 576
print(f"model FLOP per token = 6 x {params} + 12 x 30 x 128 x 576 = {flop / 1e6:.2f} M; "
      f"sgemm ceiling: {ceil['2']:.1f} GFLOP/s at 2 threads, {ceil['1']:.1f} at 1 thread")
for side, pat in (("shardrun", r"^shardrun: median ([\d.]+)"), ("torch", r"tokens/s$")):
    vals = [float(re.search(pat, l).group(1)) if side == "shardrun" else float(l.split()[-2])
            for l in lines if re.search(pat, l)]
    m = statistics.median(vals)
    g = m * flop / 1e9
    print(f"{side:9s} median {m:7.1f} tokens/s {vals} = {g:6.1f} GFLOP/s = {g / ceil['2']:.3f} of the 2-thread ceiling")
PY
