#!/usr/bin/python3
"""Reference LoRA in PyTorch for the LoRA tests, written from HF PEFT's formulas (peft/tuners/lora:
a LoRA "Linear" layer, LoraModel's target matching, get_delta_weight; peft/utils/save_and_load's
adapter names) over the GPT-2, BLOOM and Llama references (tests/gpt2/gpt2_torch.py,
tests/bloom/bloom_torch.py, tests/llama/llama_torch.py; Llama's config.json with --config).  Run it as /usr/bin/python3 (Debian's torch 1.13 CPU + numpy).

A targeted linear layer (GPT-2's Conv1D, weight [in, out]; BLOOM's and Llama's nn.Linear, weight
[out, in]):
    y = base(x) + lora_B(lora_A(x)) * scaling,   scaling = lora_alpha / r
    lora_A = nn.Linear(in, r, bias=False)  (weight [r, in]),  lora_B = nn.Linear(r, out, bias=False)
With lora_dropout = p > 0, in training (PEFT's nn.Dropout(p), inverted):
    y = base(x) + lora_B(lora_A(dropout(x))) * scaling,   dropout(x) = mask * x / (1 - p)
where the mask is not torch's random one but the C task's counter hash, implemented here from its
definition in models/transformer/lora.h ("Dropout"): u = m(m(m(m(m(m(seed) ^ step) ^ sample) ^
position) ^ site) ^ feature), m = splitmix64's output, site = block * 256 + the linear's index in
the family's list below; dropped when (u >> 11) < floor(p * 2^53).  So the same elements drop.
Merged: W += transpose(B @ A, fan_in_fan_out) * scaling  (fan_in_fan_out: Conv1D's [in, out]).
PEFT saves "base_model.model.<module path>.lora_A.weight" / ".lora_B.weight" (no adapter name).

    lora_torch.py init OUT.safetensors --family gpt2|bloom --base BASE.safetensors --r R
                       --targets NAME[,NAME...] --seed S
        BASE's tensors plus, for every block's linear whose path matches a target (PEFT's rule: the
        path equals it or ends with "." + it), lora_A ~ U(+-1/sqrt(in)) (PEFT's kaiming-uniform, a =
        sqrt(5)) and lora_B ~ N(0, 0.1) -- not PEFT's zeros, so that lora_A's gradient is not 0.

    lora_torch.py check DUMP.safetensors WEIGHTS.safetensors --family F --n_head H --alpha A
                        [--grads OPTIM.safetensors [--frozen]] [--tol 1e-4] [--config CONFIG.json]
        The C task's dump (input_ids, labels, logits, loss) against the model of WEIGHTS (base +
        adapters; r from the shapes), float64 reference, as gpt2_torch.py check.  With --grads: each
        adapter's gradient against OPTIM's "<name>.exp_avg" (one AdamW step, beta1 = 0); with
        --frozen, OPTIM must hold no state for any base parameter.  With --dropout P (and --seed S,
        the job's seed, default 42): the adapters' input dropped as the C task drops it at step 0,
        from the dump's sample_index.  Exit 1 on a failure, 2 on bad input.

    lora_torch.py merge WEIGHTS.safetensors --family F --alpha A --out MERGED.safetensors
        PEFT's merge_and_unload: the base weights with every adapter folded in, adapters dropped.

    lora_torch.py adapter DIR --family F --n_layer L --r R --alpha A --targets NAMES [--dropout P]
        DIR's adapter_model.safetensors holds exactly PEFT's names and shapes for these adapters, equal
        to the lora_* tensors of DIR's model.safetensors, and DIR's adapter_config.json says what PEFT's
        LoraConfig would (peft_type LORA, r, lora_alpha, lora_dropout (P, default 0.0), target_modules,
        fan_in_fan_out, bias none, task_type CAUSAL_LM).  Exit 1 on a mismatch.
"""
import argparse
import json
import math
import os
import re
import sys

import numpy as np
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "gpt2"))
sys.path.insert(0, os.path.join(HERE, "..", "bloom"))
sys.path.insert(0, os.path.join(HERE, "..", "llama"))
import gpt2_torch as g  # noqa: E402
import bloom_torch as b  # noqa: E402
import llama_torch as lt  # noqa: E402

# each family's block linears (path in the block), where its blocks are, and whether its weights
# are stored [in, out] (PEFT's fan_in_fan_out)
FAMILIES = {
    "gpt2": (["attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj"], True),
    "bloom": (["self_attention.query_key_value", "self_attention.dense", "mlp.dense_h_to_4h", "mlp.dense_4h_to_h"],
              False),
    "llama": (["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj", "mlp.gate_proj",
               "mlp.up_proj", "mlp.down_proj"], False),
}
BLOCKS = {"gpt2": "transformer.h", "bloom": "transformer.h", "llama": "model.layers"}
LORA = re.compile(r"^(.+)\.lora_([AB])\.weight$")
PEFT_PREFIX = "base_model.model."


