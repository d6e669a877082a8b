# Plugin loader and task errors, each reported separately before any worker starts (exit 2).
. "$(dirname "$0")/lib.sh"
TP=$BUILD/tests/plugins
TT=$BUILD/tests/tasks

try() { # try PLUGINS_LINE [EXTRA SECTION LINES...]
    printf '[shardrun]\ntask = exec:/bin/true\nplugins = %s\n' "$1" >"$T/j.ini"
    shift
    printf '%s\n' "$@" >>"$T/j.ini"
    run "$SHARDRUN" "$T/j.ini"
    expect_rc 2 "plugins job [$(tr '\n' ' ' <"$T/j.ini")]"
    expect_eq "$out" "" "nothing started"
}

try "torch,nosuch"
expect_in "$err" "plugin \"nosuch\" not found; tried:" "plugin not found"
expect_in "$err" "$BUILD/plugins/shardrun_nosuch.so" "every path tried (build dir)"
expect_in "$err" "$BUILD/shardrun/plugins/shardrun_nosuch.so" "every path tried (install layout)"
run env SHARDRUN_PLUGIN_PATH="$T/a:$T/b" "$SHARDRUN" "$T/j.ini"
expect_in "$err" "$T/a/shardrun_nosuch.so" "SHARDRUN_PLUGIN_PATH searched first"
expect_in "$err" "$T/b/shardrun_nosuch.so" "every SHARDRUN_PLUGIN_PATH folder"

head -c 4096 /dev/zero | tr '\0' x >"$T/shardrun_garbage.so"
try "torch,garbage" "[garbage]" "path = shardrun_garbage.so"
expect_in "$err" "plugin \"garbage\": cannot load $T/shardrun_garbage.so: $T/shardrun_garbage.so: " "dlopen error text"
expect_in "$err" "invalid ELF header" "dlopen's own reason"

try "torch,missing" "[missing]" "path = nowhere/shardrun_missing.so"
expect_in "$err" "plugin \"missing\": its path $T/nowhere/shardrun_missing.so cannot be read (No such file or directory); fix \`path\` in [missing]" "explicit path resolved against the job file's folder"

try "torch,no_symbol" "[no_symbol]" "path = $TP/shardrun_no_symbol.so"
expect_in "$err" "does not export the symbol \"shardrun_plugin\"" "missing symbol"

run env SHARDRUN_PLUGIN_PATH="$TP" "$SHARDRUN" "$T/j.ini" --set shardrun.plugins=torch,bad_abi
expect_rc 2 "ABI mismatch"
expect_in "$err" "plugin \"bad_abi\" ($TP/shardrun_bad_abi.so) was built for plugin ABI version 99, but this shardrun speaks version 1" "ABI mismatch names both versions"

try "torch,torch"
expect_in "$err" "plugin \"torch\" is listed twice in plugins = torch,torch; list it once" "listed twice"

try "accelerate"
expect_in "$err" "plugin \"accelerate\" requires the plugin \"torch\", which is not listed; use plugins = torch,accelerate" "missing required plugin"

# tasks: found, exported symbol, ABI — checked without loading them
task() {
    printf '[shardrun]\ntask = %s\n' "$1" >"$T/t.ini"
    run "$SHARDRUN" "$T/t.ini"
    expect_rc 2 "task $1"
}
task "nosuchtask"
expect_in "$err" "task \"nosuchtask\" not found; tried:" "bare task name not found"
expect_in "$err" "$BUILD/examples/nosuchtask.so" "task paths tried"
task "./nope.so"
expect_in "$err" "$T/./nope.so" "task path relative to the job file"
task "$TT/no_symbol.so"
expect_in "$err" "it does not export the symbol \"shardrun_task\"" "task without its symbol"
task "$TT/old_abi.so"
expect_in "$err" "was built against a newer shardrun (task ABI version 7) than this one (version 2): upgrade shardrun, or rebuild the task" "task ABI mismatch: one sentence, which is newer"
printf 'garbage' >"$T/g.so"
task "$T/g.so"
expect_in "$err" "not an ELF file" "task that is not ELF"
task "exec:/no/such/program --flag"
expect_in "$err" "task program \"/no/such/program\" is not an executable file" "exec program missing"
task "exec:no-such-program-xyz"
expect_in "$err" "task program \"no-such-program-xyz\" is not found in PATH" "exec program not in PATH"
task "exec:'unterminated"
expect_in "$err" "unterminated ' quote" "exec quoting error"

# a bare name found through SHARDRUN_TASKS_PATH
printf '[shardrun]\ntask = behave\n[task]\nact_rank = -1\nothers = ok\nsay = found\n' >"$T/t.ini"
run env SHARDRUN_TASKS_PATH="$TT" "$SHARDRUN" "$T/t.ini"
expect_rc 0 "task found through SHARDRUN_TASKS_PATH"
expect_in "$out" "[rank0]: found (rank 0)" "that task ran"

# `shardrun plugins` lists what is found, with keys
run "$SHARDRUN" plugins
expect_rc 0 "shardrun plugins"
expect_in "$out" "accelerate 0.1.0" "accelerate listed"
expect_in "$out" "fsdp.sharding_strategy" "its keys listed"
expect_in "$out" "torch 0.1.0" "torch listed"
done_checks
