# An elastic job's configuration errors (nnodes = MIN:MAX): each exits 2 before any worker starts,
# with a message that names the value, where it came from and what is expected:
# (a) a malformed MIN:MAX in the job file, on --nnodes and in SHARDRUN_NNODES;
# (b) standalone with nnodes = 1:2 (one message, not a second one about standalone's own port);
# (c) an elastic job under a launcher that started this process as one rank (Open MPI, torchrun);
# (d) rdzv_backend = etcd: without rdzv_endpoint, with a malformed one, with standalone; rdzv_endpoint
#     without rdzv_backend = etcd; an unknown backend;
# (e) [shardrun] elastic_join: a value it does not know; next_save in a job that is not elastic, with a
#     task that writes no checkpoints, or a model task that never saves periodically (no save_steps);
# and what is accepted: nnodes = 2:2 and 1:1, standalone with 1:1, one process per node under a launcher,
# rdzv_backend = etcd with a fixed nnodes (an elastic job of N:N).
. "$(dirname "$0")/lib.sh"
# the task leaves a file behind: a refused job must not have started it
TASK="task = exec:/usr/bin/touch $T/ran"
printf '[shardrun]\n%s\nplugins = torch\n' "$TASK" >"$T/plain.ini"
# refused WHAT CMD...: exit 2, nothing on stdout, the task not started; leaves $err
refused() {
    local what=$1
    shift
    rm -f "$T/ran"
    run "$@"
    expect_rc 2 "$what"
    expect_eq "$out" "" "$what: nothing on stdout"
    [ ! -e "$T/ran" ] && pass || fail "$what: the task ran"
}
EXPECTED='[shardrun] nnodes: expected MIN:MAX, two integers from 1 to 65536 with MIN <= MAX, got'

# (a) MAX below MIN, MIN 0, not numbers, one side empty, MAX above 65536: in each place it can be given
for v in 2:1 0:2 a:b 2: :3 1:70000; do
    printf '[shardrun]\n%s\nnnodes = %s\n' "$TASK" "$v" >"$T/bad.ini"
    refused "nnodes = $v in the job file" "$SHARDRUN" "$T/bad.ini"
    expect_in "$err" "$T/bad.ini:3: $EXPECTED \"$v\"" "nnodes = $v in the job file: the line, the value, MIN:MAX"
    refused "--nnodes $v" "$SHARDRUN" "$T/plain.ini" --nnodes "$v"
    expect_in "$err" "command line --nnodes: $EXPECTED \"$v\"" "--nnodes $v: the flag, the value, MIN:MAX"
    refused "SHARDRUN_NNODES=$v" env SHARDRUN_NNODES="$v" "$SHARDRUN" "$T/plain.ini"
    expect_in "$err" "environment SHARDRUN_NNODES: $EXPECTED \"$v\"" "SHARDRUN_NNODES=$v: the variable, the value, MIN:MAX"
done

# (b) standalone is one node: nnodes = 1:2 contradicts it, in one message naming both settings
printf '[shardrun]\n%s\nstandalone = true\nnnodes = 1:2\n' "$TASK" >"$T/sa.ini"
refused "standalone with nnodes = 1:2" "$SHARDRUN" "$T/sa.ini"
expect_in "$err" "$T/sa.ini:3: standalone runs on one node, but nnodes = 1:2 ($T/sa.ini:4) allows up to 2 nodes; drop one of them" \
    "standalone with nnodes = 1:2: both named"
expect_eq "$(grep -c 'error:' <<<"$err")" 1 "standalone with nnodes = 1:2: one error (standalone's own port is no second one)"
refused "--standalone --nnodes 2" "$SHARDRUN" "$T/plain.ini" --standalone --nnodes 2
expect_eq "$(grep -c 'error:' <<<"$err")" 1 "--standalone --nnodes 2: one error ($err)"
run "$SHARDRUN" "$T/plain.ini" --standalone --nnodes 1:1
expect_rc 0 "standalone with nnodes = 1:1 runs"

