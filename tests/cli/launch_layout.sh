# How agents agree on one run without a user's help, tested without a launcher by giving two
# agents the variables a launcher would give them:
# - per-process mode (Open MPI's variables): the launcher's layout wins over the job file's
#   nproc_per_node, master_port = 0 is derived from the job id, one results list per run, and a
#   failure in the other process of this node is not called "another node";
# - the refusals, each exit 2 within seconds: a disagreeing --nproc-per-node, master_port = 0
#   without a job id (MPICH), several hosts and no master_addr;
# - two agents started with different jobs (--nnodes 2) are refused at rendezvous, both exit 2,
#   naming the first difference, in seconds rather than after a timeout;
# - --standalone accepts what it means anyway (master_port = 0).
. "$(dirname "$0")/lib.sh"
BEHAVE=$BUILD/tests/tasks/behave.so
HELLO=$SRC/examples/hello/hello.ini
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# ompi RANK JOBID ARGS...: shardrun as Open MPI's rank RANK of 2 on one host (background; $T/oRANK.*)
ompi() {
    local r=$1 job=$2
    shift 2
    env OMPI_COMM_WORLD_RANK="$r" OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_LOCAL_RANK="$r" \
        OMPI_COMM_WORLD_LOCAL_SIZE=2 OMPI_MCA_ess_base_jobid="$job" timeout 60 "$SHARDRUN" "$@" \
        >"$T/o$r.out" 2>"$T/o$r.err" &
    opid[$r]=$!
}
ompi_wait() { wait "${opid[0]}"; orc[0]=$?; wait "${opid[1]}"; orc[1]=$?; }

# 1. hello.ini (nproc_per_node = 2, master_port = 0) as 2 Open MPI ranks: one world of 2
job=$RANDOM$RANDOM
ompi 0 "$job" "$HELLO" --results "$T/r.json"
ompi 1 "$job" "$HELLO" --results "$T/r.json"
ompi_wait
expect_eq "${orc[0]}/${orc[1]}" "0/0" "2 Open MPI ranks run hello.ini ($(cat "$T/o0.err" "$T/o1.err"))"
all=$(cat "$T/o0.out" "$T/o1.out")
expect_eq "$(grep -c 'hello from rank . of 2' <<<"$all")" "2" "2 workers in all, not 4"
expect_in "$all" "[rank0]: hello from rank 0 of 2" "rank 0 of one world of 2"
expect_in "$all" "[rank1]: hello from rank 1 of 2" "rank 1 of the same world"
expect_in "$all" "[rank1]: all_reduce of ranks over gloo: 1 (expected 1)" "one group of 2 all-reduced"
expect_eq "$(grep -c '^\[$' <<<"$all")" "1" "one results list per run"
expect_eq "$(grep -c '^\[$' "$T/o1.out")" "0" "rank 1's agent prints none"
/usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert [x["rank"] for x in r]==[0,1], r' "$T/r.json" \
    && pass || fail "--results holds ranks 0 and 1 once each: $(cat "$T/r.json" 2>&1)"

# 2. a failure in rank 1: the other agent of this node says so, not "another node"
printf '[shardrun]\ntask = %s\nplugins = torch\nmaster_port = 0\n[task]\nact_rank = 1\nact = exit3\nothers = sleep\n' \
    "$BEHAVE" >"$T/fail.ini"
job=$RANDOM$RANDOM
ompi 0 "$job" "$T/fail.ini"
ompi 1 "$job" "$T/fail.ini"
ompi_wait
expect_eq "${orc[0]}/${orc[1]}" "1/1" "a failed rank fails both agents"
expect_in "$(cat "$T/o1.err")" "rank 1 (local rank 1, pid" "rank 1's agent names its rank"
expect_in "$(cat "$T/o0.err")" "the run failed in another shardrun process of this node: rank 1 (node 0) exited with code 3" \
    "rank 0's agent: the failure was on this node"
expect_not_in "$(cat "$T/o0.err")" "another node" "not called another node"

# 3. refusals under a launcher, each exit 2 at once
t0=$(now_ms)
run env OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_LOCAL_RANK=0 OMPI_COMM_WORLD_LOCAL_SIZE=2 \
    OMPI_MCA_ess_base_jobid=7 "$SHARDRUN" "$HELLO" --nproc-per-node 1
expect_rc 2 "--nproc-per-node that disagrees with the launcher"
expect_in "$err" "--nproc-per-node 1 disagrees with Open MPI, which started this process as rank 0 of 2, 2 per node" \
    "names the flag and the launcher's layout"
