#!/usr/bin/python3
"""PEFT's merge_and_unload for tests/lora/merge.sh, written from PEFT's documented semantics in PyTorch
(float64), independently of shardrun merge's C.  Run it as /usr/bin/python3 (Debian's torch 1.13).

For each module PEFT adapts (peft/tuners/lora/model.py, _create_and_replace; layer.py, update_layer):
    r     = rank_pattern[k]  for the first key k (in the file's order) with
            re.match(rf"(.*\\.)?({k})$", module) (peft/utils/other.py, get_pattern_key), else r
    alpha = alpha_pattern[k] likewise, else lora_alpha
    scale = alpha / sqrt(r) with use_rslora, else alpha / r
    W    += scale * (B @ A), transposed when fan_in_fan_out (Conv1D's [in, out] weight)

    merge_ref.py fixture DIR --family linear|conv1d --adapters MODULE=R[,MODULE=R...] [--seed S]
        DIR/model.safetensors: a small base (two blocks; linear: Llama's names, nn.Linear [out, in];
        conv1d: GPT-2's, Conv1D [in, out]) and DIR/adapter_model.safetensors: lora_A [R, in] and
        lora_B [out, R] (both random) on each MODULE, as PEFT saves them.

    merge_ref.py check DIR MERGED.safetensors
        MERGED against the merge of DIR's adapters (DIR/adapter_config.json) into DIR/model.safetensors:
        the same tensors, relative difference below 1e-6.  Exit 1 when not.
"""
import argparse
import json
import math
import os
import re
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpt2"))
import gpt2_torch as g  # noqa: E402  (read_safetensors, write_safetensors)

PREFIX = "base_model.model."
C = 16  # the width


def base_model(family, gen):
    t = {}
    for b in range(2):
        if family == "linear":
            p = f"model.layers.{b}."
            for n in ("q_proj", "k_proj", "v_proj", "o_proj"):
                t[p + f"self_attn.{n}.weight"] = torch.randn(C, C, generator=gen)
            t[p + "mlp.up_proj.weight"] = torch.randn(2 * C, C, generator=gen)
            t[p + "mlp.down_proj.weight"] = torch.randn(C, 2 * C, generator=gen)
            t[p + "input_layernorm.weight"] = torch.randn(C, generator=gen)
        else:
            p = f"transformer.h.{b}."
            t[p + "attn.c_attn.weight"] = torch.randn(C, 3 * C, generator=gen)
            t[p + "attn.c_attn.bias"] = torch.randn(3 * C, generator=gen)
            t[p + "attn.c_proj.weight"] = torch.randn(C, C, generator=gen)
            t[p + "mlp.c_fc.weight"] = torch.randn(C, 4 * C, generator=gen)
            t[p + "ln_1.weight"] = torch.randn(C, generator=gen)
    t["model.embed_tokens.weight" if family == "linear" else "transformer.wte.weight"] = torch.randn(40, C, generator=gen)
    return {k: v.float() for k, v in t.items()}


def cmd_fixture(a):
    gen = torch.Generator().manual_seed(a.seed)
    base = base_model(a.family, gen)
    ad = {}
    for item in a.adapters.split(","):
        module, r = item.split("=")
        w = base[module + ".weight"]
        out, inp = (w.shape[1], w.shape[0]) if a.family == "conv1d" else w.shape
        ad[PREFIX + module + ".lora_A.weight"] = torch.randn(int(r), inp, generator=gen).float() * 0.3
        ad[PREFIX + module + ".lora_B.weight"] = torch.randn(out, int(r), generator=gen).float() * 0.3
    os.makedirs(a.dir, exist_ok=True)
    g.write_safetensors(os.path.join(a.dir, "model.safetensors"), base, {"format": "pt"})
    g.write_safetensors(os.path.join(a.dir, "adapter_model.safetensors"), ad, {"format": "pt"})
    return 0


def pattern_key(keys, module):
    for k in keys:
        if re.match(rf"(.*\.)?({k})$", module):
            return k
    return module


def cmd_check(a):
    with open(os.path.join(a.dir, "adapter_config.json")) as f:
        cfg = json.load(f)  # a dict keeps the file's order, as PEFT's rank_pattern does
    base = g.read_safetensors(os.path.join(a.dir, "model.safetensors"))
    ad = g.read_safetensors(os.path.join(a.dir, "adapter_model.safetensors"))
    want = {k: torch.tensor(v, dtype=torch.float64) for k, v in base.items()}
    ranks, alphas = cfg.get("rank_pattern") or {}, cfg.get("alpha_pattern") or {}
    for name in sorted(ad):
        if not name.endswith(".lora_A.weight"):
            continue
        module = name[len(PREFIX):-len(".lora_A.weight")]
        r = ranks.get(pattern_key(ranks, module), cfg["r"])
        alpha = alphas.get(pattern_key(alphas, module), cfg["lora_alpha"])
        scale = alpha / (math.sqrt(r) if cfg.get("use_rslora") else r)
        A = torch.tensor(ad[name], dtype=torch.float64)
        B = torch.tensor(ad[PREFIX + module + ".lora_B.weight"], dtype=torch.float64)
        assert A.shape[0] == r, f"{module}: lora_A has rank {A.shape[0]}, the config gives {r}"
        delta = (B @ A) * scale
        want[module + ".weight"] += delta.T if cfg.get("fan_in_fan_out") else delta
        print(f"{module}: r {r}, alpha {alpha}, scale {scale:.6g}")
    got = g.read_safetensors(a.merged)
    if sorted(got) != sorted(want):
        print(f"FAIL: the merged tensors {sorted(set(got) ^ set(want))} differ from the base's")
        return 1
    worst, where = 0.0, None
    for k, w in want.items():
        d = float((torch.tensor(got[k], dtype=torch.float64) - w).abs().max()) / max(float(w.abs().max()), 1e-30)
        if d > worst:
            worst, where = d, k
    print(f"merged vs PEFT's merge: worst relative difference {worst:.3e} ({where})")
    return 0 if worst < 1e-6 else 1


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("fixture")
    p.add_argument("dir")
    p.add_argument("--family", choices=("linear", "conv1d"), required=True)
    p.add_argument("--adapters", required=True)
    p.add_argument("--seed", type=int, default=1)
    p = sub.add_parser("check")
    p.add_argument("dir")
    p.add_argument("merged")
    a = ap.parse_args(argv)
    return {"fixture": cmd_fixture, "check": cmd_check}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
