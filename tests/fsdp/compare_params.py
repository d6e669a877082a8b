#!/usr/bin/python3
"""compare_params.py RTOL ATOL BASE.safetensors GOT.safetensors...: every tensor of every GOT file
equals BASE's within |got - base| <= ATOL + RTOL * |base| (numpy only; an independent reader of the
FULL checkpoints shardrun writes).  Prints one line per file; exits 1 on any mismatch."""
import json
import struct
import sys

import numpy as np


def load(path):
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    header.pop("__metadata__", None)
    start = 8 + n
    return {k: np.frombuffer(raw[start + v["data_offsets"][0]:start + v["data_offsets"][1]], "<f4").reshape(v["shape"])
            for k, v in header.items() if v["dtype"] == "F32"}


rtol, atol = float(sys.argv[1]), float(sys.argv[2])
base = load(sys.argv[3])
bad = 0
for path in sys.argv[4:]:
    got = load(path)
    if got.keys() != base.keys():
        print(f"MISMATCH {path}: tensors differ: {sorted(got.keys() ^ base.keys())[:5]}")
        bad += 1
        continue
    worst = max(float(np.max(np.abs(got[k] - base[k]) / (atol + rtol * np.abs(base[k])))) for k in base)
    rel = max(float(np.max(np.abs(got[k] - base[k]) / np.maximum(np.abs(base[k]), 1e-3))) for k in base)
    ok = worst <= 1.0
    bad += not ok
    print(f"{'ok' if ok else 'MISMATCH'} {path}: {len(got)} tensors, max relative difference {rel:.2g}")
sys.exit(1 if bad else 0)
