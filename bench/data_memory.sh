#!/usr/bin/env bash
# A rank's private memory does not grow with the data (docs/benchmarks.md "Data memory"): the same
# GPT-2 124M-shaped run (size = gpt2: 12 layers, n_embd 768, vocab 50257; 1 rank, NO_SHARD, fp32,
# max_length 256 x batch 1, STEPS steps, SHARDRUN_PROFILE=1) on a 10 MB and on an 8 GB set of llm.c
# token shards, written by tests' shard_tool (the data layer's writer) into DIR and deleted after.
# While each run trains, the worker's /proc/PID/status and smaps_rollup are read every 0.2 s:
#   private RSS  = RssAnon (RSS minus the file-backed pages: the mapped shards, the libraries)
#   RSS          = all resident pages, Rss of smaps_rollup (the shards' pages a rank touched included)
# Prints one row per dataset with the peaks, the start-up time (the vocabulary check reads every
# shard once) and the profile's data row against the step.
# Usage: bench/data_memory.sh [DIR (a folder on a disk with 9 GB free; default: a new one in /var/tmp)]
#   env: BUILD (default build), STEPS (default 4), BIG_TOKENS (default 4294967296: 8 GiB of uint16)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "${BUILD:-$here/../build}" && pwd)
STEPS=${STEPS:-4}
BIG_TOKENS=${BIG_TOKENS:-4294967296}
TOOL=$BUILD/tests/shard_tool
[ -x "$BUILD/shardrun" ] && [ -f "$BUILD/examples/gpt2.so" ] && [ -x "$TOOL" ] || { echo "$0: build $BUILD first" >&2; exit 2; }
dir=$(mktemp -d "${1:-/var/tmp}/data_memory.XXXXXX")
trap 'rm -rf "$dir"' EXIT
need=$(( BIG_TOKENS * 2 / 1000000000 + 1 ))
avail=$(df -P --block-size=1G "$dir" | awk 'NR == 2 { print $4 }')
[ "$avail" -gt "$need" ] || { echo "$0: $dir has $avail GB free; the shards need $need GB" >&2; exit 2; }
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}

# measure NAME PATTERN: one run; prints its row
measure() {
    local name=$1 pattern=$2 out=$dir/$1.out
    cat >"$dir/job.ini" <<EOT
[shardrun]
task = $BUILD/examples/gpt2.so
plugins = torch,accelerate
[accelerate]
fsdp.sharding_strategy = NO_SHARD
[task]
size = gpt2
max_length = 256
per_device_train_batch_size = 1
data = $pattern
max_steps = $STEPS
logging_steps = $STEPS
save_final = false
output_dir = $dir/out-$name
EOT
    local t0 t1 agent anon file rss peak_anon=0 peak_rss=0 peak_file=0 first_step=""
    t0=$(date +%s.%N)
    SHARDRUN_PROFILE=1 "$BUILD/shardrun" "$dir/job.ini" >"$out" 2>&1 &
    agent=$!
    while kill -0 "$agent" 2>/dev/null; do
        # the rank: the agent's descendant with the most anonymous memory (the guardian and the
        # agent's helpers hold little)
        for p in $(pgrep -P "$agent") $(for c in $(pgrep -P "$agent"); do pgrep -P "$c"; done); do
            read -r anon file < <(awk '/^RssAnon:/ { a = $2 } /^RssFile:/ { f = $2 } END { print a + 0, f + 0 }' "/proc/$p/status" 2>/dev/null || echo "0 0")
            rss=$(awk '/^Rss:/ { print $2 }' "/proc/$p/smaps_rollup" 2>/dev/null || echo 0)
            [ "${anon:-0}" -gt "$peak_anon" ] && peak_anon=$anon
            [ "${file:-0}" -gt "$peak_file" ] && peak_file=$file
            [ "${rss:-0}" -gt "$peak_rss" ] && peak_rss=$rss
        done
        [ -z "$first_step" ] && grep -q "step 1/" "$out" && first_step=$(date +%s.%N)
        sleep 0.2
    done
    wait "$agent" || { echo "$0: the $name run failed:" >&2; tail -20 "$out" >&2; exit 1; }
    t1=$(date +%s.%N)
    local bytes step data
    bytes=$(du -cb $pattern | tail -1 | cut -f1)
    step=$(sed -n 's/^\[rank0\]: *step *\([0-9.]*\) .*/\1/p' "$out" | tail -1)
    data=$(sed -n 's/^\[rank0\]: *data *\([0-9.]*\) *\([0-9.]*\)%.*/\1 ms (\2%)/p' "$out" | tail -1)
    printf '| %s | %.2f GB | %.0f MB | %.0f MB | %.0f MB | %.1f s | %s | %s |\n' "$name" "$(echo "$bytes / 1000000000" | bc -l)" \
        "$(echo "$peak_anon / 1024" | bc -l)" "$(echo "$peak_rss / 1024" | bc -l)" "$(echo "$peak_file / 1024" | bc -l)" \
        "$(echo "${first_step:-$t1} - $t0" | bc -l)" "${step:-?} ms" "${data:-?}"
    grep -E "gpt2: data:|profile:|^\[rank0\]:   (data|step)" "$out" | sed 's/^/    /' >&2
}

echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores ($(lscpu | sed -n 's/^Model name: *//p')), $(free -g | awk '/^Mem:/ { print $2 }') GB RAM, load $(cut -d' ' -f1-3 /proc/loadavg); OMP_NUM_THREADS=$OMP_NUM_THREADS, $STEPS steps"
mkdir "$dir/small" "$dir/big"
"$TOOL" gen "$dir/small" fineweb 5000000 1000000 50257 1
g0=$(date +%s.%N)
"$TOOL" gen "$dir/big" fineweb "$BIG_TOKENS" 100000000 50257 2
echo "# wrote $(du -sh "$dir/big" | cut -f1) of shards in $(echo "$(date +%s.%N) - $g0" | bc -l | xargs printf '%.0f') s"
echo "| data | size | private RSS (RssAnon), peak | RSS, peak | file-backed RSS, peak | start to step 1 | step | profile: data row |"
echo "|---|---|---|---|---|---|---|---|"
measure 10MB "$dir/small/fineweb_train_*.bin"
measure 8GB "$dir/big/fineweb_train_*.bin"
