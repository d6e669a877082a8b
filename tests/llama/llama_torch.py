#!/usr/bin/python3
"""Reference Llama in PyTorch for the llama task's tests: HuggingFace LlamaForCausalLM's math and
state_dict names, written from HF's formulas (modeling_llama.py, modeling_rope_utils.py), configured
by an HF config.json (model_type llama, qwen2 or mistral: the fields the C task reads), and a command
line to make weights and to check what the C task computed.  Run it as /usr/bin/python3 (Debian's
torch 1.13 CPU + numpy; no transformers package).  The safetensors I/O, the comparison report and
the check / logits commands are tests/gpt2/gpt2_torch.py's.

    llama_torch.py init OUT.safetensors --config CONFIG.json --vocab_size V --seed S
        Random weights with HF's names and shapes in which every op matters: RMSNorm weights
        1 + N(0, 0.1), Linear weights N(0, 1/in_features) (attention scores of order 1, so a RoPE
        or head mix-up shows in the logits), biases N(0, 0.05), embeddings N(0, 0.3), lm_head (when
        untied) N(0, 1/hidden).  lm_head.weight is not written when tie_word_embeddings.

    llama_torch.py check DUMP.safetensors WEIGHTS.safetensors --config CONFIG.json
                         [--grads OPTIM.safetensors] [--tol 1e-4]
    llama_torch.py logits WEIGHTS.safetensors --config CONFIG.json --ids DUMP.safetensors --out OUT
        As gpt2_torch.py's, the model built from CONFIG.json and the weights' shapes.

    llama_torch.py inv-freq --config CONFIG.json
        The rotary inverse frequencies, one per line ("I VALUE", float32 as %.9g).

The model (HF's formulas; hd = hidden / heads, rep = heads / kv_heads):
    x = embed_tokens[ids]
    per layer: x = x + o_proj(attention(input_layernorm(x)))
               x = x + down_proj(silu(gate_proj(h)) * up_proj(h)),  h = post_attention_layernorm(x)
    logits = lm_head(norm(x))
    RMSNorm(x) = weight * (x * rsqrt(mean(x^2) + eps)), computed in (at least) float32
    q, k, v = q_proj, k_proj, v_proj of x as [B, heads or kv_heads, T, hd]; q, k rotated:
        inv_freq[i] = 1 / theta^(2i / hd) (float32; llama3 rope_scaling rescales it), angle t * inv_freq,
        cos/sin of cat(angles, angles) in float32; rot(x) = x cos + rotate_half(x) sin with
        rotate_half(x) = cat(-x[hd/2:], x[:hd/2])
    k, v repeated rep times per head (repeat_kv); scores q k^T / sqrt(hd), causal, softmax in >= float32
    The loss is HF's with labels = input_ids (shifted inside, -100 ignored).
"""
import json
import math
import os
import sys
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpt2"))
import gpt2_torch as g  # noqa: E402  (the shared safetensors I/O, report and command line)

EMBEDDING = "model.embed_tokens.weight"


@dataclass
class LlamaConfig:
    n_layer: int
    n_head: int
    n_kv_head: int
    hidden_size: int
    intermediate_size: int
    vocab_size: int
    rope_theta: float = 10000.0
    rms_norm_eps: float = 1e-6
    tie: bool = False
    qkv_bias: bool = False
    o_bias: bool = False
    mlp_bias: bool = False
    rope_scaling: dict = None


def config_from_json(path, vocab_size):
    """HF's config.json -> LlamaConfig (HF's class defaults for missing fields)"""
    with open(path) as f:
        j = json.load(f)
    mt = j.get("model_type")
    if mt not in ("llama", "qwen2", "mistral"):
        raise ValueError(f"{path}: model_type {mt!r}")
    heads = j["num_attention_heads"]
    kv = j.get("num_key_value_heads") or heads
    att_bias = bool(j.get("attention_bias", False))
    rs = j.get("rope_scaling")
    if rs is not None and rs.get("rope_type", rs.get("type")) != "llama3":
        raise ValueError(f"{path}: rope_scaling {rs}")
    return LlamaConfig(
        n_layer=j["num_hidden_layers"], n_head=heads, n_kv_head=kv, hidden_size=j["hidden_size"],
        intermediate_size=j["intermediate_size"], vocab_size=vocab_size,
        rope_theta=float(j.get("rope_theta", 10000.0)), rms_norm_eps=float(j.get("rms_norm_eps", 1e-6)),
        tie=bool(j.get("tie_word_embeddings", False)),
        qkv_bias=att_bias or mt == "qwen2", o_bias=att_bias and mt != "qwen2",
        mlp_bias=bool(j.get("mlp_bias", False)), rope_scaling=rs)


