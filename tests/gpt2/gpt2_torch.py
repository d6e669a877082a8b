#!/usr/bin/python3
"""Reference GPT-2 in PyTorch for the gpt2 task's tests: HuggingFace GPT2LMHeadModel's math and
state_dict names, a numpy safetensors reader/writer, and a command line to make weights and to check
what the C task computed.  Run it as /usr/bin/python3 (Debian's torch 1.13 CPU + numpy).

    gpt2_torch.py init OUT.safetensors --n_layer L --n_head H --n_embd C --n_positions P
                       --vocab_size V --seed S [--no-prefix]
        Random weights in which every tensor is non-trivial (LayerNorm weights 1 + N(0, 0.1),
        biases and weights N(0, 0.02)) so that every gradient is exercised.  Names carry the
        "transformer." prefix unless --no-prefix; lm_head.weight is not written (tied to wte).

    gpt2_torch.py check DUMP.safetensors WEIGHTS.safetensors --n_head H [--grads OPTIM.safetensors]
                        [--tol 1e-4]
        DUMP (written by the C task) holds input_ids I32 [B,T], labels I32 [B,T] (-100 = ignored),
        logits F32 [B,T,V] and loss F32 [1].  The model is built from WEIGHTS (config from the
        shapes) and run in float64 (the reference) and float32; the C logits and loss are compared
        with the float64 results.  With --grads, the float64 loss is back-propagated and each
        parameter's gradient is compared with OPTIM's "<name>.exp_avg" (one AdamW step with
        beta1 = 0 and no gradient clipping makes exp_avg the gradient; the tied wte's gradient holds
        lm_head's share, as in torch).  A tensor passes when max|c - ref| <= tol * max|ref|.
        One line per tensor: name, max abs diff, max |ref|, that ratio ("rel"), the largest
        elementwise relative error where |ref| > 1e-3 max|ref| ("elem_rel"), the same ratio for
        torch's own float32 result ("f32_rel", for scale: float32 rounding alone), OK/FAIL; then
        "checked N tensors, worst relative difference X".  Exit 1 on any failure or any parameter
        missing from OPTIM, 2 on bad input.

    gpt2_torch.py logits WEIGHTS.safetensors --n_head H --ids DUMP.safetensors --out OUT.safetensors
        torch's float32 logits [B,T,V] for DUMP's input_ids (and "loss" [1] when DUMP has labels).

As a module: GPT2, GPT2Config, read_safetensors, write_safetensors, write_check_files, load_state, state_tensors,
config_from_tensors, layer_count, hf_loss; and check_dump, logits_of, command_line, run_command,
which take the model family as a parameter (tests/bloom/bloom_torch.py runs them with BLOOM).
"""
import argparse
import json
import math
import re
import struct
import sys
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

# ---------------------------------------------------------------------------------------------
# safetensors (numpy only)

_NP = {  # safetensors dtype -> numpy dtype of the stored bytes (BF16 is decoded by hand)
    "F64": "<f8", "F32": "<f4", "F16": "<f2", "BF16": "<u2",
    "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1",
    "U64": "<u8", "U32": "<u4", "U16": "<u2", "U8": "u1", "BOOL": "?",
}
_ST = {np.dtype(v): k for k, v in _NP.items() if k != "BF16"}  # numpy dtype -> safetensors dtype


class SafetensorsError(Exception):
    pass


