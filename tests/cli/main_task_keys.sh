# A main task's [task] keys that it never reads (sr_config*) did nothing, silently: `[task]
# hang_timeout` (the key is [shardrun]'s) left the run without the watchdog it asked for.  A model
# task's are refused before any worker starts; a main task's are known once main() returned: each
# is named with the line that set it, and a run that otherwise succeeded exits 2.  Keys the task
# reads (examples/hello reads greeting, tests/tasks/hang.c its own) are not flagged.
. "$(dirname "$0")/lib.sh"
cp "$SRC/examples/hello/hello.ini" "$T/hello.ini"
sed -i "s|^task = hello .*|task = $BUILD/examples/hello.so|" "$T/hello.ini"
printf 'hang_timeout = 5\n' >>"$T/hello.ini"
run "$SHARDRUN" "$T/hello.ini"
expect_rc 2 "[task] hang_timeout in a main task's job"
expect_in "$err" "$T/hello.ini:19: [task] hang_timeout was never read by the task (no rank asked for it with sr_config): check its spelling, or whether it belongs to another section" \
    "the key and its line"
expect_eq "$(grep -c 'was never read' <<<"$err")" 1 "named once"
expect_not_in "$err" "greeting was never read" "a key the task reads is not named"
expect_in "$out" "hello from rank 1" "the task ran"
run "$SHARDRUN" "$T/hello.ini" --set task.greting=hi
expect_rc 2 "a key set on the command line"
expect_in "$err" "command line --set task.greting=hi: [task] greting was never read by the task" "--set named"
# keys every rank reads: nothing said
sed -i '$d' "$T/hello.ini"
run "$SHARDRUN" "$T/hello.ini"
expect_rc 0 "every key read"
expect_not_in "$err" "never read" "nothing named"
# a main task of its own that reads its keys through the API (tests/tasks/hang.c):
# nothing named
printf '[shardrun]\ntask = %s\nplugins = torch\nnproc_per_node = 2\n[task]\nhang_rank = -1\nrounds = 2\nprogress = 1\n' \
    "$BUILD/tests/tasks/hang.so" >"$T/h.ini"
run "$SHARDRUN" "$T/h.ini"
expect_rc 0 "a main task that reads all its keys"
expect_not_in "$err" "never read" "nothing named for hang.c"
done_checks
