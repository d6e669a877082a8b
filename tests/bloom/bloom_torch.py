#!/usr/bin/python3
"""Reference BLOOM in PyTorch for the bloom task's tests: HuggingFace BloomForCausalLM's math and
state_dict names (apply_residual_connection_post_layernorm = False, pretraining_tp = 1, LayerNorm
epsilon 1e-5, no dropout), and a command line to make weights and to check what the C task computed.
Run it as /usr/bin/python3 (Debian's torch 1.13 CPU + numpy).  The safetensors reader/writer and the
comparison report are tests/gpt2/gpt2_torch.py's.

    bloom_torch.py init OUT.safetensors --n_layer L --n_head H --hidden_size C --vocab_size V
                        --seed S [--no-prefix]
        Random weights in which every tensor is non-trivial and every op matters: LayerNorm weights
        1 + N(0, 0.1), LayerNorm biases N(0, 0.1), Linear weights N(0, 1/in_features) (attention
        scores of order 1, so q/k/v mix-ups show in the logits, not only in the gradients), Linear
        biases N(0, 0.05), word embeddings N(0, 0.3).  Names carry the "transformer." prefix
        unless --no-prefix; lm_head.weight is not written (tied to word_embeddings).

    bloom_torch.py check DUMP.safetensors WEIGHTS.safetensors --n_head H [--grads OPTIM.safetensors]
                         [--tol 1e-4]
    bloom_torch.py logits WEIGHTS.safetensors --n_head H --ids DUMP.safetensors --out OUT.safetensors
        As gpt2_torch.py's (same inputs, per-tensor lines, exit codes 0 / 1 on a failed comparison
        / 2 on bad input), with BLOOM built from WEIGHTS (config from the shapes and --n_head).

    bloom_torch.py alibi-slopes N [N...] [--dir DIR]
        HF's ALiBi slopes for N heads, one line per head: "HEAD SLOPE" (the float32 value, %.9g); with
        --dir, into DIR/sN.txt for each N (one Python start for all of them).

The model (HF's formulas; hd = C / H):
    x = word_embeddings_layernorm(word_embeddings[ids])
    per block: x = x + dense(attention(input_layernorm(x)))
               x = x + dense_4h_to_h(gelu(dense_h_to_4h(post_attention_layernorm(x))))
    logits = ln_f(x) @ word_embeddings^T
    query_key_value's 3C outputs are [H, 3, hd]: head h's q, k, v are rows h*3*hd + {0, hd, 2*hd}.
    scores[h, t, j] = q_t . k_j / sqrt(hd) + slope_h * j for j <= t (else the float32 minimum),
    softmax in at least float32.  gelu(x) = x/2 (1 + tanh(0.79788456 x (1 + 0.044715 x^2))).
    Slopes: p = the largest power of two <= H; heads 0..p-1 get 2^(-8/p) to the powers 1..p, the
    other H-p heads 2^(-4/p) to the odd powers 1, 3, 5, ...; computed in float32 as HF does.
    The loss is HF's with labels = input_ids (shifted inside, -100 ignored).
"""
import math
import os
import re
import sys
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpt2"))
import gpt2_torch as g  # noqa: E402  (the shared safetensors I/O, report and command line)

EMBEDDING = g.PREFIX + "word_embeddings.weight"
EPS = 1e-5


@dataclass
class BloomConfig:
    n_layer: int
    n_head: int
    hidden_size: int
    vocab_size: int


def alibi_slopes(n_head):
    """HF's slopes, float32 [n_head]: the powers of two bases are exact in float32, the power is
    taken in float32 as HF takes it"""
    if n_head < 1:
        raise ValueError(f"n_head {n_head}: want at least 1")
    p = 1 << (n_head.bit_length() - 1)  # the largest power of two <= n_head
    main = torch.pow(torch.tensor(2.0 ** (-8.0 / p), dtype=torch.float32),
                     torch.arange(1, p + 1, dtype=torch.int32))
    rest = n_head - p
    if rest == 0:
        return main
    extra = torch.pow(torch.tensor(2.0 ** (-4.0 / p), dtype=torch.float32),
                      torch.arange(1, 2 * rest, 2, dtype=torch.int32))
    return torch.cat([main, extra])