def read_safetensors(path, with_metadata=False):
    """{name: numpy array} (BF16 decoded to float32, other dtypes as stored), and the
    __metadata__ dict when with_metadata."""
    with open(path, "rb") as f:
        buf = f.read()
    if len(buf) < 8:
        raise SafetensorsError(f"{path}: {len(buf)} bytes, too short")
    (n,) = struct.unpack("<Q", buf[:8])
    if 8 + n > len(buf):
        raise SafetensorsError(f"{path}: header length {n} runs past the file ({len(buf)} bytes)")
    try:
        header = json.loads(buf[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise SafetensorsError(f"{path}: bad header: {e}")
    data = memoryview(buf)[8 + n:]
    meta = header.pop("__metadata__", None) or {}
    out = {}
    for name, info in header.items():
        dtype, shape, (begin, end) = info["dtype"], list(info["shape"]), info["data_offsets"]
        if dtype not in _NP:
            raise SafetensorsError(f"{path}: tensor {name!r}: unsupported dtype {dtype}")
        count = math.prod(shape)
        if end - begin != count * np.dtype(_NP[dtype]).itemsize or end > len(data) or begin > end:
            raise SafetensorsError(f"{path}: tensor {name!r}: data_offsets {[begin, end]} do not "
                                   f"hold {dtype} {shape}")
        raw = np.frombuffer(data[begin:end], dtype=_NP[dtype])
        if dtype == "BF16":
            raw = (raw.astype(np.uint32) << 16).view(np.float32)
        out[name] = raw.reshape(shape).copy()
    return (out, meta) if with_metadata else out


def write_safetensors(path, tensors, metadata=None):
    """Write {name: numpy array or torch tensor} (F64/F32/F16/int/bool dtypes) with names sorted,
    data packed in that order, the JSON header padded with spaces to a multiple of 8 bytes."""
    header, blobs, off = {}, [], 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name in sorted(tensors):
        a = tensors[name]
        if isinstance(a, torch.Tensor):
            a = a.detach().cpu().numpy()
        a = np.asarray(a)
        dt = a.dtype.newbyteorder("<") if a.dtype.byteorder == ">" else a.dtype
        if np.dtype(dt) not in _ST:
            raise SafetensorsError(f"tensor {name!r}: dtype {a.dtype} has no safetensors name")
        b = np.ascontiguousarray(a, dtype=dt).tobytes()
        header[name] = {"dtype": _ST[np.dtype(dt)], "shape": list(a.shape),
                        "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


# ---------------------------------------------------------------------------------------------
# the model (HF GPT2LMHeadModel: same parameter names, layouts and arithmetic; no dropout)

@dataclass
class GPT2Config:
    n_layer: int
    n_head: int
    n_embd: int
    n_positions: int
    vocab_size: int


class Conv1D(nn.Module):
    """HF's Conv1D: y = x @ weight + bias with weight stored [in, out]."""

    def __init__(self, n_in, n_out):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(n_in, n_out))
        self.bias = nn.Parameter(torch.zeros(n_out))

    def forward(self, x):
        return torch.addmm(self.bias, x.reshape(-1, x.shape[-1]), self.weight).view(*x.shape[:-1], -1)


class Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.n_head = cfg.n_head
        self.c_attn = Conv1D(cfg.n_embd, 3 * cfg.n_embd)
        self.c_proj = Conv1D(cfg.n_embd, cfg.n_embd)

    def forward(self, x):
        B, T, C = x.shape
        H = self.n_head
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, H, C // H).permute(0, 2, 1, 3) for t in (q, k, v))  # [B,H,T,D]
        w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(C // H)
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        w = w.masked_fill(~causal, torch.finfo(w.dtype).min)  # as HF: finfo.min, not -inf
        y = torch.matmul(F.softmax(w, dim=-1), v)
        return self.c_proj(y.permute(0, 2, 1, 3).reshape(B, T, C))


class MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.c_fc = Conv1D(cfg.n_embd, 4 * cfg.n_embd)
        self.c_proj = Conv1D(4 * cfg.n_embd, cfg.n_embd)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))  # == HF gelu_new


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.n_embd, eps=1e-5)
        self.attn = Attention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.n_embd, eps=1e-5)
        self.mlp = MLP(cfg)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class Transformer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.wpe = nn.Embedding(cfg.n_positions, cfg.n_embd)
        self.h = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.n_embd, eps=1e-5)

    def forward(self, ids):
        x = self.wte(ids) + self.wpe(torch.arange(ids.shape[1], device=ids.device))
        for blk in self.h:
            x = blk(x)
        return self.ln_f(x)