def peft_matches(path, name):
    return path == name or path.endswith("." + name)


def targeted(family, names):
    return [p for p in FAMILIES[family][0] if any(peft_matches(p, n) for n in names)]


def in_out(family, weight):
    """(in, out) features of a linear's weight: Conv1D [in, out], nn.Linear [out, in]"""
    return tuple(weight.shape) if FAMILIES[family][1] else tuple(reversed(weight.shape))


# The dropout's hash (models/transformer/lora.h, "Dropout"), in numpy's wrapping uint64 arithmetic
U64 = np.uint64


def mix64(z):
    """m(z): splitmix64's output for state z (uint64 arrays)"""
    with np.errstate(over="ignore"):
        z = z + U64(0x9e3779b97f4a7c15)
        z = (z ^ (z >> U64(30))) * U64(0xbf58476d1ce4e5b9)
        z = (z ^ (z >> U64(27))) * U64(0x94d049bb133111eb)
        return z ^ (z >> U64(31))


def dropout_factors(p, seed, step, samples, T, site, n_in):
    """[B, T, in] float64: 0 where lora.h's hash drops the element, 1 / (1 - p) where it keeps it"""
    key = mix64(mix64(mix64(np.array([seed], U64)) ^ U64(step)) ^ np.asarray(samples, np.int64).astype(U64))
    row = mix64(mix64(key[:, None] ^ np.arange(T, dtype=U64)[None, :]) ^ U64(site))
    u = mix64(row[:, :, None] ^ np.arange(n_in, dtype=U64)[None, None, :])
    threshold = U64(int(p * 2.0**53))  # p * 2^53 is exact; int() truncates as C's cast does
    return np.where((u >> U64(11)) < threshold, 0.0, 1.0 / (1.0 - p))


# the dropout of the next forward: dict(p, seed, step, samples), or None (no dropout: eval, p = 0)
DROPOUT = None


class LoraLinear(nn.Module):
    """A base Conv1D / nn.Linear with PEFT's LoRA beside it; parameters weight, bias, lora_A.weight,
    lora_B.weight (the base's tensors are shared, not copied).  site: the dropout's block * 256 +
    linear index."""

    def __init__(self, base, r, alpha, fan_in_fan_out, site=0):
        super().__init__()
        self.site = site
        self.weight, self.bias = base.weight, base.bias
        n_in, n_out = base.weight.shape if fan_in_fan_out else reversed(base.weight.shape)
        dt = base.weight.dtype
        self.lora_A = nn.Linear(n_in, r, bias=False).to(dt)
        self.lora_B = nn.Linear(r, n_out, bias=False).to(dt)
        self.scaling = alpha / r
        object.__setattr__(self, "_base", base)  # called, not registered: its parameters are ours

    def dropout(self, x):
        if DROPOUT is None:
            return x
        d = DROPOUT
        f = dropout_factors(d["p"], d["seed"], d["step"], d["samples"], x.shape[1], self.site, x.shape[2])
        return x * torch.from_numpy(f).to(x.dtype)

    def forward(self, x):
        return self._base(x) + self.lora_B(self.lora_A(self.dropout(x))) * self.scaling


def split(tensors):
    base = {k: v for k, v in tensors.items() if not LORA.match(k)}
    lora = {k: v for k, v in tensors.items() if LORA.match(k)}
    return base, lora


def build(family, tensors, n_head, alpha, dtype, freeze=True, config=None):
    """(model with adapters, config) from base + lora tensors (config: Llama's config.json)"""
    base, lora = split(tensors)
    if family == "llama":
        model, cfg = lt.builder(config)(base, n_head, dtype)
    else:
        model, cfg = (g._gpt2_from if family == "gpt2" else b.model_from_tensors)(base, n_head, dtype)
    fan = FAMILIES[family][1]
    paths = sorted({LORA.match(k).group(1) for k in lora})
    for p in paths:
        parent_name, _, leaf = p.rpartition(".")
        parent = model.get_submodule(parent_name)
        a, bb = lora[p + ".lora_A.weight"], lora[p + ".lora_B.weight"]
        block, _, linear = p[len(BLOCKS[family]) + 1:].partition(".")
        site = int(block) * 256 + FAMILIES[family][0].index(linear)
        wrap = LoraLinear(getattr(parent, leaf), a.shape[0], alpha, fan, site)
        with torch.no_grad():
            wrap.lora_A.weight.copy_(torch.from_numpy(np.asarray(a, np.float64)))
            wrap.lora_B.weight.copy_(torch.from_numpy(np.asarray(bb, np.float64)))
        setattr(parent, leaf, wrap)
    if freeze:
        for n, prm in model.named_parameters():
            prm.requires_grad_(".lora_" in n)
    return model, cfg


