#!/usr/bin/env bash
# Every example job file an installation ships, run from the installation (tests/cli/sdk.sh on a
# `cmake --install` prefix, .ci/deb.sh on the installed Debian packages):
#   bash tests/installed_examples.sh SHARDRUN EXAMPLES_DIR TASKS_DIR
# - the task each job file names is installed in TASKS_DIR (a job file shipped with a task that is
#   not would greet its user with `task "llama" not found`);
# - each CPU job file (every one but *_gpu.ini, which need a GPU and the user's model files under
#   /data) runs to exit 0 from an unrelated folder, shortened: a model task for 2 steps into a
#   temporary output_dir, pgbench up to 64 KiB.
# Exit 0 when every job file passed, 1 otherwise (each failure said), 2 for wrong arguments.
set -u
if [ $# -ne 3 ] || [ ! -x "$1" ] || [ ! -d "$2" ] || [ ! -d "$3" ]; then
    echo "usage: bash tests/installed_examples.sh SHARDRUN EXAMPLES_DIR TASKS_DIR (an installed shardrun, its" \
        "share/shardrun/examples and its tasks folder)" >&2
    exit 2
fi
shardrun=$1 examples=$2 tasks=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
files=0 ran=0 failed=0
fail() { failed=$((failed + 1)); printf 'FAIL: %s\n' "$*"; }
for job in "$examples"/*/*.ini; do
    case $job in */sdk/*) continue ;; esac # the SDK's own, built by the user first (sdk.sh, deb.sh)
    files=$((files + 1))
    task=$(sed -n 's/^task *= *\([^ ;]*\).*/\1/p' "$job" | head -1)
    if [ -z "$task" ]; then
        fail "$job names no task"
        continue
    fi
    case $task in */* | *.so) ;; *) [ -f "$tasks/$task.so" ] || fail "$job: task $task is not installed in $tasks" ;; esac
    case $job in *_gpu.ini) continue ;; esac
    # a model task ([task] with the trainer's keys) is cut to 2 steps; a main task runs as shipped
    short=()
    if grep -q '^learning_rate\|^num_train_epochs\|^max_steps\|^per_device_train_batch_size' "$job"; then
        short=(--set task.max_steps=2 --set task.output_dir="$work/out-$task" --set task.save_steps=0)
    fi
    [ "$task" = pgbench ] && short=(--set task.max_bytes=65536)
    (cd "$work" && "$shardrun" "$job" "${short[@]}") >"$work/out" 2>"$work/err"
    rc=$?
    ran=$((ran + 1))
    [ "$rc" -eq 0 ] || fail "$job ${short[*]}: exit $rc: $(tail -5 "$work/err")"
    rm -rf "$work/out-$task"
done
echo "installed_examples.sh: $files job files under $examples, $ran run, $failed failed"
[ "$files" -gt 0 ] || { echo "FAIL: no job file under $examples" && exit 1; }
[ "$failed" -eq 0 ]
