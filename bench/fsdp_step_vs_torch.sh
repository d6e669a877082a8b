#!/usr/bin/env bash
# FSDP training step time: shardrun's FSDP engine and trainer on the toy model task
# (examples/toy/toy_model.c) at world size 1, 2 and 4, with and without prefetch, against the same
# model written in PyTorch (bench/toy_torch_peer.py), same machine, same run.
#   model:    vocab 256, dim 128, seq 32, blocks 8 (4 MLPBlock + 4 MixerBlock, 636k parameters),
#             per-device batch 4 (global batch 4 x N), AdamW (lr 1e-3, weight decay 0.1, linear
#             schedule, 2 warm-up steps), max_grad_norm 0.5 (clipping active), fp32
#   shardrun: BUILD_DIR/shardrun job.ini --nproc-per-node N    (job.ini: task = BUILD_DIR/examples/
#             toy.so, plugins = torch,accelerate, [torch] backend = gloo, master_port = 0,
#             FULL_SHARD, TRANSFORMER_BASED_WRAP on MLPBlock,MixerBlock, logging_steps = 1);
#             prefetch on: backward_prefetch BACKWARD_PRE + forward_prefetch true,
#             prefetch off: NO_PREFETCH + false.  A step's time is rank 0's interval between two
#             step log lines (B*T*N tokens / the logged tokens/s); --results is checked (N ranks,
#             exit_code 0, every step done) and so is the engine's description of the prefetch mode.
#   torch:    world size 1: /usr/bin/python3 toy_torch_peer.py (one process); 2 and 4: DDP over Gloo,
#             /usr/bin/python3 -m torch.distributed.run --standalone --nproc_per_node N --redirects 1
#             --tee 1 --monitor_interval 0.1 toy_torch_peer.py  (torch's FSDP does not run on CPU);
#             the peer times each step itself (time.perf_counter, rank 0) and must have as many
#             parameters as shardrun reports.  torch has no prefetch: both rows show the same runs.
# torchrun flags: see launch_vs_torchrun.sh.  Threads: OMP_NUM_THREADS=1 for every run and
# torch.set_num_threads(1) (the toy task computes on one thread; torchrun and shardrun would set
# OMP_NUM_THREADS=1 for N > 1 anyway); torch at world size 1 with 2 threads is also run each round,
# for reference.  Per run: the median step time over the steps after the first SKIP; per
# configuration: the median of ROUNDS runs.  Rounds interleave shardrun (both prefetch modes, their
# order alternating) and torch, so that drift in the machine's load hits both.  Other work on the
# machine shows up directly in these numbers: the script prints the CPU time that processes other
# than its own used meanwhile (busy time in /proc/stat minus its children's rusage), in cores.
# Usage: bench/fsdp_step_vs_torch.sh [BUILD_DIR]   (default: the source tree's build/)
#        exits non-zero if any run fails
set -euo pipefail
[ $# -le 1 ] || { echo "usage: $0 [BUILD_DIR]" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
[ -x "$build/shardrun" ] && [ -f "$build/examples/toy.so" ] || { echo "$0: build $build first" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/job.ini" <<EOF
[shardrun]
task = $build/examples/toy.so
plugins = torch,accelerate
master_port = 0

[torch]
backend = gloo

[accelerate]
fsdp.sharding_strategy = FULL_SHARD
fsdp.auto_wrap_policy = TRANSFORMER_BASED_WRAP
fsdp.transformer_layer_cls_to_wrap = MLPBlock,MixerBlock

[task]
EOF

cd "$tmp"
export OMP_NUM_THREADS=1
# TMPDIR: torchrun's --redirects log dirs (torchelastic_*) land in $tmp and are removed with it.
BENCH_DIR="$here" TMPDIR="$tmp" /usr/bin/python3 - "$build/shardrun" "$here/toy_torch_peer.py" <<'PY'
import json, os, re, resource, statistics, subprocess, sys, time

shardrun, peer = sys.argv[1], sys.argv[2]
TASK = {"vocab": 256, "dim": 128, "seq": 32, "blocks": 8, "samples": 4096, "per_device_train_batch_size": 4,
        "max_steps": 18, "warmup_steps": 2, "learning_rate": 1e-3, "weight_decay": 0.1, "max_grad_norm": 0.5,
        "logging_steps": 1}
SKIP = 3     # warm-up steps left out of each run's median
ROUNDS = 3
SIZES = (1, 2, 4)
MODES = {"on": ("BACKWARD_PRE", "true"), "off": ("NO_PREFETCH", "false")}
STEP = re.compile(r"^(?:\[rank0\]: )?step (\d+)/(\d+)  .*  (\d+) tokens/s ", re.M)

def run(cmd, env=None):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"FAILED (exit {p.returncode}): {' '.join(cmd)}\n{p.stdout}")
    return p.stdout

def shardrun_run(n, mode):  # (median step ms after SKIP, model_params)
    bp, fp = MODES[mode]
    cmd = [shardrun, "job.ini", "--nproc-per-node", str(n), "--results", "results.json",
           "--set", f"accelerate.fsdp.backward_prefetch={bp}", "--set", f"accelerate.fsdp.forward_prefetch={fp}"]
    for k, v in TASK.items():
        cmd += ["--set", f"task.{k}={v}"]
    log = run(cmd)
    ranks = json.load(open("results.json"))
    steps = {int(s): int(t) for s, total, t in STEP.findall(log)}
    want = f"backward prefetch {bp}, forward prefetch {'on' if fp == 'true' else 'off'}"
    if (len(ranks) != n or any(r.get("exit_code") != 0 or r.get("world_size") != n
                               or r.get("global_step") != TASK["max_steps"] for r in ranks)
            or sorted(steps) != list(range(1, TASK["max_steps"] + 1)) or want not in log):
        sys.exit(f"FAILED: unexpected shardrun results: {' '.join(cmd)}\n{log}")
    tokens = TASK["per_device_train_batch_size"] * TASK["seq"] * n
    ms = [tokens / steps[s] * 1e3 for s in range(SKIP + 1, TASK["max_steps"] + 1)]
    return statistics.median(ms), ranks[0]["model_params"]

def torch_run(n, threads=1):  # (median step ms after SKIP, parameters)
    args = [f"{k}={v}" for k, v in TASK.items() if k != "logging_steps"] + [f"skip={SKIP}", f"threads={threads}"]
    if n == 1:
        cmd = [sys.executable, peer, "torch.json"] + args
    else:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(n),
               "--redirects", "1", "--tee", "1", "--monitor_interval", "0.1", peer, "torch.json"] + args
    if os.path.exists("torch.json"):
        os.remove("torch.json")
    log = run(cmd, env=dict(os.environ, OMP_NUM_THREADS=str(threads)))
    r = json.load(open("torch.json"))
    if r["world_size"] != n or r["threads"] != threads or len(r["steps_ms"]) != TASK["max_steps"]:
        sys.exit(f"FAILED: unexpected torch results: {' '.join(cmd)}\n{log}\n{r}")
    return r["step_ms"], r["params"]

