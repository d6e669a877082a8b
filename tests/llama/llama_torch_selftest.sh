#!/bin/bash
# Self-test of tests/llama/llama_torch.py without the C task: torch itself plays the C side.
#   bash tests/llama/llama_torch_selftest.sh        (exit 0 = all good; takes a few seconds)
# 1. llama3 rope_scaling's inverse frequencies against values worked out by hand from HF's rule
#    (head size 8, theta 10: 1, 10^-0.25, 10^-0.5, 10^-0.75 with original_max_position_embeddings
#    16, factor 8: the first two are interpolated, the other two divided by 8);
# 2. grouped-query attention is repeat_kv's: 4 heads on 2 key/value heads compute the logits of 4
#    heads on 4 whose k/v heads 2j and 2j+1 both copy head j;
# 3. RoPE scores depend on the distance only: the same q and k placed at positions (t, s) and
#    (t + 5, s + 5) give the same score, and other distances another one;
# 4. a fake DUMP/OPTIM from torch's float32 run passes `check --grads`; one gradient element off by
#    1e-3 of the tensor's largest value FAILs (exit 1); init writes HF's names and no tied lm_head.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cd "$W"
cat >c.json <<'EOF2'
{"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
 "hidden_size": 32, "intermediate_size": 40, "rope_theta": 10.0, "rms_norm_eps": 1e-5, "tie_word_embeddings": false,
 "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                  "original_max_position_embeddings": 16}}
EOF2
PYTHONPATH="$HERE:$HERE/../gpt2" /usr/bin/python3 - <<'PY'
import contextlib, io, math, sys, types
import numpy as np, torch
import llama_torch as L, gpt2_torch as g
torch.manual_seed(0)
ok = True
def check(cond, what):
    global ok
    print(("ok   " if cond else "FAIL ") + what)
    ok &= bool(cond)

cfg = L.config_from_json("c.json", 97)
# 1: theta 10, hd 8: base frequencies 1/10^(2i/8) = 1, 10^-0.25, 10^-0.5, 10^-0.75
f = L.inv_freq(cfg).tolist()
base = [10 ** (-2 * i / 8) for i in range(4)]
want = []
for b in base:  # HF's llama3 rule, worked out here: wavelength 2 pi / f against 16 / 1 and 16 / 4
    wl = 2 * math.pi / b
    if wl < 4: want.append(b)
    elif wl > 16: want.append(b / 8)
    else:
        s = (16 / wl - 1) / (4 - 1)
        want.append((1 - s) * b / 8 + s * b)
check(all(abs(a - b) <= 1e-6 * b for a, b in zip(f, want)), f"llama3 inverse frequencies {f} vs {want}")
# by hand: wavelengths 2 pi and 11.17 lie in [4, 16]: s = (16 / 2 pi - 1) / 3 = 0.515535, giving
# (1 - s) / 8 + s = 0.576056, and s = 0.143988, giving 0.562341 ((1 - s) / 8 + s) = 0.141146; the
# others' wavelengths 19.9 and 35.3 exceed 16: divided by 8
check(abs(f[0] - 0.576056) < 1e-6 and abs(f[1] - 0.141146) < 1e-6 and
      all(abs(f[i] - base[i] / 8) < 1e-7 * base[i] for i in (2, 3)),
      "by hand: the first two frequencies interpolated (0.576056, 0.141146), the others divided by 8")

# 2: GQA = MHA with repeated k/v heads
m = L.random_init(L.Llama(cfg).double(), 3)
cfg4 = L.LlamaConfig(**{**cfg.__dict__, "n_kv_head": 4})
m4 = L.Llama(cfg4).double()
sd = m.state_dict()
hd = 8
for k, v in list(sd.items()):
    if k.endswith(("k_proj.weight", "v_proj.weight")):
        sd[k] = v.view(2, hd, -1).repeat_interleave(2, dim=0).reshape(4 * hd, -1)
m4.load_state_dict(sd)
ids = torch.randint(0, 97, (2, 20))
a, b = m(ids)[0], m4(ids)[0]
check(torch.allclose(a, b, rtol=0, atol=1e-12), f"4 heads on 2 kv heads = 4 heads with kv heads 2j, 2j+1 = j ({(a - b).abs().max():.1e})")

# 3: RoPE depends on the distance only
cos, sin = L.rope_cos_sin(cfg, 40, torch.float64)
q, k = torch.randn(hd, dtype=torch.float64), torch.randn(hd, dtype=torch.float64)
rot = lambda x, t: x * cos[t] + L.rotate_half(x) * sin[t]
s1, s2, s3 = rot(q, 12) @ rot(k, 3), rot(q, 17) @ rot(k, 8), rot(q, 12) @ rot(k, 4)
check(abs(s1 - s2) < 1e-5 and abs(s1 - s3) > 1e-3, f"q.k at (12, 3) = (17, 8) != (12, 4): {s1:.6f} {s2:.6f} {s3:.6f}")

# 4: check passes on torch's own float32 run and fails on a perturbed gradient
m32 = L.load_state(L.Llama(cfg).float(), L.state_tensors(m))
g.write_safetensors("w.safetensors", L.state_tensors(m))
g.write_check_files(m32, "model.layers.1.self_attn.k_proj.weight")
def run(*a):  # llama_torch.py's command line, in this process (torch imported once)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = L.main(list(a))
    return types.SimpleNamespace(returncode=rc, stdout=out.getvalue())
r = run("check", "dump.safetensors", "w.safetensors", "--config", "c.json", "--grads", "optim.safetensors")
check(r.returncode == 0, "check passes torch's own float32 run: " + r.stdout.strip().splitlines()[-1])
r = run("check", "dump.safetensors", "w.safetensors", "--config", "c.json", "--grads", "optim_bad.safetensors")
check(r.returncode == 1 and "model.layers.1.self_attn.k_proj.weight.grad" in
      [l.split()[0] for l in r.stdout.splitlines() if l.endswith("FAIL")], "a gradient off by 1e-3 fails")
r = run("init", "i.safetensors", "--config", "c.json", "--vocab_size", "50", "--seed", "1")
names = g.read_safetensors("i.safetensors")
check(r.returncode == 0 and names["model.layers.1.self_attn.k_proj.weight"].shape == (16, 32)
      and names["lm_head.weight"].shape == (50, 32) and len(names) == 1 + 2 * 9 + 2, "init: HF's names and shapes")
sys.exit(0 if ok else 1)
PY
