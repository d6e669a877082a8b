#!/usr/bin/env bash
# Collective bandwidth: shardrun's process group over shared memory (shm) and over Gloo's TCP (tcp)
# vs torch.distributed with Gloo, and vs one thread's memcpy, same sizes, same machine, same run.
# World sizes 2 and 4; fp32 buffers of 1, 16 and 64 MiB; nccl-tests sizes (all-gather: the whole
# output, reduce-scatter: the whole input, all-reduce: the buffer); and the latency of an 8-byte
# all-reduce on each transport.
#   shardrun: BUILD_DIR/shardrun job.ini --nproc-per-node N --set task.min_bytes=S
#             --set task.max_bytes=S --set task.iters=K --set torch.transport=shm|tcp
#             (job.ini: task = BUILD_DIR/examples/pgbench.so, plugins = torch, [torch] backend =
#             gloo, master_port = 0); rank 0's table lines, its memcpy line (one thread copying S
#             bytes on rank 0 in the same run) and its latency line (mean of 5000 8-byte
#             all-reduces) are parsed, --results is checked (every rank exit_code 0, errors 0).
#   torch:    /usr/bin/python3 -m torch.distributed.run --standalone --nproc_per_node N
#             --redirects 1 --tee 1 --monitor_interval 0.1 pg_torch_peer.py   (list all_gather and
#             all_reduce; torch 1.13's Gloo has no reduce_scatter, so that row compares shardrun's
#             reduce-scatter with shardrun's all-reduce of the same buffer instead).
# torchrun flags: see launch_vs_torchrun.sh.  Both sides: 1 warm-up, barrier, K timed calls, the
# slowest rank's time; GB/s is algbw = size / time.  Per N, ROUNDS rounds alternate shardrun and
# torch (less drift between the two); the table shows the median over rounds.
# Usage: [ROUNDS=5] bench/pg_vs_torch.sh BUILD_DIR     exits non-zero if any run fails or reports errors
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
import json, os, re, statistics, subprocess, sys

shardrun, peer = sys.argv[1], sys.argv[2]
MiB = 1 << 20
ITERS = {1 * MiB: 100, 16 * MiB: 20, 64 * MiB: 10}  # timed calls per size
ROUNDS = int(os.environ.get("ROUNDS", "5"))  # ROUNDS=1: a quick look
MEMCPY = re.compile(r"# memcpy, one thread, \d+ bytes: ([\d.]+) GB/s")
LATENCY = re.compile(r"# latency: 8-byte all_reduce over (\w+), mean of \d+: ([\d.]+) us")
ROW = re.compile(r"^(?:\[rank0\]: )?\s+(\d+)\s+\d+\s+(\w+)\s+[\d.]+\s+([\d.]+)\s+[\d.]+\s+(\d+)$", re.M)

def run(cmd, tries=1):
    for _ in range(tries):
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if p.returncode == 0:
            break
    if p.returncode != 0:
        sys.exit(f"FAILED (exit {p.returncode}): {' '.join(cmd)}\n{p.stdout}")
    return p.stdout

def shardrun_run(n, size, transport):  # {op: algbw GB/s, "memcpy": GB/s, "latency": us}
    cmd = [shardrun, "job.ini", "--nproc-per-node", str(n), "--results", "results.json",
           "--set", f"task.min_bytes={size}", "--set", f"task.max_bytes={size}", "--set", f"task.iters={ITERS[size]}",
           "--set", f"torch.transport={transport}", "--set", "task.latency_iters=5000"]
    log = run(cmd)
    ranks = json.load(open("results.json"))
    rows = {op: (int(b), float(bw), int(e)) for b, op, bw, e in ROW.findall(log)}
    if (len(ranks) != n or any(r.get("exit_code") != 0 or r.get("errors") != 0 for r in ranks)
            or sorted(rows) != ["all_gather", "all_reduce", "reduce_scatter"]
            or any(b != size or e != 0 for b, _, e in rows.values())):
        sys.exit(f"FAILED: unexpected pgbench results: {' '.join(cmd)}\n{log}")
    mc, lat = MEMCPY.search(log), LATENCY.search(log)
    if not mc or not lat or lat.group(1) != transport:
        sys.exit(f"FAILED: no memcpy or latency line over {transport}: {' '.join(cmd)}\n{log}")
    res = {op: bw for op, (_, bw, _) in rows.items()}
    res.update(memcpy=float(mc.group(1)), latency=float(lat.group(2)))
    return res

