#!/usr/bin/python3
"""Checks for gpt2_generate (tests/gpt2/generate.sh), on the files its --logits flag writes:
input_ids I32 [1, T] (prompt and continuation), prompt_length I32 [1], logits F32 [steps, V] (row i:
the logits that picked token prompt_length + i).  Run as /usr/bin/python3 (torch 1.13 + numpy).

    generate_check.py init OUT.safetensors --n_layer L --n_head H --n_embd C --n_positions P
                           --vocab_size V --seed S [--std X]
        Random GPT-2 weights with a larger spread than gpt2_torch.py's (weights N(0, std)), so the
        logits of one position differ clearly and the argmax is not a near tie.  With --hub, as the
        Hub's files are: names without "transformer.", F16, h.N.attn.bias buffers, no n_head.

    generate_check.py greedy RUN.safetensors WEIGHTS.safetensors --n_head H
                             [--family gpt2|bloom|llama] [--config CONFIG.json]
        The training forward's logits (the family's PyTorch reference in float64, one forward over
        the whole sequence: tests/gpt2/gpt2_torch.py's GPT-2, tests/bloom/bloom_torch.py's BLOOM
        with --n_head, tests/llama/llama_torch.py's Llama from --config) at every position that
        picked a token: each continuation token must be
        their argmax.  A position where torch's two best logits are within 1e-5 of the largest
        logit is a tie either answer may take (counted, printed).  Also checks that the C logits
        of every step match torch's within --tol of the largest.  Exit 1 on any difference.

    generate_check.py same A.safetensors B.safetensors [--tol 1e-4]
        A and B generated the same ids, and every step's logits agree: max|a - b| <= tol * max|b|
        per step.  Exit 1 otherwise.
"""
import argparse
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt2_torch as ref  # noqa: E402


def load_run(path):
    t = ref.read_safetensors(path)
    for k in ("input_ids", "prompt_length", "logits"):
        if k not in t:
            raise ValueError(f"{path}: no tensor {k!r}; was it written by gpt2_generate --logits?")
    ids = t["input_ids"].reshape(-1).astype(np.int64)
    return ids, int(t["prompt_length"].reshape(-1)[0]), t["logits"].astype(np.float64)


def cmd_init(a):
    cfg = ref.GPT2Config(a.n_layer, a.n_head, a.n_embd, a.n_positions, a.vocab_size)
    model = ref.GPT2(cfg).to(torch.float64)
    g = torch.Generator().manual_seed(a.seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            r = torch.randn(p.shape, generator=g, dtype=torch.float64)
            p.copy_(1.0 + 0.1 * r if name.endswith(("ln_1.weight", "ln_2.weight", "ln_f.weight")) else a.std * r)
    tensors = ref.state_tensors(model, prefix=not a.hub)
    if a.hub:  # the Hub's gpt2/model.safetensors: F16 here, mask buffers, no n_head anywhere
        tensors = {k: v.astype(np.float16) for k, v in tensors.items()}
        for i in range(cfg.n_layer):
            tensors[f"h.{i}.attn.bias"] = np.tril(np.ones((1, 1, cfg.n_positions, cfg.n_positions), np.float16))
    ref.write_safetensors(a.out, tensors, None if a.hub else {"format": "pt", "n_head": cfg.n_head})
    print(f"wrote {a.out}: {cfg}, weights N(0, {a.std})")
    return 0


def reference_model(a):
    """the family's PyTorch model (float64) holding a.weights"""
    tests = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if a.family == "gpt2":
        return ref.model_from_file(a.weights, a.n_head, torch.float64)
    if a.family == "bloom":
        sys.path.insert(0, os.path.join(tests, "bloom"))
        import bloom_torch
        return bloom_torch.model_from_file(a.weights, a.n_head, torch.float64)
    if not a.config:
        raise ValueError("--family llama needs --config CONFIG.json")
    sys.path.insert(0, os.path.join(tests, "llama"))
    import llama_torch
    return llama_torch.builder(a.config)(ref.read_safetensors(a.weights), None, torch.float64)[0]


def cmd_greedy(a):
    ids, pl, c_logits = load_run(a.run)
    new = len(ids) - pl
    if new < 1:
        raise ValueError(f"{a.run}: no generated token")
    model = reference_model(a)
    with torch.no_grad():
        logits, _ = model(torch.from_numpy(ids).view(1, -1))
    logits = logits[0].numpy()
    bad = ties = 0
    worst = 0.0
    for i in range(new):
        row = logits[pl - 1 + i]
        top = np.sort(row)[-2:]
        scale = np.abs(row).max()
        got, want = int(ids[pl + i]), int(row.argmax())
        if i < len(c_logits):
            worst = max(worst, float(np.abs(c_logits[i] - row).max() / scale))
        if got == want:
            continue
        if top[1] - row[got] <= 1e-5 * scale:
            ties += 1
            continue
        bad += 1
        print(f"position {pl - 1 + i}: the generator picked {got} (torch logit {row[got]:.6g}), torch's argmax is "
              f"{want} ({row[want]:.6g})")
    ok = bad == 0 and worst <= a.tol
    print(f"greedy: {new} tokens after a {pl}-token prompt, {new - bad - ties} equal to torch's argmax, {ties} ties, "
          f"{bad} different; C logits vs torch float64: worst {worst:.3e} of the largest (tol {a.tol:g}): "
          f"{'OK' if ok else 'FAIL'}")
    return 0 if ok else 1


def cmd_same(a):
    ia, pa, la = load_run(a.a)
    ib, pb, lb = load_run(a.b)
    if pa != pb or not np.array_equal(ia, ib):
        n = min(len(ia), len(ib))
        first = next((i for i in range(n) if ia[i] != ib[i]), n)
        print(f"FAIL: the ids differ (prompt {pa} vs {pb} tokens, {len(ia)} vs {len(ib)} ids, first difference at "
              f"{first})")
        return 1
    if la.shape != lb.shape:
        print(f"FAIL: logits {list(la.shape)} vs {list(lb.shape)}")
        return 1
    worst = 0.0
    for i in range(len(la)):
        worst = max(worst, float(np.abs(la[i] - lb[i]).max() / np.abs(lb[i]).max()))
    ok = worst <= a.tol
    print(f"same: {len(la)} steps after a {pa}-token prompt, same ids; logits differ by at most {worst:.3e} of the "
          f"largest (tol {a.tol:g}): {'OK' if ok else 'FAIL'}")
    return 0 if ok else 1


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("init")
    p.add_argument("out")
    for k in ("n_layer", "n_head", "n_embd", "n_positions", "vocab_size", "seed"):
        p.add_argument("--" + k, type=int, required=True)
    p.add_argument("--std", type=float, default=0.1)
    p.add_argument("--hub", action="store_true",
                   help="the Hub's layout: no transformer. prefix, F16, HF's h.N.attn.bias buffers, no metadata")
    p = sub.add_parser("greedy")
    p.add_argument("run")
    p.add_argument("weights")
    p.add_argument("--n_head", type=int)
    p.add_argument("--family", choices=("gpt2", "bloom", "llama"), default="gpt2")
    p.add_argument("--config", help="the Llama family's config.json")
    p.add_argument("--tol", type=float, default=1e-4)
    p = sub.add_parser("same")
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--tol", type=float, default=1e-4)
    a = ap.parse_args(argv)
    torch.set_num_threads(1)
    try:
        return {"init": cmd_init, "greedy": cmd_greedy, "same": cmd_same}[a.cmd](a)
    except (OSError, ValueError, KeyError, ref.SafetensorsError) as e:
        print(f"generate_check.py {a.cmd}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
