#!/bin/bash
# tf_tokenizer_load_json (models/transformer/tokenizer_json.c) against the Python reference
# (tokenizer_reference.py, which runs BLOOM's split through the stdlib `re` and GPT-2's pattern
# through tests/gpt2/bpe_reference.py): on tokenizer.json files this test writes itself -- BLOOM's
# layout with vocabularies trained on BLOOM's pieces and on whole lines, its merges as "a b" strings
# and as ["a", "b"] pairs, and GPT-2's layout of the vocabulary tests/gpt2/tokenizer.sh trains --
# the pieces, the ids, the vocabulary size, eos and every id's decoded bytes must be identical; the
# GPT-2 tokenizer.json must give the ids its vocab.json + merges.txt give.  Then damaged and
# unsupported files must be refused with the file, the line and what is wrong, and a 1 GiB one at
# once, from its size.
# Environment: GPT2_TOKENIZE (default $BUILD/gpt2_tokenize), PYTHON (default:
# /usr/bin/python3, every call in one process: torch_py, tests/transformer/torch_server.sh).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TOK=${GPT2_TOKENIZE:-${BUILD:-build}/gpt2_tokenize}
REF="$HERE/tokenizer_reference.py"
LICENSES=/usr/share/common-licenses
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
SRC=$(cd "$HERE/../.." && pwd)
. "$SRC/tests/transformer/torch_server.sh"
PY=${PYTHON:-torch_py}
[ -x "$TOK" ] || { echo "FAIL: no gpt2_tokenize executable at $TOK (set GPT2_TOKENIZE)"; exit 1; }
[ -f "$LICENSES/GPL-3" ] || { echo "FAIL: no $LICENSES/GPL-3 to train on"; exit 1; }
failed=0 files=0

# What BLOOM's split turns on: its punctuation (ASCII, CJK, Devanagari, Arabic, Urdu, the ellipsis)
# alone, in runs, between words and after spaces; ( ) | as in "(a|b)"; runs of spaces, tabs and
# newlines; Unicode White_Space next to characters Python's \s takes but Oniguruma's does not
# (U+001C-001F), zero-width and byte-order marks; emoji; bytes that are not UTF-8.  Twice, so that a
# vocabulary trained on whole lines merges across every piece boundary in it.
special() {
    printf "Hello, world! How are you? Fine... Really?! (yes|no) (a|b) a|b|c ((x)) |pipe| f(x)=y\n"
    printf "\xe4\xbd\xa0\xe5\xa5\xbd\xe3\x80\x82\xe4\xb8\x96\xe7\x95\x8c\xef\xbc\x8c\xe4\xbd\xa0\xe5\xa5\xbd\xe3\x80\x81\xe5\x86\x8d\xe8\xa7\x81\xe3\x80\x82\xe3\x80\x82 \xe3\x80\x82x \xef\xbc\x8c y\n"
    printf "\xe0\xa4\xa8\xe0\xa4\xae\xe0\xa4\xb8\xe0\xa5\x8d\xe0\xa4\xa4\xe0\xa5\x87\xe0\xa5\xa4 \xe0\xa4\xa6\xe0\xa5\x81\xe0\xa4\xa8\xe0\xa4\xbf\xe0\xa4\xaf\xe0\xa4\xbe\xe0\xa5\xa4\xe0\xa5\xa4 \xe0\xa5\xa5 \xe0\xa5\xa6\xe0\xa5\xa7\n"
    printf "\xd9\x85\xd8\xb1\xd8\xad\xd8\xa8\xd8\xa7\xd8\x8c \xd8\xb9\xd8\xa7\xd9\x84\xd9\x85\xd8\x8c\xd8\x8c \xd8\xa7\xd8\xb1\xd8\xaf\xd9\x88\xdb\x94 \xdb\x94\xdb\x94x \xd8\x9f\n"
    printf "wait\xe2\x80\xa6 \xe2\x80\xa6and \xe2\x80\xa6\xe2\x80\xa6 .,!? ?!., ...x ,y !z  .  ,\n"
    printf "two  spaces,   three, \t tab,\ttab\t\tend \n\n\n  indented\n\t\tby tabs\r\nCRLF line\r\n   \n"
    printf "nbsp\xc2\xa0here\xc2\xa0\xc2\xa0x em\xe2\x80\x83space ideo\xe3\x80\x80space \xe2\x80\xa8ls \xe2\x80\xa9ps nel\xc2\x85x ogham\xe1\x9a\x80x\n"
    printf "fs\x1cgs\x1drs\x1eus\x1fx \x1c \x1f. zw\xe2\x80\x8bsp bom\xef\xbb\xbfx mvs\xe1\xa0\x8ex ctrl\x01\x7f\n"
    printf "emoji \xf0\x9f\x98\x80\xf0\x9f\x8e\x89, \xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd! (\xf0\x9f\x98\x80|\xf0\x9f\x98\x81)\n"
    printf "bad \xff\xfe bytes \xc3( \xe2\x82 \xf0\x9f\x98 \xed\xa0\x80 \xc0\xaf. \xf4\x90\x80\x80, end\x80\n"
    printf "It's 12,345.67 \$5 #tag @user e-mail: a@b.c 1.2.3 don't\n"
    printf "%2000s|\n" "" | tr ' ' a
    printf "%300s.\n" ""
    printf "%200s\n" "" | tr ' ' ','
}
{ special; special; } >"$T/special.txt"

