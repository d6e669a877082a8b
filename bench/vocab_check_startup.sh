#!/usr/bin/env bash
# The start-up vocabulary check on 1 and 2 ranks (docs/benchmarks.md "Data memory"): the time from
# the launcher's start to step 1 of a tiny GPT-2 (1 layer, n_embd 16, vocab 50257, FULL_SHARD: its
# step takes milliseconds, so the time is the start-up, mostly the check) on TOKENS uint16 tokens of
# llm.c shards, written by tests' shard_tool (the data layer's writer) into DIR and deleted after.
# Each case runs REPS times, each time twice: with the shards in the page cache ("warm") and just
# after this script evicted them from it (posix_fadvise DONTNEED on its own files only: "cold",
# the shards come from the disk).  Several builds (e.g. before and after a change) take turns in
# each repetition, so that a load that changes meanwhile weighs on all of them alike.  The same run
# on a 2 MB set (1M tokens, warm) gives the start-up without the check to speak of.  Prints each
# run and the median per case.
# Usage: bench/vocab_check_startup.sh [DIR (default: a new folder in /var/tmp)]
#   env: BUILDS (build folders, default "build"), TOKENS (default 200000000: 400 MB), PER_SHARD
#        (default 50000000), REPS (default 3), RANKS (default "1 2")
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
read -r -a builds <<<"${BUILDS:-$here/../build}"
TOKENS=${TOKENS:-200000000}
PER_SHARD=${PER_SHARD:-50000000}
REPS=${REPS:-3}
RANKS=${RANKS:-1 2}
for b in "${builds[@]}"; do
    [ -x "$b/shardrun" ] && [ -f "$b/examples/gpt2.so" ] && [ -x "$b/tests/shard_tool" ] || { echo "$0: build $b first" >&2; exit 2; }
done
dir=$(mktemp -d "${1:-/var/tmp}/vocab_check.XXXXXX")
trap 'rm -rf "$dir"' EXIT
export OMP_NUM_THREADS=1

"${builds[0]}/tests/shard_tool" gen "$dir" fineweb "$TOKENS" "$PER_SHARD" 50257 1
mkdir "$dir/small"
"${builds[0]}/tests/shard_tool" gen "$dir/small" fineweb 1000000 1000000 50257 2
job() { # BUILD DATA: its job file
    cat <<EOT
[shardrun]
task = $1/examples/gpt2.so
plugins = torch,accelerate
[task]
size = tiny
n_layer = 1
n_embd = 16
n_head = 2
vocab_size = 50257
max_length = 64
per_device_train_batch_size = 1
data = $2
max_steps = 1
save_final = false
output_dir = $dir/out
EOT
}
evict() { /usr/bin/python3 -c 'import os, sys
for p in sys.argv[1:]:
    fd = os.open(p, os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED); os.close(fd)' "$dir"/fineweb_train_*.bin; }
# once BUILD NPROC [DATA]: seconds from start to the first "step 1/" line
once() {
    local t0 t1
    job "$1" "${3:-$dir/fineweb_train_*.bin}" >"$dir/job.ini"
    t0=$(date +%s.%N)
    "$1/shardrun" "$dir/job.ini" --nproc-per-node "$2" >"$dir/run.out" 2>&1 || { tail -20 "$dir/run.out" >&2; exit 1; }
    grep -q "step 1/" "$dir/run.out" || { echo "$0: no step 1" >&2; exit 1; }
    t1=$(date +%s.%N)
    echo "$t1 - $t0" | bc -l | xargs printf '%.2f'
}
median() { tr ' ' '\n' | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc --all) cores ($(lscpu | sed -n 's/^Model name: *//p')), load $(cut -d' ' -f1-3 /proc/loadavg); $(du -sh "$dir" | cut -f1) of shards ($TOKENS uint16 tokens)"
declare -A warm cold small
for _ in $(seq "$REPS"); do
    for n in $RANKS; do
        for b in "${builds[@]}"; do
            once "$b" "$n" >/dev/null # fills the page cache
            warm[$b,$n]+=" $(once "$b" "$n")"
            evict
            cold[$b,$n]+=" $(once "$b" "$n")"
            once "$b" "$n" "$dir/small/*.bin" >/dev/null
            small[$b,$n]+=" $(once "$b" "$n" "$dir/small/*.bin")"
        done
    done
done
for b in "${builds[@]}"; do
    for n in $RANKS; do
        echo "$b, $n rank(s): warm${warm[$b,$n]} (median $(echo ${warm[$b,$n]} | median) s); cold${cold[$b,$n]} (median $(echo ${cold[$b,$n]} | median) s); 2 MB set:${small[$b,$n]} (median $(echo ${small[$b,$n]} | median) s)"
    done
done
echo "# load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
