# shardrun_prepare (also as `shardrun prepare`), as a user runs it: text and JSON Lines into llm.c shards that a Python reader
# following llm.c's format (llmc_shards.py) reads back as the very ids our tokenizer gives each
# document, <|endoftext|> first, whatever the threads and however the documents are cut into chunks;
# the val split and llm.c's names; a re-run keeps identical shards and rewrites changed ones; a
# killed run leaves no file that looks like a shard and is not one; bad input exits 2 naming the
# file and line; the progress bar and the plain lines.  (The val split's default and -o's folder:
# prepare_val.sh.)
. "$(dirname "$0")/../cli/lib.sh"
PREP=${SHARDRUN_PREPARE:-$BUILD/shardrun_prepare}
TOK=${GPT2_TOKENIZE:-$BUILD/gpt2_tokenize}
PY=${PYTHON:-/usr/bin/python3}
REF=$SRC/tests/data/llmc_shards.py
for x in "$PREP" "$TOK"; do [ -x "$x" ] || { echo "FAIL: no $x; build first"; exit 1; }; done
"$PY" -c 'import numpy' 2>/dev/null || { echo "FAIL: $PY cannot import numpy (apt-get install python3-numpy)"; exit 1; }
L=/usr/share/common-licenses
"$PY" "$SRC/tests/gpt2/bpe_reference.py" train "$T/vocab.json" "$T/merges.txt" 300 "$L/GPL-3" "$L/Apache-2.0" ||
    { echo "FAIL: training a vocabulary"; exit 1; }
