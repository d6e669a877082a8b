# Out of memory anywhere ends a run cleanly (CONTRIBUTING.md, "Out of memory"): real commands run
# with one allocation site failed, for every site the command reaches (base/alloc.h; the sanitizer
# build only).  A first run of the command records its sites (SHARDRUN_DEBUG_ALLOC_SITES); then the
# command runs once per site with that site's first allocation in each process failed
# (SHARDRUN_DEBUG_ALLOC_FAIL_SITE=path:line), two runs side by side (ALLOC_SWEEP_JOBS).  Each run
# where the failure was made must end with exit 1, or 2 (before the first training step), and an
# error saying "out of memory" (or strerror's "Cannot allocate memory"); or with exit 0 where the run warned that it went on without what it
# could not allocate ("out of memory" on stderr), or the site is one a run may do without (ABSORBED
# below).  Never a signal, a sanitizer report (a bad access, a leak: LeakSanitizer checks at exit),
# a hang, or a process of the run left behind (a worker, the guardian).  A run that did not reach
# its site this time (its timing differs from the counting run's) must succeed.
# The parts, each a ctest test of its own: the toy training with a checkpoint saved at 1 rank
# (one_rank: the job file, the world, the steps, the save) and at 2 ranks (two_ranks: also the
# local rendezvous, shared memory between ranks, a peer failing), a resume from a checkpoint (resume:
# also the load), two agents on loopback (two_agents: the store server and its clients, node 0
# failing; node 1 must end too, within its 3 s rendezvous timeout), two agents meeting in etcd
# (etcd_agents: the etcd client, the election, the lease keeper) and `shardrun prepare`.
# resume and two_agents sweep only the sites one_rank does not reach (counted alongside): the rest
# is the same code, reached in the same order, and a two agents' run waits for node 1's timeout.
# Measured under ASan on 2 shared cores: 30 to 42 s of test time for the five parts, 16 to 22 s
# with ctest -j2 (a run that hangs would cost its LIMIT).  ALLOC_SWEEP_SITES=REGEX sweeps
# only the matching sites; one site by hand: SHARDRUN_DEBUG_ALLOC_FAIL_SITE=core/run/run.c:88 on
# the command.
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
export SHARDRUN_RDZV_TOKEN=alloc-failures-test LC_ALL=C
JOBS=${ALLOC_SWEEP_JOBS:-2}
LIMIT=30 # seconds a run may take before it counts as a hang (the toy's runs take about 1 s)
runs=0
OOM="out of memory|Cannot allocate memory" # ours, and strerror(ENOMEM)

toy_job() {
    printf '[shardrun]\ntask = %s\nplugins = torch,accelerate\n\n[accelerate]\n' "$BUILD/examples/toy.so" >"$T/$1"
    printf 'fsdp.auto_wrap_policy = TRANSFORMER_BASED_WRAP\nfsdp.transformer_layer_cls_to_wrap = MLPBlock,MixerBlock\n' >>"$T/$1"
    printf '\n[task]\nsamples = 32\nmax_steps = 2\nsave_steps = 2\nlogging_steps = 1\n' >>"$T/$1"
}
toy_job toy.ini