def hf_loss(logits, labels):
    """HF's loss with labels: logits[:, :-1] against labels[:, 1:], mean cross-entropy over the
    positions whose label is not -100."""
    V = logits.shape[-1]
    return F.cross_entropy(logits[:, :-1].reshape(-1, V), labels[:, 1:].reshape(-1).long(),
                           ignore_index=-100)


class GPT2(nn.Module):
    """GPT2LMHeadModel: forward(ids [B,T], labels=None) -> (logits [B,T,V], loss or None)."""

    def __init__(self, cfg):
        super().__init__()
        if cfg.n_embd % cfg.n_head:
            raise ValueError(f"n_embd {cfg.n_embd} is not a multiple of n_head {cfg.n_head}")
        self.config = cfg
        self.transformer = Transformer(cfg)
        self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        self.lm_head.weight = self.transformer.wte.weight  # tied: the same tensor

    def forward(self, ids, labels=None):
        logits = self.lm_head(self.transformer(ids.long()))
        return logits, (hf_loss(logits, labels) if labels is not None else None)


# ---------------------------------------------------------------------------------------------
# weights

PREFIX = "transformer."
_IGNORED = re.compile(r"^(transformer\.)?h\.\d+\.attn\.(bias|masked_bias)$")  # HF's mask buffers


def state_tensors(model, prefix=True):
    """{name: float32 numpy} of the model's parameters as HF saves them (no lm_head.weight)."""
    out = {}
    for name, p in model.named_parameters():  # the tied lm_head.weight is listed once, as wte
        if not prefix and name.startswith(PREFIX):
            name = name[len(PREFIX):]
        out[name] = p.detach().to(torch.float32).cpu().numpy()
    return out


def _canonical(tensors, ignored=_IGNORED):
    """names with the transformer. prefix, the buffers matching ignored (HF's attention mask
    buffers for GPT-2) dropped"""
    out = {}
    for name, a in tensors.items():
        if ignored is not None and ignored.match(name):
            continue
        full = name if name.startswith(PREFIX) or name == "lm_head.weight" else PREFIX + name
        if full in out:
            raise ValueError(f"{name!r} appears both with and without the prefix")
        out[full] = a
    return out


def layer_count(canonical):
    """the number of transformer.h.N. layers in {name: array} (names with the prefix); the
    indices must be 0..N-1"""
    layers = {int(m.group(1)) for m in (re.match(r"transformer\.h\.(\d+)\.", n) for n in canonical) if m}
    L = max(layers) + 1 if layers else 0
    if layers != set(range(L)):
        raise ValueError(f"layer indices {sorted(layers)} are not 0..{L - 1}")
    return L


def config_from_tensors(tensors, n_head):
    t = _canonical(tensors)
    try:
        V, C = t[PREFIX + "wte.weight"].shape
        P = t[PREFIX + "wpe.weight"].shape[0]
    except KeyError as e:
        raise ValueError(f"no tensor {e.args[0]}")
    L = layer_count(t)
    return GPT2Config(n_layer=L, n_head=n_head, n_embd=C, n_positions=P, vocab_size=V)


def load_state(model, path_or_tensors, embedding=PREFIX + "wte.weight", ignored=_IGNORED):
    """Copy a safetensors file's (or a {name: array} dict's) tensors into model.  Names may carry
    the transformer. prefix or not; the names matching ignored (GPT-2: HF's h.N.attn.bias /
    masked_bias buffers) are skipped, and so is an lm_head.weight equal to the tied embedding.
    Every parameter must be present with exactly its shape."""
    src = path_or_tensors
    t = _canonical(read_safetensors(src) if isinstance(src, str) else src, ignored)
    head = t.pop("lm_head.weight", None)
    params = dict(model.named_parameters())  # no lm_head.weight: it is wte
    missing = sorted(set(params) - set(t))
    extra = sorted(set(t) - set(params))
    if missing or extra:
        raise ValueError(f"weights do not match the model: missing {missing}, unexpected {extra}")
    with torch.no_grad():
        for name, p in params.items():
            a = np.asarray(t[name])
            if tuple(a.shape) != tuple(p.shape):
                raise ValueError(f"{name}: shape {list(a.shape)}, model wants {list(p.shape)}")
            p.copy_(torch.from_numpy(a.astype(np.float64)))
        if head is not None and not np.array_equal(np.asarray(head, np.float32),
                                                   np.asarray(t[embedding], np.float32)):
            raise ValueError(f"lm_head.weight differs from {embedding} (the head must be tied)")
    return model


