#!/usr/bin/python3
"""PyTorch peer of build/gpt2_generate for bench/gpt2_generate_vs_torch.py: greedy decoding with a
plain GPT-2 (HF's GPT2LMHeadModel math, fp32) and its own key/value cache, on the same weights.

    /usr/bin/python3 bench/gpt2_generate_torch_peer.py WEIGHTS.safetensors --n_head 12 \
        --prompt-ids "1 2 3" --new 128 --threads 2 [--allowed 257]

The model: per layer ln_1, c_attn (x @ W + b), the new token's key and value written into
preallocated caches [heads, n_positions, head size] (no torch.cat), softmax(q k^T / sqrt(d)) v over
the positions so far, c_proj, residual, ln_2, c_fc, GELU (tanh), c_proj, residual; ln_f; logits =
h @ wte^T.  The products are torch.addmm / matmul, as HF's Conv1D computes them; with --matvec a
single token's are torch.addmv / mv instead (BLAS gemv, as gpt2_generate).  The prompt goes through
once (causal mask), then one token at a time.  Greedy: argmax of
the logits of ids < --allowed (gpt2_generate never picks ids its tokenizer cannot print; with the
byte-level tokenizer that is 257), the first largest, as gpt2_generate.

Timing (time.perf_counter, under torch.inference_mode): the prompt's forward, then the decode loop
-- pick a token, feed it back -- for --new tokens, the last one not fed back, exactly as
gpt2_generate counts; tokens/s = new / the loop's time.  Prints one JSON line: prompt_s, decode_s,
tokens_per_s, threads, ids (the new ones).
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "gpt2"))
from gpt2_torch import read_safetensors  # noqa: E402  (numpy safetensors reader)


class CachedGPT2:
    def __init__(self, tensors, n_head, matvec=False):
        self.matvec = matvec
        t = {k[len("transformer."):] if k.startswith("transformer.") else k: torch.from_numpy(v.astype(np.float32))
             for k, v in tensors.items() if not k.endswith((".attn.bias", ".attn.masked_bias"))}
        self.wte, self.wpe = t["wte.weight"], t["wpe.weight"]
        self.V, self.C = self.wte.shape
        self.P = self.wpe.shape[0]
        self.H, self.D = n_head, self.C // n_head
        self.L = 1 + max(int(k.split(".")[1]) for k in t if k.startswith("h."))
        self.layers = [{n: t[f"h.{i}.{n}"] for n in (
            "ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight",
            "attn.c_proj.bias", "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight", "mlp.c_fc.bias",
            "mlp.c_proj.weight", "mlp.c_proj.bias")} for i in range(self.L)]
        self.lnf_w, self.lnf_b = t["ln_f.weight"], t["ln_f.bias"]
        self.k = torch.zeros(self.L, self.H, self.P, self.D)
        self.v = torch.zeros(self.L, self.H, self.P, self.D)
        self.len = 0

    def linear(self, b, x, W):
        """x @ W + b (HF's Conv1D: torch.addmm); --matvec: one token's as torch.addmv (BLAS gemv)"""
        if self.matvec and x.shape[0] == 1:
            return torch.addmv(b, W.t(), x[0]).unsqueeze(0)
        return torch.addmm(b, x, W)

    def forward(self, ids):
        """ids: the next len(ids) tokens; returns the logits [V] of the last one"""
        T, C, H, D, p0 = len(ids), self.C, self.H, self.D, self.len
        x = self.wte[ids] + self.wpe[p0:p0 + T]
        mask = None
        if T > 1:  # a query at p0 + i sees keys 0 .. p0 + i
            mask = torch.ones(T, p0 + T, dtype=torch.bool).tril(diagonal=p0)
        for i, w in enumerate(self.layers):
            h = F.layer_norm(x, (C,), w["ln_1.weight"], w["ln_1.bias"], 1e-5)
            qkv = self.linear(w["attn.c_attn.bias"], h, w["attn.c_attn.weight"])
            q, k, v = (a.view(T, H, D).transpose(0, 1) for a in qkv.split(C, dim=1))  # [H, T, D]
            self.k[i, :, p0:p0 + T] = k
            self.v[i, :, p0:p0 + T] = v
            s = torch.matmul(q, self.k[i, :, :p0 + T].transpose(1, 2)) / math.sqrt(D)  # [H, T, p0 + T]
            if mask is not None:
                s = s.masked_fill(~mask, float("-inf"))
            y = torch.matmul(F.softmax(s, dim=-1), self.v[i, :, :p0 + T])  # [H, T, D]
            y = y.transpose(0, 1).reshape(T, C)
            x = x + self.linear(w["attn.c_proj.bias"], y, w["attn.c_proj.weight"])
            h = F.layer_norm(x, (C,), w["ln_2.weight"], w["ln_2.bias"], 1e-5)
            h = F.gelu(self.linear(w["mlp.c_fc.bias"], h, w["mlp.c_fc.weight"]), approximate="tanh")
            x = x + self.linear(w["mlp.c_proj.bias"], h, w["mlp.c_proj.weight"])
        self.len = p0 + T
        h = F.layer_norm(x[-1:], (C,), self.lnf_w, self.lnf_b, 1e-5)
        return torch.mv(self.wte, h[0]) if self.matvec else torch.matmul(h, self.wte.t())[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("weights")
    ap.add_argument("--n_head", type=int, required=True)
    ap.add_argument("--prompt-ids", required=True)
    ap.add_argument("--new", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--allowed", type=int, default=0, help="pick only ids below this (0: all)")
    ap.add_argument("--matvec", action="store_true", help="one token's products as addmv/mv, not addmm/matmul")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    m = CachedGPT2(read_safetensors(a.weights), a.n_head, a.matvec)
    prompt = torch.tensor([int(x) for x in a.prompt_ids.split()], dtype=torch.long)
    allowed = a.allowed or m.V
    out = []
    with torch.inference_mode():
        t0 = time.perf_counter()
        logits = m.forward(prompt)
        t1 = time.perf_counter()
        for n in range(a.new):
            tok = int(torch.argmax(logits[:allowed]))
            out.append(tok)
            if n + 1 == a.new:
                break
            logits = m.forward(torch.tensor([tok]))
        t2 = time.perf_counter()
    print(json.dumps({"prompt_s": t1 - t0, "decode_s": t2 - t1, "tokens_per_s": a.new / (t2 - t1),
                      "threads": torch.get_num_threads(), "ids": out}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
