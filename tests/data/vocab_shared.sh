# The start-up vocabulary check of token shards is shared by the ranks: each checks its share of
# the tokens (sr_shard_set_share: balanced by tokens, a share may start or end inside a shard), then
# they agree.  A bad id that only a rank other than 0 reads (in a later shard, inside one big shard,
# in eval_data) is still reported with the file and offset, and the run stops before step 0 with
# exit 2 on 2 and 3 ranks; a clean set trains on 1, 2 and 3 ranks, and the tokens the ranks checked
# (results: vocab_checked_tokens) add up to the set's, each rank its share only.
. "$(dirname "$0")/../gpt2/lib.sh"
export OMP_NUM_THREADS=1
TOOL=$BUILD/tests/shard_tool
# shard NAME TOKENS [BAD_AT]: ids i % 257 (all below the byte-level vocabulary of 257), id 300 at BAD_AT
shard() {
    awk -v n="$2" -v bad="${3:--1}" 'BEGIN { for (i = 0; i < n; i++) print (i == bad ? 300 : i % 257) }' |
        "$TOOL" write "$T/$1.bin" 2 || fail "writing $1.bin"
}
shard a 300
shard b 300
shard b_bad 300 250    # stream token 550 of "a b_bad": rank 1 of 2 (300..599), rank 2 of 3 (400..599)
shard big 600
shard big_bad 600 450  # one shard: rank 1 of 2, rank 2 of 3
shard big_300 600 300  # the first token of rank 1's share of 2
shard big_299 600 299  # the last token of rank 0's share of 2
shard e 90
shard e_bad 90 80      # eval data: rank 1 of 2 (45..89)
VOCAB_MSG="is not below the model's vocabulary of 257; the shard was written with another tokenizer, or the model needs a larger vocab_size"

# the shares through the public API (shard_tool check): each rank finds only the bad ids of its own
# share, across shard boundaries and inside one shard
share() { # PATTERNS RANK SIZE EXPECTED_RC EXPECTED_TEXT
    run "$TOOL" check "$1" 257 "$2" "$3"
    expect_rc "$4" "rank $2 of $3 on $1"
    expect_in "$out$err" "$5" "rank $2 of $3 on $1: the output"
}
share "$T/a.bin $T/b_bad.bin" 0 2 0 "checked tokens 0..300 of 600"
share "$T/a.bin $T/b_bad.bin" 1 2 2 "$T/b_bad.bin: offset 1524 (token 250): id 300 $VOCAB_MSG"
share "$T/a.bin $T/b_bad.bin" 1 3 0 "checked tokens 200..400 of 600"
share "$T/a.bin $T/b_bad.bin" 2 3 2 "$T/b_bad.bin: offset 1524 (token 250)"
share "$T/big_bad.bin" 0 2 0 "checked tokens 0..300 of 600"
share "$T/big_bad.bin" 1 2 2 "$T/big_bad.bin: offset 1924 (token 450)"
share "$T/big_300.bin" 0 2 0 "checked tokens 0..300 of 600"
share "$T/big_300.bin" 1 2 2 "$T/big_300.bin: offset 1624 (token 300)"
share "$T/big_299.bin" 0 2 2 "$T/big_299.bin: offset 1622 (token 299)"
share "$T/big_299.bin" 1 2 0 "checked tokens 300..600 of 600"
share "$T/big.bin" 2 3 0 "checked tokens 400..600 of 600"
share "$T/big.bin $T/e.bin" 1 7 0 "checked tokens 98..197 of 690" # 690 = 7 * 98 + 4: shares of 98 or 99

gpt2_job job.ini <<EOF2
size = tiny
n_layer = 1
n_embd = 16
n_head = 2
max_length = 16
max_steps = 1
per_device_train_batch_size = 2
EOF2
train() { # NPROC DATA NAME [args]
    local n=$1 data=$2 name=$3
    shift 3
    run "$SHARDRUN" "$T/job.ini" --nproc-per-node "$n" --set task.data="$data" --set task.output_dir="$T/out-$name" "$@"
}

# a clean set on 1, 2 and 3 ranks: each rank checked its share, the shares add up to the train and
# eval tokens (600 + 90), and no rank checked more than its share
for n in 1 2 3; do
    train "$n" "$T/a.bin $T/b.bin" "clean$n" --set task.eval_data="$T/e.bin"
    expect_rc 0 "a clean set on $n ranks ($err)"
    counts=$(grep -o '"vocab_checked_tokens": [0-9]*' <<<"$out" | sed 's/.*: //')
    expect_eq "$(wc -w <<<"$counts")" "$n" "$n ranks: every rank reports the tokens it checked"
    expect_eq "$(awk '{ s += $1 } END { print s + 0 }' <<<"$counts")" 690 "$n ranks: the checked tokens add up to the set's"
    expect_eq "$(awk -v n="$n" '$1 > int(690 / n) + 1 { bad = 1 } END { print bad + 0 }' <<<"$counts")" 0 \
        "$n ranks: no rank checked more than its share ($counts)"
done

# bad ids that only rank 1 or 2 reads: the message as with one rank, exit 2, no step on any rank
bad() { # NPROC DATA WHAT MESSAGE [args]
    local n=$1 data=$2 what=$3 msg=$4
    shift 4
    train "$n" "$data" "bad$n" "$@"
    expect_rc 2 "$what on $n ranks"
    expect_in "$err$out" "$msg" "$what on $n ranks: the message"
    expect_not_in "$out" "step 1/" "$what on $n ranks: no step ran"
    expect_not_in "$out" '"exit_code": 0' "$what on $n ranks: no rank finished"
}
for n in 2 3; do
    bad "$n" "$T/a.bin $T/b_bad.bin" "a bad id in the second shard" "$T/b_bad.bin: offset 1524 (token 250): id 300 $VOCAB_MSG"
    bad "$n" "$T/big_bad.bin" "a bad id late in one big shard" "$T/big_bad.bin: offset 1924 (token 450): id 300 $VOCAB_MSG"
done
bad 2 "$T/big.bin" "a bad id in eval_data" "eval_data: $T/e_bad.bin: offset 1184 (token 80): id 300" \
    --set task.eval_data="$T/e_bad.bin"
done_checks
