#!/bin/bash
# Self-test of tests/bloom/bloom_torch.py without the C task: torch itself plays the C side.
#   bash tests/bloom/bloom_torch_selftest.sh        (exit 0 = all good; takes a few seconds)
# 1. ALiBi slopes for 1, 2, 3, 4, 6, 8, 12, 16, 24, 30, 32, 40 heads against the closed form written
#    here independently, and against values worked out by hand from HF's rule;
# 2. autograd gradients against float64 central differences on a tiny model (3 heads: the
#    extra-head slope rule), for every parameter, including an embedding row reached only through
#    the tied lm_head;
# 3. the per-head interleaving of query_key_value ([H, 3, hd] rows), the tied lm_head, and the names
#    and layouts init writes (an independent reader; no lm_head.weight);
# 4. a fake DUMP/OPTIM from torch's float32 run passes `check --grads`; one logit or one gradient
#    element perturbed by 1e-3 of the tensor's largest value, or a missing exp_avg, FAILs (exit 1);
#    prefix-less (Hub) names load to the same logits; `logits` round-trips.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
# every Python command below in one Python process, torch imported once (torch_py,
# tests/transformer/torch_server.sh, which keeps its files in $T and stops the server at exit)
T=$W SRC=$(cd "$HERE/../.." && pwd)
. "$SRC/tests/transformer/torch_server.sh"
PY=torch_py
B="$PY $HERE/bloom_torch.py"
fail() { echo "SELFTEST FAIL: $*" >&2; exit 1; }

echo "--- ALiBi slopes"
# the closed form, written without HF's code: p = largest power of two <= n; head i (1-based) gets
# 2^(-8 i / p) for i <= p, else 2^(-4 (2 (i - p) - 1) / p)
$B alibi-slopes --dir "$W" 1 2 3 4 6 8 12 16 24 30 32 40
for n in 1 2 3 4 6 8 12 16 24 30 32 40; do
    awk -v n=$n 'BEGIN { p = 1; while (p * 2 <= n) p *= 2; bad = 0 }
        { i = $1 + 1; e = (i <= p) ? -8 * i / p : -4 * (2 * (i - p) - 1) / p; want = 2 ^ e
          if ($2 <= 0 || (($2 - want) / want) ^ 2 > 1e-12) { print "head " $1 ": " $2 " want 2^" e; bad = 1 } }
        END { if (NR != n) { print NR " lines for " n " heads"; bad = 1 } exit bad }' "$W/s$n.txt" ||
        fail "slopes for $n heads"
done
# by hand from the rule (exponents of 2): 12 heads = p 8: the 8-head slopes, then base 2^(-4/8)
# to the powers 1, 3, 5, 7
hand() { # N EXPONENTS...
    local n=$1
    shift
    awk -v want="$*" 'BEGIN { split(want, e, " ") }
        { w = 2 ^ e[$1 + 1]; if ((($2 - w) / w) ^ 2 > 1e-12) { print "head " $1 ": " $2 " want 2^" e[$1 + 1]; bad = 1 } }
        END { if (NR != length(e)) { print NR " heads"; bad = 1 } exit bad }' "$W/s$n.txt" ||
        fail "hand-computed slopes for $n heads"
}
hand 1 -8
hand 2 -4 -8
hand 3 -4 -8 -2
hand 4 -2 -4 -6 -8
hand 6 -2 -4 -6 -8 -1 -3
hand 8 -1 -2 -3 -4 -5 -6 -7 -8
hand 12 -1 -2 -3 -4 -5 -6 -7 -8 -0.5 -1.5 -2.5 -3.5
hand 16 -0.5 -1 -1.5 -2 -2.5 -3 -3.5 -4 -4.5 -5 -5.5 -6 -6.5 -7 -7.5 -8
hand 24 -0.5 -1 -1.5 -2 -2.5 -3 -3.5 -4 -4.5 -5 -5.5 -6 -6.5 -7 -7.5 -8 -0.25 -0.75 -1.25 -1.75 -2.25 -2.75 -3.25 -3.75
[ "$(sed -n 1p "$W/s8.txt")" = "0 0.5" ] || fail "8 heads: the first slope is not exactly 0.5"
echo "slopes OK"

