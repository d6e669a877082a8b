#!/usr/bin/python3
"""SmolLM2-135M training steps in PyTorch, the peer of shardrun's llama task in bench/llama_vs_torch.sh:
the model is tests/llama/llama_torch.py's Llama (HF's LlamaForCausalLM formulas, float32) with
SmolLM2-135M's figures (30 layers, hidden 576, 9 heads on 3 key/value heads, intermediate 1536,
vocab 49152, tied head, rope_theta 100000, eps 1e-5), weights N(0, 0.02); AdamW (lr 1e-4, weight
decay 0.01), clip_grad_norm_ 1.0; random token ids, batch B x T.  Times each step (forward, loss,
backward, clip, step, zero_grad) with time.perf_counter and prints the median after the warm-up:
    llama_torch_peer.py --batch 1 --seq 128 --warmup 2 --steps 6 --threads 2
"""
import argparse
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "llama"))
import llama_torch as L  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--batch", type=int, default=1)
ap.add_argument("--seq", type=int, default=128)
ap.add_argument("--warmup", type=int, default=2)
ap.add_argument("--steps", type=int, default=6)
ap.add_argument("--threads", type=int, default=2)
a = ap.parse_args()
torch.set_num_threads(a.threads)
torch.manual_seed(0)
cfg = L.LlamaConfig(n_layer=30, n_head=9, n_kv_head=3, hidden_size=576, intermediate_size=1536, vocab_size=49152,
                    rope_theta=100000.0, rms_norm_eps=1e-5, tie=True)
model = L.Llama(cfg)
with torch.no_grad():
    for n, p in model.named_parameters():
        p.copy_(torch.ones_like(p) if n.endswith("norm.weight") else torch.randn_like(p) * 0.02)
params = sum(p.numel() for p in model.parameters())
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
ids = torch.randint(0, cfg.vocab_size, (a.batch, a.seq))
times = []
for step in range(a.warmup + a.steps):
    t0 = time.perf_counter()
    _, loss = model(ids, ids)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    opt.zero_grad(set_to_none=True)
    loss.item()
    times.append(time.perf_counter() - t0)
med = statistics.median(times[a.warmup:])
print(f"torch: {params} parameters, batch {a.batch} x {a.seq}, median step {med:.3f} s, "
      f"{a.batch * a.seq / med:.1f} tokens/s")