def inv_freq(cfg):
    """HF's default RoPE inverse frequencies in float32, then the llama3 rule when configured"""
    hd = cfg.hidden_size // cfg.n_head
    f = 1.0 / (cfg.rope_theta ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
    rs = cfg.rope_scaling
    if rs is None:
        return f
    factor, lo, hi = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
    old = rs["original_max_position_embeddings"]
    low_wavelen, high_wavelen = old / lo, old / hi
    wavelen = 2 * math.pi / f
    scaled = torch.where(wavelen > low_wavelen, f / factor, f)  # long wavelengths: divided by factor
    smooth = (old / wavelen - lo) / (hi - lo)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled  # between: interpolated
    medium = ~(wavelen < high_wavelen) & ~(wavelen > low_wavelen)
    return torch.where(medium, smoothed, scaled)


def rope_cos_sin(cfg, T, dtype):
    """cos, sin [T, hd], computed in float32 as HF computes them, then cast"""
    pos = torch.arange(T, dtype=torch.float32)
    freqs = pos[:, None] * inv_freq(cfg)[None, :]  # exact float32 products, as HF's matmul with one term
    emb = torch.cat([freqs, freqs], dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], dim=-1)


class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        t = torch.promote_types(x.dtype, torch.float32)  # HF: float32 (here: at least)
        h = x.to(t)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(x.dtype)


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        C, hd = cfg.hidden_size, cfg.hidden_size // cfg.n_head
        self.n_head, self.n_kv, self.hd = cfg.n_head, cfg.n_kv_head, hd
        self.q_proj = nn.Linear(C, cfg.n_head * hd, bias=cfg.qkv_bias)
        self.k_proj = nn.Linear(C, cfg.n_kv_head * hd, bias=cfg.qkv_bias)
        self.v_proj = nn.Linear(C, cfg.n_kv_head * hd, bias=cfg.qkv_bias)
        self.o_proj = nn.Linear(cfg.n_head * hd, C, bias=cfg.o_bias)

    def forward(self, x, cos, sin):
        B, T, _ = x.shape
        q = self.q_proj(x).view(B, T, self.n_head, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.n_kv, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.n_kv, self.hd).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        rep = self.n_head // self.n_kv  # repeat_kv: kv head j serves query heads j*rep .. j*rep+rep-1
        k, v = k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1)
        s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.hd)
        s = s.to(torch.promote_types(s.dtype, torch.float32))
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        p = F.softmax(s.masked_fill(~causal, torch.finfo(s.dtype).min), dim=-1).to(v.dtype)
        return self.o_proj(torch.matmul(p, v).transpose(1, 2).reshape(B, T, -1))


class MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        C, I = cfg.hidden_size, cfg.intermediate_size
        self.gate_proj = nn.Linear(C, I, bias=cfg.mlp_bias)
        self.up_proj = nn.Linear(C, I, bias=cfg.mlp_bias)
        self.down_proj = nn.Linear(I, C, bias=cfg.mlp_bias)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class DecoderLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.input_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.self_attn = Attention(cfg)
        self.post_attention_layernorm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)
        self.mlp = MLP(cfg)

    def forward(self, x, cos, sin):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaModel(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.embed_tokens = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.n_layer))
        self.norm = RMSNorm(cfg.hidden_size, cfg.rms_norm_eps)

    def forward(self, ids):
        x = self.embed_tokens(ids)
        cos, sin = rope_cos_sin(self.cfg, ids.shape[1], x.dtype)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.norm(x)


