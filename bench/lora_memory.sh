#!/usr/bin/env bash
# GPT-2 124M (or BLOOM-560M: --model bloom-560m) on 2 ranks under FULL_SHARD: full fine-tuning
# against LoRA r = 8 (PEFT's defaults: lora_alpha 8, target c_attn -- BLOOM: query_key_value --;
# the base frozen): memory per rank and step time.
#   model:    [task] size = gpt2 (124.4M parameters, lm_head tied to wte) on byte-level tokens of
#             /usr/share/common-licenses/* (the vocabulary stays 50257), max_length 128,
#             per_device_train_batch_size 1, max_steps 4, AdamW, fp32, one GPT2Block per unit,
#             OMP_NUM_THREADS=1, [torch] backend = gloo.  LoRA: --set task.lora_r=8.
#   numbers:  rank 0's results JSON: trainable_params and frozen_params, engine_persistent_bytes
#             against (frozen x 4 + trainable x 16) / 2 (fp32 master of everything; gradient and two
#             AdamW moments of the trainable only), engine_pool_bytes, peak_mem_gb (the engine's high
#             water mark), peak_rss_gb (the process's), step_time_ms (shardrun's mean step time) and
#             the 1-minute load average before each run (step times on a shared machine vary with it).
#             BLOOM-560M: [task] size = bloom-560m (559.2M parameters, vocabulary 250880), one
#             BloomBlock per unit, otherwise the same.
#   checks:   exit code 0, 2 ranks, 4 steps; persistent within 2% of the formula -- fails otherwise.
# Usage: bench/lora_memory.sh [BUILD_DIR] [--model gpt2|bloom-560m]   (default: the source tree's build/, gpt2)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build_arg="" model=gpt2
while [ $# -gt 0 ]; do
    case "$1" in
        --model) model=${2:?--model needs gpt2 or bloom-560m}; shift 2 ;;
        -*) echo "usage: $0 [BUILD_DIR] [--model gpt2|bloom-560m]" >&2; exit 2 ;;
        *) build_arg=$1; shift ;;
    esac
done
case "$model" in
    gpt2) task=gpt2 block=GPT2Block title="GPT-2 124M" target=c_attn ;;
    bloom-560m) task=bloom block=BloomBlock title="BLOOM-560M" target=query_key_value ;;
    *) echo "$0: --model $model: expected gpt2 or bloom-560m" >&2; exit 2 ;;
esac
build=$(cd "${build_arg:-$here/../build}" && pwd)
[ -x "$build/shardrun" ] && [ -f "$build/examples/$task.so" ] || { echo "$0: build $build first" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/job.ini" <<EOF2
[shardrun]
task = $build/examples/$task.so
plugins = torch,accelerate
master_port = 0

[torch]
backend = gloo

[accelerate]
mixed_precision = no
fsdp.sharding_strategy = FULL_SHARD
fsdp.auto_wrap_policy = TRANSFORMER_BASED_WRAP
fsdp.transformer_layer_cls_to_wrap = $block

[task]
size = $model
data = /usr/share/common-licenses/*
max_length = 128
per_device_train_batch_size = 1
max_steps = 4
logging_steps = 1
save_final = false
EOF2
cd "$tmp"
export OMP_NUM_THREADS=1
/usr/bin/python3 - "$build/shardrun" "$title" "$target" <<'PY'
import json, os, subprocess, sys

shardrun, title, target = sys.argv[1:4]
rows = []
for name, extra in (("full fine-tuning", []), (f"LoRA r=8 ({target})", ["--set", "task.lora_r=8"])):
    load = os.getloadavg()[0]
    cmd = [shardrun, "job.ini", "--nproc-per-node", "2", "--results", "results.json", "--set",
           f"task.output_dir={os.getcwd()}/out"] + extra
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        sys.exit(f"FAILED (exit {p.returncode}): {' '.join(cmd)}\n{p.stdout}")
    ranks = json.load(open("results.json"))
    if len(ranks) != 2 or any(r.get("exit_code") != 0 or r.get("global_step") != 4 for r in ranks):
        sys.exit(f"FAILED: unexpected results {ranks}")
    r = ranks[0]
    tr = r.get("trainable_params", r["model_params"])
    fr = r.get("frozen_params", 0)
    formula = (fr * 4 + tr * 16) / 2
    if abs(r["engine_persistent_bytes"] / formula - 1) > 0.02:
        sys.exit(f"FAILED: {name}: persistent {r['engine_persistent_bytes']} is not (4 x {fr} + 16 x {tr}) / 2 "
                 f"= {formula:.0f} within 2%")
    rows.append((name, tr, fr, r["engine_persistent_bytes"], formula, r["engine_pool_bytes"], r["peak_mem_gb"],
                 r["peak_rss_gb"], r["step_time_ms"], load))
    print(f"  {name}: done", file=sys.stderr, flush=True)
GB = 1e9
print(f"{title}, 2 ranks FULL_SHARD, max_length 128, batch 1 per rank, 4 steps, fp32 AdamW, "
      "OMP_NUM_THREADS=1; rank 0's figures, GB = 1e9 bytes")
print()
print("| run | trainable | frozen | persistent GB | (4 frozen + 16 trainable) / 2 GB | pool GB | engine peak GB "
      "| peak RSS GB | step ms | load avg |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for n, tr, fr, pe, fo, po, pk, rss, st, ld in rows:
    print(f"| {n} | {tr} | {fr} | {pe / GB:.3f} | {fo / GB:.3f} | {po / GB:.3f} | {pk:.3f} | {rss:.3f} | "
          f"{st:.0f} | {ld:.1f} |")
PY
