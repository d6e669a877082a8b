# The llm.c side of tests/data/shard_format.sh, written from llm.c's description of its format
# (dev/data/data_common.py writes, llmc/dataloader.h reads): a header of 256 int32 -- magic,
# version, token count -- then the tokens as uint16 (magic 20240520, version 1) or uint32
# (magic 20240801, version 7).  Header words 3..23 may hold shardrun's tokenizer record (word 3 the
# tag "SRTK"), which llm.c's readers never look at; everything after it is zero, as llm.c writes it.
#   write PATH gpt-2|llama-3 < ids     read PATH (prints the ids, one per line; checks like dataloader.h)
import sys

import numpy as np

FORMATS = {"gpt-2": (20240520, 1, np.uint16), "llama-3": (20240801, 7, np.uint32)}


def write(path, kind, ids):
    magic, version, dtype = FORMATS[kind]
    header = np.zeros(256, dtype=np.int32)
    header[0], header[1], header[2] = magic, version, len(ids)
    with open(path, "wb") as f:
        f.write(header.tobytes())
        f.write(np.array(ids, dtype=dtype).tobytes())


def read(path):
    with open(path, "rb") as f:
        header = np.frombuffer(f.read(1024), dtype=np.int32)
        body = f.read()
    kinds = {(m, v): d for m, v, d in FORMATS.values()}
    dtype = kinds[(int(header[0]), int(header[1]))]
    assert int(header[2]) > 0, "empty shard"
    toks = np.frombuffer(body, dtype=dtype)
    assert len(toks) == int(header[2]), f"header says {header[2]} tokens, file holds {len(toks)}"
    rest = header[24:] if int(header[3]) == 0x4B545253 else header[3:]
    assert not rest.any(), "header words 3.. are not zero (nor shardrun's tokenizer record, then zeros)"
    return toks


if sys.argv[1] == "write":
    write(sys.argv[2], sys.argv[3], [int(t) for t in sys.stdin.read().split()])
else:
    sys.stdout.write("".join(f"{int(t)}\n" for t in read(sys.argv[2])))
