#!/bin/bash
# The C GPT-2 tokenizer against the Python reference (bpe_reference.py), which runs GPT-2's pattern
# through a real regex engine: their pre-tokens of several texts must be identical, and so must the
# ids they give with a BPE vocabulary trained on /usr/share/common-licenses (and with two vocabularies
# trained on whole lines, whose merges cross pre-token boundaries).
# Environment: GPT2_TOKENIZE (the gpt2_tokenize executable; default $BUILD/gpt2_tokenize),
# PYTHON (default: /usr/bin/python3, every call in one process: torch_py, tests/transformer/torch_server.sh), MERGES (merges to train; default 300).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TOK=${GPT2_TOKENIZE:-${BUILD:-build}/gpt2_tokenize}
REF="$HERE/bpe_reference.py"
LICENSES=/usr/share/common-licenses
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
SRC=$(cd "$HERE/../.." && pwd)
. "$SRC/tests/transformer/torch_server.sh"
PY=${PYTHON:-torch_py}
[ -x "$TOK" ] || { echo "FAIL: no gpt2_tokenize executable at $TOK (set GPT2_TOKENIZE)"; exit 1; }
failed=0 files=0

"$PY" "$REF" train "$T/vocab.json" "$T/merges.txt" "${MERGES:-300}" "$LICENSES"/* || { echo "FAIL: training"; exit 1; }

# Hand-made text: contractions (and look-alikes that are not), space/tab/newline runs, CRLF, digits,
# punctuation runs, non-ASCII letters, numbers, spaces and punctuation, combining marks, emoji,
# bytes that are not UTF-8 (among them overlong forms of letters), and long runs of one character.
# Twice, so that the line-trained vocabulary below learns merges across every boundary in it.
special() {
    printf "It's John's; they'll go, we've seen, I'm sure, you're here, he'd say it'd.\n"
    printf "IT'S DON'T 'S 'll 'LL ''s 're'd 'x ' s y' 'm\n"
    printf "two  spaces,   three, \t tab,\ttab\t\tend \n\n\n  indented\n\t\tindented by tabs\r\nCRLF line\r\n"
    printf "1234567890 12,345.67 2024-01-01 v1.2.3 0x1F a1b2c3 100%% \$5 #hashtag @user e-mail: a@b.c\n"
    printf "...!!! ??? --- === *** ((( ))) [[x]] {{y}} <<<>>> ~~~ \`\`\` ___ |||\n"
    printf "caf\xc3\xa9 na\xc3\xafve \xc3\x9f Stra\xc3\x9fe \xce\x91\xce\xb8\xce\xae\xce\xbd\xce\xb1 \xd0\x9c\xd0\xbe\xd1\x81\xd0\xba\xd0\xb2\xd0\xb0 \xe6\x9d\xb1\xe4\xba\xac \xd8\xa7\xd9\x84\xd8\xb9\xd8\xb1\xd8\xa8\xd9\x8a\xd8\xa9\n"
    printf "cafe\xcc\x81 (combining acute) \xc2\xb2 \xc2\xbd \xd9\xa3\xd9\xa4 \xe2\x85\xab \xe2\x91\xa0 x\xc2\xb2+y\xc2\xb2\n"
    printf "x\xc2\x85\xc2\x85y \xc2\x85z \xe2\x80\xa8\xe2\x80\xa9x \xe2\x80\xaf\xe2\x81\x9fy \xe1\x9a\x80 \xe2\x80\x8b\xe2\x80\x8bz \xef\xbb\xbf\n"
    printf "nbsp\xc2\xa0here em\xe2\x80\x83space ideo\xe3\x80\x80space \xc2\xa0\xc2\xa0two nbsp nl\xc2\x85end\n"
    printf "\xe2\x80\x9cquoted\xe2\x80\x9d \xe2\x80\x94 dash \xe2\x80\x99s \xe2\x80\xa6 \xc2\xab\xc2\xbb \xe2\x82\xac5 \xf0\x9f\x98\x80\xf0\x9f\x8e\x89 emoji\n"
    printf "x\xe0\x81\x81y x\xc1\x81y x\xf0\x80\x81\x81y 1\xe0\x80\xb12 \xed\x9f\xbf\xee\x80\x80 \xf4\x8f\xbf\xbfz\n"
    printf "bad \xff\xfe bytes \xc3( \xe2\x82 \xf0\x9f\x98 \xed\xa0\x80 \xc0\xaf \xf4\x90\x80\x80 end\x80\n"
    printf "ctrl \x01\x02\x1c\x1f\x7f x\x0bvt\x0cff\n"
    printf "%3000s|\n" "" | tr ' ' a
    printf "%2000s|\n" ""
    printf "%500s\n" "" | tr ' ' '='
    printf "the the the the the the the\n\n\n\n   \n"
}
{ special; special; } >"$T/special.txt"

# Random text from the same kinds of pieces, seeded: different every seed, identical on every run.
"$PY" - "$T/fuzz.txt" <<'EOF'
import random, sys
rng = random.Random(20240601)
pieces = ["the", " the", "The", " ", "  ", "\t", "\n", "\n\n", "\r\n", "'s", "'t", "'re", "'ll", "'ve", "'m", "'d", "'", "''", " '",
          "0", "42", " 7", "3.14", ",", ".", "!?", "-", "--", "\u2014", "\u2019", "\u00a0", "\u3000", "\u2003",
          "\u00e9", "e\u0301", "\u00df", "\u03b1\u03b2", "\u4e2d\u6587", "\u00b2", "\u216b", "\u0663", "\U0001F600",
          "a", "b", "ab", "ba", "aa", "of", " of", "License", " software", "GNU", " GPL"]
out = bytearray()
for _ in range(40000):
    r = rng.random()
    if r < 0.93:
        out += rng.choice(pieces).encode()
    elif r < 0.97:
        out += chr(rng.choice([rng.randrange(0x80, 0x800), rng.randrange(0x800, 0xD800),
                               rng.randrange(0xE000, 0x10000), rng.randrange(0x10000, 0x110000)])).encode()
    else:
        out.append(rng.randrange(0x80, 0x100))  # most likely not valid UTF-8
open(sys.argv[1], "wb").write(bytes(out))
EOF

. "$(dirname "$0")/../transformer/same_output_lib.sh" # same LABEL UNIT C-COMMAND... -- PYTHON-COMMAND...
# ids LABEL VOCAB MERGES FILE / pretokens LABEL FILE
ids() { same "$1" tokens "$TOK" "$2" "$3" "$4" -- "$PY" "$REF" encode "$2" "$3" "$4"; }
pretokens() { same "$1" pretokens "$TOK" -p "$2" -- "$PY" "$REF" pretokenize "$2"; }
tokens=0 pretokens=0

"$PY" "$REF" boundary-text "$T/boundary.txt" || { echo "FAIL: boundary-text"; exit 1; }
# texts that end inside a pattern: empty, a contraction, a space run, a truncated UTF-8 sequence
ENDS="empty.txt end1.txt end2.txt end3.txt end4.txt end5.txt"
: >"$T/empty.txt"
printf "it's" >"$T/end1.txt"
printf "'ll" >"$T/end2.txt"
printf "a  " >"$T/end3.txt"
printf " " >"$T/end4.txt"
printf "x \xe0\xa4" >"$T/end5.txt"
echo "pre-tokens:"
for f in special.txt fuzz.txt boundary.txt $ENDS; do pretokens "$f" "$T/$f"; done
for f in "$LICENSES"/*; do pretokens "$(basename "$f")" "$f"; done

echo "ids, with $(($(wc -l <"$T/merges.txt") - 1)) merges learned from the licenses:"
for f in GPL-3 Apache-2.0 GFDL-1.3 LGPL-2.1 MPL-1.1 BSD; do ids "$f" "$T/vocab.json" "$T/merges.txt" "$LICENSES/$f"; done
for f in special.txt fuzz.txt boundary.txt $ENDS; do ids "$f" "$T/vocab.json" "$T/merges.txt" "$T/$f"; done
ids "special.txt (bytes)" - - "$T/special.txt"

# Vocabularies trained on whole lines have merges across pre-token boundaries: they exercise long
# symbols, and a boundary placed elsewhere would likely change the ids.  special.txt holds each
# line twice, so all of its pairs get merged, up to whole lines.
echo "ids, with merges learned from whole lines:"
"$PY" "$REF" train --lines "$T/svocab.json" "$T/smerges.txt" 100000 "$T/special.txt" &&
    "$PY" "$REF" train --lines "$T/lvocab.json" "$T/lmerges.txt" 4000 "$T/fuzz.txt" "$LICENSES/GPL-3" ||
    { echo "FAIL: training on lines"; exit 1; }
ids "special.txt (lines)" "$T/svocab.json" "$T/smerges.txt" "$T/special.txt"
ids "fuzz.txt (lines)" "$T/lvocab.json" "$T/lmerges.txt" "$T/fuzz.txt"
ids "GPL-3 (lines)" "$T/lvocab.json" "$T/lmerges.txt" "$LICENSES/GPL-3"

echo "compared $pretokens pre-tokens and $tokens token ids in $files comparisons: $failed failed"
echo "speed, all of $LICENSES with $(($(wc -l <"$T/merges.txt") - 1)) merges:"
"$TOK" -t "$T/vocab.json" "$T/merges.txt" "$LICENSES"/* | sed 's/^/  /'
[ "$failed" -eq 0 ]