def cmd_init(a):
    t = g.read_safetensors(a.base)
    names = [n for n in a.targets.split(",") if n]
    gen = torch.Generator().manual_seed(a.seed)
    L = len({k.split(".")[2] for k in t if k.startswith(BLOCKS[a.family] + ".")})
    out, paths = dict(t), set()
    for layer in range(L):
        for p in FAMILIES[a.family][0]:  # PEFT matches the module's full name: "c_attn", "h.0.attn.c_attn"
            if not any(peft_matches(f"{BLOCKS[a.family]}.{layer}.{p}", n) for n in names):
                continue
            paths.add(p)
            n_in, n_out = in_out(a.family, t[f"{BLOCKS[a.family]}.{layer}.{p}.weight"])
            bound = 1.0 / math.sqrt(n_in)  # kaiming_uniform_(a=sqrt(5)) on [r, in]
            A = (torch.rand(a.r, n_in, generator=gen, dtype=torch.float64) * 2 - 1) * bound
            B = 0.1 * torch.randn(n_out, a.r, generator=gen, dtype=torch.float64)
            out[f"{BLOCKS[a.family]}.{layer}.{p}.lora_A.weight"] = A.numpy().astype(np.float32)
            out[f"{BLOCKS[a.family]}.{layer}.{p}.lora_B.weight"] = B.numpy().astype(np.float32)
    if not paths:
        raise ValueError(f"--targets {a.targets} names no {a.family} linear")
    g.write_safetensors(a.out, out)
    print(f"wrote {a.out}: {len(out) - len(t)} adapter tensors on {', '.join(sorted(paths))} of {L} layers")
    return 0


def cmd_check(a):
    dump, weights = g.read_safetensors(a.dump), g.read_safetensors(a.weights)
    ids, labels = g._dump_inputs(dump, a.dump)
    global DROPOUT
    DROPOUT = None  # (main() may run several checks in one process)
    if a.dropout:
        samples = np.asarray(g._get(dump, "sample_index", a.dump)).astype(np.int64).reshape(-1)
        if samples.shape[0] != ids.shape[0] or (samples < 0).any():
            raise ValueError(f"{a.dump}: sample_index {samples.tolist()} does not fit {ids.shape[0]} samples")
        DROPOUT = dict(p=a.dropout, seed=a.seed, step=0, samples=samples)
    runs = {}
    for dt in (torch.float64, torch.float32):
        m, cfg = build(a.family, weights, a.n_head, a.alpha, dt, config=a.config)
        g._check_range(ids, cfg)
        logits, loss = m(ids, labels)
        if a.grads:
            loss.backward()
        runs[dt] = (m, logits.detach().to(torch.float64).numpy(), loss.item())
    (m64, l64, loss64), (m32, l32, loss32) = runs[torch.float64], runs[torch.float32]
    c_logits = np.asarray(g._get(dump, "logits", a.dump))
    c_loss = np.asarray(g._get(dump, "loss", a.dump)).reshape(-1)
    if c_logits.shape != l64.shape:
        raise ValueError(f"{a.dump}: logits {list(c_logits.shape)}, want {list(l64.shape)}")
    print(f"loss: C {float(c_loss[0]):.9g}, torch float64 {loss64:.9g}, torch float32 {loss32:.9g}")
    rep = g._Report(a.tol)
    rep.line("logits", c_logits, l64, l32)
    rep.line("loss", c_loss, np.array([loss64]), np.array([loss32]))
    if a.grads:
        optim = g.read_safetensors(a.grads)
        p32 = dict(m32.named_parameters())
        nlora = 0
        for name, p in m64.named_parameters():
            key = name + ".exp_avg"
            if not p.requires_grad:
                if a.frozen and key in optim:
                    rep.missing(name, f"{a.grads} holds {key}: a frozen parameter has optimizer state")
                continue
            nlora += 1
            if key not in optim:
                rep.missing(name, f"no {key} in {a.grads}")
                continue
            rep.line(name + ".grad", optim[key], g._grad_of(p), g._grad_of(p32[name]))
        if nlora == 0:
            rep.missing("adapters", f"{a.weights} holds no lora_A/lora_B tensors")
    print(f"checked {rep.n} tensors, worst relative difference {rep.worst:.3e}"
          + (f", {rep.failed} FAILED" if rep.failed else ""))
    return 1 if rep.failed else 0


def merged(family, tensors, alpha):
    base, lora = split(tensors)
    fan = FAMILIES[family][1]
    out = {k: np.asarray(v, np.float64) for k, v in base.items()}
    for p in sorted({LORA.match(k).group(1) for k in lora}):
        A = np.asarray(lora[p + ".lora_A.weight"], np.float64)
        B = np.asarray(lora[p + ".lora_B.weight"], np.float64)
        delta = (B @ A) * (alpha / A.shape[0])
        out[p + ".weight"] = out[p + ".weight"] + (delta.T if fan else delta)
    return {k: v.astype(np.float32) for k, v in out.items()}