run env PMI_RANK=0 PMI_SIZE=2 MPI_LOCALRANKID=0 MPI_LOCALNRANKS=2 "$SHARDRUN" "$HELLO"
expect_rc 2 "master_port = 0 under MPICH"
expect_in "$err" "master_port = 0 (a free port) cannot work under MPICH (PMI)" "names master_port and MPICH"
run env OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=4 OMPI_COMM_WORLD_LOCAL_RANK=0 OMPI_COMM_WORLD_LOCAL_SIZE=2 \
    OMPI_MCA_ess_base_jobid=7 "$SHARDRUN" "$HELLO" --master-port 29500
expect_rc 2 "Open MPI on 2 hosts without master_addr"
expect_in "$err" "Open MPI started shardrun on 2 hosts, but says nothing of where rank 0 is: set [shardrun] master_addr" \
    "names master_addr"
[ $(($(now_ms) - t0)) -lt 5000 ] && pass || fail "the refusals took $(($(now_ms) - t0)) ms"

# 4. two agents (--nnodes 2) started with different jobs: refused at rendezvous, both exit 2, fast
export SHARDRUN_RDZV_TOKEN=launch-layout-test
mismatch() { # mismatch WHAT EXPECTED ARGS-FOR-NODE-1...
    local what=$1 expected=$2
    shift 2
    local P t0
    P=$(free_port_pair)
    t0=$(now_ms)
    timeout 60 "$SHARDRUN" "${JOB:-$HELLO}" --nnodes 2 --node-rank 0 --master-addr 127.0.0.1 --master-port "$P" \
        >"$T/m0.out" 2>"$T/m0.err" &
    local p0=$!
    timeout 60 "$SHARDRUN" "${JOB:-$HELLO}" --nnodes 2 --node-rank 1 --master-addr 127.0.0.1 --master-port "$P" "$@" \
        >"$T/m1.out" 2>"$T/m1.err" &
    local p1=$!
    wait $p0; local r0=$?
    wait $p1; local r1=$?
    local ms=$(($(now_ms) - t0))
    expect_eq "$r0/$r1" "2/2" "$what: both agents exit 2 ($(cat "$T/m0.err" "$T/m1.err"))"
    expect_in "$(cat "$T/m0.err")" "$expected" "$what: node 0 names the difference (node 1: $(cat "$T/m1.err"))"
    expect_in "$(cat "$T/m1.err")" "$expected" "$what: node 1 names the difference"
    [ "$ms" -lt 10000 ] && pass || fail "$what: took $ms ms"
    expect_eq "$(grep -c '^\[$' "$T/m0.out" "$T/m1.out" | awk -F: '{s += $2} END {print s}')" "0" "$what: no results"
}
mismatch "sharding strategy" \
    'env FSDP_SHARDING_STRATEGY is "FULL_SHARD" on node 0 (host' --set accelerate.fsdp.sharding_strategy=SHARD_GRAD_OP
mismatch "workers per node" 'nproc_per_node is "2" on node 0 (host' --nproc-per-node 1
mismatch "a [task] key" '[task] greeting is "hello" on node 0 (host' --set task.greeting=bonjour
mismatch "mixed precision" 'env ACCELERATE_MIXED_PRECISION is "bf16" on node 0 (host' --set accelerate.mixed_precision=no
# a model task: the trainer's arguments and the model's size are [task] keys, so a node with
# another seed, learning rate or model is refused before any step (not trained on mixed-up
# collectives, nor stopped by Gloo's own asserts)
printf '[shardrun]\ntask = %s\nplugins = torch,accelerate\nnproc_per_node = 1\n[task]\nblocks = 8\nseed = 42\nlearning_rate = 0.001\nmax_steps = 50\n' \
    "$BUILD/examples/toy.so" >"$T/toy.ini"
JOB=$T/toy.ini mismatch "seed" '[task] seed is "42" on node 0 (host' --set task.seed=7
JOB=$T/toy.ini mismatch "learning rate" '[task] learning_rate is "0.001" on node 0 (host' --set task.learning_rate=0.01
JOB=$T/toy.ini mismatch "model size" '[task] blocks is "8" on node 0 (host' --set task.blocks=6
unset SHARDRUN_RDZV_TOKEN

# 5. --standalone with a job file that says master_port = 0: what standalone means anyway
run timeout 60 "$SHARDRUN" "$HELLO" --standalone
expect_rc 0 "--standalone with master_port = 0 in the file"
expect_in "$out" "[rank1]: hello from rank 1 of 2" "it runs"
run "$SHARDRUN" "$HELLO" --standalone --master-port 29999
expect_rc 2 "--standalone with a port of its own is still a conflict"
done_checks
