# Token shards in llm.c's format, both ways: shards a Python writer following llm.c's
# dev/data/data_common.py writes are read back exactly by shardrun's reader (uint16 and uint32,
# a glob of several), and shards shardrun's writer writes are read by that script; the JSON Lines
# reader hands over each record's text field; an interrupted writer leaves nothing that looks done.
. "$(dirname "$0")/../cli/lib.sh"
TOOL=$BUILD/tests/shard_tool
PY=${PYTHON:-/usr/bin/python3}
[ -x "$TOOL" ] || { echo "FAIL: no $TOOL; build first"; exit 1; }
"$PY" -c 'import numpy' 2>/dev/null || { echo "FAIL: $PY cannot import numpy (apt-get install python3-numpy)"; exit 1; }
REF=$SRC/tests/data/llmc_shards.py

# ids: a few of each range, including the widths' edges
seq 0 999 | awk '{ print ($1 * 7919) % 50257 }' >"$T/ids16"
{ cat "$T/ids16"; echo 65535; echo 0; } >"$T/ids16e"
{ cat "$T/ids16"; echo 65536; echo 128255; echo 2147483647; } >"$T/ids32"

# llm.c-style writer -> our reader
"$PY" "$REF" write "$T/a_train_000000.bin" gpt-2 <"$T/ids16e"
"$PY" "$REF" write "$T/a_train_000001.bin" gpt-2 <"$T/ids16"
"$PY" "$REF" write "$T/b_val_000000.bin" llama-3 <"$T/ids32"
run "$TOOL" read "$T/a_train_000000.bin"
expect_rc 0 "reading a uint16 shard written like llm.c"
expect_eq "$out" "$(cat "$T/ids16e")" "uint16 shard tokens"
run "$TOOL" read "$T/b_val_000000.bin"
expect_rc 0 "reading a uint32 shard written like llm.c"
expect_eq "$out" "$(cat "$T/ids32")" "uint32 shard tokens"
run "$TOOL" read "$T/a_train_*.bin"
expect_eq "$out" "$(cat "$T/ids16e" "$T/ids16")" "a glob of shards: one stream, the matches in sorted order"

# our writer -> llm.c-style reader, and byte-for-byte the same file as the Python writer's
"$TOOL" write "$T/ours16.bin" 2 <"$T/ids16e" && pass || fail "writing a uint16 shard"
"$TOOL" write "$T/ours32.bin" 4 <"$T/ids32" && pass || fail "writing a uint32 shard"
run "$PY" "$REF" read "$T/ours16.bin"
expect_eq "$out" "$(cat "$T/ids16e")" "our uint16 shard read the llm.c way ($err)"
run "$PY" "$REF" read "$T/ours32.bin"
expect_eq "$out" "$(cat "$T/ids32")" "our uint32 shard read the llm.c way ($err)"
expect_same_file "$T/ours16.bin" "$T/a_train_000000.bin" "our uint16 shard against the Python writer's"
expect_same_file "$T/ours32.bin" "$T/b_val_000000.bin" "our uint32 shard against the Python writer's"
run "$TOOL" write "$T/bad.bin" 2 <<<"1 65536"
expect_rc 2 "a uint16 shard refuses id 65536"
expect_in "$err" "use 4-byte tokens" "the message says what to do"
expect_eq "$(ls -A "$T" | grep -c 'bad\.bin')" 0 "a refused shard leaves neither the file nor its temporary"
run "$TOOL" write "$T/empty.bin" 2 </dev/null
expect_rc 2 "an empty shard is not written"

# the identity: the same data, the same line; one token changed in a sampled page, another
a=$("$TOOL" identity "$T/a_train_*.bin")
expect_in "$a" "2 shards, $(( $(stat -c %s "$T/a_train_000000.bin") + $(stat -c %s "$T/a_train_000001.bin") )) bytes, xxh3 " "the identity line"
cp "$T/a_train_000001.bin" "$T/keep"
printf '\x01' | dd of="$T/a_train_000001.bin" bs=1 seek=1030 conv=notrunc 2>/dev/null
expect_not_in "$("$TOOL" identity "$T/a_train_*.bin")" "${a##* }" "a changed token changes the identity"
cp "$T/keep" "$T/a_train_000001.bin"
expect_eq "$("$TOOL" identity "$T/a_train_*.bin")" "$a" "the same bytes, the same identity"

# JSON Lines as datasets' to_json writes them: one object per line, other fields, escapes, a blank line
printf '%s\n' '{"id":1,"text":"Hello\nworld","meta":{"a":[1,2]}}' '' '{"text":"caf\u00e9 \"q\"","id":2}' >"$T/d.jsonl"
run "$TOOL" jsonl "$T/d.jsonl" text
expect_rc 0 "reading JSON Lines"
expect_eq "$out" "$(printf '1\t11\tHello\\nworld\n3\t9\tcafé "q"')" "each record's text and line"
printf '%s\n' '{"body":"x"}' >"$T/e.jsonl"
run "$TOOL" jsonl "$T/e.jsonl" body
expect_eq "$out" "$(printf '1\t1\tx')" "text_field names another field"
done_checks
