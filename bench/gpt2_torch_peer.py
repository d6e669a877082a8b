#!/usr/bin/python3
"""PyTorch benchmark peer of models/gpt2: the same GPT-2 (tests/gpt2/gpt2_torch.py, HF's
GPT2LMHeadModel math), trained on random token ids in fp32, timed per step.

One process:
    OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 bench/gpt2_torch_peer.py --mode single --threads 2
DDP over Gloo, one thread per rank:
    OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE /usr/bin/python3 -m torch.distributed.run --standalone \
        --nproc_per_node 2 --redirects 1 --tee 1 --monitor_interval 0.1 bench/gpt2_torch_peer.py --mode ddp

Model: --n_layer 4 --n_embd 256 --n_head 4 --seq 128 --vocab 8192 --n_positions 128 (defaults),
--batch 4 sequences per rank.  Step, timed with time.perf_counter: forward with labels = input ids
(HF loss: shifted mean cross-entropy), backward (DDP all-reduces the gradients), clip_grad_norm_
(--clip 1.0), AdamW (--lr 1e-4, --weight_decay 0.01 on the matrices and embeddings, none on
LayerNorm parameters and biases, betas 0.9/0.999, eps 1e-8), zero_grad, and the loss averaged over
ranks and read with .item().  Each rank draws its own batches from a fixed seed (--seed + rank).
--warmup 3 unmeasured steps, then --steps 15 measured.  Rank 0 prints one JSON line:
    {"mode", "ranks", "threads", "tokens_per_s" (ranks * batch * seq / median step time),
     "step_ms_median", "params" (the tied wte once), ...}
and writes the same line to --out FILE if given (torchrun's --tee prefixes and interleaves output).

--impl project (default): the project's PyTorch GPT-2 (tests/gpt2/gpt2_torch.py, HF's Conv1D math).
--impl torch_nn: an independent GPT-2 of the same shape and parameter count built from torch's own
modules: nn.Embedding, nn.LayerNorm, nn.MultiheadAttention (batch_first, a causal boolean mask; its
in_proj and out_proj are c_attn and c_proj), nn.Linear + nn.GELU(approximate="tanh") for the MLP and
an nn.Linear lm_head tied to the token embedding; the loss is F.cross_entropy on the shifted labels.
Initial weights: torch's own defaults (nothing here compares values, only time).
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "gpt2"))
import gpt2_torch  # noqa: E402


class NNBlock(nn.Module):
    def __init__(self, C, NH):
        super().__init__()
        self.ln_1 = nn.LayerNorm(C, eps=1e-5)
        self.attn = nn.MultiheadAttention(C, NH, batch_first=True)
        self.ln_2 = nn.LayerNorm(C, eps=1e-5)
        self.fc = nn.Linear(C, 4 * C)
        self.act = nn.GELU(approximate="tanh")
        self.proj = nn.Linear(4 * C, C)

    def forward(self, x, mask):
        h = self.ln_1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.proj(self.act(self.fc(self.ln_2(x))))


class NNGPT2(nn.Module):
    """GPT-2 from torch's modules (--impl torch_nn)."""

    def __init__(self, L, NH, C, P, V):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(P, C)
        self.h = nn.ModuleList(NNBlock(C, NH) for _ in range(L))
        self.ln_f = nn.LayerNorm(C, eps=1e-5)
        self.lm_head = nn.Linear(C, V, bias=False)
        self.lm_head.weight = self.wte.weight
        for e in (self.wte, self.wpe):  # GPT-2's scale (torch's default N(0, 1) makes the tied logits huge)
            nn.init.normal_(e.weight, std=0.02)

    def forward(self, ids, labels):
        T = ids.shape[1]
        mask = torch.ones(T, T, dtype=torch.bool).triu(1)  # True: not attended
        x = self.wte(ids) + self.wpe(torch.arange(T))
        for b in self.h:
            x = b(x, mask)
        logits = self.lm_head(self.ln_f(x))
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1))
        return logits, loss


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=("single", "ddp"), default="single")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default 1 under ddp)")
    ap.add_argument("--n_layer", type=int, default=4)
    ap.add_argument("--n_embd", type=int, default=256)
    ap.add_argument("--n_head", type=int, default=4)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--vocab", type=int, default=8192)
    ap.add_argument("--n_positions", type=int, default=128)
    ap.add_argument("--batch", type=int, default=4, help="sequences per rank")
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--weight_decay", type=float, default=0.01)
    ap.add_argument("--clip", type=float, default=1.0)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--steps", type=int, default=15)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--out", help="also write the JSON line to this file (rank 0)")
    ap.add_argument("--impl", choices=("project", "torch_nn"), default="project")
    a = ap.parse_args()

    threads = a.threads if a.threads is not None else (1 if a.mode == "ddp" else torch.get_num_threads())
    torch.set_num_threads(threads)
    if a.mode == "ddp":
        import torch.distributed as dist
        dist.init_process_group("gloo")  # RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT from the env
        rank, ws = dist.get_rank(), dist.get_world_size()
    else:
        rank, ws = 0, 1

    torch.manual_seed(a.seed)  # the same initial weights on every rank (DDP broadcasts rank 0's anyway)
    if a.impl == "torch_nn":
        model = NNGPT2(a.n_layer, a.n_head, a.n_embd, a.n_positions, a.vocab)
    else:
        cfg = gpt2_torch.GPT2Config(a.n_layer, a.n_head, a.n_embd, a.n_positions, a.vocab)
        model = gpt2_torch.random_init(gpt2_torch.GPT2(cfg), a.seed)
    nparams = sum(p.numel() for p in model.parameters())
    decay = [p for n, p in model.named_parameters() if n.endswith(("wte.weight", "wpe.weight"))
             or (n.endswith(".weight") and ".ln_" not in n and "ln_f" not in n)]
    if a.impl == "torch_nn":  # the same rule: matrices and embeddings decay (in_proj_weight has no ".weight")
        decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if not any(p is q for q in decay)]
    if ws > 1 or a.mode == "ddp":
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.999), eps=1e-8)

    gen = torch.Generator().manual_seed(a.seed + rank)
    times, losses = [], []
    for step in range(a.warmup + a.steps):
        t0 = time.perf_counter()
        ids = torch.randint(0, a.vocab, (a.batch, a.seq), generator=gen)
        _, loss = model(ids, ids)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
        mean = loss.detach().clone()
        if ws > 1:
            dist.all_reduce(mean)
            mean /= ws
        losses.append(mean.item())
        times.append((time.perf_counter() - t0) * 1e3)

    measured = times[a.warmup:]
    med = statistics.median(measured)
    tokens = ws * a.batch * a.seq
    res = {"mode": a.mode, "impl": a.impl, "ranks": ws, "threads": threads,
           "tokens_per_s": round(tokens / (med / 1e3), 1), "step_ms_median": round(med, 2),
           "params": nparams, "tokens_per_step": tokens,
           "config": {"n_layer": a.n_layer, "n_embd": a.n_embd, "n_head": a.n_head, "seq": a.seq,
                      "vocab": a.vocab, "batch_per_rank": a.batch},
           "step_ms": [round(t, 2) for t in measured],
           "loss_first": round(losses[0], 5), "loss_last": round(losses[-1], 5)}
    if rank == 0:
        line = json.dumps(res)
        print(line, flush=True)
        if a.out:
            with open(a.out, "w") as f:
                f.write(line + "\n")
    if ws > 1:
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