def model_from_file(path, n_head, dtype=torch.float64):
    t = read_safetensors(path)
    model = GPT2(config_from_tensors(t, n_head)).to(dtype)
    load_state(model, t)
    return model


def random_init(model, seed):
    """LayerNorm weights 1 + N(0, 0.1); biases and weights N(0, 0.02)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            r = torch.randn(p.shape, generator=g, dtype=torch.float64)
            if re.search(r"(ln_1|ln_2|ln_f)\.weight$", name):
                p.copy_(1.0 + 0.1 * r)
            else:
                p.copy_(0.02 * r)
    return model


# ---------------------------------------------------------------------------------------------
# command line

def _compare(c, ref, f32):
    """(max abs diff, max |ref|, rel, elementwise rel, torch float32 rel); c and f32 may be None"""
    ref = np.asarray(ref, np.float64)
    scale = float(np.abs(ref).max()) if ref.size else 0.0

    def rel(x):
        if x is None:
            return float("nan"), float("nan"), float("nan")
        d = np.abs(np.asarray(x, np.float64) - ref)
        if not np.all(np.isfinite(d)):
            return float("inf"), float("inf"), float("inf")
        dmax = float(d.max()) if d.size else 0.0
        big = np.abs(ref) > 1e-3 * scale
        er = float((d[big] / np.abs(ref[big])).max()) if big.any() else 0.0
        return dmax, (dmax / scale if scale > 0 else (0.0 if dmax == 0 else float("inf"))), er

    dmax, r, er = rel(c)
    _, r32, _ = rel(f32)
    return dmax, scale, r, er, r32


class _Report:
    def __init__(self, tol):
        self.tol, self.n, self.worst, self.failed = tol, 0, 0.0, 0
        print(f"{'tensor':<40} {'max_abs_diff':>12} {'max_ref':>10} {'rel':>10} {'elem_rel':>10} "
              f"{'f32_rel':>10}  (tol {tol:g})")

    def line(self, name, c, ref, f32):
        dmax, scale, r, er, r32 = _compare(c, ref, f32)
        ok = r <= self.tol  # False for nan/inf
        self.n += 1
        self.worst = max(self.worst, r) if not math.isnan(r) else float("inf")
        self.failed += not ok
        print(f"{name:<40} {dmax:12.4e} {scale:10.4e} {r:10.3e} {er:10.3e} {r32:10.3e}  "
              f"{'OK' if ok else 'FAIL'}")

    def missing(self, name, why):
        self.failed += 1
        print(f"{name:<40} {why}  FAIL")


def _get(tensors, name, path):
    if name not in tensors:
        raise ValueError(f"{path}: no tensor {name!r}")
    return tensors[name]


def _dump_inputs(dump, path, need_labels=True):
    ids = np.asarray(_get(dump, "input_ids", path)).astype(np.int64)
    if ids.ndim != 2:
        raise ValueError(f"{path}: input_ids has shape {list(ids.shape)}, want [B,T]")
    labels = None
    if need_labels or "labels" in dump:
        labels = np.asarray(_get(dump, "labels", path)).astype(np.int64)
        if labels.shape != ids.shape:
            raise ValueError(f"{path}: labels {list(labels.shape)} vs input_ids {list(ids.shape)}")
    return torch.from_numpy(ids), (torch.from_numpy(labels) if labels is not None else None)


def _check_range(ids, cfg):
    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= cfg.vocab_size):
        raise ValueError(f"input_ids outside [0, {cfg.vocab_size})")
    if getattr(cfg, "n_positions", None) is not None and ids.shape[1] > cfg.n_positions:
        raise ValueError(f"sequence length {ids.shape[1]} > n_positions {cfg.n_positions}")


def write_check_files(model, perturb, seed=3):
    """The self-tests' stand-in for a C run, in the current folder: dump.safetensors (a padded batch of
    3 x 16 ids below 97, its labels, float32 logits and loss of `model`), optim.safetensors (every
    parameter's gradient as "<name>.exp_avg") and optim_bad.safetensors (the same with the largest
    element of `perturb`'s gradient moved by 1e-3 of the tensor's largest value, which `check` must
    refuse)."""
    rng = np.random.default_rng(seed)
    B, T = 3, 16
    ids = rng.integers(0, 97, size=(B, T)).astype(np.int32)
    labels = ids.copy()
    labels[1, 11:] = -100; labels[2, 5:] = -100      # right padding, as the C task's batches
    ids[1, 11:] = 0; ids[2, 5:] = 0
    logits, loss = model(torch.from_numpy(ids), torch.from_numpy(labels))
    loss.backward()
    write_safetensors("dump.safetensors", {"input_ids": ids, "labels": labels,
        "logits": logits.detach().numpy(), "loss": np.array([loss.item()], np.float32)})
    grads = {n + ".exp_avg": p.grad.numpy().copy() for n, p in model.named_parameters()}
    write_safetensors("optim.safetensors", grads)
    k = perturb + ".exp_avg"
    a = grads[k].copy()
    a[np.unravel_index(np.abs(a).argmax(), a.shape)] += 1e-3 * np.abs(a).max()
    write_safetensors("optim_bad.safetensors", dict(grads, **{k: a}))
    return ids, labels, logits, grads


def cmd_init(a):
    cfg = GPT2Config(a.n_layer, a.n_head, a.n_embd, a.n_positions, a.vocab_size)
    model = random_init(GPT2(cfg).to(torch.float64), a.seed)
    meta = {"format": "pt", "n_layer": cfg.n_layer, "n_head": cfg.n_head, "n_embd": cfg.n_embd,
            "n_positions": cfg.n_positions, "vocab_size": cfg.vocab_size, "seed": a.seed}
    write_safetensors(a.out, state_tensors(model, prefix=not a.no_prefix), meta)
    n = sum(p.numel() for p in model.parameters())
    print(f"wrote {a.out}: {cfg}, {n} parameters")
    return 0


def _gpt2_from(weights, n_head, dtype):
    """the builder of check_dump / logits_of for GPT-2: (model in dtype with weights, config)"""
    cfg = config_from_tensors(weights, n_head)
    return load_state(GPT2(cfg).to(dtype), weights), cfg


def _grad_of(p):
    """p's gradient as numpy; zeros for a parameter the loss does not reach (no .grad)"""
    return p.grad.numpy() if p.grad is not None else np.zeros(tuple(p.shape))


