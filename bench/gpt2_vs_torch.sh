#!/usr/bin/env bash
# GPT-2 training throughput: shardrun's gpt2 task (models/gpt2, its CPU kernels over OpenBLAS's
# OpenMP build) against the same model in PyTorch (bench/gpt2_torch_peer.py), same machine, same
# run, tokens per second at 1 rank and at 2 ranks, plus model FLOP/s against OpenBLAS's sgemm.
#   model:    GPT-2 with 4 layers, n_embd 256, 4 heads, sequence 128 (n_positions 128), vocab 8192,
#             lm_head tied to wte; batch 4 sequences per rank (global 4 x ranks); AdamW (lr 1e-4,
#             constant, weight decay 0.01 on matrices and embeddings, none on LayerNorms and
#             biases), max_grad_norm 1.0 (clip_grad_norm_), fp32.  Parameters must agree: shardrun's
#             model_params (results JSON) = the peer's count (wte once); the script fails otherwise.
#   shardrun: BUILD_DIR/shardrun job.ini --nproc-per-node N --results FILE, job.ini: task =
#             BUILD_DIR/examples/gpt2.so, plugins = torch,accelerate, [torch] backend = gloo,
#             [task] size = tiny, n_layer = 4, n_embd = 256, n_head = 4, n_positions = 128,
#             vocab_size = 8192, max_length = 128, min_chars = 200, data = /usr/share/common-licenses/*
#             (byte-level tokens; min_chars 200 makes every sample a full 128 tokens: the task's data
#             line must say "0.0% padding" and real tokens = samples x 128, checked),
#             per_device_train_batch_size = 4, max_steps = 20, logging_steps = 1,
#             lr_scheduler_type = constant.
#               1 rank:  OMP_NUM_THREADS=2, fsdp.sharding_strategy = NO_SHARD (one rank has nothing to
#                        shard: every parameter stays whole, with no collectives to speak of)
#               2 ranks: OMP_NUM_THREADS=1 each, FULL_SHARD, TRANSFORMER_BASED_WRAP on GPT2Block,
#                        backward_prefetch BACKWARD_PRE (forward prefetch off, the default)
#             OMP_WAIT_POLICY is unset (OpenMP's default) for shardrun.  A step's time is rank 0's
#             interval between two step log lines ("step K/N ... X tokens/s", logging_steps = 1:
#             the trainer's tokens/s is that step's real tokens x ranks / the interval, so the
#             interval = 4 x 128 x ranks / X); train_log.jsonl has no times, so it is not used.
#             --results is checked (N ranks, exit code 0, 20 steps) and so is the engine's
#             description of the strategy and prefetch.
#   torch:    1 rank:  OMP_NUM_THREADS=2 OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 gpt2_torch_peer.py
#                      --mode single --threads 2
#             2 ranks: DDP over Gloo, OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 -m
#                      torch.distributed.run --standalone --nproc_per_node 2 --redirects 1 --tee 1
#                      --monitor_interval 0.1 gpt2_torch_peer.py --mode ddp  (torch's FSDP does not
#                      run on CPU; TMPDIR is a temp dir, so torchelastic's log dirs are removed)
#             both with --warmup 4 --steps 16 and the model/optimizer flags above; the peer times
#             each step itself (time.perf_counter on rank 0: forward, backward, clip, AdamW,
#             zero_grad, the mean loss read back), on random token ids.
# Per run: the median step time over steps 5-20 (the first 4 are warm-up); tokens/s = global
# tokens per step (4 x 128 x ranks) / that median.  Per configuration: the median over ROUNDS runs
# (default 3).  Each round runs all four configurations, the order reversed every other round, so
# that drift in the machine's load hits all of them.
# Model FLOP/s = tokens/s x FLOP per token, FLOP per token = 6 x P + 12 x n_layer x T x n_embd:
# 6 P for the matmuls with every parameter (forward 2, backward 4; P = model_params, wte counted
# once, as the lm_head's matmul) plus the attention's, which has no parameters: per token per layer
# the forward's QK^T and PV are 2 x T x n_embd FLOPs each, taken over the full (unmasked) T = 128 as
# the GEMMs compute them, x3 for forward + backward.  At this size: 6 x 5289472 + 12 x 4 x 128 x 256
# = 33.31 MFLOP per token.  It is given as a fraction of OpenBLAS's sgemm ceiling, measured at the
# start of the same run by bench/gemm_throughput.sh --ceiling: cblas_sgemm on one shape, c_attn's
# forward GEMM 768 x 512 x 256 (NN, the shape as the model calls it), the best of 3 timings of
# >= 0.3 s each, at 1 thread and at 2 threads (one shape, not a mean over the model's shapes: see
# bench/gemm_throughput.sh for all of them); the fraction is of the 2-thread figure (the whole
# machine, 2 cores) and, for reference, of 2 x the 1-thread one (what 2 ranks x 1 thread could reach).
# Other work on the machine shows up directly in these numbers: the script prints the CPU time
# that processes other than its own used meanwhile (busy time in /proc/stat minus its children's
# rusage), in cores.
# --size gpt2: GPT-2 124M instead (HF's sizes: 12 layers, n_embd 768, 12 heads, vocab 50257, n_positions
# 1024; [task] size = gpt2, max_length = 128, so T = 128; batch 4 per rank), 10 steps per run of which
# the first 3 are warm-up, the sgemm ceiling on its c_attn forward shape 2304 x 512 x 768
# (gemm_throughput.sh --ceiling --model gpt2).  FLOP per token = 6 x 124439808 + 12 x 12 x 128 x 768.
# Every size also runs a second PyTorch peer, independent of the project's GPT-2 code:
# gpt2_torch_peer.py --impl torch_nn (nn.Linear, nn.MultiheadAttention, nn.LayerNorm, nn.GELU), one
# process x 2 threads, alternating with the others.  Whatever OPENBLAS_CORETYPE the caller sets reaches
# every run (shardrun's and torch's OpenBLAS alike).
# Usage: bench/gpt2_vs_torch.sh [BUILD_DIR] [--rounds N] [--size small|gpt2]
#        (default: the source tree's build/, 3 rounds, small)
#        exits non-zero if any run fails or a check does not hold
set -euo pipefail
usage="usage: $0 [BUILD_DIR] [--rounds N] [--size small|gpt2]"
here=$(cd "$(dirname "$0")" && pwd)
build_arg="" rounds=3 size=small
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds=${2:?--rounds needs a value}; shift 2 ;;
        --size) size=${2:?--size needs small or gpt2}; shift 2 ;;
        -*) echo "$usage" >&2; exit 2 ;;
        *) [ -z "$build_arg" ] || { echo "$usage" >&2; exit 2; }; build_arg=$1; shift ;;
    esac
