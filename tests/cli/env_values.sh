# SHARDRUN_* variables that are not keys: a value their reader does not know (SHARDRUN_PROFILE=yes,
# a SHARDRUN_DEBUG_* testing aid misspelt) and a SHARDRUN_TASK_ variable with no key name
# (SHARDRUN_TASK_=1) did nothing, silently; each is refused before any worker starts (exit 2),
# naming the variable, its value and what is accepted.  The accepted values still run.
. "$(dirname "$0")/lib.sh"
J=$SRC/examples/hello/hello.ini
refused() { # VAR=VALUE EXPECTED...
    local setting=$1
    shift
    run env "$setting" "$SHARDRUN" "$J"
    expect_rc 2 "$setting refused"
    expect_eq "$out" "" "$setting: nothing started"
    for e in "$@"; do expect_in "$err" "$e" "$setting: the message"; done
}
refused SHARDRUN_TASK_=1 "environment variable SHARDRUN_TASK_ names no [task] key: expected SHARDRUN_TASK_<KEY>"
refused SHARDRUN_TASK__LR=1 "environment variable SHARDRUN_TASK__LR names no [task] key"
refused SHARDRUN_PROFILE=yes "environment variable SHARDRUN_PROFILE=yes: expected 0 or 1"
refused SHARDRUN_DEBUG_OFFLOAD_STAGING=true "environment variable SHARDRUN_DEBUG_OFFLOAD_STAGING=true: expected 0 or 1"
refused SHARDRUN_DEBUG_PG_FAULT=gloo \
    "environment variable SHARDRUN_DEBUG_PG_FAULT=gloo: expected shm_reduce_scatter_index, gloo_avg_divisor or stop_in_collective"
refused SHARDRUN_DEBUG_SAVE_DELAY_MS=1s "SHARDRUN_DEBUG_SAVE_DELAY_MS=1s: expected milliseconds, a whole number from 0 to 3600000"
refused SHARDRUN_DEBUG_KILL_AT=1:7:never "SHARDRUN_DEBUG_KILL_AT=1:7:never: expected RANK:STEP, RANK:STEP:every or RANK:STEP:stop"
refused SHARDRUN_DEBUG_KILL_AT=one:7 "SHARDRUN_DEBUG_KILL_AT=one:7: expected RANK:STEP"
refused SHARDRUN_DEBUG_PAUSE_AT=0:5:stop "SHARDRUN_DEBUG_PAUSE_AT=0:5:stop: expected RANK:STEP or RANK:STEP@ATTEMPT (whole numbers), up to 4 separated by commas"
refused SHARDRUN_DEBUG_PAUSE_AT=0:5,1:2@x "SHARDRUN_DEBUG_PAUSE_AT=0:5,1:2@x: expected RANK:STEP or RANK:STEP@ATTEMPT"
refused SHARDRUN_DEBUG_PAUSE_AT=0:1,0:2,0:3,0:4,0:5 "SHARDRUN_DEBUG_PAUSE_AT=0:1,0:2,0:3,0:4,0:5: expected"
# the allocation sites' testing aid: a malformed site where it works, the variables at all elsewhere
# (a test setting them there would fail nothing and pass)
if [ "$SANITIZED" = 1 ]; then
    refused SHARDRUN_DEBUG_ALLOC_FAIL_SITE=core/run/run.c \
        "SHARDRUN_DEBUG_ALLOC_FAIL_SITE=core/run/run.c: expected PATH:LINE, an allocation site"
    refused SHARDRUN_DEBUG_ALLOC_FAIL_SITE=core/run/run.c:0 "SHARDRUN_DEBUG_ALLOC_FAIL_SITE=core/run/run.c:0: expected PATH:LINE"
else
    refused SHARDRUN_DEBUG_ALLOC_FAIL_SITE=core/run/run.c:88 "SHARDRUN_DEBUG_ALLOC_FAIL_SITE=core/run/run.c:88: expected it" \
        "unset: only a build configured with SHARDRUN_SANITIZE=ON records or fails allocations"
    refused SHARDRUN_DEBUG_ALLOC_SITES="$T/sites" "SHARDRUN_DEBUG_ALLOC_SITES=$T/sites: expected it unset: only a build"
fi
# also for `shardrun env`, the dry run
run env SHARDRUN_PROFILE=on "$SHARDRUN" env "$J"
expect_rc 2 "shardrun env: SHARDRUN_PROFILE=on refused"
expect_in "$err" "SHARDRUN_PROFILE=on: expected 0 or 1" "shardrun env: the message"

# what the readers take still runs (empty: unset)
for ok in SHARDRUN_PROFILE=0 SHARDRUN_PROFILE= SHARDRUN_DEBUG_KILL_AT=1:7:stop SHARDRUN_DEBUG_KILL_AT=5:9:every \
    SHARDRUN_DEBUG_PAUSE_AT=3:4 SHARDRUN_DEBUG_PAUSE_AT=0:7,1:12@2 SHARDRUN_DEBUG_SAVE_DELAY_MS=0 SHARDRUN_TASK_LEARNING_RATE_2=1; do
    run env "$ok" "$SHARDRUN" env "$J"
    expect_rc 0 "$ok accepted"
done
done_checks