# The commands: each runs in the folder $W (its output there), with the variables the sweep sets.
one_rank() { timeout -k 5 $LIMIT "$SHARDRUN" "$T/toy.ini" --nproc-per-node 1 --set task.output_dir="$W/out"; }
two_ranks() { timeout -k 5 $LIMIT "$SHARDRUN" "$T/toy.ini" --nproc-per-node 2 --set task.output_dir="$W/out"; }
resume() {
    timeout -k 5 $LIMIT "$SHARDRUN" "$T/toy.ini" --nproc-per-node 1 --set task.output_dir="$W/out" \
        --set task.max_steps=3 --set task.resume_from_checkpoint="$T/saved/checkpoint-2"
}
# prepare, byte-level tokens (no vocabulary to read): JSON Lines and a text file into shards, on two
# threads; the shards are written through libshardrun (shardrun/data.h)
prepare() {
    timeout -k 5 $LIMIT "$SHARDRUN" prepare -o "$W/docs" --val-tokens 100 --shard-tokens 500 --threads 2 \
        --progress none "$T/docs.jsonl" /usr/share/common-licenses/BSD
}
# agent_pair "ARGS0" "ARGS1": two agents of the hello job on loopback, the first with the allocation
# failed (when one is) and ARGS0, the second (the sweep's variables cleared) with ARGS1, both with a
# 3 s rendezvous timeout; the second must end too (exit 1, or 0 where the first went on); the
# first's exit code
agent_pair() {
    local rc0 rc1 pid1
    # shellcheck disable=SC2086 # the arguments are words
    SHARDRUN_DEBUG_ALLOC_FAIL_SITE='' SHARDRUN_DEBUG_ALLOC_SITES='' timeout -k 5 $LIMIT "$SHARDRUN" \
        "$SRC/examples/hello/hello.ini" --nnodes 2 --nproc-per-node 1 --set shardrun.rdzv_timeout=3 $2 \
        >"$W/n1.out" 2>"$W/n1.err" &
    pid1=$!
    # shellcheck disable=SC2086
    timeout -k 5 $LIMIT "$SHARDRUN" "$SRC/examples/hello/hello.ini" --nnodes 2 --nproc-per-node 1 \
        --set shardrun.rdzv_timeout=3 $1
    rc0=$?
    wait "$pid1"
    rc1=$?
    if [ "$rc1" -ne 0 ] && [ "$rc1" -ne 1 ]; then
        echo "the second agent (the first failing): exit $rc1, expected 1 (or 0); its stderr: $(tail -5 "$W/n1.err")" >>"$W/bad"
    elif [ "$rc1" -eq 1 ] && [ "$rc0" -eq 0 ]; then
        echo "the second agent failed (exit 1) while the first succeeded; its stderr: $(tail -5 "$W/n1.err")" >>"$W/bad"
    fi
    grep -hE -A4 "Sanitizer|runtime error:" "$W/n1.err" >>"$W/bad"
    return "$rc0"
}
# two agents, node 0 hosting the store: node 0's allocation fails, and node 1 must end too; node
# 1's own sites are the same code, swept through node 0
two_agents() {
    local p
    p=$(free_port_pair)
    agent_pair "--node-rank 0 --master-addr 127.0.0.1 --master-port $p" \
        "--node-rank 1 --master-addr 127.0.0.1 --master-port $p"
}
# two agents meeting in etcd (rdzv_backend = etcd, a member of this script's own on loopback): the
# first agent's allocation fails; the second must end too.  Every run is a job of its own in etcd
# (run_id), as two run side by side.
etcd_agents() {
    local p id
    p=$(free_port_pair)
    id=sweep-$$-$(basename "$W")
    local a="--master-port $p --rdzv-backend etcd --rdzv-endpoint 127.0.0.1:$ETCD_PORT --rdzv-id $id"
    agent_pair "$a --set shardrun.rdzv_last_call=0" "$a --set shardrun.rdzv_last_call=0"
}

# leftovers MARK: the processes still running whose environment holds SR_SWEEP_RUN=MARK (a worker,
# the guardian: every process a run forks inherits its environment), after up to 3 s for them to go
leftovers() {
    local i left
    for i in $(seq 30); do
        left=$(grep -lsxz "SR_SWEEP_RUN=$1" /proc/[0-9]*/environ | cut -d/ -f3)
        [ -z "$left" ] && return 0
        sleep 0.1
    done
    local p
    for p in $left; do
        echo "$p $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)"
        kill -9 "$p" 2>/dev/null
    done
    return 1
}

