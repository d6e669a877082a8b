# Command flags read with getopt_long (selftest, plot, gpt2_generate): --flag=value is the same
# flag as --flag value, a bad value is refused naming the flag and what is expected (exit 2), and
# an unknown flag or a missing value still gets the command's own message, not getopt's.
# (Before, each command had its own argv ladder, which took --flag=value for an unknown argument.)
. "$(dirname "$0")/lib.sh"
GEN=${GPT2_GENERATE:-$BUILD/gpt2_generate}
[ -x "$GEN" ] || { fail "no gpt2_generate at $GEN (build the tree, or set GPT2_GENERATE)"; done_checks; exit 1; }

# ---- shardrun selftest (exit 2 before anything runs) ----
run "$SHARDRUN" selftest --nproc-per-node=0
expect_rc 2 "selftest --nproc-per-node=0"
expect_in "$err" "selftest: --nproc-per-node 0: expected a number of ranks from 1 to 4096" "--nproc-per-node=0: named"
run "$SHARDRUN" selftest --results=/nonexistent/dir/r.json
expect_rc 2 "selftest --results=FILE in a missing folder"
expect_in "$err" "selftest: --results: /nonexistent/dir/r.json: the folder /nonexistent/dir does not exist" \
    "--results=FILE: the file checked"
run "$SHARDRUN" selftest --quick --results
expect_rc 2 "selftest --results without a value"
expect_in "$err" "selftest: --results needs a value" "--results: says it needs a value"
run "$SHARDRUN" selftest --bogus
expect_rc 2 "selftest --bogus"
expect_in "$err" "selftest: unknown argument --bogus" "--bogus: named"
expect_not_in "$err" "unrecognized option" "selftest: no message of getopt's"

# ---- shardrun plot ----
run "$SHARDRUN" plot "$T/nowhere" --output="$T/c.svg"
expect_rc 2 "plot DIR --output=FILE"
expect_in "$err" "shardrun plot: $T/nowhere is not a folder" "plot --output=FILE: taken, the folder checked"
run "$SHARDRUN" plot "$T/nowhere" -o
expect_rc 2 "plot -o without a value"
expect_in "$err" "shardrun plot: -o needs a file name" "plot -o: says it needs a file name"
run "$SHARDRUN" plot "$T/a" "$T/b"
expect_rc 2 "plot: two folders without --compare"
expect_in "$err" "a second folder ($T/b) without --compare before it" "plot: the order of the folders kept"
run "$SHARDRUN" plot "$T/a" --bogus
expect_rc 2 "plot --bogus"
expect_in "$err" "shardrun plot: unknown option --bogus" "plot --bogus: named"

# ---- gpt2_generate ----
run "$GEN" "$T/nowhere" --top-k=abc
expect_rc 2 "gpt2_generate --top-k=abc"
expect_in "$err" "gpt2_generate: error: --top-k abc: expected a whole number" "--top-k=abc: named"
run "$GEN" --top-p=2 "$T/nowhere"
expect_rc 2 "gpt2_generate --top-p=2 before MODEL"
expect_in "$err" "--top-p 2: expected a number in (0, 1]" "--top-p=2: named"
run "$GEN" "$T/m1" --prompt x "$T/m2"
expect_rc 2 "gpt2_generate: two models"
expect_in "$err" "one MODEL only: $T/m1 and $T/m2" "two models: both named, in order"
run "$GEN" "$T/m1" --bogus
expect_rc 2 "gpt2_generate --bogus"
expect_in "$err" "gpt2_generate: error: unknown flag --bogus" "--bogus: named"
expect_not_in "$err" "unrecognized option" "gpt2_generate: no message of getopt's"
done_checks