# Random text from the same kinds of pieces, seeded: identical on every run.
"$PY" - "$T/fuzz.txt" <<'EOF'
import random, sys
rng = random.Random(20241125)
pieces = ["the", " the", "a", " ", "  ", "\t", "\n", "\n\n", "\r\n", ".", ",", "!", "?", "...", "(", ")", "|", " (", ") ",
          "\u2026", "\u3002", "\uff0c", "\u3001", "\u0964", "\u06d4", "\u060c", "\u00a0", "\u3000", "\u2003", "\u2028",
          "\x1c", "\x1f", "\u200b", "\u4e2d\u6587", "\u0928\u092e", "\u0639\u0631\u0628", "\U0001F600", "'s", "42", "-",
          "x", " x", "of", " of", "License", " software"]
out = bytearray()
for _ in range(30000):
    r = rng.random()
    if r < 0.93:
        out += rng.choice(pieces).encode()
    elif r < 0.97:
        out += chr(rng.choice([rng.randrange(0x80, 0x800), rng.randrange(0x800, 0xD800),
                               rng.randrange(0xE000, 0x10000), rng.randrange(0x10000, 0x110000)])).encode()
    else:
        out.append(rng.randrange(0x80, 0x100))
open(sys.argv[1], "wb").write(bytes(out))
EOF
# texts that end inside a piece: empty, a space, a space before a word character, a truncated
# UTF-8 sequence, punctuation, a space run
: >"$T/e0.txt"
printf " " >"$T/e1.txt"
printf "a " >"$T/e2.txt"
printf "x \xe0\xa4" >"$T/e3.txt"
printf "(a|b)" >"$T/e4.txt"
printf "a  " >"$T/e5.txt"
printf " \xe3\x80\x82" >"$T/e6.txt"
TEXTS="special.txt fuzz.txt e0.txt e1.txt e2.txt e3.txt e4.txt e5.txt e6.txt"

. "$(dirname "$0")/../transformer/same_output_lib.sh" # same LABEL UNIT C-COMMAND... -- PYTHON-COMMAND...
ids() { same "$1" ids "$TOK" --tokenizer-json "$2" "$3" -- "$PY" "$REF" encode "$2" "$3"; }
pieces() { same "$1" pieces "$TOK" --tokenizer-json "$2" -p "$3" -- "$PY" "$REF" pieces "$2" "$3"; }
info() { same "$1" entries "$TOK" --tokenizer-json "$2" --info -- "$PY" "$REF" info "$2"; }
ids=0 pieces=0 entries=0

