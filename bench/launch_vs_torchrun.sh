#!/usr/bin/env bash
# Launch latency: wall time of a whole 4-rank run that does nothing, shardrun vs torchrun.
#   shardrun: BUILD_DIR/shardrun on noop.ini (4 ranks of bench/noop.c, plugins = torch,accelerate).
#   torchrun: /usr/bin/python3 -m torch.distributed.run --standalone --nproc_per_node 4
#             --redirects 1 --tee 1 --monitor_interval 0.1 trivial.py   (trivial.py is `pass`)
# torchrun flags: torch 1.13 spells --nproc_per_node with underscores; on Python 3.11 it crashes at
# start unless --redirects/--tee are non-zero; --monitor_interval 0.1 gives torchrun its best latency
# (the default polls the workers every 5 s).  /usr/bin/python3 is the interpreter that sees Debian's
# torch.  trivial.py does not import torch; only the torchrun agent does.
# Each command: 1 warm-up, then 10 timed runs (time.perf_counter around the subprocess).
# Usage: bench/launch_vs_torchrun.sh BUILD_DIR        exits non-zero if any run fails
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 BUILD_DIR" >&2; exit 2; }
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
[ -x "$build/shardrun" ] && [ -f "$build/bench/noop.so" ] || { echo "$0: build $build first" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed "s|@NOOP_SO@|$build/bench/noop.so|" "$here/noop.ini" > "$tmp/noop.ini"
echo pass > "$tmp/trivial.py"

cd "$tmp"
# TMPDIR: torchrun's --redirects log dirs (torchelastic_*) land in $tmp and are removed with it.
TMPDIR="$tmp" /usr/bin/python3 - "$build/shardrun" <<'PY'
import json, statistics, subprocess, sys, time

RUNS = 10
shardrun = [sys.argv[1], "noop.ini"]
torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "4",
            "--redirects", "1", "--tee", "1", "--monitor_interval", "0.1", "trivial.py"]

def run(cmd):
    with open("out.log", "w+") as out:
        t0 = time.perf_counter()
        rc = subprocess.call(cmd, stdout=out, stderr=subprocess.STDOUT)
        dt = time.perf_counter() - t0
        out.seek(0)
        log = out.read()
    if rc != 0:
        sys.exit(f"FAILED (exit {rc}): {' '.join(cmd)}\n{log}")
    return dt * 1e3, log

def bench(name, cmd, check=None):
    run(cmd)  # warm-up
    times = []
    for _ in range(RUNS):
        ms, log = run(cmd)
        if check: check(log)
        times.append(ms)
    med = statistics.median(times)
    print(f"{name:8}  median {med:8.1f} ms   min {min(times):8.1f} ms   ({RUNS} runs: "
          + " ".join(f"{t:.1f}" for t in times) + ")")
    return med

def check_shardrun(log):  # the per-rank JSON list: 4 ranks, each exit_code 0 and ok 1
    ranks = json.loads(log[log.index("["):log.rindex("]") + 1])
    if len(ranks) != 4 or any(r.get("exit_code") != 0 or r.get("ok") != 1 for r in ranks):
        sys.exit(f"FAILED: unexpected shardrun results\n{log}")

print("4 ranks, no-op work; trivial.py does not import torch (only the torchrun agent does)")
s = bench("shardrun", shardrun, check_shardrun)
t = bench("torchrun", torchrun)
print(f"shardrun starts 4 ranks {t / s:.1f}x faster than torchrun")
PY
