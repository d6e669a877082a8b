#!/usr/bin/env bash
# Peak memory per rank of shardrun's FSDP engine training GPT-2 (124M) with the gpt2 task, at world
# size 1, 2 and 4 under NO_SHARD, SHARD_GRAD_OP and FULL_SHARD: what the engine holds, what its own
# arithmetic predicts, and what the process really used.
#   model:    [task] size = gpt2 (12 layers, 12 heads, n_embd 768, 1024 positions, vocab 50257, lm_head
#             tied to wte: 124.4M parameters) on byte-level tokens of /usr/share/common-licenses/*
#             (the vocabulary stays 50257; the data only feeds the step), max_length 128,
#             per_device_train_batch_size 1, max_steps 2, logging_steps 1, AdamW, fp32.
#   shardrun: BUILD_DIR/shardrun job.ini --nproc-per-node N --set accelerate.fsdp.sharding_strategy=S
#             --results FILE; job.ini: task = BUILD_DIR/examples/gpt2.so, plugins = torch,accelerate,
#             [torch] backend = gloo, mixed_precision = no, fsdp.auto_wrap_policy =
#             TRANSFORMER_BASED_WRAP on GPT2Block for every strategy (NO_SHARD ignores the units'
#             sharding); OMP_NUM_THREADS=1 for every run (4 ranks on 2 cores take a few minutes).
#             One run per (strategy, N), one after the other; memory does not drift with load.
#   numbers:  each rank's results JSON: "engine_persistent_bytes" (fp32 master, grad and the 2 AdamW
#             moments of its shard), "engine_pool_bytes" (high-water mark of its gathered-parameter,
#             full-gradient and transfer buffers), "peak_mem_gb" (high-water mark of the two together)
#             and "peak_rss_gb" (the process's peak resident set, getrusage ru_maxrss: the engine,
#             the task's activations, the tokenised data, libraries, Gloo); the table shows rank 0's
#             and the spread across ranks ((max - min) / max over the ranks, for peak_mem_gb and
#             peak_rss_gb; flagged with "!" above 5%).
#   checks:   N ranks, exit code 0, 2 steps, the strategy the results name, one model_params on
#             every rank; persistent = 16 bytes x P / shards within 2% (with --freeze GLOBS, passed as
#             [task] freeze: (frozen x 4 + trainable x 16) bytes / shards; shards = 1 for NO_SHARD,
#             N otherwise; the rest is each unit's padding to a multiple of N) -- the script fails
#             otherwise.
#   output:   a markdown table; a CSV (strategy,world_size,peak_mem_gb,peak_rss_gb; rank 0's values)
#             at --csv (default: the SVG's path with .csv); an SVG bar chart of peak_mem_gb by
#             bench/memory_plot.py at --svg (default bench/gpt2_memory.svg).
# Usage: bench/gpt2_memory.sh [BUILD_DIR] [--svg PATH] [--csv PATH] [--freeze GLOBS]   (default: the source
#        tree's build/; --freeze: parameters not trained, e.g. 'transformer.h.*.attn.*')
#        exits non-zero if any run fails or a check does not hold
set -euo pipefail
usage="usage: $0 [BUILD_DIR] [--svg PATH] [--csv PATH] [--freeze GLOBS]"
here=$(cd "$(dirname "$0")" && pwd)
build_arg="" svg=$here/gpt2_memory.svg csv="" freeze=""
while [ $# -gt 0 ]; do
    case "$1" in
        --freeze) freeze=${2:?--freeze needs glob patterns}; shift 2 ;;
        --svg) svg=${2:?--svg needs a path}; shift 2 ;;
        --csv) csv=${2:?--csv needs a path}; shift 2 ;;
        -*) echo "$usage" >&2; exit 2 ;;
        *) [ -z "$build_arg" ] || { echo "$usage" >&2; exit 2; }; build_arg=$1; shift ;;
    esac
