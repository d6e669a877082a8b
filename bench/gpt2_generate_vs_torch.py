#!/usr/bin/python3
"""Greedy decoding speed: build/gpt2_generate against a PyTorch GPT-2 with its own key/value cache
(bench/gpt2_generate_torch_peer.py), on the same random GPT-2 124M weights, same prompt, same
number of new tokens, same thread count.

    /usr/bin/python3 bench/gpt2_generate_vs_torch.py [--build build] [--rounds 3] [--threads 1 2]
        [--prompt-len 64] [--new 128] [--weights /tmp/gpt2-124m-random.safetensors]

Weights: HF's gpt2 configuration (12 layers, 12 heads, n_embd 768, context 1024, vocab 50257),
N(0, 0.02), LayerNorm weights 1 + N(0, 0.1) (tests/gpt2/generate_check.py init --seed 1), written
once to --weights (kept: ~500 MB).  The prompt: --prompt-len ids below 257, seeded.  gpt2_generate runs
with byte-level tokens (the task's default) and never picks ids from 257 on; the peer's argmax is
over the same 257 (--allowed 257).  Both compute all 50257 logits every step.

Per round, for each thread count, three programs run one after the other (the order reversed
every other round): OMP_NUM_THREADS=t build/gpt2_generate W --prompt-ids P --temperature 0
--max-new-tokens N --ignore-eos --output ids, whose stderr says "N new tokens in X s"; the peer
with --threads t, its one-token products as torch.addmm (HF's Conv1D); the peer with --matvec
(torch.addmv: BLAS gemv, as gpt2_generate).  tokens/s = new tokens / the decode loop's time (pick,
feed back; prompt excluded; measured the same way on every side).  The table gives the median over
rounds, the rounds in brackets, gpt2_generate's tokens/s over each peer's in the same round (runs
next to each other in time: on a shared machine these ratios mean more than the figures) and their
median, and how many new tokens the peer picked as gpt2_generate did before the first difference
(random weights put near-ties among the logits, where fp32 rounding may go either way).  The last
line says how busy the rest of the machine was.
"""
import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from load_meter import LoadMeter  # noqa: E402

SRC = os.path.dirname(HERE)


def run_c(a, weights, prompt, threads):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    r = subprocess.run([os.path.join(a.build, "gpt2_generate"), weights, "--prompt-ids", prompt, "--temperature", "0",
                        "--max-new-tokens", str(a.new), "--ignore-eos", "--output", "ids"],
                       env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"gpt2_generate failed ({r.returncode}): {r.stderr}")
    m = re.search(r"prompt \d+ tokens in ([0-9.]+) s; (\d+) new tokens in ([0-9.]+) s", r.stderr)
    if not m or int(m.group(2)) != a.new:
        sys.exit(f"gpt2_generate: no '{a.new} new tokens in' line: {r.stderr}")
    ids = [int(x) for x in r.stdout.split()][len(prompt.split()):]
    return {"tokens_per_s": a.new / float(m.group(3)), "prompt_s": float(m.group(1)), "ids": ids}


def run_torch(a, weights, prompt, threads, matvec=False):
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    r = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "gpt2_generate_torch_peer.py"), weights, "--n_head", "12",
                        "--prompt-ids", prompt, "--new", str(a.new), "--threads", str(threads), "--allowed", "257"]
                       + (["--matvec"] if matvec else []), env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"torch peer failed ({r.returncode}): {r.stderr}")
    j = json.loads(r.stdout.strip().splitlines()[-1])
    if j["threads"] != threads:
        sys.exit(f"torch ran {j['threads']} threads, not {threads}")
    return j


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--prompt-len", type=int, default=64)
    ap.add_argument("--new", type=int, default=128)
    ap.add_argument("--weights", default="/tmp/gpt2-124m-random.safetensors")
    a = ap.parse_args()
    if not os.path.exists(a.weights):
        tmp = a.weights + ".tmp"
        subprocess.run(["/usr/bin/python3", os.path.join(SRC, "tests", "gpt2", "generate_check.py"), "init", tmp,
                        "--n_layer", "12", "--n_head", "12", "--n_embd", "768", "--n_positions", "1024",
                        "--vocab_size", "50257", "--seed", "1", "--std", "0.02"], check=True)
        os.replace(tmp, a.weights)
    rng = random.Random(5)
    prompt = " ".join(str(rng.randrange(257)) for _ in range(a.prompt_len))
    sides = (("c", "gpt2_generate"), ("torch", "torch, addmm (HF's)"), ("torch_mv", "torch, addmv"))
    run = {"c": run_c, "torch": run_torch, "torch_mv": lambda *x: run_torch(*x, matvec=True)}
    meter, t0 = LoadMeter(), time.perf_counter()
    res = {(s, t): [] for s, _ in sides for t in a.threads}
    for r in range(a.rounds):
        for t in a.threads:
            order = [s for s, _ in sides]
            for side in order if r % 2 == 0 else reversed(order):
                res[(side, t)].append(run[side](a, a.weights, prompt, t))
    print(f"GPT-2 124M (12 layers, 12 heads, n_embd 768, context 1024, vocab 50257), random weights, fp32, greedy, "
          f"KV cache; prompt {a.prompt_len} tokens, {a.new} new tokens; {a.rounds} rounds, the order reversed every "
          f"other round")
    print(f"{'configuration':<32} {'tokens/s':>9}  {'rounds':<30} {'prompt s':>8}  {'c/this, per round':<22} "
          f"same ids as gpt2_generate")
    for t in a.threads:
        c_runs = res[("c", t)]
        for side, name in sides:
            runs = res[(side, t)]
            tps = [x["tokens_per_s"] for x in runs]
            label = f"{name}, {t} thread{'s' if t > 1 else ''}"
            rounds = "[" + " ".join(f"{x:.1f}" for x in tps) + "]"
            prompt_s = statistics.median(x["prompt_s"] for x in runs)
            ratio = same = ""
            if side != "c":  # the ratio of runs that ran next to each other; its median
                rs = [c["tokens_per_s"] / x for c, x in zip(c_runs, tps)]
                ratio = f"{statistics.median(rs):.2f}x [" + " ".join(f"{x:.2f}" for x in rs) + "]"
                c_ids, t_ids = c_runs[0]["ids"], runs[0]["ids"]
                first = next((i for i in range(len(c_ids)) if c_ids[i] != t_ids[i]), len(c_ids))
                same = f"{first} of {len(c_ids)}"
            print(f"{label:<32} {statistics.median(tps):9.1f}  {rounds:<30} {prompt_s:8.3f}  {ratio:<22} {same}")
    print(f"total {time.perf_counter() - t0:.0f} s; other processes used {meter.other_cores():.2f} of "
          f"{os.cpu_count()} cores meanwhile")
    return 0


if __name__ == "__main__":
    sys.exit(main())
