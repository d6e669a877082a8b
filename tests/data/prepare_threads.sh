# shardrun_prepare on 1, 2 and 3 threads writes byte-identical shards, and its main thread only hands
# out input and writes finished bytes (the threads parse the JSON, tokenize and pack the ids):
#  - JSON Lines with escapes (\n \t \" \\ \uXXXX, surrogate pairs), raw multi-byte UTF-8 (13
#    languages, emoji, combining marks), CRLF, empty texts, blank lines, a record longer than a job,
#    the text field among other fields; mixed in one run with plain text files; jobs of the default
#    size and of 3000 bytes (hundreds of job boundaries); a val split and several train shards
#  - Qwen3's tokenizer.json (NFC, its Split pattern, added tokens, 151,669 ids: uint32 shards): the
#    same files at 1, 2 and 3 threads, and the ids HF's tokenizers library gave the same texts
#  - a bad JSON Lines line deep in a file read by 3 threads in small jobs: exit 2 naming its line
#  - the CPU the main thread uses while the tokenizing thread works: under a tenth of it
. "$(dirname "$0")/../cli/lib.sh"
PREP=${SHARDRUN_PREPARE:-$BUILD/shardrun_prepare}
PY=${PYTHON:-/usr/bin/python3}
REF=$SRC/tests/data/llmc_shards.py
TJ=$SRC/tests/tokenizer_json
[ -x "$PREP" ] || { echo "FAIL: no $PREP; build first"; exit 1; }
"$PY" -c 'import numpy' 2>/dev/null || { echo "FAIL: $PY cannot import numpy (apt-get install python3-numpy)"; exit 1; }
command -v xz >/dev/null || { echo "FAIL: xz is needed (apt-get install xz-utils)"; exit 1; }
L=/usr/share/common-licenses
"$PY" "$SRC/tests/gpt2/bpe_reference.py" train "$T/vocab.json" "$T/merges.txt" 300 "$L/GPL-3" "$L/Apache-2.0" ||
    { echo "FAIL: training a vocabulary"; exit 1; }
BPE=(--vocab "$T/vocab.json" --merges "$T/merges.txt")

# the corpus: ~1.5 MB of JSON Lines, every kind of escape and multi-byte text, and two text files
"$PY" - "$T" "$L" "$TJ/corpus" <<'PYEOF'
import glob, json, os, random, sys
T, lic, corpus = sys.argv[1:4]
rng = random.Random(24)
texts = [open(f, encoding="utf-8").read() for f in sorted(glob.glob(f"{corpus}/*.txt"))]
texts += [open(f"{lic}/{n}", encoding="utf-8").read() for n in ("GPL-3", "Apache-2.0", "MPL-2.0", "LGPL-2.1")]
paras = [p for t in texts for p in t.split("\n\n") if p.strip()]
extra = ["tab\there \"quoted\" back\\slash", "caf\u00e9 e\u0301 \u4e2d\u6587 \U0001F600\U0001F469\u200d\U0001F4BB",
         "line one\r\nline two\n\n\nend.\nNext line", "", " ", "\u00a0\u3000 spaces\u2028sep", "\x7f\x01 ctrl"]
with open(f"{T}/mixed.jsonl", "w", encoding="utf-8") as f:
    n = 0
    while f.tell() < 1_500_000:
        k = rng.randrange(1, 6)
        doc = "\n".join(rng.choice(paras) for _ in range(k)) + rng.choice(extra)
        if n % 97 == 5:
            doc = "\n".join(paras[:60])  # a record longer than a 3000-byte job
        rec = {"id": n, "meta": {"x": [1, 2], "s": "a\"b"}, "text": doc, "after": "z"}
        if n % 3 == 0:
            rec = {"text": doc, "id": n}
        f.write(json.dumps(rec, ensure_ascii=(n % 2 == 0)) + "\n")
        if n % 50 == 7:
            f.write("\n")  # a blank line: skipped
        n += 1
open(f"{T}/a.txt", "w", encoding="utf-8").write("\n".join(paras[::7]))
open(f"{T}/b.txt", "w", encoding="utf-8").write("\n".join(paras[::-5]))
PYEOF
[ -s "$T/mixed.jsonl" ] || { echo "FAIL: writing the corpus"; exit 1; }