sys.path.insert(0, os.environ["BENCH_DIR"])
from load_meter import LoadMeter  # noqa: E402
meter = LoadMeter()
sr = {}  # (n, mode) -> [run medians]
th = {}  # n -> [run medians]; 0: N=1 with 2 threads
for rnd in range(ROUNDS):
    for n in SIZES:
        for mode in (("on", "off") if rnd % 2 == 0 else ("off", "on")):
            ms, params = shardrun_run(n, mode)
            sr.setdefault((n, mode), []).append(ms)
        ms, tparams = torch_run(n)
        th.setdefault(n, []).append(ms)
        if tparams != params:
            sys.exit(f"FAILED: the torch model has {tparams} parameters, shardrun's toy model {params}")
    th.setdefault(0, []).append(torch_run(1, threads=2)[0])

print(f"toy model: vocab {TASK['vocab']}, dim {TASK['dim']}, seq {TASK['seq']}, blocks {TASK['blocks']} "
      f"({params} parameters), per-device batch {TASK['per_device_train_batch_size']}, fp32, AdamW, clipping")
print(f"step time ms: median over steps {SKIP + 1}-{TASK['max_steps']} of a run, median of {ROUNDS} runs "
      f"(the runs in brackets), 1 thread per rank")
print("shardrun: FSDP FULL_SHARD; torch: DDP over Gloo (one process at N=1), no prefetch, so both rows show "
      "the same torch runs")
print(f"{'N':>2} {'prefetch':>8} {'shardrun':>9} {'':<20} {'torch':>7} {'':<17} {'torch/shardrun':>14}")
fmt = lambda v: "[" + " ".join(f"{x:.1f}" for x in v) + "]"
for n in SIZES:
    t = statistics.median(th[n])
    for mode in ("on", "off"):
        s = statistics.median(sr[(n, mode)])
        print(f"{n:>2} {mode:>8} {s:9.1f} {fmt(sr[(n, mode)]):<20} {t:7.1f} {fmt(th[n]):<17} {t / s:13.3f}x")
for n in SIZES:
    on, off = statistics.median(sr[(n, "on")]), statistics.median(sr[(n, "off")])
    print(f"prefetch effect at N={n}: off/on = {off / on:.3f} (prefetch saves {off - on:.1f} ms per step)")
print(f"reference: torch at N=1 with 2 threads: {statistics.median(th[0]):.1f} ms per step {fmt(th[0])}")
wall, other = meter.wall(), meter.other_cores()
print(f"total {wall:.0f} s; other processes used {other:.2f} of {os.cpu_count()} cores meanwhile"
      + (" (the numbers above are disturbed)" if other > 0.2 else ""))
PY