def bloom_gelu(x):
    return x * 0.5 * (1.0 + torch.tanh(0.79788456 * x * (1.0 + 0.044715 * x * x)))


class BloomAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.n_head = cfg.n_head
        self.head_dim = cfg.hidden_size // cfg.n_head
        self.query_key_value = nn.Linear(cfg.hidden_size, 3 * cfg.hidden_size)
        self.dense = nn.Linear(cfg.hidden_size, cfg.hidden_size)

    def qkv(self, x):
        """q, k, v as [B, H, T, hd] from the fused projection laid out [H, 3, hd]"""
        B, T, _ = x.shape
        fused = self.query_key_value(x).view(B, T, self.n_head, 3, self.head_dim)
        return (fused[:, :, :, i].permute(0, 2, 1, 3) for i in range(3))

    def scores(self, x, alibi):
        """pre-softmax scores [B, H, T, T], the causal mask applied"""
        q, k, _ = self.qkv(x)
        T = x.shape[1]
        s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim) + alibi[None, :, None, :T]
        s = s.to(torch.promote_types(s.dtype, torch.float32))  # HF: softmax in fp32 (here: >= fp32)
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        return s.masked_fill(~causal, torch.finfo(torch.float32).min)

    def context(self, x, alibi):
        """the heads' outputs [B, T, C] before dense"""
        B, T, C = x.shape
        _, _, v = self.qkv(x)
        probs = F.softmax(self.scores(x, alibi), dim=-1).to(v.dtype)
        return torch.matmul(probs, v).permute(0, 2, 1, 3).reshape(B, T, C)

    def forward(self, x, alibi):
        return self.dense(self.context(x, alibi))


class BloomMLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.dense_h_to_4h = nn.Linear(cfg.hidden_size, 4 * cfg.hidden_size)
        self.dense_4h_to_h = nn.Linear(4 * cfg.hidden_size, cfg.hidden_size)

    def forward(self, x):
        return self.dense_4h_to_h(bloom_gelu(self.dense_h_to_4h(x)))


class BloomBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.input_layernorm = nn.LayerNorm(cfg.hidden_size, eps=EPS)
        self.self_attention = BloomAttention(cfg)
        self.post_attention_layernorm = nn.LayerNorm(cfg.hidden_size, eps=EPS)
        self.mlp = BloomMLP(cfg)

    def forward(self, x, alibi):
        # apply_residual_connection_post_layernorm = False: the residual is the block's input
        x = x + self.self_attention(self.input_layernorm(x), alibi)
        return x + self.mlp(self.post_attention_layernorm(x))