EOT=$("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["<|endoftext|>"])' "$T/vocab.json")
BPE=(--vocab "$T/vocab.json" --merges "$T/merges.txt")

# expected FILE...: <|endoftext|> and then the ids gpt2_tokenize gives each file, a document each
expected() { local f; for f in "$@"; do echo "$EOT"; "$TOK" "$T/vocab.json" "$T/merges.txt" "$f"; done; }
# shard_ids FILE...: the ids of shards, read by the llm.c-style reader (llmc_shards.py, run once per
# file in one Python process), in the order given; shard_counts FILE...: each one's token count
read_shards() {
    "$PY" - "$REF" "$@" <<'PYEOF'
import io, runpy, sys
ref, mode, files = sys.argv[1], sys.argv[2], sys.argv[3:]
out = sys.stdout
for f in files:
    sys.argv, sys.stdout = [ref, "read", f], io.StringIO()
    try:
        runpy.run_path(ref, run_name="__main__")
        text = sys.stdout.getvalue()
    except Exception as e:
        text = f"UNREADABLE {f}: {e}\n"
    sys.stdout = out
    out.write(text if mode == "ids" else f"{text.count(chr(10))}\n")
PYEOF
}
shard_ids() { read_shards ids "$@"; }
count() { read_shards counts "$@"; }

# ---- text: one document per file, cut into many chunks (ids must not change), two threads ----
mkdir "$T/a"
run "$PREP" "${BPE[@]}" -o "$T/a/lic" --shard-tokens 5000 --val-tokens 1000 --threads 2 --chunk-bytes 700 \
    --progress none "$L/GPL-3" "$L/Apache-2.0"
expect_rc 0 "prepare of two text files"
expect_in "$out" "prepared" "the throughput line"
expect_in "$out" "MB/s" "the throughput line"
expected "$L/GPL-3" "$L/Apache-2.0" >"$T/want_a"
n=$(wc -l <"$T/want_a")
shards=$(cd "$T/a" && ls)
want_names="lic_val_000000.bin"
for i in $(seq 1 $(((n - 1000 + 4999) / 5000))); do want_names="$want_names"$'\n'$(printf 'lic_train_%06d.bin' "$i"); done
expect_eq "$shards" "$(sort <<<"$want_names")" "llm.c's names: NAME_val_000000.bin, then NAME_train_000001.bin ..."
expect_eq "$(count "$T/a/lic_val_000000.bin")" 1000 "the val split holds --val-tokens tokens"
expect_eq "$(count "$T/a/lic_train_000001.bin")" 5000 "a train shard holds --shard-tokens tokens"
shard_ids "$T/a/lic_val_000000.bin" "$T/a"/lic_train_*.bin >"$T/got_a"
expect_same_file "$T/got_a" "$T/want_a" "the ids read back (llm.c-style reader) vs gpt2_tokenize's per document"

# the same with one thread and whole chunks: byte-for-byte the same shards
mkdir "$T/a1"
run "$PREP" "${BPE[@]}" -o "$T/a1/lic" --shard-tokens 5000 --val-tokens 1000 --threads 1 --progress none \
    "$L/GPL-3" "$L/Apache-2.0"
same=1
for f in "$T/a"/*.bin; do cmp -s "$f" "$T/a1/$(basename "$f")" || same=0; done
expect_eq "$same" 1 "1 thread, whole documents: the same shard files as 2 threads and 700-byte chunks"

# ---- JSON Lines: the text field, escapes, non-ASCII, an empty text, another field name ----
"$PY" - "$T" "$L/BSD" <<'PYEOF'
import json, sys
T, bsd = sys.argv[1], open(sys.argv[2]).read()
docs = ["Hello world.\nIt's a test.", "caf\u00e9 \u4e2d\u6587 \U0001F600 tab\there \"quoted\" back\\slash", "",
        bsd, "line one\r\nline two\n\n\nend.\nNext line"] * 3
with open(f"{T}/docs.jsonl", "w") as f:
    for i, d in enumerate(docs):
        f.write(json.dumps({"id": i, "body": d, "meta": {"x": [1, 2]}}) + "\n")
        if i == 4: f.write("\n")  # a blank line: skipped
for i, d in enumerate(docs):
    open(f"{T}/doc{i:02d}.txt", "wb").write(d.encode())
PYEOF
mkdir "$T/j"
run "$PREP" "${BPE[@]}" -o "$T/j/docs" --text-field body --val-tokens 0 --shard-tokens 300 --threads 2 \
    --chunk-bytes 64 --progress none "$T/docs.jsonl"
expect_rc 0 "prepare of a JSON Lines file"
expect_in "$out" "from 15 documents" "every record is a document (the blank line is none)"
expected "$T"/doc*.txt >"$T/want_j"
shard_ids $(ls "$T/j"/docs_train_*.bin) >"$T/got_j"
expect_same_file "$T/got_j" "$T/want_j" "JSON Lines ids read back vs gpt2_tokenize's of each record's text"
expect_eq "$(ls "$T/j" | head -1)" "docs_train_000000.bin" "--val-tokens 0: no val split, train from 000000"

# the tokenizer and text field of a job file's [task], relative to the job file (as shardrun reads them)
printf '[shardrun]\ntask = gpt2\n[task]\nvocab_json = vocab.json ; GPT-2 BPE\nmerges_txt = merges.txt\ntext_field = body\n' >"$T/job.ini"
mkdir "$T/jj"
run "$PREP" --job "$T/job.ini" -o "$T/jj/docs" --val-tokens 0 --shard-tokens 300 --progress none "$T/docs.jsonl"
expect_rc 0 "prepare with --job"
same=1
for f in "$T/j"/*.bin; do cmp -s "$f" "$T/jj/$(basename "$f")" || same=0; done
expect_eq "$same" 1 "--job: the job's vocab_json, merges_txt and text_field give the same shards as the flags"

# `shardrun prepare` is the same command (shardrun_prepare next to the shardrun executable)
mkdir "$T/sj"
run "$SHARDRUN" prepare --job "$T/job.ini" -o "$T/sj/docs" --val-tokens 0 --shard-tokens 300 --progress none "$T/docs.jsonl"
expect_rc 0 "shardrun prepare"
same=1
for f in "$T/j"/*.bin; do cmp -s "$f" "$T/sj/$(basename "$f")" || same=0; done
expect_eq "$same" 1 "shardrun prepare writes the same shards as shardrun_prepare"

# byte-level tokens (no vocabulary): id = byte, <|endoftext|> = 256
mkdir "$T/b"
run "$PREP" -o "$T/b/x" --val-tokens 0 --progress none "$L/BSD"
expect_rc 0 "byte-level prepare"
{ echo 256; od -An -v -tu1 "$L/BSD" | tr -s ' ' '\n' | sed '/^$/d'; } >"$T/want_b"
shard_ids "$T/b/x_train_000000.bin" >"$T/got_b"
expect_same_file "$T/got_b" "$T/want_b" "byte-level ids"

# ---- re-run: identical shards are kept (not rewritten), changed ones replaced ----
stamp() { stat -c '%i %Y.%y' "$@"; }
before=$(stamp "$T/a"/*.bin)
val_before=$(stamp "$T/a/lic_val_000000.bin")
sleep 1.1
run "$PREP" "${BPE[@]}" -o "$T/a/lic" --shard-tokens 5000 --val-tokens 1000 --progress none "$L/GPL-3" "$L/Apache-2.0"
expect_rc 0 "re-run"
expect_in "$out" "0 written, $(ls "$T/a" | wc -l) already complete and identical" "the re-run writes nothing"
expect_eq "$(stamp "$T/a"/*.bin)" "$before" "the re-run leaves every shard file as it was (inode, mtime)"
# a different second document: the shards before it stay, those after it are replaced
run "$PREP" "${BPE[@]}" -o "$T/a/lic" --shard-tokens 5000 --val-tokens 1000 --progress none "$L/GPL-3" "$L/MPL-2.0"
expect_rc 0 "re-run on changed input"
expect_eq "$(stamp "$T/a/lic_val_000000.bin")" "$val_before" "the val shard, unchanged, is kept"
expected "$L/GPL-3" "$L/MPL-2.0" >"$T/want_c"
last=$(printf 'lic_train_%06d.bin' $((($(wc -l <"$T/want_c") - 1000 + 4999) / 5000)))
shard_ids "$T/a/lic_val_000000.bin" $(ls "$T/a"/lic_train_*.bin | sed "/$last/q") >"$T/got_c"
expect_same_file "$T/got_c" "$T/want_c" "the changed shards hold the new ids"
# a damaged shard (truncated) is no shard: rewritten
truncate -s 2000 "$T/a/lic_train_000001.bin"
run "$PREP" "${BPE[@]}" -o "$T/a/lic" --shard-tokens 5000 --val-tokens 1000 --progress none "$L/GPL-3" "$L/MPL-2.0"
expect_in "$out" "1 written" "a truncated shard is rewritten, the others kept"
shard_ids "$T/a/lic_val_000000.bin" $(ls "$T/a"/lic_train_*.bin | sed "/$last/q") >"$T/got_c"
expect_same_file "$T/got_c" "$T/want_c" "after rewriting the truncated shard"

# ---- a killed run leaves only complete shards (and, after SIGKILL, a hidden temporary) ----
for i in $(seq 60); do cat "$L/GPL-3" "$L/Apache-2.0" "$L/GFDL-1.3"; done >"$T/big.txt" # ~6 MB, one document
expected "$T/big.txt" >"$T/want_big"
nbig=$(wc -l <"$T/want_big")
for sig in TERM KILL; do
    mkdir "$T/k$sig"
    "$PREP" "${BPE[@]}" -o "$T/k$sig/big" --shard-tokens 20000 --val-tokens 0 --threads 1 --chunk-bytes 4096 \
        --progress none "$T/big.txt" >"$T/k$sig.out" 2>&1 &
    pid=$!
    for i in $(seq 1000); do [ -e "$T/k$sig/big_train_000002.bin" ] && break; sleep 0.01; done
    # stopped first, so that the signal lands mid-run however loaded the machine is
    kill -STOP $pid
    kill -$sig $pid
    kill -CONT $pid 2>/dev/null
    { wait $pid; } 2>/dev/null
    rc=$?
    [ $sig = TERM ] && expect_eq "$rc" 143 "SIGTERM: exit 128+15" || expect_eq "$rc" 137 "SIGKILL: 128+9"
    k=$(ls "$T/k$sig"/big_train_*.bin | wc -l)
    # each file named like a shard holds its whole share of the ids: 20000, the last one the rest
    want=$(for i in $(seq 0 $((k - 1))); do r=$((nbig - i * 20000)); echo $((r < 20000 ? r : 20000)); done)
    expect_eq "$(count "$T/k$sig"/big_train_*.bin)" "$want" "SIG$sig: every file named like a shard is a complete one ($k)"
    [ "$k" -ge 3 ] && [ $((k * 20000)) -lt "$nbig" ] && pass || fail "SIG$sig: killed mid-run expected ($k shards written)"
    shard_ids "$T/k$sig"/big_train_*.bin >"$T/got_k"
    expect_eq "$(cmp "$T/got_k" "$T/want_big" 2>&1 | grep -c differ)" 0 "SIG$sig: the shards written are a prefix of the ids"
    left=$(ls -A "$T/k$sig" | grep -v '^big_train_[0-9]*\.bin$')
    if [ $sig = TERM ]; then expect_eq "$left" "" "SIGTERM: the temporary is removed"
    else expect_eq "$(grep -v '^\.big_train_[0-9]*\.bin\.partial-[0-9]*$' <<<"$left" | grep -c .)" 0 "SIGKILL: only a hidden temporary left"; fi
done
# and the run after an interruption completes the data
run "$PREP" "${BPE[@]}" -o "$T/kTERM/big" --shard-tokens 20000 --val-tokens 0 --threads 2 --progress none "$T/big.txt"
expect_rc 0 "the run after the interrupted one"
expect_in "$out" "already complete and identical" "it keeps the shards the interrupted run completed"
shard_ids "$T/kTERM"/big_train_*.bin >"$T/got_k"
expect_same_file "$T/got_k" "$T/want_big" "after resuming: all the ids"

# ---- bad input: exit 2, naming the file and line ----
printf '{"text": "ok"}\n{"text": "ok"}\n{"text": nope}\n' >"$T/bad.jsonl"
printf '{"text": "ok"}\n{"title": "no text"}\n' >"$T/nofield.jsonl"
mkdir "$T/e"
run "$PREP" -o "$T/e/x" --progress none "$T/bad.jsonl"
expect_rc 2 "a line that is not JSON"
expect_in "$err" "bad.jsonl:3" "the message names the file and line"
run "$PREP" -o "$T/e/x" --progress none "$T/nofield.jsonl"
expect_rc 2 "a record without the text field"
expect_in "$err" "nofield.jsonl:2" "the message names the file and line"
expect_eq "$(ls -A "$T/e")" "" "nothing written by the failed runs (no shard, no temporary)"
run "$PREP" -o "$T/e/x" "$T"
expect_rc 2 "a directory as input"
expect_in "$err" "is a directory" "the message says what the input is"
run "$PREP" -o "$T/e/x" "$T/missing.txt"
expect_rc 2 "a missing input"
expect_in "$err" "missing.txt" "the message names the file"
run "$PREP" --vocab "$T/missing.json" --merges "$T/merges.txt" -o "$T/e/x" "$L/BSD"
expect_rc 2 "a missing vocabulary"
expect_in "$err" "missing.json" "the message names the vocabulary file"
run "$PREP" --vocab "$T/vocab.json" -o "$T/e/x" "$L/BSD"
expect_rc 2 "--vocab without --merges"
cp "$L/BSD" "$T/BSD-file"
run "$PREP" -o "$T/BSD-file/x" "$L/BSD"
expect_rc 2 "an output folder that is a file"
expect_in "$err" "is not a folder" "the message says so"
run "$PREP" --shard-tokens 0 -o "$T/e/x" "$L/BSD"
expect_rc 2 "--shard-tokens 0"
run "$PREP" --job "$T/missing.ini" -o "$T/e/x" "$L/BSD"
expect_rc 2 "a missing job file"
expect_in "$err" "missing.ini" "the message names the job file"
run "$PREP" --frobnicate -o "$T/e/x" "$L/BSD"
expect_rc 2 "an unknown flag"

# ---- progress: plain lines, or a bar redrawn in place ----
mkdir "$T/p"
run "$PREP" -o "$T/p/x" --progress lines "$L/BSD"
expect_in "$err" "prepare: 100%" "plain progress lines when asked (or when stderr is no terminal)"
run "$PREP" -o "$T/p/x" --progress bar "$L/BSD"
expect_in "$err" $'\r[##############################] 100%' "a bar redrawn with a carriage return"
expect_in "$err" "ETA" "the bar shows the time left"
run "$PREP" -o "$T/p/x" "$L/BSD"
expect_not_in "$err" $'\r' "auto: no bar when stderr is not a terminal"
# auto on a terminal (script(1) gives the command one): the bar
tty_out=$(script -qec "$(printf '%q ' "$PREP" -o "$T/p/y" "$L/BSD")" /dev/null)
expect_in "$tty_out" $'\r[##############################] 100%' "auto: the bar when stderr is a terminal"
done_checks