# ---- BLOOM's layout ----------------------------------------------------------------------------
"$PY" "$REF" train --bloom "$T/bv.json" "$T/bm.txt" 400 "$LICENSES"/* "$T/special.txt" 2>>"$T/train.err" &&
    "$PY" "$REF" train --bloom --lines "$T/lv.json" "$T/lm.txt" 3000 "$T/special.txt" "$T/fuzz.txt" 2>>"$T/train.err" &&
    "$PY" "$REF" make-json bloom "$T/bv.json" "$T/bm.txt" "$T/bloom.json" &&
    "$PY" "$REF" make-json bloom "$T/bv.json" "$T/bm.txt" "$T/bloom_pairs.json" --pairs --ascii &&
    "$PY" "$REF" make-json bloom "$T/lv.json" "$T/lm.txt" "$T/bloom_lines.json" --pairs ||
    { echo "FAIL: writing the BLOOM-style tokenizer.json files:"; cat "$T/train.err"; exit 1; }
echo "BLOOM's pre-tokenizer, pieces:"
for f in $TEXTS; do pieces "$f" "$T/bloom.json" "$T/$f"; done
for f in "$LICENSES"/*; do pieces "$(basename "$f")" "$T/bloom.json" "$f"; done
echo "ids, $(($(wc -l <"$T/bm.txt") - 1)) merges learned on BLOOM's pieces (\"a b\" strings; then [\"a\", \"b\"] pairs, \\u-escaped):"
for f in GPL-3 Apache-2.0 GFDL-1.3 LGPL-2.1 MPL-1.1; do ids "$f" "$T/bloom.json" "$LICENSES/$f"; done
for f in $TEXTS; do ids "$f" "$T/bloom.json" "$T/$f"; done
for f in "$LICENSES/GPL-3" "$T/special.txt" "$T/fuzz.txt"; do ids "$(basename "$f") (pairs)" "$T/bloom_pairs.json" "$f"; done
echo "ids, merges learned on whole lines (they cross every piece boundary a text has):"
for f in special.txt fuzz.txt e4.txt; do ids "$f (lines)" "$T/bloom_lines.json" "$T/$f"; done
echo "vocabulary, eos and each id's bytes:"
info "bloom.json" "$T/bloom.json"
info "bloom_lines.json" "$T/bloom_lines.json"

# ---- GPT-2's layout ------------------------------------------------------------------------------
# tests/gpt2/tokenizer.sh's vocabulary (300 merges learned from the licenses), as vocab.json +
# merges.txt and as a tokenizer.json: the C tokenizer must give the same ids from both.
"$PY" "$HERE/../gpt2/bpe_reference.py" train "$T/gv.json" "$T/gm.txt" 300 "$LICENSES"/* 2>>"$T/train.err" &&
    "$PY" "$REF" make-json gpt2 "$T/gv.json" "$T/gm.txt" "$T/gpt2.json" ||
    { echo "FAIL: writing the GPT-2-style tokenizer.json:"; cat "$T/train.err"; exit 1; }
echo "GPT-2's tokenizer.json:"
for f in "$LICENSES/GPL-3" "$LICENSES/Apache-2.0" "$T/special.txt" "$T/fuzz.txt"; do
    ids "$(basename "$f")" "$T/gpt2.json" "$f"
    same "$(basename "$f") (vocab.json)" ids "$TOK" --tokenizer-json "$T/gpt2.json" "$f" -- "$TOK" "$T/gv.json" "$T/gm.txt" "$f"
done
info "gpt2.json" "$T/gpt2.json"

# ---- refused files -------------------------------------------------------------------------------
# refused LABEL FILE WANT: loading FILE fails (exit 1) with a message that holds WANT
refused() {
    local label=$1 file=$2 want=$3 out
    files=$((files + 1))
    out=$("$TOK" --tokenizer-json "$file" --info 2>&1 >/dev/null)
    local rc=$?
    if [ $rc -eq 1 ] && [[ "$out" == *"$want"* ]]; then
        printf '  %-18s %s\n' "$label" "${out#gpt2_tokenize: }"
    else
        failed=$((failed + 1))
        echo "FAIL: $label: expected exit 1 and a message with: $want"
        echo "      got exit $rc: $out"
    fi
}
# variant NAME [SOURCE]: the reference's damaged copy of SOURCE (default bloom.json), as $T/NAME.json
variant() { "$PY" "$REF" variant "$1" "$T/${2:-bloom}.json" "$T/$1.json" || { echo "FAIL: variant $1"; exit 1; }; }
echo "refused:"
refused "missing file" "$T/none.json" "cannot read tokenizer.json $T/none.json: No such file"
# a 1 GiB (sparse) file: refused from its size, before a byte is read (reading it took seconds)
truncate -s 1G "$T/huge.json"
start=$(date +%s%N)
refused "1 GiB file" "$T/huge.json" "tokenizer.json $T/huge.json is 1073741824 bytes, more than the 256 MiB a tokenizer file may have"
ms=$((($(date +%s%N) - start) / 1000000))
[ "$ms" -lt 1000 ] || { failed=$((failed + 1)); echo "FAIL: the 1 GiB tokenizer.json took $ms ms to refuse (want < 1 s)"; }
rm -f "$T/huge.json"
printf '{"version": "1.0",\n "model": {"type": "BPE"\n' >"$T/cut.json"
refused "cut short" "$T/cut.json" "cut.json:3: expected ',' or '}' after an entry, found the end of the file"
for v in syntax truncated metaspace other-regex split-merged whitespace-first nfkc lstrip wordpiece byte-fallback dropout \
    roberta suffix no-decoder unknown-key unknown-merge unknown-merged bad-merge duplicate-id gap-id added-id no-eos \
    missing-byte unk-missing twice; do variant $v; done
variant bad-pair bloom_pairs
variant prefix-space gpt2
refused "bad JSON" "$T/syntax.json" "syntax.json:4: expected ',' or '}' after an entry, found '\"'"
refused "truncated" "$T/truncated.json" "truncated.json:"
refused "key twice" "$T/twice.json" "the file has \"model\" twice"
refused "Metaspace" "$T/metaspace.json" "pre_tokenizer.type is \"Metaspace\": not supported yet"
refused "nested [^...]" "$T/other-regex.json" "pre_tokenizer.pretokenizers[0].pattern.Regex \" ?[^(\\s|[^.,!?])]+\": a negated class inside a class (at pattern byte 8) is not supported"
refused "Split merged" "$T/split-merged.json" "pre_tokenizer.pretokenizers[0].behavior is \"MergedWithPrevious\": not supported yet"
refused "Whitespace first" "$T/whitespace-first.json" "pre_tokenizer.pretokenizers[0].type is \"Whitespace\": not supported yet"
refused "prefix space" "$T/prefix-space.json" "pre_tokenizer.add_prefix_space is true: not supported yet"
refused "NFKC normalizer" "$T/nfkc.json" "normalizer.type is \"NFKC\": not supported yet (supported: null or NFC)"
refused "lstrip" "$T/lstrip.json" "added_tokens[0].lstrip is true: not supported yet (supported: false)"
refused "WordPiece" "$T/wordpiece.json" "model.type is \"WordPiece\": not supported yet"
refused "byte_fallback" "$T/byte-fallback.json" "model.byte_fallback is true: not supported yet"
refused "dropout" "$T/dropout.json" "model.dropout is 0.1: not supported yet"
refused "suffix" "$T/suffix.json" "model.end_of_word_suffix is \"</w>\": not supported yet (supported: null or \"\")"
refused "Roberta" "$T/roberta.json" "post_processor.type is \"RobertaProcessing\": not supported yet"
refused "no decoder" "$T/no-decoder.json" "decoder is null: not supported yet"
refused "unknown key" "$T/unknown-key.json" "the file has a member \"extra\": not supported yet"
refused "unknown symbol" "$T/unknown-merge.json" "\"zz\" is not in model.vocab"
refused "unknown merged" "$T/unknown-merged.json" "model.merges[3]: the merged symbol \"bb\" is not in model.vocab"
refused "bad merge" "$T/bad-merge.json" "model.merges[2]: expected two symbols separated by one space"
refused "bad pair" "$T/bad-pair.json" "model.merges[2]: expected a pair of two strings"
refused "duplicate id" "$T/duplicate-id.json" "id 7 is also the id of the entry at line"
refused "id gap" "$T/gap-id.json" "is out of range: model.vocab and added_tokens have"
refused "added id" "$T/added-id.json" "added_tokens[2]: \"</s>\" has id 7 here but 2 in model.vocab"
refused "no eos" "$T/no-eos.json" "no special end-of-text token: none of \"</s>\", \"<|endoftext|>\", \"<|end_of_text|>\" is in added_tokens with \"special\": true"
refused "missing byte" "$T/missing-byte.json" "no entry for byte 0x20"
refused "unk_token" "$T/unk-missing.json" "model.unk_token \"<nope>\" is not in model.vocab"

# accepted variants: the members in another order give the same ids, and so does BLOOM's pattern
# in a named group (which PCRE2 runs match by match instead of several at a call); eos is </s> also when
# <|endoftext|> is there; unk_token naming a symbol is fine
echo "accepted:"
variant reordered
ids "special.txt (model first)" "$T/reordered.json" "$T/special.txt"
variant named-group
for f in special.txt fuzz.txt; do
    same "$f (named group)" ids "$TOK" --tokenizer-json "$T/named-group.json" "$T/$f" -- "$TOK" --tokenizer-json "$T/bloom.json" "$T/$f"
done
variant both-eos
variant unk
for v in both-eos unk; do
    files=$((files + 1))
    first=$("$TOK" --tokenizer-json "$T/$v.json" --info 2>&1 | head -1)
    case "$first" in
    "vocab "*" eos 2") echo "  accepted $v: $first" ;;
    *) failed=$((failed + 1)); echo "FAIL: $v: expected \"vocab N eos 2\", got: $first" ;;
    esac
done

echo "compared $pieces pieces, $ids ids and $entries vocabulary entries in $files checks: $failed failed"
echo "speed, all of $LICENSES with BLOOM's pre-tokenizer:"
"$TOK" --tokenizer-json "$T/bloom.json" -t "$LICENSES"/* | sed 's/^/  /'
[ "$failed" -eq 0 ]
