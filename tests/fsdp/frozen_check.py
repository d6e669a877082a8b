#!/usr/bin/python3
"""frozen_check.py INIT.safetensors GOT_DIR PATTERNS: a FULL checkpoint trained with [task] freeze =
PATTERNS (comma-separated fnmatch globs): every parameter a pattern matches is byte for byte its
initial value in INIT, every other one changed, and GOT_DIR/optimizer.safetensors holds AdamW
moments for the trained parameters only (a frozen one has no optimizer state).  numpy only; prints
one line, exits 1 on any mismatch."""
import fnmatch
import json
import struct
import sys


def load(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    header.pop("__metadata__", None)
    start = 8 + n
    return {k: raw[start + v["data_offsets"][0]:start + v["data_offsets"][1]] for k, v in header.items()}


init, got = load(sys.argv[1]), load(sys.argv[2] + "/model.safetensors")
optim = load(sys.argv[2] + "/optimizer.safetensors")
globs = [g.strip() for g in sys.argv[3].split(",") if g.strip()]
bad = []
if init.keys() != got.keys():
    bad.append(f"tensors differ: {sorted(init.keys() ^ got.keys())[:5]}")
frozen = [k for k in init if any(fnmatch.fnmatchcase(k, g) for g in globs)]
trained = [k for k in init if k not in frozen]
bad += [f"frozen {k} changed" for k in frozen if got.get(k) != init[k]]
bad += [f"trained {k} did not change" for k in trained if got.get(k) == init[k]]
want = {f"{k}.{m}" for k in trained for m in ("exp_avg", "exp_avg_sq")}
if set(optim) != want:
    bad.append(f"optimizer.safetensors: extra {sorted(set(optim) - want)[:3]}, missing {sorted(want - set(optim))[:3]}")
if not frozen or not trained:
    bad.append(f"{len(frozen)} frozen and {len(trained)} trained tensors: the test needs both")
print(f"{'ok' if not bad else 'MISMATCH'} {sys.argv[2]}: {len(frozen)} frozen tensors bit-identical to the "
      f"initial values, {len(trained)} trained ones changed; {'; '.join(bad[:5])}")
sys.exit(1 if bad else 0)