done
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] && [[ "$size" =~ ^(small|gpt2)$ ]] || { echo "$usage" >&2; exit 2; }
build=$(cd "${build_arg:-$here/../build}" && pwd)
[ -x "$build/shardrun" ] && [ -f "$build/examples/gpt2.so" ] || { echo "$0: build $build first" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/job.ini" <<EOF
[shardrun]
task = $build/examples/gpt2.so
plugins = torch,accelerate
master_port = 0

[torch]
backend = gloo

[accelerate]
mixed_precision = no
fsdp.sharding_strategy = NO_SHARD

[task]
$(if [ "$size" = gpt2 ]; then echo "size = gpt2"; else printf 'size = tiny\nn_layer = 4\nn_embd = 256\nn_head = 4\nn_positions = 128\nvocab_size = 8192\n'; fi)
max_length = 128
min_chars = 200
data = /usr/share/common-licenses/*
per_device_train_batch_size = 4
max_steps = $([ "$size" = gpt2 ] && echo 10 || echo 20)
logging_steps = 1
learning_rate = 1e-4
lr_scheduler_type = constant
warmup_steps = 0
weight_decay = 0.01
max_grad_norm = 1.0
EOF

cd "$tmp"
# TMPDIR: torchrun's --redirects log dirs (torchelastic_*) land in $tmp and are removed with it.
BENCH_DIR="$here" TMPDIR="$tmp" /usr/bin/python3 - "$build" "$here" "$rounds" "$size" <<'PY'
import json, os, re, resource, statistics, subprocess, sys, time

build, here, ROUNDS, SIZE = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
shardrun, peer = os.path.join(build, "shardrun"), os.path.join(here, "gpt2_torch_peer.py")
if SIZE == "gpt2":
    L, C, NH, T, V, B, NPOS = 12, 768, 12, 128, 50257, 4, 1024
    STEPS, SKIP = 10, 3  # steps per run; the first SKIP are left out of each run's median
else:
    L, C, NH, T, V, B, NPOS = 4, 256, 4, 128, 8192, 4, 128
    STEPS, SKIP = 20, 4
STEP = re.compile(r"^(?:\[rank0\]: )?step (\d+)/(\d+)  .*  (\d+) tokens/s ", re.M)
DATA = re.compile(r"gpt2: data: (\d+) samples of (\d+) tokens \((\d+) real tokens, ([0-9.]+)% padding\)")
PEER_ARGS = ["--n_layer", str(L), "--n_embd", str(C), "--n_head", str(NH), "--seq", str(T), "--vocab", str(V),
             "--n_positions", str(NPOS), "--batch", str(B), "--lr", "1e-4", "--weight_decay", "0.01", "--clip", "1.0",
             "--warmup", str(SKIP), "--steps", str(STEPS - SKIP)]

def run(cmd, env):
    env = {k: v for k, v in env.items() if v is not None}
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"FAILED (exit {p.returncode}): {' '.join(cmd)}\n{p.stdout}")
    return p.stdout

def shardrun_run(n):  # (tokens/s, model_params)
    if n == 1:
        threads, sets, want = 2, ["accelerate.fsdp.sharding_strategy=NO_SHARD"], "FSDP NO_SHARD on 1 rank"
    else:
        threads = 1
        sets = ["accelerate.fsdp.sharding_strategy=FULL_SHARD", "accelerate.fsdp.auto_wrap_policy=TRANSFORMER_BASED_WRAP",
                "accelerate.fsdp.transformer_layer_cls_to_wrap=GPT2Block", "accelerate.fsdp.backward_prefetch=BACKWARD_PRE"]
        want = f"FSDP FULL_SHARD on {n} ranks"
    cmd = [shardrun, "job.ini", "--nproc-per-node", str(n), "--results", "results.json"]
    for s in sets:
        cmd += ["--set", s]
    if os.path.exists("results.json"):
        os.remove("results.json")
    log = run(cmd, dict(os.environ, OMP_NUM_THREADS=str(threads), OMP_WAIT_POLICY=None))
    ranks = json.load(open("results.json"))
    steps = {int(s): int(t) for s, total, t in STEP.findall(log)}
    data = DATA.search(log)
    if (len(ranks) != n or any(r.get("exit_code") != 0 or r.get("world_size") != n or r.get("global_step") != STEPS
                               for r in ranks)
            or len({r["model_params"] for r in ranks}) != 1
            or sorted(steps) != list(range(1, STEPS + 1)) or want not in log
            or (n > 1 and "backward prefetch BACKWARD_PRE" not in log)):
        sys.exit(f"FAILED: unexpected shardrun results: {' '.join(cmd)}\n{log}")
    if (not data or int(data.group(2)) != T or float(data.group(4)) != 0.0
            or int(data.group(3)) != int(data.group(1)) * T):
        sys.exit(f"FAILED: the samples are not all full {T}-token sequences (padding): {' '.join(cmd)}\n{log}")
    tokens = B * T * n
    ms = statistics.median(tokens / steps[s] * 1e3 for s in range(SKIP + 1, STEPS + 1))
    return tokens / ms * 1e3, ranks[0]["model_params"]

def torch_run(n, impl="project"):  # (tokens/s, params)
    if n == 1:
        threads, cmd = 2, [sys.executable, peer, "--mode", "single", "--threads", "2", "--impl", impl]
    else:
        threads = 1
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(n),
               "--redirects", "1", "--tee", "1", "--monitor_interval", "0.1", peer, "--mode", "ddp"]
    cmd += PEER_ARGS + ["--out", "torch.json"]
    if os.path.exists("torch.json"):
        os.remove("torch.json")
    log = run(cmd, dict(os.environ, OMP_NUM_THREADS=str(threads), OMP_WAIT_POLICY="PASSIVE"))
    r = json.load(open("torch.json"))
    if (r["ranks"] != n or r["threads"] != threads or len(r["step_ms"]) != STEPS - SKIP
            or r["tokens_per_step"] != B * T * n):
        sys.exit(f"FAILED: unexpected torch results: {' '.join(cmd)}\n{log}\n{r}")
    return B * T * n / r["step_ms_median"] * 1e3, r["params"]

CONFIGS = [("shardrun", 1), ("torch", 1), ("torch_nn", 1), ("shardrun", 2), ("torch", 2)]
sys.path.insert(0, os.environ["BENCH_DIR"])
from load_meter import LoadMeter  # noqa: E402
meter = LoadMeter()
# the sgemm ceiling first, before any training run ("THREADS GFLOPS" lines)
out = run([os.path.join(here, "gemm_throughput.sh"), build, "--ceiling", "--model", "gpt2" if SIZE == "gpt2" else "small"],
          dict(os.environ, OMP_WAIT_POLICY=None))
try:
    ceiling = {int(t): float(g) for t, g in (line.split() for line in out.splitlines() if line.strip())}
except ValueError:
    ceiling = {}
if sorted(ceiling) != [1, 2] or not all(g > 0 for g in ceiling.values()):
    sys.exit(f"FAILED: unexpected output of gemm_throughput.sh --ceiling: {out!r}")
tps = {c: [] for c in CONFIGS}
params = {}
for rnd in range(ROUNDS):
    for who, n in (CONFIGS if rnd % 2 == 0 else CONFIGS[::-1]):
        t, p = shardrun_run(n) if who == "shardrun" else torch_run(n, "torch_nn" if who == "torch_nn" else "project")
        tps[(who, n)].append(t)
        params.setdefault("torch" if who == "torch_nn" else who, set()).add(p)
if len(params["shardrun"]) != 1 or params["shardrun"] != params["torch"]:
    sys.exit(f"FAILED: parameter counts differ: shardrun {sorted(params['shardrun'])}, torch {sorted(params['torch'])}")
P = params["shardrun"].pop()
flop_tok = 6 * P + 12 * L * T * C

print(f"GPT-2: {L} layers, n_embd {C}, {NH} heads, sequence {T}, vocab {V} ({P} parameters), batch {B} per rank, "
      f"fp32, AdamW, clipping")
print(f"tokens/s = global tokens per step / the median step time over steps {SKIP + 1}-{STEPS} of a run; median of "
      f"{ROUNDS} runs (the runs in brackets)")
print(f"model FLOP per token = 6 x {P} + 12 x {L} x {T} x {C} = {flop_tok / 1e6:.2f} M; sgemm ceiling "
      f"(cblas_sgemm {3 * C} x {B * T} x {C} NN): {ceiling[2]:.1f} GFLOP/s at 2 threads, {ceiling[1]:.1f} at 1 thread; "
      f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}")
hdr = f"{'configuration':<46} {'tokens/s':>9} {'':<26} {'GFLOP/s':>8} {'of 2-thr sgemm':>14} {'of 2x 1-thr':>11}"
print(hdr)
NAMES = {("shardrun", 1): "shardrun 1 rank x 2 threads (NO_SHARD)",
         ("torch", 1): "torch 1 process x 2 threads",
         ("torch_nn", 1): "torch nn.Linear/MHA 1 process x 2 threads",
         ("shardrun", 2): "shardrun 2 ranks x 1 thread (FULL_SHARD)",
         ("torch", 2): "torch DDP (Gloo) 2 ranks x 1 thread"}
med = {}
for c in CONFIGS:
    med[c] = statistics.median(tps[c])
    gf = med[c] * flop_tok / 1e9
    runs = "[" + " ".join(f"{x:.0f}" for x in tps[c]) + "]"
    print(f"{NAMES[c]:<46} {med[c]:9.0f} {runs:<26} {gf:8.1f} {gf / ceiling[2]:14.3f} {gf / (2 * ceiling[1]):11.3f}")
for n in (1, 2):
    print(f"shardrun/torch at {n} rank{'s' if n > 1 else ''}: {med[('shardrun', n)] / med[('torch', n)]:.3f}x")
print(f"shardrun/torch nn.Linear/MHA at 1 rank: {med[('shardrun', 1)] / med[('torch_nn', 1)]:.3f}x")
wall, other = meter.wall(), meter.other_cores()
print(f"total {wall:.0f} s; other processes used {other:.2f} of {os.cpu_count()} cores meanwhile"
      + (" (the numbers above are disturbed)" if other > 0.2 else ""))
PY