# The sites whose failure a run may absorb without a word and succeed: the memory was for an aid to
# a message, or what needed it is tried again ("path function", the function that asks).
ABSORBED="
core/agent/output.c tail_push         a line of a worker's last lines, kept for a failure's report
core/agent/supervisor.c hang_found    the hang check, made again at the next turn
core/run/run.c check_stray_env        a did-you-mean candidate for a misspelt variable's message
core/run/host.c explain               the key named in a message on a plugin's variable
core/store/rdzv_host.c check_fingerprints  an agent's job fingerprint, read again at the next turn
core/etcd/reply.c sr__etcd_reply_parse  an etcd answer that could not be read: the client asks again (docs/etcd.md)
core/etcd/reply.c read_kvs              the same, for the keys in an answer
core/etcd/reply.c read_b64              the same, for one key or value in an answer
"
absorbed() { grep -qxE "${1%%:*} ${1#* } +.*" <<<"$ABSORBED"; }

# one_site PART SITE I: runs PART with SITE failed, in $T/run/I; writes its verdict to $T/run/I/verdict
one_site() {
    local part=$1 site=$2 W=$T/run/$3 rc mark=$$-$3 v=
    rm -rf "$W" && mkdir -p "$W"
    SR_SWEEP_RUN=$mark SHARDRUN_DEBUG_ALLOC_FAIL_SITE=${site%% *} SHARDRUN_DEBUG_ALLOC_SITES=$W/failed \
        "$part" >"$W/.out" 2>"$W/.err"
    rc=$?
    local left
    left=$(leftovers "$mark") || left="; left running after the run ended: $left"
    if grep -qE "Sanitizer|runtime error:" "$W/.err"; then
        v="a sanitizer report: $(grep -m3 -E -A6 'Sanitizer|runtime error:' "$W/.err")"
    elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        v="still running at its time limit ($LIMIT s): a hang; stderr: $(tail -5 "$W/.err")"
    elif [ -s "$W/bad" ]; then
        v=$(cat "$W/bad")
    elif [ ! -s "$W/failed" ]; then
        # the site was not reached this time: the run must succeed
        [ "$rc" -eq 0 ] || v="exit $rc with the site not reached this time; stderr: $(tail -5 "$W/.err")"
        [ -z "$v" ] && [ -z "$left" ] && v=unreached
    elif [ "$rc" -eq 0 ]; then
        # a run that goes on without what it could not allocate says so (a warning), or the site
        # is one that may go without
        grep -qE "$OOM" "$W/.err" || absorbed "$site" ||
            v="exit 0 with the allocation failed, and no word of it: the failure was swallowed; stderr: $(tail -3 "$W/.err")"
    elif [ "$rc" -ne 1 ] && [ "$rc" -ne 2 ]; then
        v="exit code $rc (a signal or a sanitizer), expected 1 or 2; stderr: $(tail -8 "$W/.err")"
    elif ! grep -qE "$OOM" "$W/.err"; then
        v="exit $rc without saying \"out of memory\"; stderr: $(tail -5 "$W/.err")"
    elif [ "$rc" -eq 2 ] && grep -qE "^(\[rank[0-9]+\]: )?step [0-9]+/" "$W/.out"; then
        v="exit 2 after a training step: 2 is for what is refused before any work, a failed run exits 1; stderr: $(tail -5 "$W/.err")"
    fi
    if [ -n "$left" ]; then [ -n "$v" ] && v=$v$left || v=${left#; }; fi
    echo "${v:-ok}" >"$W/verdict"
}

# sites PART FILE: the sites one run of PART reaches, one a line, into FILE (the run must succeed)
sites() {
    local W=$T/count-$1
    [ -s "$2" ] && return 0 # counted already, for another part
    rm -rf "$W" && mkdir -p "$W"
    SHARDRUN_DEBUG_ALLOC_SITES=$W/sites "$1" >"$W/.out" 2>"$W/.err"
    local rc=$?
    if [ "$rc" -ne 0 ] || [ ! -s "$W/sites" ]; then
        echo "FAIL: $1, counting its allocation sites: exit $rc, $( (wc -l <"$W/sites") 2>/dev/null || echo no) sites" \
            "(is SHARDRUN_DEBUG_ALLOC_SITES honoured by this build?); stderr: $(tail -5 "$W/.err")"
        exit 1
    fi
    sort -u "$W/sites" >"$2"
}

# sweep PART [BASE]: fails each site PART reaches (less those BASE reaches), JOBS runs side by side
sweep() {
    local part=$1 base=${2:-} t0=$SECONDS
    sites "$part" "$T/$part.sites"
    local all
    all=$(wc -l <"$T/$part.sites")
    if [ -n "$base" ]; then
        sites "$base" "$T/$base.sites"
        comm -23 "$T/$part.sites" "$T/$base.sites" >"$T/todo"
    else
        cp "$T/$part.sites" "$T/todo"
    fi
    [ -n "${ALLOC_SWEEP_SITES:-}" ] && { grep -E -- "$ALLOC_SWEEP_SITES" "$T/todo" >"$T/todo.1"; mv "$T/todo.1" "$T/todo"; }
    mapfile -t todo <"$T/todo"
    local i site unreached=0 bad=0
    for i in "${!todo[@]}"; do
        while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
        one_site "$part" "${todo[$i]}" "$i" &
    done
    wait
    for i in "${!todo[@]}"; do
        site=${todo[$i]}
        runs=$((runs + 1))
        case $(head -1 "$T/run/$i/verdict" 2>/dev/null || echo "no verdict") in
        ok) pass ;;
        unreached) pass && unreached=$((unreached + 1)) ;;
        *) fail "$part, $site failed: $(cat "$T/run/$i/verdict" 2>/dev/null || echo "no verdict written")" && bad=$((bad + 1)) ;;
        esac
    done
    rm -rf "$T/run"
    echo "$part: $all sites reached, ${#todo[@]} swept${base:+ (those $base does not reach)}, $bad failed the check," \
        "$unreached not reached when failed; $((SECONDS - t0)) s"
    [ "${#todo[@]}" -gt 0 ] && pass || fail "$part: no site to sweep"
}