def torch_run(n, sizes):  # {(size, op): algbw GB/s}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(n),
           "--redirects", "1", "--tee", "1", "--monitor_interval", "0.1", peer, "torch.out"]
    cmd += [f"{s}:{ITERS[s]}" for s in sizes]
    log = run(cmd, tries=3)  # torchrun's own rendezvous sometimes loses its store on a loaded machine
    res = {(int(s), op): float(bw) for s, op, _, bw in (l.split() for l in open("torch.out"))}
    if sorted(res) != sorted((s, op) for s in sizes for op in ("all_gather", "all_reduce")):
        sys.exit(f"FAILED: unexpected torch results: {' '.join(cmd)}\n{log}")
    return res

results = {}  # (n, size, op, side) -> [GB/s per round]
for n in (2, 4):
    for _ in range(ROUNDS):
        for size in ITERS:
            for transport in ("shm", "tcp"):
                for op, bw in shardrun_run(n, size, transport).items():
                    results.setdefault((n, size, op, transport), []).append(bw)
        for (size, op), bw in torch_run(n, list(ITERS)).items():
            results.setdefault((n, size, op, "torch"), []).append(bw)
med = {k: statistics.median(v) for k, v in results.items()}

def busbw(n, op, algbw):  # nccl-tests' bus bandwidth
    return algbw * (2 * (n - 1) / n if op == "all_reduce" else (n - 1) / n)

print(f"algbw GB/s, median of {ROUNDS} rounds; torch 1.13's Gloo has no reduce_scatter; busbw/memcpy: the shm "
      f"bus bandwidth over one thread's memcpy of the same size in the same run")
print(f"{'N':>2} {'size':>7} {'op':<15} {'shm':>8} {'tcp':>8} {'torch':>8} {'shm/tcp':>8} {'shm/torch':>9} "
      f"{'memcpy':>8} {'busbw/memcpy':>12}")
for n in (2, 4):
    for size in ITERS:
        mc = med[(n, size, "memcpy", "shm")]
        for op in ("all_gather", "reduce_scatter", "all_reduce"):
            s, t, tt = med[(n, size, op, "shm")], med[(n, size, op, "tcp")], med.get((n, size, op, "torch"))
            ttcol, rcol = (f"{tt:8.3f}", f"{s / tt:8.2f}x") if tt else (f"{'n/a':>8}", f"{'n/a':>9}")
            print(f"{n:>2} {size // MiB:>3} MiB {op:<15} {s:8.3f} {t:8.3f} {ttcol} {s / t:7.2f}x {rcol} {mc:8.2f} "
                  f"{busbw(n, op, s) / mc:12.2f}")
for n in (2, 4):
    print(f"8-byte all_reduce latency on {n} ranks (us, median of rounds): shm "
          f"{statistics.median(v for (m, _, op, tr), vs in results.items() if m == n and op == 'latency' and tr == 'shm' for v in vs):.2f}"
          f", tcp {statistics.median(v for (m, _, op, tr), vs in results.items() if m == n and op == 'latency' and tr == 'tcp' for v in vs):.2f}")

def target(name, ok, detail):
    print(f"target {name}: " + ("met" if ok else "NOT met") + f" ({detail})")

for op in ("all_gather", "reduce_scatter"):
    r = busbw(2, op, med[(2, 64 * MiB, op, "shm")]) / med[(2, 64 * MiB, "memcpy", "shm")]
    target(f"64 MiB {op} on 2 ranks over shm, bus bandwidth >= 70% of one thread's memcpy", r >= 0.7, f"{r:.0%}")
lat = statistics.median(v for (m, _, op, tr), vs in results.items() if m == 2 and op == "latency" and tr == "shm" for v in vs)
target("8-byte all_reduce on 2 ranks over shm <= 10 us", lat <= 10, f"{lat:.2f} us")
# the Gloo path's own targets, on the tcp column
for n in (2, 4):
    r = med[(n, 64 * MiB, "all_gather", "tcp")] / med[(n, 64 * MiB, "all_gather", "torch")]
    target(f"tcp all_gather >= 2x torch at 64 MiB on {n} ranks", r >= 2, f"{r:.2f}x")
worst = min(med[(n, s, "all_reduce", "tcp")] / med[(n, s, "all_reduce", "torch")] for n in (2, 4) for s in ITERS)
target("tcp all_reduce >= 1x torch", worst >= 1, f"worst {worst:.2f}x")
PY
