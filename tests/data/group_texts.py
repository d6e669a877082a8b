# The reference for tests/data/packing.sh: HF run_clm's group_texts on a corpus, with the
# end-of-text token between documents (the packing), tokenized byte-level (byte b is id b,
# eos 256).  Prints the blocks, one per line, then "tokens_left N".
#   group_texts.py jsonl|line BLOCK FILE...
import json
import sys

EOS = 256


def texts(kind, path):
    with open(path, encoding="utf-8") as f:
        for line in f:
            if kind == "jsonl":
                if line.strip():
                    yield json.loads(line)["text"]
            elif line.strip(" \t\n\r\v\f"):
                yield line.strip(" \t\n\r\v\f")


def group_texts(examples, block_size):
    # run_clm: concatenate all texts, drop the small remainder, split into chunks of block_size
    concatenated = {k: sum(examples[k], []) for k in examples.keys()}
    total_length = len(concatenated["input_ids"])
    total_length = (total_length // block_size) * block_size
    return {k: [t[i:i + block_size] for i in range(0, total_length, block_size)] for k, t in concatenated.items()}, \
        len(concatenated["input_ids"]) - total_length


kind, block = sys.argv[1], int(sys.argv[2])
docs = [list(t.encode("utf-8")) for p in sys.argv[3:] for t in texts(kind, p)]
ids = [d + [EOS] if i + 1 < len(docs) else d for i, d in enumerate(docs)]  # eos between documents
blocks, left = group_texts({"input_ids": ids}, block)
for b in blocks["input_ids"]:
    print(" ".join(map(str, b)))
print("tokens_left", left)
