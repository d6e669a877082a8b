# shardrun prepare's val split and output folder, as a user meets them: by default the val split is 5%
# of the tokens (at most 1,000,000), not the first million tokens of a small corpus; an explicit
# --val-tokens over a fifth of the tokens is warned about; --val-tokens all writes eval-only data as
# PREFIX_val_*.bin; -o into a missing folder makes it; the messages name the command as typed.
. "$(dirname "$0")/../cli/lib.sh"
PREP=${SHARDRUN_PREPARE:-$BUILD/shardrun_prepare}
[ -x "$PREP" ] || { echo "FAIL: no $PREP; build first"; exit 1; }
# tokens FILE: the token count in a shard's header (int32 number 2, llm.c's layout)
tokens() { od -An -t d4 -j 8 -N 4 "$1" | tr -d ' '; }
# byte-level tokens: one per byte, plus the end of text before the document
yes 'Plain ASCII text, one byte a token.' | head -c 40000 >"$T/small.txt"
run "$PREP" -o "$T/d/new/x" --progress none "$T/small.txt"
expect_rc 0 "-o into a folder that does not exist yet"
[ -d "$T/d/new" ] && pass || fail "-o's folder is made with its parents"
expect_eq "$(tokens "$T/d/new/x_val_000000.bin") $(tokens "$T/d/new/x_train_000001.bin")" "2001 38000" \
    "the default val split of 40001 tokens: 5% (2001, rounded up), the rest to train"
expect_in "$out" "val split: 2001 tokens, 5.0% of 40001 (the default" "the summary says how the split was sized"
expect_not_in "$err" "warning" "no warning for the default"
run "$PREP" -o "$T/d/new/x" --progress none "$T/small.txt"
expect_in "$out" "shards: 0 written, 2 already complete and identical" "the default split is the same on a re-run"
# a large explicit share: a warning; the split is what was asked
run "$PREP" -o "$T/d/big" --val-tokens 20000 --progress none "$T/small.txt"
expect_rc 0 "--val-tokens 20000 of 40001"
expect_eq "$(tokens "$T/d/big_val_000000.bin")" 20000 "the val split is what was asked"
expect_in "$err" "warning: the val split (--val-tokens 20000) holds 50% of the 40001 tokens" "over a fifth: a warning"
run "$PREP" -o "$T/d/fifth" --val-tokens 8000 --progress none "$T/small.txt"
expect_not_in "$err" "warning" "a fifth or less: no warning"
# the bound: 20,000,000 tokens or more keep the old 1,000,000
yes 'A line of a large corpus, repeated until it is twenty megabytes long.' | head -c 21000000 >"$T/large.txt"
run "$PREP" -o "$T/d/large" --progress none "$T/large.txt"
expect_rc 0 "a 21,000,001-token corpus"
expect_eq "$(tokens "$T/d/large_val_000000.bin") $(tokens "$T/d/large_train_000001.bin")" "1000000 20000001" \
    "the default split is bounded by 1,000,000 tokens"
rm -f "$T/large.txt" "$T"/d/large_*
# eval-only data: every token in val shards, named as such
run "$PREP" -o "$T/d/ev" --val-tokens all --shard-tokens 30000 --progress none "$T/small.txt"
expect_rc 0 "--val-tokens all"
expect_eq "$(cd "$T/d" && ls ev_*)" "ev_val_000000.bin
ev_val_000001.bin" "eval-only data is PREFIX_val_NNNNNN.bin, no train shard"
expect_eq "$(tokens "$T/d/ev_val_000000.bin") $(tokens "$T/d/ev_val_000001.bin")" "30000 10001" "of --shard-tokens each"
run "$PREP" -o "$T/d/none" --val-tokens 0 --progress none "$T/small.txt"
expect_eq "$(cd "$T/d" && ls none_*)" "none_train_000000.bin" "--val-tokens 0: train shards from 000000"
run "$PREP" -o "$T/d/bad" --val-tokens some "$T/small.txt"
expect_rc 2 "--val-tokens some"
expect_in "$err" "--val-tokens some: expected a whole number from 0 to 2147483647, auto or all" "names what it takes"
# a folder that cannot be made: refused before any work
cp "$T/small.txt" "$T/file"
run "$PREP" -o "$T/file/sub/x" "$T/small.txt"
expect_rc 2 "-o under a regular file"
expect_in "$err" "$T/file is not a folder" "names the file in the way"
# the command as typed, in the messages and the usage line
run "$SHARDRUN" prepare --no-such-flag
expect_rc 2 "shardrun prepare with an unknown flag"
expect_in "$err" "shardrun prepare: error: unknown option --no-such-flag (see shardrun prepare --help)" \
    "shardrun prepare's messages say shardrun prepare"
run "$PREP" --no-such-flag
expect_in "$err" "shardrun_prepare: error: unknown option --no-such-flag (see shardrun_prepare --help)" \
    "shardrun_prepare's say shardrun_prepare"
run "$SHARDRUN" prepare --help
expect_in "$(head -2 <<<"$out")" "usage: shardrun prepare -o OUT_PREFIX [--job JOB.ini | --vocab FILE --merges FILE | --tokenizer-json FILE]" \
    "the usage line names every way to give the tokenizer"
done_checks
