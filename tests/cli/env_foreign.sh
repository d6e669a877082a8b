# FSDP_* and ACCELERATE_* variables in the environment (core/config/env_foreign.h): an exported
# final name overrides the job file, so a misspelt one would leave the job file's value in force
# without a word.  A misspelling is refused before any worker starts (exit 2) with the nearest name;
# a variable accelerate reads that shardrun does not use is named in a warning; the ones the
# plugins use pass.
. "$(dirname "$0")/lib.sh"
job p.ini <<'X'
[shardrun]
task = exec:/bin/true
plugins = torch,accelerate

[accelerate]
fsdp.sharding_strategy = SHARD_GRAD_OP
X
J=$T/p.ini
misspelt() { # VARIABLE=VALUE NEAREST
    local name=${1%%=*}
    for cmd in "" env; do
        run env "$1" "$SHARDRUN" $cmd "$J"
        expect_rc 2 "${cmd:-run} with $name"
        expect_in "$err" "environment variable $name is no variable shardrun or accelerate reads (did you mean $2?): fix its name or unset it" \
            "${cmd:-run} with $name: named, with the nearest name"
        expect_not_in "$out" "FSDP_SHARDING_STRATEGY=" "${cmd:-run} with $name: nothing started"
    done
}
misspelt FSDP_SHARDNG_STRATEGY=FULL_SHARD FSDP_SHARDING_STRATEGY
misspelt ACCELERATE_MIXED_PRECISON=bf16 ACCELERATE_MIXED_PRECISION
misspelt FSDP_STATE_DICT=SHARDED_STATE_DICT FSDP_STATE_DICT_TYPE
run env FSDP_NOT_A_NAME_AT_ALL_HERE=1 "$SHARDRUN" "$J"
expect_rc 2 "an FSDP_ name near none"
expect_in "$err" "environment variable FSDP_NOT_A_NAME_AT_ALL_HERE is no variable shardrun or accelerate reads: fix its name" \
    "an FSDP_ name near none: named"

# accelerate's own, which shardrun does not use: a warning, and the run goes on
for v in ACCELERATE_USE_DEEPSPEED=true ACCELERATE_GRADIENT_ACCUMULATION_STEPS=4 ACCELERATE_FP8_BACKEND=TE; do
    run env "$v" "$SHARDRUN" "$J"
    expect_rc 0 "$v"
    expect_in "$err" "warning: environment variable ${v%%=*} is one accelerate reads, not one shardrun uses in this run" \
        "$v: named as not used"
done
# without the accelerate plugin, its variables are not used either
job t.ini <<'X'
[shardrun]
task = exec:/bin/true
plugins = torch
X
run env FSDP_SHARDING_STRATEGY=NO_SHARD "$SHARDRUN" "$T/t.ini"
expect_rc 0 "FSDP_SHARDING_STRATEGY without the accelerate plugin"
expect_in "$err" "environment variable FSDP_SHARDING_STRATEGY is one accelerate reads, not one shardrun uses" \
    "FSDP_SHARDING_STRATEGY without the accelerate plugin: named as not used"

# the names the plugins use pass without a word
run env FSDP_SHARDING_STRATEGY=NO_SHARD ACCELERATE_MIXED_PRECISION=bf16 ACCELERATE_USE_FSDP=true "$SHARDRUN" env "$J"
expect_rc 0 "the plugins' own names"
expect_not_in "$err" "environment variable" "the plugins' own names: no message"
expect_in "$out" "FSDP_SHARDING_STRATEGY=NO_SHARD" "the exported final name still overrides the job file"
done_checks
