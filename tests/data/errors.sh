# Every bad input of the data layer is refused before step 0 with exit 2, naming the file and the
# offset or line: a wrong magic or version, a header's token count that disagrees with the file's
# size, a truncated shard, an empty shard, a token id >= the vocabulary, a JSON Lines line that is
# not JSON or lacks the text field, a shard that is a directory or a device; packing = false on
# shards.  A shard that shrinks under a reader is reported, not read past (no SIGBUS).
. "$(dirname "$0")/../gpt2/lib.sh"
export OMP_NUM_THREADS=1
TOOL=$BUILD/tests/shard_tool
REF=$SRC/tests/data/llmc_shards.py
seq 0 299 | awk '{ print $1 % 257 }' >"$T/ids"
/usr/bin/python3 "$REF" write "$T/good.bin" gpt-2 <"$T/ids"
gpt2_job job.ini <<EOF2
size = tiny
n_layer = 1
n_embd = 16
n_head = 2
max_length = 16
max_steps = 1
EOF2
# bad FILE_OR_PATTERN WHAT EXPECTED_MESSAGE [--set ...]: refused before step 0, exit 2
bad() {
    local data=$1 what=$2 msg=$3
    shift 3
    run "$SHARDRUN" "$T/job.ini" --set task.data="$data" --set task.output_dir="$T/out" "$@"
    expect_rc 2 "$what"
    expect_in "$err$out" "$msg" "$what: the message"
    expect_not_in "$out" "step 1/" "$what: no step ran"
}
shard() { # NAME PYTHON-EXPR-ON-bytearray b: a copy of good.bin changed
    /usr/bin/python3 -c "import sys; b = bytearray(open('$T/good.bin','rb').read()); $2; open('$T/$1','wb').write(b)"
}
shard magic.bin "b[0:4] = (1234).to_bytes(4, 'little')"
bad "$T/magic.bin" "wrong magic" "$T/magic.bin: offset 0: magic 1234 is not a token shard's"
shard version.bin "b[4:8] = (2).to_bytes(4, 'little')"
bad "$T/version.bin" "wrong version" "$T/version.bin: offset 4: version 2 with magic 20240520"
shard count.bin "b += bytes(6)"
bad "$T/count.bin" "a header count that disagrees with the size" "$T/count.bin: offset 8: the header counts 300 tokens (1624 bytes with the header) but the file has 1630 bytes (extra bytes after the tokens)"
shard trunc.bin "del b[1500:]"
bad "$T/trunc.bin" "a truncated shard" "$T/trunc.bin: offset 8: the header counts 300 tokens (1624 bytes with the header) but the file has 1500 bytes (truncated)"
shard short.bin "del b[100:]"
bad "$T/short.bin" "a shard shorter than its header" "$T/short.bin: truncated: 100 bytes, shorter than the 1024-byte header"
: >"$T/empty.bin"
bad "$T/empty.bin" "an empty shard" "$T/empty.bin: empty file (0 bytes)"
shard zero.bin "b[8:12] = bytes(4); del b[1024:]"
bad "$T/zero.bin" "a shard of no tokens" "$T/zero.bin: offset 8: the header counts 0 tokens"
shard vocab.bin "b[1024 + 2*123:1024 + 2*124] = (300).to_bytes(2, 'little')"
bad "$T/vocab.bin" "a token id >= the vocabulary" "$T/vocab.bin: offset 1270 (token 123): id 300 is not below the model's vocabulary of 257"
bad "$T/good.bin $T/vocab.bin" "a bad id in the second shard" "$T/vocab.bin: offset 1270"
bad "$T/good.bin" "a bad id in eval_data" "eval_data: $T/vocab.bin: offset 1270" --set task.eval_data="$T/vocab.bin"
mkdir "$T/dir.bin"
bad "$T/dir.bin" "a shard that is a directory" "$T/dir.bin: is a directory, not a token shard"
bad /dev/zero "a shard that is a device" "/dev/zero: is a device, not a token shard" --set task.data_format=shards
bad "$T/good.bin" "packing = false on shards" "packing = false needs texts" --set task.packing=false
bad "$T/none_*.bin" "a pattern that matches nothing" "$T/none_*.bin: no such shard"
printf '%s\n' '{"text": "a fine first record of text"}' '{"text": "second", }' >"$T/notjson.jsonl"
bad "$T/notjson.jsonl" "a JSON Lines line that is not JSON" "$T/notjson.jsonl:2: not JSON"
printf '%s\n' '{"text": "a fine first record"}' '' '{"body": "no text here"}' >"$T/nofield.jsonl"
bad "$T/nofield.jsonl" "a JSON Lines record without the text field" "$T/nofield.jsonl:3: the record has no field \"text\"; set text_field"
bad "$T/nofield.jsonl" "text_field names a field some records lack" "$T/nofield.jsonl:1: the record has no field \"body\"" --set task.text_field=body
printf '%s\n' '[1, 2]' >"$T/array.jsonl"
bad "$T/array.jsonl" "a JSON Lines line that is not an object" "$T/array.jsonl:1: not a JSON object"
bad "$T/good.bin" "an unknown data_format" "data_format = csv" --set task.data_format=csv

# data_format = auto knows shards by their magic when the names do not say (a folder's glob)
mkdir "$T/sniff" && cp "$T/good.bin" "$T/sniff/part-0"
run "$SHARDRUN" "$T/job.ini" --set task.data="$T/sniff/*" --set task.output_dir="$T/out-sniff"
expect_rc 0 "shards without .bin names ($err)"
expect_in "$out" "packed from 300 tokens of 1 token shards" "are read as shards, not text"

# a shard that shrinks under a reader: the read is refused with the file named, and a read that
# faults on the vanished pages (the identity's) is caught, not a SIGBUS
cp "$T/good.bin" "$T/shrink.bin"
run "$TOOL" shrink "$T/shrink.bin"
expect_rc 2 "reading a shard that shrank"
expect_in "$err" "$T/shrink.bin: the shard shrank to 1100 bytes while training (it had 1624 at start-up" "the shrink is reported"
expect_in "$out" "identity after the shrink: 1 shards, 1624 bytes" "the guarded read of vanished pages returns"
done_checks
