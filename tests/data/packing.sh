# packing = true: run_clm's group_texts (documents joined by the end-of-text token, cut into full
# max_length blocks, the remainder dropped, no padding) on text and JSON Lines corpora, against a
# Python reference; packing = false keeps one truncated, padded sample per text.
. "$(dirname "$0")/../cli/lib.sh"
TOOL=$BUILD/tests/pack_tool
PY=/usr/bin/python3
[ -x "$TOOL" ] || { echo "FAIL: no $TOOL; build first"; exit 1; }
REF=$SRC/tests/data/group_texts.py

"$PY" - "$T" <<'PY'
import json, random, sys
random.seed(3)
words = "shards pack blocks of tokens while the ranks read their own slice é ü 日本".split()
d = sys.argv[1]
docs = [" ".join(random.choice(words) for _ in range(random.randint(1, 30))) for _ in range(60)]
with open(f"{d}/a.jsonl", "w", encoding="utf-8") as f:
    for i, t in enumerate(docs[:40]):
        f.write(json.dumps({"id": i, "text": t, "meta": {"n": [i]}}, ensure_ascii=i % 2 == 0) + "\n")
with open(f"{d}/b.jsonl", "w", encoding="utf-8") as f:
    for t in docs[40:]:
        f.write(json.dumps({"text": t}) + "\n")
with open(f"{d}/c.txt", "w", encoding="utf-8") as f:
    for t in docs:
        f.write("  " + t + " \n")
PY

for T_ in 16 64 100; do
    run "$TOOL" jsonl line 1 "$T_" "$T/a.jsonl $T/b.jsonl"
    expect_rc 0 "packing JSON Lines into blocks of $T_ ($err)"
    expect_eq "$out" "$("$PY" "$REF" jsonl "$T_" "$T/a.jsonl" "$T/b.jsonl")" "JSON Lines packed into blocks of $T_ against group_texts"
    run "$TOOL" text line 1 "$T_" "$T/c.txt"
    expect_eq "$out" "$("$PY" "$REF" line "$T_" "$T/c.txt")" "text lines packed into blocks of $T_ against group_texts"
done
# not packed: one sample per text, truncated, padded with eos (256)
run "$TOOL" jsonl line 0 8 "$T/b.jsonl"
expect_eq "$(head -1 <<<"$out" | wc -w)" "$(head -1 "$T/b.jsonl" | "$PY" -c 'import json,sys; print(min(8, len(json.loads(sys.stdin.read())["text"].encode())))')" "packing = false: the first text's real tokens"
expect_eq "$(grep -c . <<<"$out")" 21 "packing = false: one sample per record (20) and the tokens_left line"
done_checks
