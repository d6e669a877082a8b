# Versioned structs grow by appending fields: a plugin or task whose struct is LARGER than this
# shardrun's (built against a newer header) loads and runs; one that stops before a field the
# host reads is refused before anything starts, naming both sizes.
. "$(dirname "$0")/lib.sh"
TP=$BUILD/tests/plugins
TT=$BUILD/tests/tasks

printf '[shardrun]\ntask = exec:/bin/true\nplugins = torch,grown_struct\n[grown_struct]\npath = %s\n' \
    "$TP/shardrun_grown_struct.so" >"$T/grown_plugin.ini"
run "$SHARDRUN" "$T/grown_plugin.ini"
expect_rc 0 "a plugin with a grown sr_plugin"
expect_not_in "$err" "error" "no error for a grown sr_plugin"

printf '[shardrun]\ntask = exec:/bin/true\nplugins = torch,short_struct\n[short_struct]\npath = %s\n' \
    "$TP/shardrun_short_struct.so" >"$T/short_plugin.ini"
run "$SHARDRUN" "$T/short_plugin.ini"
expect_rc 2 "a plugin whose sr_plugin lacks a field the host reads"
expect_in "$err" "plugin \"short_struct\" ($TP/shardrun_short_struct.so) declares ABI version 1 with a" "short sr_plugin named"
expect_in "$err" "-byte sr_plugin, but this shardrun's is" "short sr_plugin: both sizes"
expect_eq "$out" "" "nothing started for a short sr_plugin"

printf '[shardrun]\ntask = %s\nplugins = torch\nnproc_per_node = 2\n' "$TT/grown_struct.so" >"$T/grown_task.ini"
run "$SHARDRUN" "$T/grown_task.ini"
expect_rc 0 "a task with a grown sr_task"
expect_in "$out" "[rank0]: grown struct task ran on rank 0" "grown task ran on rank 0"
expect_in "$out" "[rank1]: grown struct task ran on rank 1" "grown task ran on rank 1"

printf '[shardrun]\ntask = %s\nplugins = torch\n' "$TT/short_struct.so" >"$T/short_task.ini"
run "$SHARDRUN" "$T/short_task.ini"
expect_rc 2 "a task whose sr_task lacks a field the host reads"
expect_in "$err" "task $TT/short_struct.so was built against an older shardrun (task ABI version 2, a 32-byte sr_task) than this one (version 2, 40 bytes)" "short sr_task: both sizes"
expect_eq "$out" "" "nothing started for a short sr_task"
done_checks