done
build=$(cd "${build_arg:-$here/../build}" && pwd)
[ -x "$build/shardrun" ] && [ -f "$build/examples/gpt2.so" ] || { echo "$0: build $build first" >&2; exit 2; }
[ -n "$csv" ] || csv=${svg%.svg}.csv
svg=$(realpath -m "$svg") csv=$(realpath -m "$csv")
[ -d "$(dirname "$svg")" ] && [ -d "$(dirname "$csv")" ] || { echo "$0: no such folder for $svg or $csv" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/job.ini" <<EOF
[shardrun]
task = $build/examples/gpt2.so
plugins = torch,accelerate
master_port = 0

[torch]
backend = gloo

[accelerate]
mixed_precision = no
fsdp.sharding_strategy = FULL_SHARD
fsdp.auto_wrap_policy = TRANSFORMER_BASED_WRAP
fsdp.transformer_layer_cls_to_wrap = GPT2Block

[task]
size = gpt2
data = /usr/share/common-licenses/*
max_length = 128
per_device_train_batch_size = 1
max_steps = 2
logging_steps = 1
EOF

cd "$tmp"
export OMP_NUM_THREADS=1
/usr/bin/python3 - "$build/shardrun" "$csv" "$freeze" <<'PY'
import csv, json, os, subprocess, sys, time

shardrun, csv_path, freeze = sys.argv[1], sys.argv[2], sys.argv[3]
STRATEGIES = ("NO_SHARD", "SHARD_GRAD_OP", "FULL_SHARD")
SIZES = (1, 2, 4)
STEPS = 2

def spread(vals):
    return (max(vals) - min(vals)) / max(vals) if max(vals) > 0 else 0.0

t0 = time.perf_counter()
rows = []
for n in SIZES:
    for s in STRATEGIES:
        cmd = [shardrun, "job.ini", "--nproc-per-node", str(n), "--results", "results.json",
               "--set", f"accelerate.fsdp.sharding_strategy={s}"] + (["--set", f"task.freeze={freeze}"] if freeze else [])
        if os.path.exists("results.json"):
            os.remove("results.json")
        t = time.perf_counter()
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if p.returncode != 0:
            sys.exit(f"FAILED (exit {p.returncode}): {' '.join(cmd)}\n{p.stdout}")
        ranks = json.load(open("results.json"))
        if (len(ranks) != n or any(r.get("exit_code") != 0 or r.get("world_size") != n or r.get("global_step") != STEPS
                                   or r.get("sharding_strategy") != s for r in ranks)
                or len({r["model_params"] for r in ranks}) != 1):
            sys.exit(f"FAILED: unexpected shardrun results: {' '.join(cmd)}\n{p.stdout}\n{ranks}")
        r0 = ranks[0]
        P, F = r0["model_params"], r0.get("frozen_params", 0)
        shards = 1 if s == "NO_SHARD" else n
        expect = (4 * F + 16 * (P - F)) / shards  # a frozen parameter keeps its fp32 shard only
        row = {"strategy": s, "n": n, "P": P, "F": F, "persist": r0["engine_persistent_bytes"], "expect": expect,
               "pool": r0["engine_pool_bytes"], "peak": r0["peak_mem_gb"], "rss": r0["peak_rss_gb"],
               "spread_peak": spread([r["peak_mem_gb"] for r in ranks]),
               "spread_rss": spread([r["peak_rss_gb"] for r in ranks]), "secs": time.perf_counter() - t}
        rows.append(row)
        print(f"  {s} x {n}: done in {row['secs']:.0f} s", file=sys.stderr, flush=True)
        for r in ranks:
            if abs(r["engine_persistent_bytes"] / expect - 1) > 0.02:
                sys.exit(f"FAILED: {s} at world size {n}, rank {r.get('rank')}: engine_persistent_bytes "
                         f"{r['engine_persistent_bytes']} is not (4 x {F} + 16 x {P - F}) / {shards} = {expect:.0f} "
                         "within 2%")

GB = 1e9
P = rows[0]["P"]
F = rows[0].get("F", 0)
print(f"GPT-2 124M ({P} parameters, wte tied), max_length 128, batch 1 per rank, 2 steps, fp32 AdamW, "
      f"OMP_NUM_THREADS=1; rank 0's figures, GB = 1e9 bytes")
if freeze:
    print(f"[task] freeze = {freeze}: {F} parameters frozen, {P - F} trained")
    print("expected persistent = (4 x frozen + 16 x trained) bytes / shards (fp32 parameter; + gradient + 2 AdamW "
          "moments when trained; shards = 1 for NO_SHARD, N otherwise)")
else:
    print("expected persistent = 16 bytes x P / shards (fp32 parameter + gradient + 2 AdamW moments; shards = 1 for "
          "NO_SHARD, N otherwise)")
print()
print(f"| strategy | N | persistent GB | {'expected' if freeze else '16P/shards'} GB | ratio | pool GB | engine peak GB | peak RSS GB "
      "| rank spread (peak / RSS) |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
flag = lambda x: f"{100 * x:.1f}%" + (" !" if x > 0.05 else "")
for r in rows:
    print(f"| {r['strategy']} | {r['n']} | {r['persist'] / GB:.3f} | {r['expect'] / GB:.3f} | "
          f"{r['persist'] / r['expect']:.4f} | {r['pool'] / GB:.3f} | {r['peak']:.3f} | {r['rss']:.3f} | "
          f"{flag(r['spread_peak'])} / {flag(r['spread_rss'])} |")
if any(max(r["spread_peak"], r["spread_rss"]) > 0.05 for r in rows):
    print("\n! the ranks differ by more than 5%")
with open(csv_path, "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["strategy", "world_size", "peak_mem_gb", "peak_rss_gb"])
    for r in rows:
        w.writerow([r["strategy"], r["n"], f"{r['peak']:.4f}", f"{r['rss']:.4f}"])
print(f"\nCSV: {csv_path}; total {time.perf_counter() - t0:.0f} s")
PY
/usr/bin/python3 "$here/memory_plot.py" "$csv" --out "$svg" \
    --title "GPT-2 124M under FSDP: engine peak memory per rank (GB)"
echo "SVG: $svg"
