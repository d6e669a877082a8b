#!/usr/bin/env bash
# Sustained GEMM throughput of the gpt2 task's CPU kernels against raw OpenBLAS sgemm, on the GEMMs
# one training step of bench/gpt2_vs_torch.sh's model makes (4 layers, n_embd 256, 4 heads,
# sequence 128, vocab 8192, batch 4: N = 512 token rows), at 1 and 2 threads.
#   program:  BUILD_DIR/bench/gemm_throughput, which CMake builds (bench/CMakeLists.txt) from
#             bench/gemm_throughput.c and the very objects of models/transformer/kernels_cpu.c that gpt2.so
#             links (-O3 -fno-math-errno, OpenMP), against OpenBLAS's OpenMP build.
#   shapes:   every GEMM of gpt2_model.c with its exact arguments: per conv1d (c_attn C->3C,
#             attn.c_proj C->C, mlp.c_fc C->4C, mlp.c_proj 4C->C) the forward and the two backward
#             GEMMs (dW, dx), once each per layer; lm_head's three (V = 8192), once per step; the
#             attention's six batched GEMMs (4 heads, T = 128, head size 64), once per sample per
#             layer (see the table's "per step" column).
#   ours:     tf_kernels_cpu()->gemm / ->gemm_batched.  sgemm: cblas_sgemm, a batched shape as a
#             loop of cblas_sgemm calls with OpenBLAS's own threading.
#   timing:   each (shape, implementation) for >= 0.3 s (--min-time) after 2 warm-up calls, 3 times
#             (--reps) alternating ours and sgemm, the best of the 3 (a transient disturbance does
#             not count); GFLOP/s = 2 m n k x batch x calls / time.  Threads: OMP_NUM_THREADS=1,
#             then 2, one process each (OpenBLAS's OpenMP build reads it as the task does);
#             OMP_WAIT_POLICY unset (OpenMP's default, as gpt2_vs_torch.sh runs shardrun).
#   totals:   FLOP-weighted over one step (each shape times its calls per step): time = sum of
#             FLOP / GFLOP/s, sustained GFLOP/s = step FLOP / time, "sustained fraction of sgemm" =
#             sgemm's time / ours.  "ceiling" = the largest sgemm GFLOP/s seen at that thread count.
# Other work on the machine lowers these numbers: the script prints the CPU time that processes
# other than its own used meanwhile (busy time in /proc/stat minus its children's), in cores.
# Usage: bench/gemm_throughput.sh [BUILD_DIR] [--min-time S] [--reps R] [--ceiling] [--model small|gpt2]
#        --model gpt2: GPT-2 124M's shapes (12 layers, n_embd 768, 12 heads, T 128, batch 4, vocab 50257)
#        instead of the small model's; with --ceiling, its c_attn forward 2304 x 512 x 768
#        BUILD_DIR (default: the source tree's build/) holds the program: build it first
#        (cmake --build BUILD_DIR; it needs OpenBLAS's OpenMP build, like gpt2.so).
#        --ceiling: print only "THREADS GFLOPS" lines, 1 and 2 threads,
#        cblas_sgemm on the c_attn forward shape 768 x 512 x 256 (NN), the best of --reps timings
#        of >= --min-time each -- gpt2_vs_torch.sh's ceiling.
#        --shape OxNxI (with --ceiling): that linear layer's forward instead (O outputs, N rows,
#        I inputs; NN) -- llama_vs_torch.sh's ceiling, SmolLM2's MLP 1536x128x576.
#        Exits non-zero if the program is missing or a run fails.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
build_arg="" min_time=0.3 reps=3 ceiling=0 model=small shape=()
usage="usage: $0 [BUILD_DIR] [--min-time S] [--reps R] [--ceiling [--shape OxNxI]] [--model small|gpt2]"
while [ $# -gt 0 ]; do
    case "$1" in
        --min-time) min_time=${2:?--min-time needs a value}; shift 2 ;;
        --reps) reps=${2:?--reps needs a value}; shift 2 ;;
        --ceiling) ceiling=1; shift ;;
        --model) model=${2:?--model needs small or gpt2}; shift 2 ;;
        --shape) shape=(--shape "${2:?--shape needs OxNxI}"); shift 2 ;;
        -*) echo "$usage" >&2; exit 2 ;;
        *) [ -z "$build_arg" ] || { echo "$usage" >&2; exit 2; }
           build_arg=$1; shift ;;
    esac
done
build=$(cd "${build_arg:-$src/build}" && pwd)
prog=$build/bench/gemm_throughput
[ -x "$prog" ] || { echo "$0: no $prog: build $build first (it needs OpenBLAS's OpenMP build:" \
                         "apt-get install libopenblas-openmp-dev, then cmake again)" >&2; exit 2; }

unset OMP_WAIT_POLICY

if [ "$ceiling" = 1 ]; then
    for t in 1 2; do
        echo "$t $(OMP_NUM_THREADS=$t "$prog" --ceiling --model "$model" "${shape[@]}" --min-time "$min_time" --reps "$reps")"
    done
    exit 0
fi

BENCH_DIR="$here" /usr/bin/python3 - "$prog" "$min_time" "$reps" "$model" <<'PY'
import os, resource, subprocess, sys, time

prog, min_time, reps, model = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]

sys.path.insert(0, os.environ["BENCH_DIR"])
from load_meter import LoadMeter  # noqa: E402
meter = LoadMeter()
for threads in (1, 2):
    p = subprocess.run([prog, "--model", model, "--min-time", min_time, "--reps", reps], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       env=dict(os.environ, OMP_NUM_THREADS=str(threads)))
    print(f"== {threads} thread{'s' if threads > 1 else ''} ==")
    print(p.stdout, end="")
    if p.returncode != 0:
        sys.exit(f"FAILED (exit {p.returncode}) at OMP_NUM_THREADS={threads}")
wall, other = meter.wall(), meter.other_cores()
print(f"total {wall:.0f} s; other processes used {other:.2f} of {os.cpu_count()} cores meanwhile"
      + (" (the numbers above are disturbed)" if other > 0.2 else ""))
PY