$B init "$W/w.safetensors" --n_layer 2 --n_head 6 --hidden_size 48 --vocab_size 97 --seed 7
$PY "$HERE/../interop/read_safetensors.py" "$W/w.safetensors" > "$W/list.txt" || fail "independent reader"
grep -q '^transformer.h.1.self_attention.query_key_value.weight F32 144,48 ' "$W/list.txt" || fail "layout of query_key_value"
grep -q '^transformer.h.0.mlp.dense_4h_to_h.weight F32 48,192 ' "$W/list.txt" || fail "layout of dense_4h_to_h"
grep -q '^transformer.word_embeddings.weight F32 97,48 ' "$W/list.txt" || fail "layout of word_embeddings"
! grep -q lm_head "$W/list.txt" || fail "lm_head.weight written"

cd "$W"
PYTHONPATH="$HERE:$HERE/../gpt2" $PY - <<'EOF'
import math
import numpy as np, torch
import bloom_torch as b, gpt2_torch as g

t, meta = g.read_safetensors("w.safetensors", with_metadata=True)
assert meta["n_head"] == "6" and meta["hidden_size"] == "48", meta
assert len(t) == 5 + 12 * 2, sorted(t)
for n, a in t.items():  # every tensor non-trivial: no zeros / ones / constants
    assert a.dtype == np.float32 and a.std() > 0.01, (n, a.std())

# --- gradients against central differences (float64, 3 heads, padded labels, T 7)
torch.manual_seed(0)
cfg = b.BloomConfig(n_layer=2, n_head=3, hidden_size=12, vocab_size=13)
m = b.random_init(b.Bloom(cfg).to(torch.float64), 5)
ids = torch.tensor([[1, 2, 3, 4, 5, 6, 7], [8, 9, 10, 1, 2, 0, 0]])
labels = ids.clone(); labels[1, 5:] = -100
unseen = 12  # never in ids: its embedding row gets a gradient only through the tied lm_head
loss = m(ids, labels)[1]
loss.backward()
params = dict(m.named_parameters())
assert "lm_head.weight" not in params
eps, worst = 1e-5, 0.0

def loss_at(p, delta):
    with torch.no_grad():
        p += delta
        v = m(ids, labels)[1].item()
        p -= delta
    return v

for name, p in params.items():
    gr = p.grad.clone()
    scale = gr.abs().max().item()
    assert scale > 0, f"{name}: zero gradient"
    d = torch.randn(p.shape, dtype=torch.float64)
    probes = [d / d.norm()]
    e = torch.zeros_like(p); e.view(-1)[gr.abs().argmax()] = 1.0
    probes.append(e)
    if name.endswith("word_embeddings.weight"):
        u = torch.zeros_like(p); u[unseen, 3] = 1.0
        assert gr[unseen].abs().max() > 0, "no lm_head share in the embedding's gradient"
        probes.append(u)
    for d in probes:
        fd = (loss_at(p, eps * d) - loss_at(p, -eps * d)) / (2 * eps)
        an = (gr * d).sum().item()
        err = abs(fd - an) / max(scale, 1e-12)
        worst = max(worst, err)
        assert err < 1e-6, f"{name}: finite difference {fd:.10g}, autograd {an:.10g}"
print(f"gradients vs central differences: {len(params)} tensors, worst {worst:.2e} of the tensor's largest")