class BloomModel(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.word_embeddings = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.word_embeddings_layernorm = nn.LayerNorm(cfg.hidden_size, eps=EPS)
        self.h = nn.ModuleList(BloomBlock(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.hidden_size, eps=EPS)
        self.n_head = cfg.n_head

    def alibi(self, T, dtype):
        """[H, T]: slope_h * j (attention_mask all ones: HF's positions are 0..T-1)"""
        j = torch.arange(T, dtype=torch.float32)
        return (alibi_slopes(self.n_head)[:, None] * j[None, :]).to(dtype)

    def forward(self, ids):
        x = self.word_embeddings_layernorm(self.word_embeddings(ids))
        alibi = self.alibi(ids.shape[1], x.dtype)
        for blk in self.h:
            x = blk(x, alibi)
        return self.ln_f(x)


class Bloom(nn.Module):
    """BloomForCausalLM: forward(ids [B,T], labels=None) -> (logits [B,T,V], loss or None)."""

    def __init__(self, cfg):
        super().__init__()
        if cfg.hidden_size % cfg.n_head:
            raise ValueError(f"hidden_size {cfg.hidden_size} is not a multiple of n_head {cfg.n_head}")
        self.config = cfg
        self.transformer = BloomModel(cfg)
        self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        self.lm_head.weight = self.transformer.word_embeddings.weight  # tied: the same tensor

    def forward(self, ids, labels=None):
        logits = self.lm_head(self.transformer(ids.long()))
        return logits, (g.hf_loss(logits, labels) if labels is not None else None)


# ---------------------------------------------------------------------------------------------
# weights

def config_from_tensors(tensors, n_head):
    t = g._canonical(tensors, ignored=None)
    if EMBEDDING not in t:
        raise ValueError(f"no tensor {EMBEDDING!r} (nor without the prefix)")
    V, C = t[EMBEDDING].shape
    return BloomConfig(n_layer=g.layer_count(t), n_head=n_head, hidden_size=C, vocab_size=V)


def load_state(model, path_or_tensors):
    """as gpt2_torch.load_state: prefix optional, lm_head.weight only if equal to the embedding"""
    return g.load_state(model, path_or_tensors, embedding=EMBEDDING, ignored=None)


def model_from_tensors(tensors, n_head, dtype=torch.float64):
    """(model in dtype holding tensors, its config): the builder check_dump / logits_of take"""
    cfg = config_from_tensors(tensors, n_head)
    return load_state(Bloom(cfg).to(dtype), tensors), cfg


def model_from_file(path, n_head, dtype=torch.float64):
    return model_from_tensors(g.read_safetensors(path), n_head, dtype)[0]


_LN = re.compile(r"(layernorm|ln_f)\.(weight|bias)$")


def random_init(model, seed):
    """see the module's docstring (init)"""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            r = torch.randn(p.shape, generator=gen, dtype=torch.float64)
            ln = _LN.search(name)
            if ln:
                p.copy_((1.0 if ln.group(2) == "weight" else 0.0) + 0.1 * r)
            elif name.endswith("word_embeddings.weight"):
                p.copy_(0.3 * r)
            elif name.endswith(".weight"):
                p.copy_(r / math.sqrt(p.shape[1]))
            else:
                p.copy_(0.05 * r)
    return model


# ---------------------------------------------------------------------------------------------
# command line

def cmd_init(a):
    cfg = BloomConfig(a.n_layer, a.n_head, a.hidden_size, a.vocab_size)
    model = random_init(Bloom(cfg).to(torch.float64), a.seed)
    meta = {"format": "pt", "n_layer": cfg.n_layer, "n_head": cfg.n_head,
            "hidden_size": cfg.hidden_size, "vocab_size": cfg.vocab_size, "seed": a.seed}
    g.write_safetensors(a.out, g.state_tensors(model, prefix=not a.no_prefix), meta)
    n = sum(p.numel() for p in model.parameters())
    print(f"wrote {a.out}: {cfg}, {n} parameters")
    return 0


def cmd_slopes(a):
    if len(a.n) > 1 and not a.dir:
        print("bloom_torch.py alibi-slopes: several N need --dir DIR", file=sys.stderr)
        return 2
    for n in a.n:
        lines = "".join(f"{h} {s:.9g}\n" for h, s in enumerate(alibi_slopes(n).tolist()))
        if a.dir:
            with open(os.path.join(a.dir, f"s{n}.txt"), "w") as f:
                f.write(lines)
        else:
            sys.stdout.write(lines)
    return 0


def main(argv=None):
    ap, sub = g.command_line(__doc__, ("n_layer", "n_head", "hidden_size", "vocab_size"))
    p = sub.add_parser("alibi-slopes", help="HF's ALiBi slopes for N heads")
    p.add_argument("n", type=int, nargs="+")
    p.add_argument("--dir", help="write DIR/sN.txt for each N")
    a = ap.parse_args(argv)
    return g.run_command("bloom_torch.py", a, {
        "init": cmd_init, "alibi-slopes": cmd_slopes,
        "check": lambda a: g.check_dump(a, model_from_tensors),
        "logits": lambda a: g.logits_of(a, model_from_tensors)})


if __name__ == "__main__":
    sys.exit(main())
