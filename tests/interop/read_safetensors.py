#!/usr/bin/python3
"""An independent safetensors reader (Python standard library + numpy only), to check files that
shardrun writes against the format rather than against shardrun's own reader.

    read_safetensors.py FILE              one line per tensor, sorted by name:
                                          NAME DTYPE SHAPE SUM FIRST
    read_safetensors.py FILE --dump NAME  every element of NAME, one per line

SHAPE is comma-separated ("4,16"; "-" for a 0-d scalar), SUM is the sum of all elements in float64
and FIRST the first element (both %.9g; FIRST is "-" for a tensor with no elements).  Exits 1
with a message on stderr for a malformed file (or a missing tensor).
"""
import json
import struct
import sys

import numpy as np

# every dtype of the format with a plain numpy equivalent; BF16 is decoded by hand below
DTYPES = {
    "F64": "<f8", "F32": "<f4", "F16": "<f2", "BF16": "<u2",
    "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1",
    "U64": "<u8", "U32": "<u4", "U16": "<u2", "U8": "u1", "BOOL": "?",
}
MAX_HEADER = 100_000_000


class Malformed(Exception):
    pass


def no_duplicates(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise Malformed(f"key {k!r} appears twice in the header")
        d[k] = v
    return d


def reject_constant(name):
    raise Malformed(f"{name} is not JSON")


def load(path):
    with open(path, "rb") as f:
        buf = f.read()
    if len(buf) < 8:
        raise Malformed(f"{len(buf)} bytes, too short")
    (n,) = struct.unpack("<Q", buf[:8])
    if n > MAX_HEADER or 8 + n > len(buf):
        raise Malformed(f"header length {n} does not fit the file ({len(buf)} bytes)")
    try:
        header = json.loads(buf[8:8 + n].decode("utf-8"), object_pairs_hook=no_duplicates,
                            parse_constant=reject_constant)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise Malformed(f"bad header: {e}")
    if not isinstance(header, dict):
        raise Malformed("the header is not a JSON object")
    data = memoryview(buf)[8 + n:]
    meta = header.pop("__metadata__", None)
    if meta is not None and not (isinstance(meta, dict) and all(isinstance(v, str) for v in meta.values())):
        raise Malformed("__metadata__ is not an object of strings")
    tensors = {}
    spans = []
    for name, info in header.items():
        if not isinstance(info, dict):
            raise Malformed(f"tensor {name!r}: not an object")
        dtype, shape, offs = info.get("dtype"), info.get("shape"), info.get("data_offsets")
        if dtype not in DTYPES:
            raise Malformed(f"tensor {name!r}: unknown dtype {dtype!r}")
        ints = lambda v: isinstance(v, list) and all(type(x) is int and x >= 0 for x in v)
        if not ints(shape) or not ints(offs) or len(offs) != 2:
            raise Malformed(f"tensor {name!r}: bad shape or data_offsets")
        begin, end = offs
        count = 1
        for d in shape:
            count *= d
        size = np.dtype(DTYPES[dtype]).itemsize
        if end < begin or end - begin != count * size:
            raise Malformed(f"tensor {name!r}: data_offsets {offs} do not hold shape {shape} of {dtype}")
        if end > len(data):
            raise Malformed(f"tensor {name!r}: data_offsets {offs} run past the data ({len(data)} bytes)")
        raw = np.frombuffer(data[begin:end], dtype=DTYPES[dtype])
        if dtype == "BF16":  # bfloat16 is the top half of a float32
            arr = (raw.astype(np.uint32) << 16).view(np.float32)
        else:
            arr = raw
        tensors[name] = (dtype, shape, arr)
        if end > begin:
            spans.append((begin, end, name))
    spans.sort()
    for (b0, e0, n0), (b1, e1, n1) in zip(spans, spans[1:]):
        if b1 < e0:
            raise Malformed(f"tensors {n0!r} [{b0}, {e0}] and {n1!r} [{b1}, {e1}] overlap")
    return meta or {}, tensors


def main(argv):
    if len(argv) not in (2, 4) or (len(argv) == 4 and argv[2] != "--dump"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    path = argv[1]
    try:
        _, tensors = load(path)
    except (OSError, Malformed) as e:
        print(f"{path}: {e}", file=sys.stderr)
        return 1
    if len(argv) == 4:
        if argv[3] not in tensors:
            print(f"{path}: no tensor {argv[3]!r}", file=sys.stderr)
            return 1
        for x in tensors[argv[3]][2].astype(np.float64):
            print("%.9g" % x)
        return 0
    for name in sorted(tensors):
        dtype, shape, arr = tensors[name]
        a = arr.astype(np.float64)
        total = float(a.sum()) if a.size else 0.0
        first = "%.9g" % a[0] if a.size else "-"
        shp = ",".join(str(d) for d in shape) if shape else "-"
        print(f"{name} {dtype} {shp} {'%.9g' % total} {first}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
