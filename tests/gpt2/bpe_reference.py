#!/usr/bin/python3
"""Reference GPT-2 byte-level BPE, the yardstick of tests/gpt2/tokenizer.sh (stdlib only).

  bpe_reference.py train [--lines] VOCAB_OUT MERGES_OUT NUM_MERGES FILE...
      learns up to NUM_MERGES merges from the files' text and writes them in HF GPT-2's format:
      vocab.json on one line with \\u escapes (the 256 byte symbols in bytes_to_unicode order,
      then one entry per merge, then "<|endoftext|>" last) and merges.txt ("#version: 0.2" first).
      --lines learns from whole lines instead of pre-tokens: its merges span pre-token boundaries,
      so encoding with them shows where an encoder put each boundary (a test vocabulary, not GPT-2's).
  bpe_reference.py encode VOCAB MERGES FILE
      prints the ids of FILE's text, one per line ("- -" for the byte-level fallback: byte values).
  bpe_reference.py pretokenize FILE
      prints the pre-tokens of FILE's text, one per line, as the hex of their bytes.
  bpe_reference.py boundary-text OUT
      writes a text with the first and last code point of every letter, number and space range
      (and their neighbours) in contexts where each class gives different pre-tokens.

Pre-tokenization runs GPT-2's own pattern through the stdlib `re` (the `regex` module is not
installed), with \\p{L}, \\p{N} expanded into explicit classes from unicodedata (general categories
L* and N*) and \\s into the Unicode White_Space code points.  So this checks the C code's pattern
(run by PCRE2, with its own Unicode tables) against a second regex engine, class by class.
Files are decoded with surrogateescape: a byte that is not valid UTF-8 becomes a lone surrogate
(category Cs, so neither letter, number nor space) and is encoded back to the same byte.
"""
import functools
import json
import re
import sys
import unicodedata

# Unicode White_Space (PropList.txt); the same list is in tokenizer.c
WHITE_SPACE = [(0x09, 0x0D), (0x20, 0x20), (0x85, 0x85), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
               (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000)]


@functools.lru_cache(maxsize=None)
def category_ranges(first_letter):
    """Inclusive code-point ranges whose general category starts with first_letter ('L' or 'N')."""
    return _ranges()[first_letter]


@functools.lru_cache(maxsize=None)
def _ranges():
    out = {"L": [], "N": []}
    start, prev = None, None
    for c in range(0x110001):
        cat = unicodedata.category(chr(c))[0] if c <= 0x10FFFF else None
        if cat != prev:
            if prev in out:
                out[prev].append((start, c - 1))
            start, prev = c, cat
    return out


def char_class(ranges):
    return "".join("\\U%08x" % a if a == b else "\\U%08x-\\U%08x" % (a, b) for a, b in ranges)


def gpt2_pattern():
    L, N, S = char_class(category_ranges("L")), char_class(category_ranges("N")), char_class(WHITE_SPACE)
    # 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
    return re.compile(rf"'s|'t|'re|'ve|'m|'ll|'d| ?[{L}]+| ?[{N}]+| ?[^{S}{L}{N}]+|[{S}]+(?![^{S}])|[{S}]+")


def bytes_to_unicode():
    """OpenAI's map of the 256 byte values to printable characters (printable bytes map to themselves)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def read_text(path):
    with open(path, "rb") as f:
        return f.read().decode("utf-8", "surrogateescape")


def pretokens(pattern, text):
    """The pre-tokens of text, each as its string of byte symbols."""
    b2u = bytes_to_unicode()
    return ["".join(b2u[b] for b in tok.encode("utf-8", "surrogateescape")) for tok in pattern.findall(text)]


def bpe(word, ranks):
    """OpenAI's merge loop: repeatedly merge every occurrence (left to right) of the lowest-ranked pair."""
    word = list(word)
    while len(word) > 1:
        pairs = {(word[i], word[i + 1]) for i in range(len(word) - 1)}
        best = min(pairs, key=lambda p: ranks.get(p, float("inf")))
        if best not in ranks:
            break
        first, second = best
        out, i = [], 0
        while i < len(word):
            if i < len(word) - 1 and word[i] == first and word[i + 1] == second:
                out.append(first + second)
                i += 2
            else:
                out.append(word[i])
                i += 1
        word = out
    return word


