#!/usr/bin/python3
"""Writes a variant of a real tokenizer.json (Qwen3's) in the shape of another family, so that one
committed vocabulary checks each way a tokenizer.json cuts text against HF's library.

  variant.py NAME IN_JSON OUT_JSON

  llama3    Llama 3's pre-tokenizer (Qwen's pattern with numbers in groups of up to three digits),
            no normalizer, and model.ignore_merges true, as Llama 3's tokenizer.json has.  Four
            words (below) join the vocabulary as whole symbols, after the last id: BPE would
            merge each into several symbols, ignore_merges takes the whole one.  They take the
            ids after model.vocab's and the added tokens move up: HF's library gives the added
            tokens that model.vocab lacks the ids after its last, in their order, whatever ids
            the file says.
  sequence  GPT-2's layout: a ByteLevel pre-tokenizer with use_regex true (GPT-2's pattern), after
            a Split that removes each "\\r\\n" (a String pattern, behavior Removed).
  smollm    SmolLM2's pre-tokenizer: Digits (each digit alone), then ByteLevel with use_regex true.

and, for tests/tokenizer_json/eos.sh and match_limit.sh (not compared with HF's ids):

  llama3-eos   Llama 3's special tokens: <|endoftext|> (151643) renamed <|end_of_text|> and
               <|im_start|> (151644) <|begin_of_text|>, both special; the ordinary "</s>" of Qwen's
               model.vocab (128247) stays, as a look-alike the end of text must not be taken from.
  no-eos       <|endoftext|> no longer special: the file has no special end-of-text token.
  backtrack    the Split pattern (a+)+$, which backtracks without end on a run of 'a's that does
               not end the text.
"""
import json
import sys

WHOLE_WORDS = [" Licensor", " paquetes", " пакеты", "Debian"]


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


name, src, out = sys.argv[1:4]
tok = json.load(open(src, encoding="utf-8"))
if name == "llama3":
    tok["normalizer"] = None
    split = tok["pre_tokenizer"]["pretokenizers"][0]
    assert "|\\p{N}|" in split["pattern"]["Regex"], "not Qwen's pattern"
    split["pattern"]["Regex"] = split["pattern"]["Regex"].replace("|\\p{N}|", "|\\p{N}{1,3}|")
    tok["model"]["ignore_merges"] = True
    b2u = bytes_to_unicode()
    vocab = tok["model"]["vocab"]
    nxt = len(vocab)
    assert sorted(vocab.values()) == list(range(nxt)) and all(a["id"] >= nxt for a in tok["added_tokens"])
    for w in WHOLE_WORDS:
        sym = "".join(b2u[b] for b in w.encode())
        assert sym not in vocab, sym
        vocab[sym] = nxt
        nxt += 1
    for a in tok["added_tokens"]:
        a["id"] += len(WHOLE_WORDS)
elif name == "sequence":
    tok["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"String": "\r\n"}, "behavior": "Removed", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]}
elif name == "smollm":
    tok["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Digits", "individual_digits": True},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]}
elif name in ("llama3-eos", "no-eos"):
    renames = {"<|endoftext|>": "<|end_of_text|>", "<|im_start|>": "<|begin_of_text|>"}
    assert tok["model"]["vocab"]["</s>"] == 128247
    for a in tok["added_tokens"]:
        if name == "llama3-eos":
            a["content"] = renames.get(a["content"], a["content"])
        elif a["content"] == "<|endoftext|>":
            a["special"] = False
elif name == "backtrack":
    tok["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(a+)+$"
else:
    sys.exit(f"variant.py: unknown variant {name!r} (llama3, sequence, smollm, llama3-eos, no-eos, backtrack)")
json.dump(tok, open(out, "w", encoding="utf-8"), ensure_ascii=False)
