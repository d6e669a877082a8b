# The README's env reference is generated from the tables, not hand-copied: it must equal what
# `shardrun reference` prints now (env/update_readme_reference.sh BUILD_DIR regenerates it); and
# .ci/run runs the README's test command.
. "$(dirname "$0")/lib.sh"
README=$SRC/README.md
sed -n '/<!-- reference:begin -->/,/<!-- reference:end -->/p' "$README" | sed '1d;$d' >"$T/in_readme"
"$SHARDRUN" reference >"$T/generated"
expect_same_file "$T/in_readme" "$T/generated" "README reference (run env/update_readme_reference.sh $BUILD)"
[ -s "$T/generated" ] && pass || fail "shardrun reference printed nothing"
for v in FSDP_SHARDING_STRATEGY FSDP_TRANSFORMER_CLS_TO_WRAP ACCELERATE_MIXED_PRECISION LOCAL_RANK MASTER_PORT \
         SHARDRUN_PLUGIN_PATH SLURM_PROCID; do
    expect_in "$(cat "$T/generated")" "$v" "reference covers $v"
done
test_cmd=$(sed -n '/<!-- test-command:begin -->/,/<!-- test-command:end -->/p' "$README" | grep -v '^<!--\|^```')
ci=$(cat "$SRC/.ci/run")
[ -n "$test_cmd" ] && [[ "$ci" == *"$test_cmd"* ]] && pass || fail ".ci/run does not contain the README's test command [$test_cmd]"
done_checks
