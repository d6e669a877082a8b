#!/usr/bin/python3
"""Reference encoder for HF tokenizer.json files, the yardstick of tests/bloom/tokenizer.sh (stdlib only).

  tokenizer_reference.py train [--lines] [--bloom] VOCAB_OUT MERGES_OUT NUM_MERGES FILE...
      tests/gpt2/bpe_reference.py's training (vocab.json + merges.txt), on pre-tokens of GPT-2's
      pattern, or with --bloom on the pieces of BLOOM's pre-tokenizer, or with --lines on whole lines.
  tokenizer_reference.py make-json bloom|gpt2 VOCAB MERGES OUT [--pairs] [--ascii]
      writes a tokenizer.json as HF tokenizers saves one (indented, UTF-8): bloom = BLOOM's layout
      (<unk> <s> </s> <pad> as ids 0-3, the vocabulary after them, BLOOM's Sequence pre-tokenizer,
      two added tokens outside the vocabulary); gpt2 = GPT-2's (the same ids as vocab.json,
      <|endoftext|> an added token, the ByteLevel pre-tokenizer).  --pairs writes the merges as
      ["left", "right"] pairs instead of "left right" strings; --ascii writes every character past
      ASCII as a \\u escape (HF writes UTF-8).
  tokenizer_reference.py encode TOKENIZER_JSON FILE     the ids of FILE's text, one per line
  tokenizer_reference.py pieces TOKENIZER_JSON FILE     its pre-tokenizer's pieces, hex, one per line
  tokenizer_reference.py info TOKENIZER_JSON            "vocab N eos E", then each id's bytes in hex
  tokenizer_reference.py variant NAME IN OUT            IN changed as NAME says (the error cases)

BLOOM's Split pattern ` ?[^(\\s|[.,!?…。，、।۔،])]+` is one negated class in Oniguruma's syntax (the
inner [...] is nested); Python's `re` has no nested classes, so it runs here flattened, with \\s as the
Unicode White_Space code points (Python's own \\s also takes U+001C-001F, which Oniguruma's does not).
Isolated: the matches and the stretches between them are the pieces.  Pieces are then byte-level
BPE'd with bpe_reference.bpe (OpenAI's loop).
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "gpt2"))
import bpe_reference  # noqa: E402  (tests/gpt2/bpe_reference.py)

BLOOM_REGEX = " ?[^(\\s|[.,!?\u2026\u3002\uff0c\u3001\u0964\u06d4\u060c])]+"
BLOOM_PRE_TOKENIZER = {
    "type": "Sequence",
    "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": BLOOM_REGEX}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
    ],
}
GPT2_PRE_TOKENIZER = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}


def bloom_pattern():
    ws = bpe_reference.char_class(bpe_reference.WHITE_SPACE)
    return re.compile(" ?[^()|" + ws + re.escape(".,!?\u2026\u3002\uff0c\u3001\u0964\u06d4\u060c") + "]+")


class Isolated:
    """Split(pattern, Isolated): findall gives the matches and the text between them."""

    def __init__(self, pattern):
        self.pattern = pattern

    def findall(self, text):
        out, pos = [], 0
        for m in self.pattern.finditer(text):
            if m.start() > pos:
                out.append(text[pos:m.start()])
            out.append(m.group())
            pos = m.end()
        if pos < len(text):
            out.append(text[pos:])
        return out


def splitter(tok):
    """The pre-tokenizer of a tokenizer.json, or SystemExit for one this reference does not know."""
    pre = tok["pre_tokenizer"]
    if pre.get("type") == "ByteLevel" and pre.get("use_regex", True) and not pre.get("add_prefix_space", True):
        return bpe_reference.gpt2_pattern()
    if pre.get("type") == "Sequence" and pre["pretokenizers"][0].get("pattern") == {"Regex": BLOOM_REGEX}:
        return Isolated(bloom_pattern())
    sys.exit(f"tokenizer_reference.py: pre_tokenizer {pre!r} not known")


def vocabulary(tok):
    vocab = dict(tok["model"]["vocab"])
    added = {}
    for a in tok.get("added_tokens") or []:
        if a["content"] not in vocab:
            added[a["content"]] = a["id"]
    vocab.update(added)
    return vocab, added


def ranks(tok):
    out = {}
    for rank, m in enumerate(tok["model"]["merges"]):
        a, b = m.split(" ") if isinstance(m, str) else m
        out[(a, b)] = rank
    return out


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def encode(path, text_path):
    tok = load(path)
    vocab, _ = vocabulary(tok)
    r = ranks(tok)
    ids, cache = [], {}
    for word in bpe_reference.pretokens(splitter(tok), bpe_reference.read_text(text_path)):
        if word not in cache:
            cache[word] = [vocab[s] for s in bpe_reference.bpe(word, r)]
        ids.extend(cache[word])
    return ids


def info(path):
    """The vocabulary size, eos, and each id's bytes as HF's ByteLevel decoder gives them: a symbol of
    byte symbols only is those bytes, any other symbol its own UTF-8."""
    tok = load(path)
    vocab, _ = vocabulary(tok)
    u2b = {c: b for b, c in bpe_reference.bytes_to_unicode().items()}
    eos = vocab.get("</s>", vocab.get("<|endoftext|>"))
    lines = [f"vocab {len(vocab)} eos {eos}"]
    by_id = {i: s for s, i in vocab.items()}
    for i in range(len(vocab)):
        s = by_id[i]
        data = bytes(u2b[c] for c in s) if all(c in u2b for c in s) else s.encode()
        lines.append(data.hex())
    return lines


def make_json(style, vocab_path, merges_path, out, pairs, ascii_only):
    vocab = load(vocab_path)
    with open(merges_path, encoding="utf-8") as f:
        merges = [l.rstrip("\r").split(" ") for l in f.read().split("\n")[1:] if l.rstrip("\r")]
    special = lambda i, c, s=True: {"id": i, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
                                    "normalized": not s, "special": s}
    if style == "bloom":
        del vocab["<|endoftext|>"]
        symbols = ["<unk>", "<s>", "</s>", "<pad>"] + sorted(vocab, key=vocab.get)
        vocab = {s: i for i, s in enumerate(symbols)}
        # two added tokens outside the BPE vocabulary: one of byte symbols only (\u00e9 stands for byte
        # 0xE9), one with characters that are not byte symbols (the space, CJK)
        added = [special(i, s) for i, s in enumerate(symbols[:4])] + [
            special(len(vocab), "<|\u00e9xtra|>", False), special(len(vocab) + 1, "<|\u4f60 \u597d|>", False)]
        pre, post = BLOOM_PRE_TOKENIZER, {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
                                          "use_regex": True}
    else:  # GPT-2's file has "" where BLOOM's has null
        added = [special(vocab["<|endoftext|>"], "<|endoftext|>")]
        pre, post = GPT2_PRE_TOKENIZER, {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
                                         "use_regex": True}
    affix = None if style == "bloom" else ""
    tok = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added, "normalizer": None,
        "pre_tokenizer": pre, "post_processor": post,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": affix,
                  "end_of_word_suffix": affix, "fuse_unk": False, "byte_fallback": False, "vocab": vocab,
                  "merges": [[a, b] for a, b in merges] if pairs else [f"{a} {b}" for a, b in merges]},
    }
    with open(out, "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=ascii_only, indent=2)


def variant(name, src, out):
    """The damaged or unsupported copies tests/bloom/tokenizer.sh checks the loader refuses."""
    tok = load(src)
    model = tok["model"]
    text = None
    if name == "metaspace":
        tok["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always"}
    elif name == "other-regex":
        # a negated class inside a class: read differently by HF's regex engine and PCRE2
        tok["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = " ?[^(\\s|[^.,!?])]+"
    elif name == "split-merged":
        tok["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "MergedWithPrevious"
    elif name == "named-group":  # the same pattern in a named group: matched alone, not repeated
        split = tok["pre_tokenizer"]["pretokenizers"][0]
        split["pattern"]["Regex"] = "(?<w>" + split["pattern"]["Regex"] + ")"
    elif name == "whitespace-first":
        tok["pre_tokenizer"]["pretokenizers"].insert(0, {"type": "Whitespace"})
    elif name == "prefix-space":
        tok["pre_tokenizer"]["add_prefix_space"] = True
    elif name == "nfkc":
        tok["normalizer"] = {"type": "NFKC"}
    elif name == "lstrip":
        tok["added_tokens"][0]["lstrip"] = True
    elif name == "wordpiece":
        model["type"] = "WordPiece"
    elif name == "byte-fallback":
        model["byte_fallback"] = True
    elif name == "dropout":
        model["dropout"] = 0.1
    elif name == "suffix":
        model["end_of_word_suffix"] = "</w>"
    elif name == "roberta":
        tok["post_processor"] = {"type": "RobertaProcessing", "sep": ["</s>", 2], "cls": ["<s>", 1]}
    elif name == "no-decoder":
        tok["decoder"] = None
    elif name == "unknown-key":
        tok["extra"] = 1
    elif name == "unknown-merge":
        model["merges"].append("zz \u0120q" if isinstance(model["merges"][0], str) else ["zz", "\u0120q"])
    elif name == "unknown-merged":
        model["merges"].insert(3, "b b" if isinstance(model["merges"][0], str) else ["b", "b"])
        model["vocab"].pop("bb", None)
    elif name == "bad-merge":
        model["merges"].insert(2, "a b c")
    elif name == "bad-pair":
        model["merges"].insert(2, ["a"])
    elif name == "duplicate-id":
        model["vocab"]["duplicate"] = 7
    elif name == "gap-id":
        model["vocab"]["far"] = len(model["vocab"]) + 40
    elif name == "added-id":
        tok["added_tokens"][2]["id"] = 7
    elif name == "no-eos":
        for s in ("</s>", "<|endoftext|>"):
            if s in model["vocab"]:
                model["vocab"][s + "x"] = model["vocab"].pop(s)
        tok["added_tokens"] = [a for a in tok["added_tokens"] if a["content"] not in ("</s>", "<|endoftext|>")]
    elif name == "both-eos":
        model["vocab"]["<|endoftext|>"] = len(model["vocab"]) + 2  # after the two added tokens
    elif name == "missing-byte":  # the space's symbol renamed: the ids stay 0..n-1
        model["vocab"]["not a byte"] = model["vocab"].pop("\u0120")
        model["merges"] = [m for m in model["merges"] if "\u0120" not in (m if isinstance(m, str) else "".join(m))]
    elif name == "unk":
        model["unk_token"] = "<unk>"
    elif name == "unk-missing":
        model["unk_token"] = "<nope>"
    elif name == "reordered":  # model first, merges before vocab: the members may come in any order
        model = {"merges": model.pop("merges"), **model}
        tok = {"model": model, **{k: v for k, v in tok.items() if k != "model"}}
    elif name == "twice":  # "model" given twice
        text = json.dumps(tok, ensure_ascii=False, indent=2)
        text = text[:-2] + ',\n  "model": null\n}'
    elif name == "syntax":  # the comma at the end of line 3 left out
        lines = json.dumps(tok, ensure_ascii=False, indent=2).split("\n")
        lines[2] = lines[2].rstrip(",")
        text = "\n".join(lines)
    elif name == "truncated":
        text = json.dumps(tok, ensure_ascii=False, indent=2)[:-200]
    else:
        sys.exit(f"tokenizer_reference.py: no variant {name}")
    with open(out, "w", encoding="utf-8") as f:
        f.write(text if text is not None else json.dumps(tok, ensure_ascii=False, indent=2))


def main(argv):
    if len(argv) >= 6 and argv[1] == "train":
        lines, bloom = "--lines" in argv, "--bloom" in argv
        args = [a for a in argv[2:] if a not in ("--lines", "--bloom")]
        if bloom:  # bpe_reference.train cuts its texts with gpt2_pattern(): hand it BLOOM's split instead
            bpe_reference.gpt2_pattern = lambda: Isolated(bloom_pattern())
        n = bpe_reference.train(args[0], args[1], int(args[2]), args[3:], lines)
        print(f"trained {n} merges", file=sys.stderr)
    elif len(argv) >= 6 and argv[1] == "make-json" and set(argv[6:]) <= {"--pairs", "--ascii"}:
        make_json(argv[2], argv[3], argv[4], argv[5], "--pairs" in argv[6:], "--ascii" in argv[6:])
    elif len(argv) == 4 and argv[1] == "encode":
        sys.stdout.write("".join(f"{i}\n" for i in encode(argv[2], argv[3])))
    elif len(argv) == 4 and argv[1] == "pieces":
        toks = splitter(load(argv[2])).findall(bpe_reference.read_text(argv[3]))
        sys.stdout.write("".join(t.encode("utf-8", "surrogateescape").hex() + "\n" for t in toks))
    elif len(argv) == 3 and argv[1] == "info":
        sys.stdout.write("".join(l + "\n" for l in info(argv[2])))
    elif len(argv) == 5 and argv[1] == "variant":
        variant(argv[2], argv[3], argv[4])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