# --- query_key_value is [H, 3, hd]: head h's q, k, v rows at h*3*hd + 0, hd, 2*hd
cfg = b.BloomConfig(n_layer=1, n_head=4, hidden_size=16, vocab_size=11)
m = b.random_init(b.Bloom(cfg).to(torch.float64), 3)
att = m.transformer.h[0].self_attention
hd, H = 4, 4
x = torch.randn(2, 5, 16, dtype=torch.float64)
alibi = m.transformer.alibi(5, torch.float64)
def rows(h, part):
    return slice(h * 3 * hd + part * hd, h * 3 * hd + (part + 1) * hd)
with torch.no_grad():
    att.query_key_value.weight.zero_(); att.query_key_value.bias.zero_()
    base = att.scores(x, alibi)
    Wq = torch.randn(H * hd, 16, dtype=torch.float64)
    for h in range(H):
        att.query_key_value.weight[rows(h, 0)] = Wq[h * hd:(h + 1) * hd]
    assert torch.equal(att.scores(x, alibi), base), "q alone changed the scores"
    Wk = torch.randn(hd, 16, dtype=torch.float64)
    att.query_key_value.weight[rows(1, 1)] = Wk  # only head 1's k rows
    s = att.scores(x, alibi)
    for h in range(H):
        same = torch.equal(s[:, h], base[:, h])
        assert same == (h != 1), f"head {h}'s scores {'unchanged' if same else 'changed'}"
    # head 1's scores, computed here from the rows by hand
    q1, k1 = x @ Wq[hd:2 * hd].T, x @ Wk.T
    want = q1 @ k1.transpose(1, 2) / 2.0 + alibi[1][None, None, :]
    causal = torch.ones(5, 5, dtype=torch.bool).tril()
    assert torch.allclose(s[:, 1][:, causal], want[:, causal], rtol=1e-12, atol=1e-12)
    assert torch.all(s[:, 1][:, ~causal] == torch.finfo(torch.float32).min)
    att.query_key_value.weight[rows(3, 2)] = torch.randn(hd, 16, dtype=torch.float64)  # head 3's v
    ctx = att.context(x, alibi)
    assert ctx[..., 12:].abs().max() > 0 and ctx[..., :12].abs().max() == 0, "v of head 3 lands elsewhere"
    # the slopes enter per head: head h's causal scores minus its scores at slope 0 are slope_h * j
    sl = b.alibi_slopes(H).to(torch.float64)
    assert torch.allclose(alibi, sl[:, None] * torch.arange(5.0)[None, :], rtol=0, atol=1e-15)
print("query_key_value interleaving [H, 3, hd] OK")

# --- the tied lm_head: the same tensor; logits = ln_f(x) @ word_embeddings^T
m = b.model_from_file("w.safetensors", n_head=6, dtype=torch.float64)
assert m.lm_head.weight is m.transformer.word_embeddings.weight
ids = torch.randint(0, 97, (2, 9))
with torch.no_grad():
    hidden = m.transformer(ids)
    assert torch.allclose(m(ids)[0], hidden @ m.transformer.word_embeddings.weight.T, rtol=1e-13, atol=1e-13)
with_head = dict(t); with_head["lm_head.weight"] = t["transformer.word_embeddings.weight"]
b.load_state(b.Bloom(b.config_from_tensors(t, 6)), with_head)  # an equal lm_head.weight is accepted
with_head["lm_head.weight"] = t["transformer.word_embeddings.weight"] + 1
try:
    b.load_state(b.Bloom(b.config_from_tensors(t, 6)), with_head); raise SystemExit("untied lm_head accepted")
except ValueError as e:
    assert "tied" in str(e), e
bad = dict(t); bad["transformer.h.0.self_attention.dense.bias"] = bad["transformer.h.0.self_attention.dense.bias"][:47]
try:
    b.load_state(b.Bloom(b.config_from_tensors(t, 6)), bad); raise SystemExit("wrong shape accepted")
except ValueError:
    pass
try:
    b.Bloom(b.BloomConfig(1, 5, 48, 97)); raise SystemExit("48 / 5 heads accepted")
except ValueError:
    pass
print("tied lm_head, shape checks OK")

