#!/usr/bin/python3
"""compare_logs.py GOT.jsonl BASE.jsonl RTOL [FIELD...]: the trainer's per-step logs agree.

Every step of BASE must be in GOT with each FIELD (default: loss grad_norm) equal within RTOL
(relative).  Prints the largest relative difference per field; exits 1 on a mismatch."""
import json
import math
import sys


def load(path):
    with open(path) as f:
        return {r["step"]: r for r in map(json.loads, f)}


got, base, rtol = load(sys.argv[1]), load(sys.argv[2]), float(sys.argv[3])
fields = sys.argv[4:] or ["loss", "grad_norm"]
bad = []
worst = {f: 0.0 for f in fields}
if sorted(got) != sorted(base):
    bad.append(f"steps differ: {sorted(got)} vs {sorted(base)}")
for step in sorted(set(got) & set(base)):
    for f in fields:
        a, b = got[step][f], base[step][f]
        if a is None or b is None or (isinstance(a, float) and math.isnan(a)):
            if not (a is None and b is None):
                bad.append(f"step {step} {f}: {a} vs {b}")
            continue
        rel = abs(a - b) / max(abs(b), 1e-12)
        worst[f] = max(worst[f], rel)
        if rel > rtol:
            bad.append(f"step {step} {f}: {a!r} vs {b!r} (relative difference {rel:.3g} > {rtol})")
print(" ".join(f"max_rel_{f}={worst[f]:.3g}" for f in fields))
for b in bad[:10]:
    print("MISMATCH", b)
sys.exit(1 if bad else 0)