def cmd_merge(a):
    out = merged(a.family, g.read_safetensors(a.weights), a.alpha)
    g.write_safetensors(a.out, out)
    print(f"wrote {a.out}: {len(out)} tensors")
    return 0


def cmd_adapter(a):
    bad = []
    st, meta = g.read_safetensors(os.path.join(a.dir, "adapter_model.safetensors"), with_metadata=True)
    model = g.read_safetensors(os.path.join(a.dir, "model.safetensors"))
    names = [n for n in a.targets.split(",") if n]
    want = {}
    for layer in range(a.n_layer):
        for p in targeted(a.family, names):
            path = f"{BLOCKS[a.family]}.{layer}.{p}"
            n_in, n_out = in_out(a.family, model[path + ".weight"])
            want[f"{PEFT_PREFIX}{path}.lora_A.weight"] = (a.r, n_in)
            want[f"{PEFT_PREFIX}{path}.lora_B.weight"] = (n_out, a.r)
    if set(st) != set(want):
        bad.append(f"names: missing {sorted(set(want) - set(st))[:4]}, unexpected {sorted(set(st) - set(want))[:4]}")
    for k, shape in want.items():
        if k in st:
            if tuple(st[k].shape) != shape or st[k].dtype != np.float32:
                bad.append(f"{k}: {st[k].dtype} {list(st[k].shape)}, PEFT writes float32 {list(shape)}")
            elif not np.array_equal(st[k], model.get(k[len(PEFT_PREFIX):])):
                bad.append(f"{k} differs from model.safetensors' {k[len(PEFT_PREFIX):]}")
    if meta.get("format") != "pt":
        bad.append(f"metadata {meta}, PEFT writes format pt")
    with open(os.path.join(a.dir, "adapter_config.json")) as f:
        cfg = json.load(f)
    expect = {"peft_type": "LORA", "r": a.r, "lora_alpha": a.alpha, "bias": "none", "task_type": "CAUSAL_LM",
              "fan_in_fan_out": FAMILIES[a.family][1], "lora_dropout": a.dropout, "inference_mode": True,
              "modules_to_save": None}
    for k, v in expect.items():
        if k not in cfg or cfg[k] != v:
            bad.append(f"adapter_config.json: {k} = {cfg.get(k, '(absent)')!r}, want {v!r}")
    if sorted(cfg.get("target_modules") or []) != sorted(names):
        bad.append(f"adapter_config.json: target_modules {cfg.get('target_modules')}, want {names}")
    for line in bad:
        print("FAIL:", line)
    print(f"adapter files in {a.dir}: {len(st)} tensors, {len(bad)} problem(s)")
    return 1 if bad else 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    fam = dict(choices=sorted(FAMILIES), required=True)
    p = sub.add_parser("init")
    p.add_argument("out")
    p.add_argument("--family", **fam)
    p.add_argument("--base", required=True)
    p.add_argument("--r", type=int, required=True)
    p.add_argument("--targets", required=True)
    p.add_argument("--seed", type=int, default=1)
    p = sub.add_parser("check")
    p.add_argument("dump")
    p.add_argument("weights")
    p.add_argument("--family", **fam)
    p.add_argument("--n_head", type=int, required=True)
    p.add_argument("--alpha", type=float, required=True)
    p.add_argument("--grads")
    p.add_argument("--frozen", action="store_true")
    p.add_argument("--config", help="Llama: the HF config.json")
    p.add_argument("--tol", type=float, default=1e-4)
    p.add_argument("--dropout", type=float, default=0.0, help="lora_dropout (the job's)")
    p.add_argument("--seed", type=int, default=42, help="the job's seed (its default: 42)")
    p = sub.add_parser("merge")
    p.add_argument("weights")
    p.add_argument("--family", **fam)
    p.add_argument("--alpha", type=float, required=True)
    p.add_argument("--out", required=True)
    p = sub.add_parser("adapter")
    p.add_argument("dir")
    p.add_argument("--family", **fam)
    p.add_argument("--n_layer", type=int, required=True)
    p.add_argument("--r", type=int, required=True)
    p.add_argument("--alpha", type=float, required=True)
    p.add_argument("--targets", required=True)
    p.add_argument("--dropout", type=float, default=0.0)
    a = ap.parse_args(argv)
    return g.run_command("lora_torch.py", a, {"init": cmd_init, "check": cmd_check, "merge": cmd_merge,
                                              "adapter": cmd_adapter})


if __name__ == "__main__":
    sys.exit(main())