# (c) a launcher that starts one process per rank (2 per node, nproc_per_node unset): every process
# would be an agent of its own; refused, naming the launcher
printf '[shardrun]\n%s\nplugins = torch\nnnodes = 2:3\n' "$TASK" >"$T/el.ini"
refused "elastic under Open MPI, a process per rank" env OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=4 \
    OMPI_COMM_WORLD_LOCAL_RANK=1 OMPI_COMM_WORLD_LOCAL_SIZE=2 "$SHARDRUN" "$T/el.ini" --master-addr 127.0.0.1
expect_in "$err" "$T/el.ini:4: nnodes = 2:3 (an elastic job) needs one shardrun per node, but Open MPI started this process as one rank" \
    "elastic under Open MPI: the setting and the launcher named"
expect_in "$err" "with nproc_per_node set, or give a fixed nnodes" "elastic under Open MPI: what to do"
refused "elastic under torchrun, a process per rank" env RANK=1 WORLD_SIZE=4 LOCAL_RANK=1 LOCAL_WORLD_SIZE=2 \
    GROUP_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 "$SHARDRUN" "$T/el.ini"
expect_in "$err" "$T/el.ini:4: nnodes = 2:3 (an elastic job) needs one shardrun per node, but torchrun started this process as one rank" \
    "elastic under torchrun: the setting and the launcher named"
# one process per node with nproc_per_node given is node mode: this process is node 1's agent
run env OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_LOCAL_RANK=0 OMPI_COMM_WORLD_LOCAL_SIZE=1 \
    "$SHARDRUN" env "$T/el.ini" --nproc-per-node 2 --master-addr 127.0.0.1
expect_rc 0 "elastic under Open MPI, a process per node"
expect_in "$out" "WORLD_SIZE=6" "elastic under Open MPI, a process per node: MAX 3 x 2 ranks"

# (d) the etcd backend's settings, checked before anything is asked of etcd
refused "rdzv_backend = etcd without rdzv_endpoint" "$SHARDRUN" "$T/el.ini" --rdzv-backend etcd
expect_in "$err" "command line --rdzv-backend: rdzv_backend = etcd needs rdzv_endpoint = host:port[,host:port...], the client addresses of the etcd members" \
    "etcd without rdzv_endpoint: the flag and what is expected"
refused "a malformed rdzv_endpoint" "$SHARDRUN" "$T/el.ini" --rdzv-backend etcd --rdzv-endpoint "10.0.0.1:2379,10.0.0.2"
expect_in "$err" "command line --rdzv-endpoint: rdzv_endpoint = 10.0.0.1:2379,10.0.0.2: etcd endpoint list \"10.0.0.1:2379,10.0.0.2\": entry 2 \"10.0.0.2\" is not host:port" \
    "a malformed rdzv_endpoint: the entry named"
refused "rdzv_endpoint with the built-in store" "$SHARDRUN" "$T/el.ini" --rdzv-endpoint 10.0.0.1:2379
expect_in "$err" "command line --rdzv-endpoint: rdzv_endpoint = 10.0.0.1:2379, but rdzv_backend is builtin (default)" \
    "rdzv_endpoint without rdzv_backend = etcd: both named"
refused "an unknown rdzv_backend" "$SHARDRUN" "$T/el.ini" --rdzv-backend c10d
expect_in "$err" "command line --rdzv-backend: [shardrun] rdzv_backend: expected one of builtin, etcd, got \"c10d\"" \
    "an unknown rdzv_backend: the choices named"
refused "standalone with etcd" "$SHARDRUN" "$T/plain.ini" --standalone --rdzv-backend etcd --rdzv-endpoint 10.0.0.1:2379
expect_in "$err" "standalone runs on one node with no rendezvous to share; drop rdzv_backend = etcd" "standalone with etcd: refused"
# a fixed nnodes with etcd is an elastic job of N:N: the ranks of 2 nodes
run "$SHARDRUN" env "$T/plain.ini" --nnodes 2 --nproc-per-node 2 --rdzv-backend etcd --rdzv-endpoint 10.0.0.1:2379
expect_rc 0 "rdzv_backend = etcd with nnodes = 2 ($err)"
expect_in "$out" "GROUP_WORLD_SIZE=2" "rdzv_backend = etcd with nnodes = 2: 2 nodes"
expect_in "$out" "WORLD_SIZE=4" "rdzv_backend = etcd with nnodes = 2: 4 ranks"

