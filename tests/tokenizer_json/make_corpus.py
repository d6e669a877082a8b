#!/usr/bin/python3
"""Writes the multilingual corpus tests/tokenizer_json/ checks tokenizers on (the committed corpus/
was made by it; run it again only to change the corpus, then regenerate the expected ids with
tests/tokenizer_json/expected_ids.sh).

  make_corpus.py OUT_DIR

Every text comes from files Debian ships on this machine, cut to a few KB each:
  - apt's message catalogues (/usr/share/locale/LANG/LC_MESSAGES/apt.mo, through gettext's
    msgunfmt) in Japanese, Chinese, Korean, Russian, Ukrainian, Arabic, Hebrew, Greek, Hindi, Thai,
    Vietnamese, Turkish, German, French and Spanish: their translations, placeholders and all;
  - the debconf templates of installed packages (/var/lib/dpkg/info/*.templates), with their
    Description-LANG.UTF-8 translations;
  - two licences from /usr/share/common-licenses (English prose, contractions, numbering);
and one text written here for what those lack: emoji (with skin tones and joiners), numbers of
every length, runs of spaces, tabs and newlines, CRLF, no-break and ideographic spaces,
contractions, decomposed accents and Hangul that NFC composes, code, and special tokens written
inside the text (<|endoftext|>, <|im_start|>, <|begin_of_text|>, ... and near misses).
Each file is valid UTF-8 (HF's library reads only that).
"""
import glob
import os
import subprocess
import sys

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
LIMIT = 9000  # bytes per file, about


def cut(text, limit=LIMIT):
    b = text.encode()
    if len(b) <= limit:
        return text
    return b[:limit].decode("utf-8", "ignore").rsplit("\n", 1)[0] + "\n"


def write(name, text):
    with open(os.path.join(out, name), "w", encoding="utf-8", newline="") as f:
        f.write(cut(text))


def msgstrs(mo):
    po = subprocess.run(["msgunfmt", mo], capture_output=True, text=True, check=True).stdout
    texts, cur, field = [], [], None
    for line in po.splitlines() + [""]:
        if line.startswith("msgstr"):
            field, cur = "s", [line.split(" ", 1)[1]]
        elif line.startswith("msgid"):
            if field == "s" and cur:
                texts.append(cur)
            field, cur = "i", []
        elif line.startswith('"') and field == "s":
            cur.append(line)
        elif not line.strip() and field == "s":
            texts.append(cur)
            field, cur = None, []
    strs = []
    for parts in texts:
        s = "".join(eval(p) for p in parts if p.startswith('"'))  # a PO string literal is a Python one
        if s.strip():
            strs.append(s)
    return "\n".join(strs) + "\n"


n = 0
for lang in ["ja", "zh_CN", "ko", "ru", "uk", "ar", "he", "el", "hi", "th", "vi", "tr", "de", "fr", "es"]:
    mo = f"/usr/share/locale/{lang}/LC_MESSAGES/apt.mo"
    if os.path.exists(mo):
        n += 1
        write(f"{n:02d}-apt-{lang}.txt", msgstrs(mo))

templates = ""
for f in sorted(glob.glob("/var/lib/dpkg/info/*.templates")):
    templates += open(f, encoding="utf-8", errors="replace").read()
n += 1
write(f"{n:02d}-debconf-templates.txt", cut(templates, 40000))

for lic in ["Apache-2.0", "GPL-3"]:
    n += 1
    write(f"{n:02d}-license-{lic}.txt", open(f"/usr/share/common-licenses/{lic}", encoding="utf-8").read())

n += 1
write(f"{n:02d}-handmade.txt", "".join([
    "Special tokens inside a text: <|endoftext|>Next document.<|endoftext|><|endoftext|>\n",
    "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nHi!<|im_end|>\n",
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHello<|eot_id|><|end_of_text|>\n",
    "<tool_call>{\"name\": \"f\"}</tool_call> <|fim_prefix|>def f():<|fim_suffix|><|fim_middle|>\n",
    "near misses: <|endoftext| <|endoftext |> <|ENDOFTEXT|> <|im_start <|im_start|<|im_start|>x\n",
    "It's John's; they'll go, we've seen, I'm sure, you're here, he'd say it'd. IT'S DON'T WE'LL I'D\n",
    "'s 't 're 've 'm 'll 'd ''s 'x ' s y' l'homme dell'anno\n",
    "two  spaces,   three,    four \t tab,\ttab\t\tend   \n\n\n  indented\n\t\tby tabs\r\nCRLF line\r\n\r\n",
    "trailing spaces   \n   \n \n\u00a0nbsp\u00a0\u00a0x ideo\u3000\u3000space em\u2003space\n",
    "1 12 123 1234 12345 123456 1234567 12345678 3.14159 2,718,281 1e-9 0x1F 1,000,000.00 v1.2.3\n",
    "\u00b2 \u00bd \u2153 \u0663\u0664\u0665 \u0967\u0968\u0969 \u216b \u2460 \uff11\uff12\uff13 \u4e00\u4e8c\u4e09 \U0001d7d9\n",
    "emoji: \U0001F600\U0001F389 \U0001F44D\U0001F3FD \U0001F468\u200d\U0001F469\u200d\U0001F467 \u2764\ufe0f \U0001F1EF\U0001F1F5 \U0001F9D1\u200d\U0001F4BB!\n",
    "NFC: cafe\u0301 vs caf\u00e9, A\u030a vs \u00c5 vs \u212b, \u1100\u1161\u11a8 vs \uac01, n\u0303o, \u03b1\u0301, \u0b47\u0b3e, \u2126hm, fi\ufb01\n",
    "mixed: \u4e2d\u6587English\u65e5\u672c\u8a9e123\u0440\u0443\u0441\u0441\u043a\u0438\u0439 \u0627\u0644\u0639\u0631\u0628\u064a\u0629123 \u05e2\u05d1\u05e8\u05d9\u05ea\n",
    "code:\n    def f(x):\n        return x**2  # square\n\n    int main(void) { return printf(\"%d\\n\", 42); }\n",
    "punctuation: ...!!! ??? --- === *** ((( ))) [[x]] {{y}} <<<>>> ~~~ ``` ___ ||| \u201cq\u201d \u2014 \u2026\n",
    "long: " + "a" * 300 + " " + "=" * 200 + " " + "9" * 100 + "\n",
]) * 2)
