#!/usr/bin/python3
"""Multiple-choice eval files in llm.c's eval format for the [task] eval_files tests, and a PyTorch
reference of the accuracy shardrun reports.  Run it as /usr/bin/python3 (Debian's torch + numpy).

The format (llm.c dev/data/data_common.py, write_evalfile): 256 little-endian int32 of header
(magic 20240522, version 1, the number of examples, the longest example in bytes), then per
example a run of uint16: 65535, the example's size in bytes, its index, its label, the number of
completions, the number of context tokens and those tokens, and per completion its number of
tokens and those tokens.  Tokens here are byte-level (a byte is its token id).

    evalfile.py demo OUT.bin CORPUS N SEED [--real-words]
        N examples from the training corpus: the context is a stretch of a paragraph, the right
        completion the word that follows it there, the wrong ones made-up words of the same
        length (an easy test: a model trained on the corpus knows its words), or with
        --real-words other words of the corpus (a hard one: the corpus draws its words at random,
        so the model can only guess); labels spread over 0..3.
    evalfile.py bad DIR
        One broken file per way a file can be wrong (DIR/<what>.bin), from a good one.
    evalfile.py reference WEIGHTS.safetensors FILE... --n_head H
        The accuracy of the model in WEIGHTS (float64): per example, the completion with the
        lowest mean cross-entropy over its tokens is the prediction.  Prints "accuracy A (K of N),
        smallest margin M" (M: the smallest gap between the lowest mean loss and the next one).
"""
import argparse
import os
import random
import struct
import sys

import numpy as np

MAGIC, VERSION = 20240522, 1


def example_stream(index, label, ctx, completions):
    """One example as a list of uint16 values, its size field filled in."""
    s = [65535, 0, index, label, len(completions), len(ctx), *ctx]
    for c in completions:
        s += [len(c), *c]
    s[1] = 2 * len(s)
    return s


def write_evalfile(path, examples, count=None, magic=MAGIC, version=VERSION):
    """examples: (label, ctx tokens, [completion tokens, ...]) each."""
    streams = [example_stream(i, lab, ctx, comps) for i, (lab, ctx, comps) in enumerate(examples)]
    header = np.zeros(256, dtype="<i4")
    header[:4] = [magic, version, len(examples) if count is None else count, max(2 * len(s) for s in streams)]
    with open(path, "wb") as f:
        f.write(header.tobytes())
        for s in streams:
            f.write(np.array(s, dtype="<u2").tobytes())


def tokens(text):
    return list(text.encode())


def demo_examples(corpus, n, seed, real_words):
    rng = random.Random(seed)
    paragraphs = [p.split() for p in open(corpus).read().split("\n\n") if p.strip()]
    vocabulary = sorted({w for p in paragraphs for w in p if w.isalpha()})
    letters = "bcdfgjkmpqvwxz"
    out = []
    for i in range(n):
        words = rng.choice(paragraphs)
        k = rng.randint(4, len(words) - 2)
        ctx = " ".join(words[k - 4:k])
        right = " " + words[k]
        comps = []
        label = i % 4
        others = rng.sample([w for w in vocabulary if " " + w != right], 3)  # distinct: no tie among them
        for c in range(4):
            if c == label:
                comps.append(tokens(right))
            elif real_words:
                comps.append(tokens(" " + others.pop()))
            else:
                comps.append(tokens(" " + "".join(rng.choice(letters) for _ in range(len(right) - 1))))
        out.append((label, tokens(ctx), comps))
    return out


def cmd_demo(a):
    write_evalfile(a.out, demo_examples(a.corpus, a.n, a.seed, a.real_words))


def cmd_bad(a):
    good = [(1, tokens("the model"), [tokens(" xq"), tokens(" shards"), tokens(" zz"), tokens(" kv")]),
            (0, tokens("every block"), [tokens(" and"), tokens(" qq"), tokens(" vv"), tokens(" jx")])]
    d = a.dir
    write_evalfile(os.path.join(d, "good.bin"), good)
    write_evalfile(os.path.join(d, "magic.bin"), good, magic=20240520)
    write_evalfile(os.path.join(d, "version.bin"), good, version=2)
    write_evalfile(os.path.join(d, "vocab.bin"), [good[0], (0, tokens("every") + [300], good[1][2])])
    write_evalfile(os.path.join(d, "five.bin"), [good[0], (0, good[1][1], good[1][2] + [tokens(" yy")])])
    raw = open(os.path.join(d, "good.bin"), "rb").read()
    open(os.path.join(d, "truncated.bin"), "wb").write(raw[:-7])


def mean_losses(model, ctx, comps):
    import torch
    import torch.nn.functional as F
    out = []
    for c in comps:
        ids = torch.tensor([ctx + c], dtype=torch.long)
        with torch.no_grad():
            logits, _ = model(ids)
        pred = logits[0, len(ctx) - 1:len(ctx) + len(c) - 1]
        out.append(F.cross_entropy(pred, torch.tensor(c, dtype=torch.long)).item())
    return out


def read_evalfile(path):
    b = open(path, "rb").read()
    magic, version, n = struct.unpack_from("<3i", b, 0)
    assert (magic, version) == (MAGIC, VERSION), path
    at, out = 1024, []
    for i in range(n):
        start, size, index, label, ncomp, nctx = struct.unpack_from("<6H", b, at)
        v = list(struct.unpack_from("<%dH" % (size // 2), b, at))
        p = 6
        ctx = v[p:p + nctx]
        p += nctx
        comps = []
        for _ in range(ncomp):
            comps.append(v[p + 1:p + 1 + v[p]])
            p += 1 + v[p]
        assert start == 65535 and index == i and p == size // 2, (path, i)
        out.append((label, ctx, comps))
        at += size
    return out


def cmd_reference(a):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import torch
    from gpt2_torch import model_from_file
    model = model_from_file(a.weights, a.n_head, torch.float64)
    right = total = 0
    margin = float("inf")
    for f in a.files:
        for label, ctx, comps in read_evalfile(f):
            ls = mean_losses(model, ctx, comps)
            best = min(range(len(ls)), key=lambda c: (ls[c], c))
            right += best == label
            total += 1
            rest = sorted(ls)
            margin = min(margin, rest[1] - rest[0])
    print("accuracy %.17g (%d of %d), smallest margin %.3g" % (right / total, right, total, margin))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("demo")
    d.add_argument("out")
    d.add_argument("corpus")
    d.add_argument("n", type=int)
    d.add_argument("seed", type=int)
    d.add_argument("--real-words", action="store_true")
    b = sub.add_parser("bad")
    b.add_argument("dir")
    r = sub.add_parser("reference")
    r.add_argument("weights")
    r.add_argument("files", nargs="+")
    r.add_argument("--n_head", type=int, required=True)
    a = p.parse_args()
    {"demo": cmd_demo, "bad": cmd_bad, "reference": cmd_reference}[a.cmd](a)


if __name__ == "__main__":
    main()
