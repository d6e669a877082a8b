#!/usr/bin/env bash
# Collective bandwidth: shardrun's process group (Gloo) vs torch.distributed with Gloo, same sizes,
# same machine, same run.  World sizes 2 and 4; fp32 buffers of 1, 16 and 64 MiB; nccl-tests sizes
# (all-gather: the whole output, reduce-scatter: the whole input, all-reduce: the buffer).
#   shardrun: BUILD_DIR/shardrun job.ini --nproc-per-node N --set task.min_bytes=S
#             --set task.max_bytes=S --set task.iters=K      (job.ini: task = BUILD_DIR/examples/
#             pgbench.so, plugins = torch, [torch] backend = gloo, master_port = 0); rank 0's table
#             lines are parsed, --results is checked (every rank exit_code 0, errors 0).
#   torch:    /usr/bin/python3 -m torch.distributed.run --standalone --nproc_per_node N
#             --redirects 1 --tee 1 --monitor_interval 0.1 pg_torch_peer.py   (list all_gather and
#             all_reduce; torch 1.13's Gloo has no reduce_scatter, so that row compares shardrun's
#             reduce-scatter with shardrun's all-reduce of the same buffer instead).
# torchrun flags: see launch_vs_torchrun.sh.  Both sides: 1 warm-up, barrier, K timed calls, the
# slowest rank's time; GB/s is algbw = size / time.  Per N, ROUNDS rounds alternate shardrun and
# torch (less drift between the two); the table shows the median over rounds.
# Usage: bench/pg_vs_torch.sh BUILD_DIR     exits non-zero if any run fails or reports errors
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: $0 BUILD_DIR" >&2; exit 2; }
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
[ -x "$build/shardrun" ] && [ -f "$build/examples/pgbench.so" ] || { echo "$0: build $build first" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '[shardrun]\ntask = %s\nplugins = torch\nmaster_port = 0\n\n[torch]\nbackend = gloo\n' \
    "$build/examples/pgbench.so" > "$tmp/job.ini"

cd "$tmp"
# TMPDIR: torchrun's --redirects log dirs (torchelastic_*) land in $tmp and are removed with it.
TMPDIR="$tmp" /usr/bin/python3 - "$build/shardrun" "$here/pg_torch_peer.py" <<'PY'
import json, re, statistics, subprocess, sys

shardrun, peer = sys.argv[1], sys.argv[2]
MiB = 1 << 20
ITERS = {1 * MiB: 100, 16 * MiB: 20, 64 * MiB: 10}  # timed calls per size
ROUNDS = 5
ROW = re.compile(r"^(?:\[rank0\]: )?\s+(\d+)\s+\d+\s+(\w+)\s+[\d.]+\s+([\d.]+)\s+[\d.]+\s+(\d+)$", re.M)

def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode != 0:
        sys.exit(f"FAILED (exit {p.returncode}): {' '.join(cmd)}\n{p.stdout}")
    return p.stdout

def shardrun_run(n, size):  # {op: algbw GB/s}
    cmd = [shardrun, "job.ini", "--nproc-per-node", str(n), "--results", "results.json",
           "--set", f"task.min_bytes={size}", "--set", f"task.max_bytes={size}", "--set", f"task.iters={ITERS[size]}"]
    log = run(cmd)
    ranks = json.load(open("results.json"))
    rows = {op: (int(b), float(bw), int(e)) for b, op, bw, e in ROW.findall(log)}
    if (len(ranks) != n or any(r.get("exit_code") != 0 or r.get("errors") != 0 for r in ranks)
            or sorted(rows) != ["all_gather", "all_reduce", "reduce_scatter"]
            or any(b != size or e != 0 for b, _, e in rows.values())):
        sys.exit(f"FAILED: unexpected pgbench results: {' '.join(cmd)}\n{log}")
    return {op: bw for op, (_, bw, _) in rows.items()}

def torch_run(n, sizes):  # {(size, op): algbw GB/s}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(n),
           "--redirects", "1", "--tee", "1", "--monitor_interval", "0.1", peer, "torch.out"]
    cmd += [f"{s}:{ITERS[s]}" for s in sizes]
    log = run(cmd)
    res = {(int(s), op): float(bw) for s, op, _, bw in (l.split() for l in open("torch.out"))}
    if sorted(res) != sorted((s, op) for s in sizes for op in ("all_gather", "all_reduce")):
        sys.exit(f"FAILED: unexpected torch results: {' '.join(cmd)}\n{log}")
    return res

results = {}  # (n, size, op, side) -> [GB/s per round]
for n in (2, 4):
    for _ in range(ROUNDS):
        for size in ITERS:
            for op, bw in shardrun_run(n, size).items():
                results.setdefault((n, size, op, "shardrun"), []).append(bw)
        for (size, op), bw in torch_run(n, list(ITERS)).items():
            results.setdefault((n, size, op, "torch"), []).append(bw)
med = {k: statistics.median(v) for k, v in results.items()}

print(f"algbw GB/s, median of {ROUNDS} rounds; reduce_scatter's ratio is vs shardrun's all_reduce")
print(f"{'N':>2} {'size':>7} {'op':<15} {'shardrun':>9} {'torch':>9} {'ratio':>7}")
ratio = {}
for n in (2, 4):
    for size in ITERS:
        for op in ("all_gather", "reduce_scatter", "all_reduce"):
            s = med[(n, size, op, "shardrun")]
            t = med.get((n, size, op, "torch"))
            ratio[(n, size, op)] = s / (t if t else med[(n, size, "all_reduce", "shardrun")])
            tcol = f"{t:9.3f}" if t else f"{'n/a':>9}"
            print(f"{n:>2} {size // MiB:>3} MiB {op:<15} {s:9.3f} {tcol} {ratio[(n, size, op)]:6.2f}x")

def target(name, keys, want):
    got = [f"N={n} {size // MiB} MiB {ratio[(n, size, op)]:.2f}x" for n, size, op in keys
           if ratio[(n, size, op)] < want]
    print(f"target {name}: " + ("met" if not got else "NOT met (" + ", ".join(got) + ")"))

grid = [(n, size) for n in (2, 4) for size in ITERS]
target("all_gather >= 2x torch at 64 MiB", [(n, 64 * MiB, "all_gather") for n in (2, 4)], 2.0)
target("all_reduce >= 1x torch", [(n, s, "all_reduce") for n, s in grid], 1.0)
target("reduce_scatter >= shardrun all_reduce", [(n, s, "reduce_scatter") for n, s in grid], 1.0)
PY
