# Out of memory anywhere ends a run cleanly (CONTRIBUTING.md, "Out of memory"): real commands run
# with their Nth allocation failed (SR_TEST_FAIL_ALLOC=N, base/alloc.h; the sanitizer build
# only), for a sweep of N over each command's allocations.  Every N must end without a signal, a
# sanitizer report (a bad access, a leak: LeakSanitizer checks at exit) or a hang, with exit 0 (the
# allocation was one the command can do without), or 1 (2 for configuration) and an error message.
# Commands: toy training with a checkpoint saved at 1 and 2 ranks, a resume from that checkpoint
# (load and verify), and two agents on loopback (the store server and its clients).
# The sweep: every N up to 8, then N grows by half each time, past the command's last allocation
# (a bound per command: a run can succeed without an allocation it can do without, and workers end
# with _exit, so no count comes back); ALLOC_SWEEP_STEP=1.05 sweeps closer, ALLOC_SWEEP_FIRST=K
# starts at K (to look at a range, or shift the sample).  To see where a failing N allocates:
# SR_TEST_FAIL_ALLOC=N SR_TEST_FAIL_ALLOC_TRACE=1 on the command, then addr2line on the offsets.
# Exit codes of the sanitizers, apart from the runs' own 1 and 2: a report fails the check even
# where the agent relays a worker's failure as its own exit 1.
export ASAN_OPTIONS=${ASAN_OPTIONS:-handle_segv=0:handle_abort=0:detect_leaks=1}:exitcode=86
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}:exitcode=87
. "$(dirname "$0")/lib.sh"
if [ "$SANITIZED" != 1 ]; then
    echo "FAIL: $BUILD is not the sanitizer build (SHARDRUN_SANITIZE=ON): only it fails allocations on request" >&2
    exit 1
fi
if [ ! -f "$BUILD/examples/toy.so" ]; then
    echo "FAIL: no toy model task at $BUILD/examples/toy.so; build the whole tree (cmake --build $BUILD)" >&2
    exit 1
fi
export SHARDRUN_RDZV_TOKEN=alloc-failures-test
STEP=${ALLOC_SWEEP_STEP:-1.5}
runs=0

# check WHAT N RC STDERR-FILE: one run's ending
check() {
    local what=$1 n=$2 rc=$3 e=$4
    if grep -qE "Sanitizer|runtime error:" "$e"; then
        fail "$what, allocation $n failed: a sanitizer report: $(grep -m3 -E -A4 'Sanitizer|runtime error:' "$e")"
    elif [ "$rc" -eq 124 ]; then
        fail "$what, allocation $n failed: still running at its time limit (60 s, two agents 30 s): a hang; stderr: $(tail -5 "$e")"
    elif [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ] && [ "$rc" -ne 2 ]; then
        fail "$what, allocation $n failed: exit code $rc (a signal or a sanitizer), expected 0, 1 or 2; stderr: $(tail -8 "$e")"
    elif [ "$rc" -ne 0 ] && ! grep -q "error" "$e"; then
        fail "$what, allocation $n failed: exit $rc without an error message; stderr: $(tail -5 "$e")"
    else
        pass
    fi
}

# sweep WHAT MAX CMD...: runs CMD with allocation N failed, for the sweep's N up to MAX
sweep() {
    local what=$1 max=$2 n=${ALLOC_SWEEP_FIRST:-1} ok=0 rc oom=0
    shift 2
    while [ "$n" -le "$max" ]; do
        rm -rf "$T/work" && mkdir -p "$T/work"
        if [ "$(type -t "$1")" = function ]; then
            SR_TEST_FAIL_ALLOC=$n "$@" >"$T/work/.out" 2>"$T/work/.err"
        else
            SR_TEST_FAIL_ALLOC=$n timeout -k 5 60 "$@" >"$T/work/.out" 2>"$T/work/.err"
        fi
        rc=$?
        runs=$((runs + 1))
        check "$what" "$n" "$rc" "$T/work/.err"
        [ "$rc" -eq 0 ] && ok=$((ok + 1))
        grep -q "out of memory" "$T/work/.err" && oom=$((oom + 1))
        if [ "$n" -lt 8 ]; then n=$((n + 1)); else n=$(awk -v n="$n" -v s="$STEP" 'BEGIN { printf "%d", n * s + 1 }'); fi
    done
    echo "$what: swept to allocation $max: $oom runs said they ran out of memory, $ok succeeded"
    # a build that fails no allocation would pass every run: that is not this test passing
    [ "$oom" -gt 0 ] && pass || fail "$what: no run said \"out of memory\": is SR_TEST_FAIL_ALLOC honoured by this build?"
}

