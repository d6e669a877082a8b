#!/usr/bin/env bash
# Launch latency: wall time from starting the launcher until every rank has passed a barrier in an
# initialised process group and exited, for 1, 2, 4 and 8 ranks, shardrun vs torchrun.
#   shardrun: BUILD_DIR/shardrun noop.ini --nproc-per-node N   (bench/noop.c: sr_pg_barrier on
#             sr_world(ctx); plugins = torch,accelerate, [torch] backend = gloo, master_port = 0)
#   torchrun: /usr/bin/python3 -m torch.distributed.run --standalone --nproc_per_node N
#             --redirects 1 --tee 1 --monitor_interval 0.1 trivial.py
#             (trivial.py: import torch.distributed; init_process_group("gloo"); barrier())
# torchrun flags: torch 1.13 spells --nproc_per_node with underscores; on Python 3.11 it crashes at
# start unless --redirects/--tee are non-zero; --monitor_interval 0.1 gives torchrun its best latency
# (the default polls the workers every 5 s).  /usr/bin/python3 is the interpreter that sees Debian's
# torch.
# Per N: 1 warm-up of each, then 10 timed runs alternating shardrun and torchrun (time.perf_counter
# around the subprocess); every shardrun run's per-rank results are checked (exit_code 0, ok 1).
# Usage: bench/launch_vs_torchrun.sh BUILD_DIR        exits non-zero if any run fails
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 BUILD_DIR" >&2; exit 2; }
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
[ -x "$build/shardrun" ] && [ -f "$build/bench/noop.so" ] || { echo "$0: build $build first" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed "s|@NOOP_SO@|$build/bench/noop.so|" "$here/noop.ini" > "$tmp/noop.ini"
printf 'import torch.distributed as dist\ndist.init_process_group("gloo")\ndist.barrier()\n' > "$tmp/trivial.py"

cd "$tmp"
# TMPDIR: torchrun's --redirects log dirs (torchelastic_*) land in $tmp and are removed with it.
TMPDIR="$tmp" /usr/bin/python3 - "$build/shardrun" <<'PY'
import json, statistics, subprocess, sys, time

RUNS = 10

def run(cmd):
    with open("out.log", "w+") as out:
        t0 = time.perf_counter()
        rc = subprocess.call(cmd, stdout=out, stderr=subprocess.STDOUT)
        dt = time.perf_counter() - t0
        out.seek(0)
        log = out.read()
    if rc != 0:
        sys.exit(f"FAILED (exit {rc}): {' '.join(cmd)}\n{log}")
    return dt * 1e3

def shardrun(n):  # one run; its per-rank results must be n ranks, each exit_code 0 and ok 1
    ms = run([sys.argv[1], "noop.ini", "--nproc-per-node", str(n), "--results", "results.json"])
    ranks = json.load(open("results.json"))
    if len(ranks) != n or any(r.get("exit_code") != 0 or r.get("ok") != 1 for r in ranks):
        sys.exit(f"FAILED: unexpected shardrun results for {n} ranks\n{open('out.log').read()}")
    return ms

def torchrun(n):
    return run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(n),
                "--redirects", "1", "--tee", "1", "--monitor_interval", "0.1", "trivial.py"])

print(f"launch -> process group -> barrier -> exit; median and min of {RUNS} interleaved runs (ms)")
print(f"{'ranks':>5}  {'shardrun med':>12} {'min':>7}  {'torchrun med':>12} {'min':>7}  {'ratio':>7}")
ratio = {}
for n in (1, 2, 4, 8):
    shardrun(n), torchrun(n)  # warm-up
    s, t = [], []
    for _ in range(RUNS):
        s.append(shardrun(n))
        t.append(torchrun(n))
    ratio[n] = statistics.median(t) / statistics.median(s)
    print(f"{n:>5}  {statistics.median(s):12.1f} {min(s):7.1f}  {statistics.median(t):12.1f} {min(t):7.1f}  "
          f"{ratio[n]:6.1f}x", flush=True)
print(f"target shardrun >= 50x faster than torchrun at 4 ranks: "
      f"{'met' if ratio[4] >= 50 else 'NOT met'} ({ratio[4]:.1f}x)")
PY