[ $# -gt 0 ] || set -- one_rank two_ranks resume two_agents etcd_agents prepare
for part in "$@"; do
    case $part in
    one_rank) sweep one_rank ;;
    two_ranks) sweep two_ranks ;;
    resume)
        # the checkpoint the resume loads, saved once without failures
        run "$SHARDRUN" "$T/toy.ini" --nproc-per-node 1 --set task.output_dir="$T/saved"
        expect_rc 0 "the checkpoint to resume from"
        [ -d "$T/saved/checkpoint-2" ] && pass || fail "no checkpoint-2 in $T/saved: $err"
        sweep resume one_rank
        ;;
    two_agents) sweep two_agents one_rank ;;
    etcd_agents)
        command -v etcd >/dev/null || { echo "FAIL: no etcd executable: apt-get install etcd-server" >&2; exit 1; }
        ETCD_PORT=$(free_port_pair)
        # started in a subshell: not one of this shell's jobs, which sweep's `wait` waits for
        (etcd --name m0 --data-dir "$T/etcd" --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
            --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" --listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
            --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
            --initial-cluster "m0=http://127.0.0.1:$((ETCD_PORT + 1))" >"$T/etcd.log" 2>&1 &
            echo $! >"$T/etcd.pid")
        etcd_pid=$(cat "$T/etcd.pid")
        trap 'kill -KILL $etcd_pid 2>/dev/null; rm -rf "$T"' EXIT
        for _ in $(seq 50); do curl -s "http://127.0.0.1:$ETCD_PORT/health" | grep -q true && break; sleep 0.2; done
        sweep etcd_agents two_agents
        ;;
    prepare)
        for i in 1 2 3; do printf '{"text": "document %d, with a line\\nand another"}\n' "$i"; done >"$T/docs.jsonl"
        sweep prepare
        ;;
    *)
        echo "FAIL: no part '$part' (one_rank, two_ranks, resume, two_agents, etcd_agents, prepare)" >&2
        exit 2
        ;;
    esac
done

echo "$runs runs, $checks checks"
[ "$failed" -eq 0 ] || { echo "FAIL: $failed of $checks checks"; exit 1; }
echo "PASS: $checks checks"