# --- a fake dump and optimizer file from torch's float32 run
m = b.model_from_file("w.safetensors", n_head=6, dtype=torch.float32)
ids, labels, logits, grads = g.write_check_files(m, "transformer.h.1.self_attention.query_key_value.weight")
gm = dict(grads); del gm["transformer.word_embeddings_layernorm.bias.exp_avg"]
g.write_safetensors("optim_missing.safetensors", gm)
d = g.read_safetensors("dump.safetensors")
d["logits"][0, 3, 5] += 1e-3 * np.abs(d["logits"]).max()
g.write_safetensors("dump_bad.safetensors", d)
hub = {k[len("transformer."):]: v for k, v in t.items()}  # the Hub's bloom files: no prefix
g.write_safetensors("hub.safetensors", hub, {"format": "pt"})
m2 = b.model_from_file("hub.safetensors", n_head=6, dtype=torch.float32)
assert torch.equal(m2(torch.from_numpy(ids))[0], logits.detach())
print("fake dump/optim written; hub naming OK")
EOF

echo "--- check (expect pass)"
$B check dump.safetensors w.safetensors --n_head 6 --grads optim.safetensors > out.txt || { cat out.txt; fail "good dump rejected"; }
grep -E '^(logits|loss|transformer.word_embeddings.weight.grad) ' out.txt; tail -n 1 out.txt
[ "$(grep -c ' OK$' out.txt)" = 31 ] || fail "expected 31 OK lines (logits, loss, 29 gradients)"
echo "--- check with hub-named weights (expect pass)"
$B check dump.safetensors hub.safetensors --n_head 6 --grads optim.safetensors > out.txt || { cat out.txt; fail "hub weights"; }
echo "--- check with the wrong head count (expect FAIL: other slopes, other head split)"
rc=0; $B check dump.safetensors w.safetensors --n_head 4 > out.txt || rc=$?
grep -E 'FAIL|^checked' out.txt; [ $rc = 1 ] || fail "4 heads instead of 6: exit $rc"
echo "--- check, one gradient perturbed by 1e-3 relative (expect FAIL)"
rc=0; $B check dump.safetensors w.safetensors --n_head 6 --grads optim_bad.safetensors > out.txt || rc=$?
grep -E 'FAIL|^checked' out.txt
[ $rc = 1 ] || fail "perturbed gradient: exit $rc"
[ "$(grep -c 'FAIL$' out.txt)" = 1 ] && grep -q '^transformer.h.1.self_attention.query_key_value.weight.grad .*FAIL$' out.txt || fail "wrong FAIL lines"
echo "--- check, a missing exp_avg (expect FAIL)"
rc=0; $B check dump.safetensors w.safetensors --n_head 6 --grads optim_missing.safetensors > out.txt || rc=$?
grep FAIL out.txt; [ $rc = 1 ] || fail "missing exp_avg: exit $rc"
echo "--- check, one logit perturbed by 1e-3 relative (expect FAIL)"
rc=0; $B check dump_bad.safetensors w.safetensors --n_head 6 > out.txt || rc=$?
grep FAIL out.txt; [ $rc = 1 ] || fail "perturbed logit: exit $rc"
echo "--- bad input (expect exit 2)"
rc=0; $B check dump.safetensors list.txt --n_head 6 2> err.txt || rc=$?
[ $rc = 2 ] && grep -q '^bloom_torch.py check: ' err.txt || fail "a non-safetensors weights file: exit $rc"
echo "--- logits round trip"
$B logits w.safetensors --n_head 6 --ids dump.safetensors --out l.safetensors
PYTHONPATH="$HERE/../gpt2" $PY -c '
import numpy as np, gpt2_torch as g
a, b = g.read_safetensors("dump.safetensors"), g.read_safetensors("l.safetensors")
assert np.array_equal(a["logits"], b["logits"]) and np.array_equal(a["loss"], b["loss"])' || fail "logits round trip"
echo "SELFTEST PASS"
