#!/usr/bin/env bash
# Save and load time of a GPT-2 checkpoint on 2 ranks, FULL_STATE_DICT and SHARDED_STATE_DICT, and
# the part of each spent hashing (docs/benchmarks.md "Checkpoint integrity hashing").
#   job:     bench/gpt2_memory.sh's (FULL_SHARD on GPT2Block, fp32, 128 tokens x batch 1, gloo,
#            OMP_NUM_THREADS=1) with [shardrun] log_level = debug; [task] size = SIZE (default gpt2,
#            124M), save_steps = 0.  Per round and state dict: train 1 step and save checkpoint-1,
#            then resume from it to step 2 without saving.  Each rank prints a debug line per save
#            and per load ("saved ... in T s, H s of it hashing B bytes", "loaded ... in T s, ...").
#   Several build folders (e.g. before and after a change) run interleaved: every round runs each
#            of them in turn, so that a change of the machine's load touches all alike.
#   output:  those lines, prefixed with the build, round and state dict; per build, the medians over
#            the rounds of the slower rank's save and load times and of rank 0's hashing time.
# Usage: bench/checkpoint_time.sh [BUILD_DIR...] [--rounds N] [--size SIZE]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
builds=() rounds=3 size=gpt2
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds=${2:?}; shift 2 ;;
        --size) size=${2:?}; shift 2 ;;
        -*) echo "usage: $0 [BUILD_DIR...] [--rounds N] [--size SIZE]" >&2; exit 2 ;;
        *) builds+=("$(cd "$1" && pwd)"); shift ;;
    esac
done
[ ${#builds[@]} -gt 0 ] || builds=("$(cd "$here/../build" && pwd)")
for build in "${builds[@]}"; do
    [ -x "$build/shardrun" ] && [ -f "$build/examples/gpt2.so" ] || { echo "$0: build $build first" >&2; exit 2; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/job.ini" <<INI
[shardrun]
task = TASK
plugins = torch,accelerate
master_port = 0
log_level = debug

[torch]
backend = gloo

[accelerate]
mixed_precision = no
fsdp.sharding_strategy = FULL_SHARD
fsdp.auto_wrap_policy = TRANSFORMER_BASED_WRAP
fsdp.transformer_layer_cls_to_wrap = GPT2Block

[task]
size = $size
data = /usr/share/common-licenses/*
max_length = 128
per_device_train_batch_size = 1
logging_steps = 1
save_steps = 0
INI
export OMP_NUM_THREADS=1
cd "$tmp"
for r in $(seq 1 "$rounds"); do
    for b in "${!builds[@]}"; do
        build=${builds[$b]}
        sed "s|^task = .*|task = $build/examples/gpt2.so|" job.ini > job-$b.ini
        for sd in FULL_STATE_DICT SHARDED_STATE_DICT; do
            rm -rf out
            "$build/shardrun" job-$b.ini --nproc-per-node 2 --set task.output_dir=out \
                --set accelerate.fsdp.state_dict_type=$sd --set task.max_steps=1 2>&1 |
                grep 'debug: checkpoint' | sed "s|^|$build $r $sd save |" | tee -a lines
            "$build/shardrun" job-$b.ini --nproc-per-node 2 --set task.output_dir=out --set task.max_steps=2 \
                --set accelerate.fsdp.state_dict_type=$sd --set task.save_final=false \
                --set task.resume_from_checkpoint=true 2>&1 |
                grep 'debug: checkpoint' | sed "s|^|$build $r $sd load |" | tee -a lines
        done
    done
done
rm -rf out
python3 - lines <<'PY'
import re, statistics, sys, collections
runs = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    build, rnd, sd, what = line.split()[:4]
    m = re.search(r"rank (\d+) (?:saved|loaded) \S+ in ([0-9.]+) s, ([0-9.]+) s of it hashing", line)
    if m: runs[(build, sd, what)][rnd].append((int(m[1]), float(m[2]), float(m[3])))
for (build, sd, what), by_round in sorted(runs.items()):
    slow = [max(t for _, t, _ in v) for v in by_round.values()]
    h0 = [max(h for r, _, h in v if r == 0) for v in by_round.values()]
    print(f"{build} {sd:18s} {what}: median {statistics.median(slow):.3f} s (slower rank), rank 0 hashing "
          f"{statistics.median(h0):.3f} s, rounds {' '.join(f'{x:.3f}' for x in slow)}")
PY
