# shardrun under torchrun (Debian's python3-torch: /usr/bin/python3 -m torch.distributed.run), as a
# torchrun user starts a program that is not Python:
#   torchrun --standalone --nproc_per_node 2 --no_python shardrun hello.ini
# torchrun starts 2 shardruns and gives each RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
# MASTER_ADDR, MASTER_PORT: ONE world of 2, one results list.
# torch 1.13 spells its flags with underscores; on Python 3.11 it crashes at start unless
# --redirects and --tee are 1 (bench/launch_vs_torchrun.sh), which prefixes each stdout line with
# "[defaultN]:" (N: torchrun's local rank): stripped before the checks.  torchrun's tee reads each
# process's log file on its own thread, so one process's lines can land in the middle of the other's
# (the results list included): the checks read each process's lines in a piece.
. "$(dirname "$0")/lib.sh"
/usr/bin/python3 -c 'import torch.distributed.run' 2>/dev/null ||
    { fail "/usr/bin/python3 cannot import torch.distributed.run: install python3-torch"; done_checks; exit 1; }
HELLO=examples/hello/hello.ini # nproc_per_node = 2, master_port = 0; relative: run from $SRC
cd "$SRC" || exit 1
torchrun() {
    timeout -k 5 "$LAUNCH_TIMEOUT" /usr/bin/python3 -m torch.distributed.run --redirects 1 --tee 1 \
        --log_dir "$T/torchrun-logs" --monitor_interval 0.1 "$@"
}

# the harness itself: torchrun starts 2 processes with its variables
run torchrun --standalone --nproc_per_node 2 --no_python sh -c 'echo "launched $RANK/$WORLD_SIZE $LOCAL_RANK/$LOCAL_WORLD_SIZE"'
expect_eq "$rc/$(sed 's/^\[default[0-9]*\]://' <<<"$out" | grep '^launched' | sort | tr '\n' ' ')" \
    "0/launched 0/2 0/2 launched 1/2 1/2 " "harness: torchrun starts 2 processes ($err)"

# one world of 2
run torchrun --standalone --nproc_per_node 2 --no_python "$SHARDRUN" "$HELLO"
expect_rc 0 "torchrun --standalone --nproc_per_node 2 shardrun hello.ini"
plain=$(for p in 1 0; do grep "^\[default$p\]:" <<<"$out" | sed 's/^\[default[0-9]*\]://'; done)
expect_world "$plain" "torchrun --nproc_per_node 2" 2
expect_eq "$(grep -c 'all_reduce of ranks over gloo: 1 (expected 1)' <<<"$plain")" 2 "the 2 ranks all-reduce together"
done_checks