# (e) elastic_join: each refused naming where it was set; next_save accepted with save_steps (env lists it)
printf '[shardrun]\n%s\nplugins = torch\nnnodes = 2:3\nelastic_join = later\n' "$TASK" >"$T/ej.ini"
refused "elastic_join = later" "$SHARDRUN" "$T/ej.ini"
expect_in "$err" "$T/ej.ini:5: [shardrun] elastic_join: expected one of now, next_save, got \"later\"" \
    "elastic_join = later: the line and the choices"
refused "elastic_join = next_save, nnodes = 2" "$SHARDRUN" "$T/plain.ini" --nnodes 2 --set shardrun.elastic_join=next_save
expect_in "$err" "command line --set shardrun.elastic_join=next_save: [shardrun] elastic_join = next_save applies to elastic jobs, and this one has a fixed nnodes = 2: give nnodes as MIN:MAX" \
    "elastic_join = next_save in a fixed job: the flag and what to do"
refused "SHARDRUN_ELASTIC_JOIN=next_save, an exec: task" env SHARDRUN_ELASTIC_JOIN=next_save "$SHARDRUN" "$T/el.ini"
expect_in "$err" "environment SHARDRUN_ELASTIC_JOIN: [shardrun] elastic_join = next_save takes a joining node in at the job's next periodic checkpoint, which only a model task writes (task = exec:/usr/bin/touch $T/ran is not one)" \
    "elastic_join = next_save with an exec: task: the variable and the task"
# a model task (the toy) with no periodic checkpoint: its task writes nothing, but refused means not started
TOY="$SRC/examples/toy/toy_fsdp.ini"
for v in "" "--set task.save_strategy=no"; do
    # shellcheck disable=SC2086
    run "$SHARDRUN" "$TOY" --nnodes 2:3 --set shardrun.elastic_join=next_save --set task.output_dir="$T/toy" $v
    expect_rc 2 "elastic_join = next_save, the toy ${v:-without save_steps}"
    expect_in "$err" "[shardrun] elastic_join = next_save takes a joining node in at the job's next periodic checkpoint, and this job never writes one ([task] save_" \
        "elastic_join = next_save, the toy ${v:-without save_steps}: says why"
    expect_in "$err" "set [task] save_steps = N (a checkpoint every N steps), or use elastic_join = now" \
        "elastic_join = next_save, the toy ${v:-without save_steps}: what to do"
    [ ! -e "$T/toy" ] && pass || fail "elastic_join = next_save, the toy ${v:-without save_steps}: output_dir created"
done
run "$SHARDRUN" env "$TOY" --nnodes 2:3 --set shardrun.elastic_join=next_save --set task.save_steps=4
expect_rc 0 "elastic_join = next_save with save_steps = 4 is accepted ($err)"

# accepted: MIN = MAX is a fixed-size elastic job (2:2 checked by env, 1:1 run on its own: MAX is there)
printf '[shardrun]\n%s\nplugins = torch\nnnodes = 2:2\n' "$TASK" >"$T/two.ini"
run "$SHARDRUN" env "$T/two.ini" --nproc-per-node 2
expect_rc 0 "nnodes = 2:2"
expect_in "$out" "GROUP_WORLD_SIZE=2" "nnodes = 2:2: 2 nodes"
expect_in "$out" "WORLD_SIZE=4" "nnodes = 2:2: 4 ranks"
printf '[shardrun]\ntask = exec:/bin/sh -c "echo world=$WORLD_SIZE elastic=$SHARDRUN_ELASTIC_RANKS"\nplugins = torch\nnnodes = 1:1\n' \
    >"$T/one.ini"
run "$SHARDRUN" "$T/one.ini" --nproc-per-node 2
expect_rc 0 "nnodes = 1:1 runs ($err)"
expect_in "$out" "[rank1]: world=2 elastic=2" "nnodes = 1:1: an elastic run of 2 ranks"
done_checks
