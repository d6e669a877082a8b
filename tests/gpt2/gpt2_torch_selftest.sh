#!/bin/bash
# Self-test of tests/gpt2/gpt2_torch.py without the C task: torch itself plays the C side.
#   bash tests/gpt2/gpt2_torch_selftest.sh        (exit 0 = all good; takes a few seconds)
# 1. init writes weights that an independent reader (tests/interop/read_safetensors.py) accepts,
#    with every tensor non-trivial and no lm_head.weight;
# 2. a fake DUMP (float32 torch logits and loss, labels with -100 padding) and a fake OPTIM
#    (exp_avg = float32 torch gradients) pass `check --grads`;
# 3. the same with one gradient element perturbed by 1e-3 * max|grad| FAILs (exit 1), and so do a
#    missing exp_avg and a perturbed logit;
# 4. the Hub's naming (no prefix, h.N.attn.bias / masked_bias buffers) loads to the same logits,
#    a wrong shape is refused, and `logits` round-trips the dump's logits.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
# every Python command below in one Python process, torch imported once (torch_py,
# tests/transformer/torch_server.sh, which keeps its files in $T and stops the server at exit)
T=$W SRC=$(cd "$HERE/../.." && pwd)
. "$SRC/tests/transformer/torch_server.sh"
PY=torch_py
G="$PY $HERE/gpt2_torch.py"
fail() { echo "SELFTEST FAIL: $*" >&2; exit 1; }

$G init "$W/w.safetensors" --n_layer 2 --n_head 4 --n_embd 32 --n_positions 16 --vocab_size 97 --seed 7
$PY "$HERE/../interop/read_safetensors.py" "$W/w.safetensors" > "$W/list.txt" || fail "independent reader"
grep -q '^transformer.h.1.mlp.c_proj.weight F32 128,32 ' "$W/list.txt" || fail "layout of c_proj"
! grep -q lm_head "$W/list.txt" || fail "lm_head.weight written"

cd "$W"
PYTHONPATH="$HERE" $PY - <<'EOF'
import numpy as np, torch
import gpt2_torch as g
t, meta = g.read_safetensors("w.safetensors", with_metadata=True)
assert meta["n_head"] == "4", meta
assert len(t) == 4 + 12 * 2, sorted(t)
for n, a in t.items():  # every tensor non-trivial: no zeros / ones / constants
    assert a.dtype == np.float32 and a.std() > 0.01, (n, a.std())
    if "ln" in n and n.endswith("weight"):
        assert abs(a.mean() - 1) < 0.1 and a.std() > 0.05, n
m = g.model_from_file("w.safetensors", n_head=4, dtype=torch.float32)
assert m.lm_head.weight is m.transformer.wte.weight
ids, labels, logits, grads = g.write_check_files(m, "transformer.h.0.attn.c_attn.weight")
gm = dict(grads); del gm["transformer.ln_f.bias.exp_avg"]
g.write_safetensors("optim_missing.safetensors", gm)
d = g.read_safetensors("dump.safetensors")
d["logits"][0, 3, 5] += 1e-3 * np.abs(d["logits"]).max()
g.write_safetensors("dump_bad.safetensors", d)
# the Hub's naming: no prefix, plus the attention mask buffers that HF's file carries
hub = {k[len("transformer."):]: v for k, v in t.items()}
for i in range(2):
    hub[f"h.{i}.attn.bias"] = np.tril(np.ones((1, 1, 16, 16), np.float32))
    hub[f"h.{i}.attn.masked_bias"] = np.array(-1e4, np.float32)
g.write_safetensors("hub.safetensors", hub, {"format": "pt"})
m2 = g.model_from_file("hub.safetensors", n_head=4, dtype=torch.float32)
assert torch.equal(m2(torch.from_numpy(ids))[0], logits.detach())
bad = dict(t); bad["transformer.wpe.weight"] = bad["transformer.wpe.weight"][:15]
try:
    g.load_state(g.GPT2(g.config_from_tensors(t, 4)), bad); raise SystemExit("wrong shape accepted")
except ValueError:
    pass
bf = {k: v.astype(np.float16) for k, v in t.items()}  # F16 weights read too
g.write_safetensors("w16.safetensors", bf)
g.model_from_file("w16.safetensors", n_head=4)
print("fake dump/optim written; hub naming, shape check, F16 read OK")
EOF

echo "--- check (expect pass)"
$G check dump.safetensors w.safetensors --n_head 4 --grads optim.safetensors || fail "good dump rejected"
echo "--- check with hub-named weights (expect pass)"
$G check dump.safetensors hub.safetensors --n_head 4 --grads optim.safetensors > out.txt || { cat out.txt; fail "hub weights"; }
tail -n 1 out.txt
echo "--- check, one gradient perturbed by 1e-3 relative (expect FAIL)"
rc=0; $G check dump.safetensors w.safetensors --n_head 4 --grads optim_bad.safetensors > out.txt || rc=$?
grep -E 'FAIL|^checked' out.txt
[ $rc = 1 ] || fail "perturbed gradient: exit $rc"
[ "$(grep -c 'FAIL$' out.txt)" = 1 ] && grep -q '^transformer.h.0.attn.c_attn.weight.grad .*FAIL$' out.txt || fail "wrong FAIL lines"
echo "--- check, a missing exp_avg (expect FAIL)"
rc=0; $G check dump.safetensors w.safetensors --n_head 4 --grads optim_missing.safetensors > out.txt || rc=$?
grep FAIL out.txt; [ $rc = 1 ] || fail "missing exp_avg: exit $rc"
echo "--- check, one logit perturbed (expect FAIL)"
rc=0; $G check dump_bad.safetensors w.safetensors --n_head 4 > out.txt || rc=$?
grep FAIL out.txt; [ $rc = 1 ] || fail "perturbed logit: exit $rc"
echo "--- logits round trip"
$G logits w.safetensors --n_head 4 --ids dump.safetensors --out l.safetensors
PYTHONPATH="$HERE" $PY -c '
import numpy as np, gpt2_torch as g
a, b = g.read_safetensors("dump.safetensors"), g.read_safetensors("l.safetensors")
assert np.array_equal(a["logits"], b["logits"]) and np.array_equal(a["loss"], b["loss"])' || fail "logits round trip"
echo "SELFTEST PASS"