def check_dump(a, build):
    """`check` for a model family: build(weights, n_head, dtype) -> (model, config), the model's
    forward(ids, labels) -> (logits, loss), its parameters named as the checkpoints name them,
    config.vocab_size (and n_positions if it has a limit)."""
    dump = read_safetensors(a.dump)
    weights = read_safetensors(a.weights)
    cfg = build(weights, a.n_head, torch.float64)[1]
    ids, labels = _dump_inputs(dump, a.dump)
    _check_range(ids, cfg)
    c_logits = np.asarray(_get(dump, "logits", a.dump))
    c_loss = np.asarray(_get(dump, "loss", a.dump)).reshape(-1)
    B, T = ids.shape
    if c_logits.shape != (B, T, cfg.vocab_size):
        raise ValueError(f"{a.dump}: logits {list(c_logits.shape)}, want {[B, T, cfg.vocab_size]}")
    if c_loss.size != 1:
        raise ValueError(f"{a.dump}: loss has {c_loss.size} elements, want 1")
    print(f"config {cfg}; batch {B} x {T}, {int((labels[:, 1:] != -100).sum())} labelled positions")

    runs = {}
    for dt in (torch.float64, torch.float32):
        m = build(weights, a.n_head, dt)[0]
        logits, loss = m(ids, labels)
        if a.grads:
            loss.backward()
        runs[dt] = (m, logits.detach().to(torch.float64).numpy(), loss.item())
    m64, l64, loss64 = runs[torch.float64]
    m32, l32, loss32 = runs[torch.float32]
    print(f"loss: C {float(c_loss[0]):.9g}, torch float64 {loss64:.9g}, torch float32 {loss32:.9g}")

    rep = _Report(a.tol)
    rep.line("logits", c_logits, l64, l32)
    rep.line("loss", c_loss, np.array([loss64]), np.array([loss32]))
    if a.grads:
        optim = read_safetensors(a.grads)
        p32 = dict(m32.named_parameters())
        for name, p in m64.named_parameters():
            short = name[len(PREFIX):] if name.startswith(PREFIX) else name
            key = next((k for k in (name + ".exp_avg", short + ".exp_avg") if k in optim), None)
            if key is None:
                rep.missing(name, f"no {name}.exp_avg in {a.grads}")
                continue
            g = np.asarray(optim[key])
            if tuple(g.shape) != tuple(p.shape):
                rep.missing(name, f"{key} has shape {list(g.shape)}, want {list(p.shape)}")
                continue
            rep.line(name + ".grad", g, _grad_of(p), _grad_of(p32[name]))
    print(f"checked {rep.n} tensors, worst relative difference {rep.worst:.3e}"
          + (f", {rep.failed} FAILED" if rep.failed else ""))
    return 1 if rep.failed else 0


