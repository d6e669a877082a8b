# shardrun selftest against formulas that are wrong on both sides of its device comparisons:
# tests/selftest/broken_math.so is the CPU's tables built again with GELU's derivative using
# 1 - tanh for 1 - tanh^2 and AdamW's second bias correction taken from beta1, standing in for the
# CPU's tables too (as in the CPU half, or a bug the CUDA kernels share).  The device-vs-CPU lines
# cannot see them and pass; the float64 references fail them, naming the check, the shape and the
# element, and nothing else fails.
. "$(dirname "$0")/lib.sh"
BROKEN=$BUILD/tests/selftest/broken_math.so
[ -f "$BROKEN" ] || { fail "no $BROKEN: build the tests"; done_checks; exit 1; }

SHARDRUN_SELFTEST_DUT=$BROKEN run "$SHARDRUN" selftest --quick --results "$T/r.json"
expect_rc 1 "selftest with wrong shared formulas"
fails=$(grep '^FAIL' <<<"$out")
expect_in "$fails" "FAIL  math       gpt2.gelu_backward fp32            rank 0: against float64: x in [-6, 6], 41x101 dx: " \
    "GELU's derivative is named, with the inputs and the output it got wrong"
expect_in "$fails" "FAIL  math       device.adamw                       rank 0: against float64: step 1 param [0]: " \
    "AdamW is named, with the step and the element"
expect_eq "$(wc -l <<<"$fails")" 2 "exactly the two wrong formulas fail: $fails"
# the comparisons of the device with the CPU share the formulas: they pass
expect_in "$out" "PASS  kernel     gpt2.gelu_backward fp32" "the device-vs-CPU GELU' line cannot see it"
expect_in "$out" "PASS  kernel     gpt2.gelu_backward_bias fp32" "... nor the fused bias one"
expect_in "$out" "PASS  device     device.adamw" "the device-vs-CPU AdamW line cannot see it"
expect_in "$out" "PASS  math       gpt2.gelu_forward fp32" "the formulas left alone pass their references"
expect_in "$out" "PASS  math       gpt2.layernorm_backward fp32" "... LayerNorm's gradients"
expect_in "$out" "PASS  math       device.sumsq" "... the sum of squares"
expect_in "$out" "verdict: FAIL: 2 of " "verdict"
/usr/bin/python3 - "$T/r.json" <<'PY' && pass || fail "results JSON"
import json, sys
r = json.load(open(sys.argv[1]))
names = sorted(l["group"] + " " + l["name"] for l in r["lines"] if l["status"] == "FAIL")
assert r["verdict"] == "FAIL" and names == ["math device.adamw", "math gpt2.gelu_backward fp32"], names
PY
done_checks