class Llama(nn.Module):
    """LlamaForCausalLM: forward(ids [B,T], labels=None) -> (logits [B,T,V], loss or None)."""

    def __init__(self, cfg):
        super().__init__()
        if cfg.hidden_size % cfg.n_head or cfg.n_head % cfg.n_kv_head:
            raise ValueError(f"heads {cfg.n_head}, kv heads {cfg.n_kv_head}, hidden {cfg.hidden_size}")
        self.config = cfg
        self.model = LlamaModel(cfg)
        self.lm_head = nn.Linear(cfg.hidden_size, cfg.vocab_size, bias=False)
        if cfg.tie:
            self.lm_head.weight = self.model.embed_tokens.weight

    def forward(self, ids, labels=None):
        logits = self.lm_head(self.model(ids.long()))
        return logits, (g.hf_loss(logits, labels) if labels is not None else None)


# ---------------------------------------------------------------------------------------------
# weights

def state_tensors(model):
    """{name: float32 numpy} as HF saves them (a tied lm_head.weight is not written)"""
    return {n: p.detach().to(torch.float32).numpy() for n, p in model.named_parameters()}


def load_state(model, tensors):
    """tensors' names must be the model's exactly (a tied lm_head.weight may be present if equal)"""
    t = dict(tensors)
    params = dict(model.named_parameters())
    if model.config.tie and "lm_head.weight" in t:
        if not np.array_equal(np.asarray(t["lm_head.weight"], np.float32), np.asarray(t[EMBEDDING], np.float32)):
            raise ValueError("lm_head.weight differs from the tied model.embed_tokens.weight")
        del t["lm_head.weight"]
    missing, extra = sorted(set(params) - set(t)), sorted(set(t) - set(params))
    if missing or extra:
        raise ValueError(f"weights do not match the model: missing {missing}, unexpected {extra}")
    with torch.no_grad():
        for name, p in params.items():
            a = np.asarray(t[name])
            if tuple(a.shape) != tuple(p.shape):
                raise ValueError(f"{name}: shape {list(a.shape)}, model wants {list(p.shape)}")
            p.copy_(torch.from_numpy(a.astype(np.float64)))
    return model


def random_init(model, seed):
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            r = torch.randn(p.shape, generator=gen, dtype=torch.float64)
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.1 * r)
            elif name == EMBEDDING:
                p.copy_(0.3 * r)
            elif name.endswith(".weight"):
                p.copy_(r / math.sqrt(p.shape[1]))
            else:
                p.copy_(0.05 * r)
    return model


def builder(config_path):
    """the (weights, n_head, dtype) -> (model, config) builder check_dump / logits_of take"""
    def build(weights, _n_head, dtype):
        if EMBEDDING not in weights:
            raise ValueError(f"no tensor {EMBEDDING!r}")
        cfg = config_from_json(config_path, weights[EMBEDDING].shape[0])
        return load_state(Llama(cfg).to(dtype), weights), cfg
    return build


# ---------------------------------------------------------------------------------------------
# command line

def cmd_init(a):
    cfg = config_from_json(a.config, a.vocab_size)
    model = random_init(Llama(cfg).to(torch.float64), a.seed)
    g.write_safetensors(a.out, state_tensors(model), {"format": "pt"})
    n = sum(p.numel() for p in model.parameters())
    print(f"wrote {a.out}: {cfg}, {n} parameters")
    return 0


def cmd_inv_freq(a):
    for i, f in enumerate(inv_freq(config_from_json(a.config, 1)).tolist()):
        print(f"{i} {f:.9g}")
    return 0


def main(argv=None):
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("init")
    p.add_argument("out")
    p.add_argument("--config", required=True)
    p.add_argument("--vocab_size", type=int, required=True)
    p.add_argument("--seed", type=int, required=True)
    p = sub.add_parser("check")
    p.add_argument("dump")
    p.add_argument("weights")
    p.add_argument("--config", required=True)
    p.add_argument("--grads", metavar="OPTIM.safetensors")
    p.add_argument("--tol", type=float, default=1e-4)
    p = sub.add_parser("logits")
    p.add_argument("weights")
    p.add_argument("--config", required=True)
    p.add_argument("--ids", required=True)
    p.add_argument("--out", required=True)
    p = sub.add_parser("inv-freq")
    p.add_argument("--config", required=True)
    a = ap.parse_args(argv)
    a.n_head = None
    return g.run_command("llama_torch.py", a, {
        "init": cmd_init, "inv-freq": cmd_inv_freq,
        "check": lambda a: g.check_dump(a, builder(a.config)),
        "logits": lambda a: g.logits_of(a, builder(a.config))})


if __name__ == "__main__":
    sys.exit(main())