toy_job() {
    printf '[shardrun]\ntask = %s\nplugins = torch,accelerate\n\n[accelerate]\n' "$BUILD/examples/toy.so" >"$T/$1"
    printf 'fsdp.auto_wrap_policy = TRANSFORMER_BASED_WRAP\nfsdp.transformer_layer_cls_to_wrap = MLPBlock,MixerBlock\n' >>"$T/$1"
    printf '\n[task]\nsamples = 32\nmax_steps = 2\nsave_steps = 2\nlogging_steps = 1\n' >>"$T/$1"
}
toy_job toy.ini

# two agents, node 0 hosting the store: node 0's allocations fail, and node 1 must end too (exit 1;
# within its rendezvous timeout, 3 s here, when node 0 failed before its store was up)
two_nodes() {
    local p rc0 rc1
    p=$(free_port_pair)
    SR_TEST_FAIL_ALLOC= timeout -k 5 30 "$SHARDRUN" "$SRC/examples/hello/hello.ini" --nnodes 2 --node-rank 1 \
        --nproc-per-node 1 --master-addr 127.0.0.1 --master-port "$p" --set shardrun.rdzv_timeout=3 \
        >"$T/work/n1.out" 2>"$T/work/n1.err" &
    local pid1=$!
    timeout -k 5 30 "$SHARDRUN" "$SRC/examples/hello/hello.ini" --nnodes 2 --node-rank 0 --nproc-per-node 1 \
        --master-addr 127.0.0.1 --master-port "$p"
    rc0=$?
    wait "$pid1"
    rc1=$?
    check "two agents, node 1 (node 0 failing)" "$SR_TEST_FAIL_ALLOC" "$rc1" "$T/work/n1.err"
    return "$rc0"
}

# The commands, each a part of its own (ctest runs them as four tests, side by side): the arguments
# name the parts to run, all of them by default.
[ $# -gt 0 ] || set -- one_rank two_ranks resume two_agents
for part in "$@"; do
    case $part in
    one_rank) sweep "toy, 1 rank, saving" 6000 "$SHARDRUN" "$T/toy.ini" --nproc-per-node 1 --set task.output_dir="$T/work/out" ;;
    two_ranks) sweep "toy, 2 ranks, saving" 6000 "$SHARDRUN" "$T/toy.ini" --nproc-per-node 2 --set task.output_dir="$T/work/out" ;;
    resume)
        # the checkpoint the resume loads, saved once without failures
        run "$SHARDRUN" "$T/toy.ini" --nproc-per-node 1 --set task.output_dir="$T/saved"
        expect_rc 0 "the checkpoint to resume from"
        [ -d "$T/saved/checkpoint-2" ] && pass || fail "no checkpoint-2 in $T/saved: $err"
        sweep "toy, 1 rank, resuming" 6000 "$SHARDRUN" "$T/toy.ini" --nproc-per-node 1 --set task.output_dir="$T/work/out" \
            --set task.max_steps=3 --set task.resume_from_checkpoint="$T/saved/checkpoint-2"
        ;;
    two_agents) sweep "two agents, node 0 (the store)" 4000 two_nodes ;;
    *)
        echo "FAIL: no part '$part' (one_rank, two_ranks, resume, two_agents)" >&2
        exit 2
        ;;
    esac
done

echo "$runs runs, $checks checks"
[ "$failed" -eq 0 ] || { echo "FAIL: $failed of $checks checks"; exit 1; }
echo "PASS: $checks checks"