def encode(vocab_path, merges_path, path):
    data = open(path, "rb").read()
    if vocab_path == "-" and merges_path == "-":
        return list(data)
    with open(vocab_path, encoding="utf-8") as f:
        vocab = json.load(f)
    with open(merges_path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    if lines and lines[0].startswith("#version"):
        lines = lines[1:]
    ranks = {}
    for rank, line in enumerate(l for l in lines if l.rstrip("\r")):
        a, b = line.rstrip("\r").split(" ")
        ranks[(a, b)] = rank
    ids, cache = [], {}
    for word in pretokens(gpt2_pattern(), data.decode("utf-8", "surrogateescape")):
        if word not in cache:
            cache[word] = [vocab[s] for s in bpe(word, ranks)]
        ids.extend(cache[word])
    return ids


def train(vocab_out, merges_out, num_merges, paths, lines=False):
    """Classic BPE training: count pre-tokens (or lines), then repeatedly merge the most frequent
    adjacent pair (ties: the smallest pair in string order), updating pair counts incrementally."""
    import heapq
    from collections import Counter, defaultdict
    pattern = re.compile(r"[^\n]*\n|[^\n]+") if lines else gpt2_pattern()
    counts = Counter()
    for p in paths:
        counts.update(pretokens(pattern, read_text(p)))
    words = [list(w) for w in counts]
    freq = [counts[w] for w in counts]
    pair_count = Counter()
    where = defaultdict(set)  # pair -> indices of words containing it
    for i, w in enumerate(words):
        for a, b in zip(w, w[1:]):
            pair_count[(a, b)] += freq[i]
            where[(a, b)].add(i)
    heap = [(-c, p) for p, c in pair_count.items()]
    heapq.heapify(heap)
    merges = []
    while len(merges) < num_merges and heap:
        c, pair = heapq.heappop(heap)
        if pair_count.get(pair, 0) != -c or c == 0:
            continue  # stale entry
        if -c < 2:
            break
        merges.append(pair)
        a, b = pair
        touched = set()
        for i in list(where[pair]):
            w = words[i]
            out, k = [], 0
            while k < len(w):
                if k < len(w) - 1 and w[k] == a and w[k + 1] == b:
                    out.append(a + b)
                    k += 2
                else:
                    out.append(w[k])
                    k += 1
            if len(out) == len(w):
                continue  # an index left behind by an earlier merge
            words[i] = out
            old, new = Counter(zip(w, w[1:])), Counter(zip(out, out[1:]))
            for p in old.keys() | new.keys():
                d = new[p] - old[p]
                if d:
                    pair_count[p] += d * freq[i]
                    touched.add(p)
                    if d > 0:
                        where[p].add(i)
        for p in touched:
            if pair_count[p] > 0:
                heapq.heappush(heap, (-pair_count[p], p))
    vocab = {}
    for ch in bytes_to_unicode().values():
        vocab[ch] = len(vocab)
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    vocab["<|endoftext|>"] = len(vocab)
    with open(vocab_out, "w", encoding="ascii") as f:
        json.dump(vocab, f)  # ensure_ascii: "\u0120t", as HF's gpt2 vocab.json
    with open(merges_out, "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n")
        for a, b in merges:
            f.write(f"{a} {b}\n")
    return len(merges)


def boundary_text(out):
    points = set()
    for lo, hi in category_ranges("L") + category_ranges("N") + WHITE_SPACE:
        points.update(c for c in (lo - 1, lo, hi, hi + 1) if 0 <= c <= 0x10FFFF and not 0xD800 <= c <= 0xDFFF)
    with open(out, "w", encoding="utf-8") as f:
        for c in map(chr, sorted(points)):
            f.write(f"x{c}{c}1 {c}{c}' {c}x\n")


def main(argv):
    lines = len(argv) > 2 and argv[1] == "train" and argv[2] == "--lines"
    if lines:
        del argv[2]
    if len(argv) >= 5 and argv[1] == "train":
        n = train(argv[2], argv[3], int(argv[4]), argv[5:], lines)
        print(f"trained {n} merges", file=sys.stderr)
    elif len(argv) == 5 and argv[1] == "encode":
        sys.stdout.write("".join(f"{i}\n" for i in encode(argv[2], argv[3], argv[4])))
    elif len(argv) == 3 and argv[1] == "pretokenize":
        toks = gpt2_pattern().findall(read_text(argv[2]))
        sys.stdout.write("".join(t.encode("utf-8", "surrogateescape").hex() + "\n" for t in toks))
    elif len(argv) == 3 and argv[1] == "boundary-text":
        boundary_text(argv[2])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