# same_shards DIR REF_DIR: the same shard file names, each byte-identical
same_shards() {
    [ "$(cd "$1" && ls)" == "$(cd "$2" && ls)" ] || return 1
    local f
    for f in "$2"/*.bin; do cmp -s "$f" "$1/$(basename "$f")" || return 1; done
}

# ---- GPT-2-style BPE: JSON Lines and text files in one run, 1/2/3 threads, two job sizes ----
ref=
for chunk in 262144 3000; do
    for th in 1 2 3; do
        d=$T/g_${th}_$chunk
        mkdir "$d"
        run "$PREP" "${BPE[@]}" -o "$d/c" --shard-tokens 100000 --val-tokens 30000 --threads $th --chunk-bytes $chunk \
            --progress none "$T/a.txt" "$T/mixed.jsonl" "$T/b.txt"
        expect_rc 0 "prepare, $th threads, jobs of $chunk bytes"
        if [ -z "$ref" ]; then
            ref=$d
            nshards=$(ls "$d" | wc -l)
            [ "$nshards" -ge 4 ] && pass || fail "the corpus should fill a val and several train shards ($nshards)"
            docs=$(sed -n 's/.* from \([0-9]*\) documents.*/\1/p' <<<"$out")
            recs=$(grep -c . "$T/mixed.jsonl")
            expect_eq "$docs" $((recs + 2)) "every record and text file is one document"
            continue
        fi
        same_shards "$d" "$ref" && pass || fail "$th threads, jobs of $chunk bytes: shards differ from 1 thread's"
    done
done

# ---- Qwen3's tokenizer.json: uint32 shards, the same at 1/2/3 threads, HF's ids ----
xz -dc "$TJ/qwen3-tokenizer.json.xz" >"$T/qwen3.json" || { echo "FAIL: cannot decompress the Qwen3 tokenizer"; exit 1; }
xz -dc "$TJ/expected/qwen3.ids.xz" >"$T/qwen3.want" || { echo "FAIL: cannot decompress HF's ids"; exit 1; }
for th in 1 2 3; do
    mkdir "$T/q$th"
    run "$PREP" --tokenizer-json "$T/qwen3.json" -o "$T/q$th/q" --val-tokens 0 --shard-tokens 20000 --threads $th \
        --chunk-bytes 2000 --progress none "$TJ"/corpus/*.txt
    expect_rc 0 "prepare with Qwen3's tokenizer.json, $th threads"
    [ $th = 1 ] && continue
    same_shards "$T/q$th" "$T/q1" && pass || fail "Qwen3, $th threads: shards differ from 1 thread's"
done
expect_in "$out" "uint32 tokens" "Qwen3's vocabulary takes uint32 shards"
# the ids read back, less the end-of-text token before each document, are HF's (which has none);
# the stream starts with that token
for f in "$T/q1"/*.bin; do "$PY" "$REF" read "$f"; done >"$T/qwen3.ids"
eot=$(head -1 "$T/qwen3.ids")
expect_eq "$(grep -cx "$eot" "$T/qwen3.ids")" "$(($(ls "$TJ"/corpus/*.txt | wc -l) + $(grep -cx "$eot" "$T/qwen3.want")))" \
    "one end-of-text token per document"
grep -vx "$eot" "$T/qwen3.ids" >"$T/qwen3.got"
grep -vx "$eot" "$T/qwen3.want" >"$T/qwen3.want_no_eot"
expect_same_file "$T/qwen3.got" "$T/qwen3.want_no_eot" "Qwen3 shards' ids vs HF tokenizers' ids"

# ---- a bad line deep in a file, read by 3 threads in small jobs: its own line number ----
{ head -400 "$T/mixed.jsonl"; echo '{"text": "ok", "n": nope_2417}'; tail -50 "$T/mixed.jsonl"; } >"$T/bad.jsonl"
bad_line=$(grep -n nope_2417 "$T/bad.jsonl" | cut -d: -f1)
mkdir "$T/e"
run "$PREP" "${BPE[@]}" -o "$T/e/x" --threads 3 --chunk-bytes 3000 --progress none "$T/bad.jsonl"
expect_rc 2 "a line that is not JSON, deep in the file"
expect_in "$err" "bad.jsonl:$bad_line:" "the message names the file and its line"
expect_eq "$(ls -A "$T/e" | grep -vc '_[0-9]*\.bin$')" 0 "no temporary left"

# ---- the main thread does none of the per-byte work ----
mkdir "$T/cpu"
# eight times the mixed file: about a quarter of a second of tokenizing, so that the main thread's
# fixed costs (start, the shard's header, a few clock ticks) stay well below a tenth of it
run "$PREP" "${BPE[@]}" -o "$T/cpu/c" --threads 1 --progress none $(for _ in 1 2 3 4 5 6 7 8; do echo "$T/mixed.jsonl"; done)
expect_rc 0 "prepare, 1 thread"
line=$(grep '^CPU: ' <<<"$out")
work=$(sed -n 's/^CPU: \([0-9.]*\) s in the tokenizing threads.*/\1/p' <<<"$line")
main=$(sed -n 's/.*the main thread .* \([0-9.]*\) s user.*/\1/p' <<<"$line")
# user time: the kernel's time writing and syncing the shards is the main thread's job, and the
# filesystem's cost, not work the threads could share
if [ -n "$work" ] && [ -n "$main" ]; then
    "$PY" -c 'import sys; w, m = map(float, sys.argv[1:]); sys.exit(0 if m < 0.1 * w else 1)' "$work" "$main" && pass ||
        fail "the main thread used $main s of CPU in user mode while the tokenizing thread used $work s: expected under a tenth"
else
    fail "no 'CPU: ... s in the tokenizing threads; the main thread ... s user, ... s system' line in: $out"
fi
done_checks
