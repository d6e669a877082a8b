# docs/environment.md is generated, not hand-copied: its part between the reference markers must
# equal what `shardrun reference` prints now, byte for byte (docs/update_environment.sh BUILD_DIR
# regenerates it), and the reference must cover the variables users look for.  README.md holds the
# one test command between its test-command markers, and .ci/run takes the command from there.
. "$(dirname "$0")/lib.sh"
PAGE=$SRC/docs/environment.md
README=$SRC/README.md

for marker in '<!-- reference:begin -->' '<!-- reference:end -->'; do
    n=$(grep -cxF -- "$marker" "$PAGE")
    expect_eq "$n" 1 "docs/environment.md holds the line $marker once"
done
sed -n '/^<!-- reference:begin -->$/,/^<!-- reference:end -->$/p' "$PAGE" | sed '1d;$d' >"$T/in_page"
"$SHARDRUN" reference >"$T/generated"
[ -s "$T/generated" ] && pass || fail "shardrun reference printed nothing"
expect_same_file "$T/in_page" "$T/generated" "docs/environment.md (run docs/update_environment.sh $BUILD)"
for v in FSDP_SHARDING_STRATEGY FSDP_TRANSFORMER_CLS_TO_WRAP ACCELERATE_MIXED_PRECISION LOCAL_RANK MASTER_PORT \
         SHARDRUN_PLUGIN_PATH SLURM_PROCID; do
    expect_in "$(cat "$T/generated")" "$v" "reference covers $v"
done

# README: exactly one pair of test-command markers around exactly one non-empty command line
for marker in '<!-- test-command:begin -->' '<!-- test-command:end -->'; do
    n=$(grep -cxF -- "$marker" "$README")
    expect_eq "$n" 1 "README.md holds the line $marker once"
done
sed -n '/^<!-- test-command:begin -->$/,/^<!-- test-command:end -->$/p' "$README" | sed '1d;$d' |
    grep -v '^```' | grep -v '^[[:space:]]*$' >"$T/test_cmd"
expect_eq "$(wc -l <"$T/test_cmd")" 1 "README.md has one command line between the test-command markers [$(cat "$T/test_cmd")]"
# every tier of the normal build (tests/tiers.sh without tiers runs them all), and the sanitizer build's
expect_in "$(cat "$T/test_cmd")" "bash tests/tiers.sh build &&" "the README's test command runs every tier of the normal build"
expect_in "$(cat "$T/test_cmd")" "bash tests/tiers.sh build-asan " "the README's test command runs the sanitizer build's tiers"
# .ci/run runs what the README says by reading it between the markers, not from a copy of its own
expect_in "$(cat "$SRC/.ci/run")" "test-command:begin" ".ci/run reads the README's test-command markers"
done_checks
