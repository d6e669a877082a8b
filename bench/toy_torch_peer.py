# PyTorch peer of tests/tasks/toy_model.c for bench/fsdp_step_vs_torch.sh: the same model, data rule,
# optimizer and step, timed the same way.  One process (world size 1) or DDP over Gloo under torchrun.
# Usage: toy_torch_peer.py OUT_FILE vocab=V dim=C seq=T blocks=L samples=S per_device_train_batch_size=B
#            max_steps=K skip=W warmup_steps=WS learning_rate=LR weight_decay=WD max_grad_norm=G threads=N
# Model (as toy_model.c): x = wte[tok] + wpe[t]; L pre-LN residual blocks, even i MLPBlock
# x + fc2(gelu_tanh(fc1(ln(x)))) (hidden 4C), odd i MixerBlock x + proj(tril(W) @ ln(x)) (causal token
# mixing [T,T]); final LayerNorm; logits = h . wte^T + bias (head tied to the embedding); mean
# cross-entropy over the tokens.  Init: normal(0.02) weights, normal(0.1) mixing, LayerNorm ones/zeros,
# zero biases.  AdamW (torch.optim.AdamW, betas 0.9/0.999, eps 1e-8) with weight decay on the weight
# matrices and embeddings only (LayerNorm parameters and biases: none, as the task's SR_PARAM_NO_DECAY),
# linear schedule with warmup (as transformers), clip_grad_norm_ every step, fp32.
# Data: sample i is x_{t+1} = (a x_t + b) mod V from (data_seed, i), the task's rule; each rank takes
# its share of a seeded permutation, as shardrun's sampler does (DistributedSampler).
# A step, timed with time.perf_counter: make the batch, forward, loss, backward (DDP all-reduces the
# gradients), clip, optimizer and scheduler step, zero_grad, the loss averaged over ranks (all_reduce)
# and read -- what shardrun's trainer times per step.  Rank 0 writes a JSON object to OUT_FILE
# (a file, because torchrun's --tee interleaves the ranks' output): every step's milliseconds, the
# median after `warmup` steps, the parameter count (tied weight once) and the losses.
import json, math, os, statistics, sys, time

import torch
import torch.nn as nn
import torch.nn.functional as F

out_file = sys.argv[1]
cfg = {k: float(v) for k, v in (a.split("=", 1) for a in sys.argv[2:])}
V, C, T, L = (int(cfg[k]) for k in ("vocab", "dim", "seq", "blocks"))
NSAMPLES, B, STEPS, WARM = (int(cfg[k]) for k in ("samples", "per_device_train_batch_size", "max_steps", "skip"))
DATA_SEED = int(cfg.get("data_seed", 1234))
torch.set_num_threads(int(cfg["threads"]))

ws = int(os.environ.get("WORLD_SIZE", "1"))
if ws > 1:
    import torch.distributed as dist
    dist.init_process_group("gloo")
    rank = dist.get_rank()
else:
    rank = 0

M64 = (1 << 64) - 1


def splitmix64(s):  # (new state, output)
    s = (s + 0x9E3779B97F4A7C15) & M64
    z = s
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return s, z ^ (z >> 31)


def make_sample(index):  # T+1 tokens
    s = ((DATA_SEED * 0xD1B54A32D192ED69) & M64) ^ index
    s, _ = splitmix64(s)
    s, r = splitmix64(s)
    x = r % V
    s, r = splitmix64(s)
    a = (1, 3, 5)[r % 3]
    s, r = splitmix64(s)
    b = 1 + r % 3
    seq = []
    for _ in range(T + 1):
        seq.append(x)
        x = (a * x + b) % V
    return seq


class MLPBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(C)
        self.fc1 = nn.Linear(C, 4 * C)
        self.fc2 = nn.Linear(4 * C, C)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.ln(x)), approximate="tanh"))


class MixerBlock(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(C)
        self.mix = nn.Parameter(torch.empty(T, T))
        self.proj = nn.Linear(C, C)
        self.register_buffer("causal", torch.tril(torch.ones(T, T)), persistent=False)

    def forward(self, x):  # [B,T,C]; mix's upper triangle is unused, as in the task
        return x + self.proj(torch.matmul(self.mix * self.causal, self.ln(x)))


class Toy(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Parameter(torch.empty(V, C))
        self.wpe = nn.Parameter(torch.empty(T, C))
        self.blocks = nn.ModuleList(MLPBlock() if i % 2 == 0 else MixerBlock() for i in range(L))
        self.norm_f = nn.LayerNorm(C)
        self.head_bias = nn.Parameter(torch.zeros(V))
        for name, p in self.named_parameters():
            if name.endswith("ln.weight") or name == "norm_f.weight":
                nn.init.ones_(p)
            elif name.endswith("bias"):
                nn.init.zeros_(p)
            else:
                nn.init.normal_(p, std=0.1 if name.endswith("mix") else 0.02)

    def forward(self, tok):
        x = self.wte[tok] + self.wpe
        for blk in self.blocks:
            x = blk(x)
        return F.linear(self.norm_f(x), self.wte, self.head_bias)


torch.manual_seed(42 + rank)  # the initial values do not matter for timing; DDP broadcasts rank 0's
model = Toy()
nparams = sum(p.numel() for p in model.parameters())
decay = [p for n, p in model.named_parameters() if n in ("wte", "wpe") or n.endswith(("fc1.weight", "fc2.weight", "mix", "proj.weight"))]
no_decay = [p for n, p in model.named_parameters() if not any(p is q for q in decay)]
if ws > 1:
    model = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.AdamW([{"params": decay, "weight_decay": cfg["weight_decay"]},
                         {"params": no_decay, "weight_decay": 0.0}],
                        lr=cfg["learning_rate"], betas=(0.9, 0.999), eps=1e-8)
warmup_steps = int(cfg.get("warmup_steps", 0))
sched = torch.optim.lr_scheduler.LambdaLR(
    opt, lambda s: s / max(1, warmup_steps) if s < warmup_steps else max(0.0, (STEPS - s) / max(1, STEPS - warmup_steps)))

g = torch.Generator()
g.manual_seed(42)
perm = torch.randperm(NSAMPLES, generator=g).tolist()
per_rank = (NSAMPLES + ws - 1) // ws

times, losses = [], []
for step in range(STEPS):
    t0 = time.perf_counter()
    first = (step * B) % per_rank
    seqs = [make_sample(perm[(((first + k) % per_rank) * ws + rank) % NSAMPLES]) for k in range(B)]
    data = torch.tensor(seqs)
    logits = model(data[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, V), data[:, 1:].reshape(-1))
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), cfg["max_grad_norm"])
    opt.step()
    sched.step()
    opt.zero_grad(set_to_none=True)
    mean = loss.detach().clone()
    if ws > 1:
        dist.all_reduce(mean)
        mean /= ws
    losses.append(mean.item())
    times.append((time.perf_counter() - t0) * 1e3)

if rank == 0:
    with open(out_file, "w") as f:
        json.dump({"step_ms": statistics.median(times[WARM:]), "steps_ms": times, "params": nparams,
                   "losses": losses, "threads": torch.get_num_threads(), "world_size": ws}, f)
if ws > 1:
    dist.destroy_process_group()