def logits_of(a, build):
    """`logits` for a model family (build as for check_dump)"""
    weights = read_safetensors(a.weights)
    m, cfg = build(weights, a.n_head, torch.float32)
    dump = read_safetensors(a.ids)
    ids, labels = _dump_inputs(dump, a.ids, need_labels=False)
    _check_range(ids, cfg)
    with torch.no_grad():
        logits, loss = m(ids, labels)
    out = {"logits": logits.numpy().astype(np.float32)}
    if loss is not None:
        out["loss"] = np.array([loss.item()], np.float32)
    write_safetensors(a.out, out)
    print(f"wrote {a.out}: logits {list(logits.shape)}"
          + (f", loss {loss.item():.9g}" if loss is not None else ""))
    return 0


def cmd_check(a):
    return check_dump(a, _gpt2_from)


def cmd_logits(a):
    return logits_of(a, _gpt2_from)


def command_line(doc, sizes):
    """(parser, subparsers) with `init OUT --SIZE... --seed S [--no-prefix]`, `check` and
    `logits` as described in this module's docstring; sizes: the init's integer options"""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("init", help="random weights")
    p.add_argument("out")
    for k in tuple(sizes) + ("seed",):
        p.add_argument("--" + k, type=int, required=True)
    p.add_argument("--no-prefix", action="store_true", help='names without "transformer."')
    p = sub.add_parser("check", help="compare a C dump with torch")
    p.add_argument("dump")
    p.add_argument("weights")
    p.add_argument("--n_head", type=int, required=True)
    p.add_argument("--grads", metavar="OPTIM.safetensors")
    p.add_argument("--tol", type=float, default=1e-4)
    p = sub.add_parser("logits", help="torch float32 logits for a dump's input_ids")
    p.add_argument("weights")
    p.add_argument("--n_head", type=int, required=True)
    p.add_argument("--ids", required=True)
    p.add_argument("--out", required=True)
    return ap, sub


def run_command(prog, a, commands):
    """commands[a.cmd](a) with torch on at most 2 threads; bad input: a message and exit code 2"""
    torch.set_num_threads(max(1, min(2, torch.get_num_threads())))
    try:
        return commands[a.cmd](a)
    except (OSError, ValueError, KeyError, SafetensorsError) as e:
        print(f"{prog} {a.cmd}: {e}", file=sys.stderr)
        return 2


def main(argv=None):
    ap, _ = command_line(__doc__, ("n_layer", "n_head", "n_embd", "n_positions", "vocab_size"))
    a = ap.parse_args(argv)
    return run_command("gpt2_torch.py", a, {"init": cmd_init, "check": cmd_check, "logits": cmd_logits})


if __name__ == "__main__":
    sys.exit(main())
