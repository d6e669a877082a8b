# Cluster detection: a launcher's variables give the topology when the job file and the command
# line do not; under a launcher that started one process per worker, shardrun starts exactly one.
. "$(dirname "$0")/lib.sh"
printf '[shardrun]\ntask = exec:/usr/bin/env\nplugins = torch\n' >"$T/c.ini"
val() { sed -n "s/^\[rank$1\]: $2=//p" <<<"$out"; }
dry() { sed -n "s/^$1=//p" <<<"$out"; }

P=$(free_port_pair)
# srun with 4 tasks on 2 nodes, simulated on loopback: 4 shardrun processes, one per task; each
# starts exactly one worker, and they meet through the first task's store
for task in 0 1 2 3; do
    env SLURM_PROCID=$task SLURM_NTASKS=4 SLURM_LOCALID=$((task % 2)) SLURM_NODEID=$((task / 2)) SLURM_NNODES=2 \
        SLURM_STEP_ID=0 SLURM_JOB_ID=4242 "SLURM_JOB_NODELIST=localhost" "$SHARDRUN" "$T/c.ini" --master-port "$P" \
        >"$T/task$task.out" 2>"$T/task$task.err" &
    pids[$task]=$!
done
rcs=""
for task in 0 1 2 3; do wait "${pids[$task]}"; rcs="$rcs$?"; done
expect_eq "$rcs" "0000" "4 srun tasks ($(cat "$T"/task*.err))"
out=$(cat "$T/task3.out")
expect_eq "$(grep -o '^\[rank[0-9]*\]' <<<"$out" | sort -u | tr '\n' ' ')" "[rank3] " "task 3 starts exactly one worker, rank 3"
expect_eq "$(val 3 RANK)/$(val 3 WORLD_SIZE)/$(val 3 LOCAL_RANK)/$(val 3 LOCAL_WORLD_SIZE)" "3/4/1/2" "rank/world/local from Slurm"
expect_eq "$(val 3 GROUP_RANK)/$(val 3 NODE_RANK)/$(val 3 GROUP_WORLD_SIZE)" "1/1/2" "node from Slurm"
expect_eq "$(val 3 MASTER_ADDR)" "localhost" "master is the first host of the node list"
SRUN=(SLURM_PROCID=3 SLURM_NTASKS=4 SLURM_LOCALID=1 SLURM_NODEID=1 SLURM_NNODES=2 SLURM_STEP_ID=0
      "SLURM_JOB_NODELIST=gpu[07-08]")
run env "${SRUN[@]}" "$SHARDRUN" env "$T/c.ini" --explain
expect_in "$(grep ^RANK= <<<"$out")" "RANK=3" "dry run defaults to this process's rank"
expect_in "$(grep ^MASTER_ADDR= <<<"$out")" "MASTER_ADDR=gpu07" "first host of a bracketed node list"
expect_in "$(grep ^MASTER_ADDR= <<<"$out")" "cluster (Slurm)" "explain names the cluster"

# one task per node (node mode): nproc_per_node workers per node, two agents
for node in 0 1; do
    env SLURM_PROCID=$node SLURM_NTASKS=2 SLURM_LOCALID=0 SLURM_NODEID=$node SLURM_NNODES=2 SLURM_STEP_ID=0 \
        SLURM_JOB_ID=4243 "SLURM_JOB_NODELIST=localhost,b1" "$SHARDRUN" "$T/c.ini" --nproc-per-node 2 \
        --master-port "$P" >"$T/node$node.out" 2>"$T/node$node.err" &
    pids[$node]=$!
done
wait "${pids[0]}"; rc0=$?
wait "${pids[1]}"; rc1=$?
expect_eq "$rc0/$rc1" "0/0" "srun node-mode run ($(cat "$T"/node*.err))"
out=$(cat "$T/node1.out")
expect_eq "$(grep -o '^\[rank[0-9]*\]' <<<"$out" | sort -u | tr '\n' ' ')" "[rank2] [rank3] " "node 1 starts ranks 2 and 3"
expect_eq "$(val 2 WORLD_SIZE)/$(val 3 LOCAL_RANK)/$(val 2 MASTER_ADDR)" "4/1/localhost" "node-mode topology"

# several agents need a shared token
run env SLURM_PROCID=1 SLURM_NTASKS=2 SLURM_LOCALID=0 SLURM_NODEID=1 SLURM_NNODES=2 SLURM_STEP_ID=0 \
    "SLURM_JOB_NODELIST=a,b" "$SHARDRUN" "$T/c.ini"
expect_rc 2 "no token for several agents"
expect_in "$err" "needs a shared rendezvous token: export SHARDRUN_RDZV_TOKEN" "token error"

# torchrun-style variables already present
TR=(RANK=5 WORLD_SIZE=8 LOCAL_RANK=1 LOCAL_WORLD_SIZE=4 GROUP_RANK=1 MASTER_ADDR=10.9.8.7 MASTER_PORT=4242)
run env "${TR[@]}" "$SHARDRUN" env "$T/c.ini"
expect_eq "$(dry RANK)/$(dry LOCAL_RANK)/$(dry NODE_RANK)/$(dry MASTER_ADDR)/$(dry MASTER_PORT)" "5/1/1/10.9.8.7/4242" "torchrun variables"
# explicit flags win over detection
run env "${TR[@]}" "$SHARDRUN" env "$T/c.ini" --master-port 5555 --rank 4
expect_eq "$(dry RANK)/$(dry MASTER_PORT)" "4/5555" "flags beat the detected values"

# Open MPI and PMI
run env OMPI_COMM_WORLD_RANK=3 OMPI_COMM_WORLD_SIZE=4 OMPI_COMM_WORLD_LOCAL_RANK=1 OMPI_COMM_WORLD_LOCAL_SIZE=2 \
    "$SHARDRUN" env "$T/c.ini" --master-addr head
expect_eq "$(dry RANK)/$(dry NODE_RANK)/$(dry LOCAL_WORLD_SIZE)/$(dry MASTER_ADDR)" "3/1/2/head" "Open MPI"
run env PMI_RANK=2 PMI_SIZE=3 "$SHARDRUN" env "$T/c.ini"
expect_eq "$(dry RANK)/$(dry WORLD_SIZE)/$(dry LOCAL_RANK)" "2/3/2" "PMI on one node"

# inconsistent launcher variables are an error, not a guess
run env RANK=x WORLD_SIZE=2 LOCAL_RANK=0 "$SHARDRUN" "$T/c.ini"
expect_rc 2 "malformed RANK"
expect_in "$err" "torchrun launcher detected, but RANK=\"x\" is not a rank (a whole number from 0 to" "names the variable"
run env RANK=3 WORLD_SIZE=4 LOCAL_RANK=0 LOCAL_WORLD_SIZE=2 GROUP_RANK=0 "$SHARDRUN" "$T/c.ini"
expect_rc 2 "inconsistent ranks"
expect_in "$err" "is not a homogeneous layout" "inconsistent layout explained"

# Every launcher variable shardrun reads is checked before any worker starts, by `env` and by a
# run alike: a bad value is exit 2 naming the variable, its value and what was expected, never a
# crash (a size of 0 was a division by zero: SIGFPE, exit 136) nor a guess (WORLD_SIZE=0 ran the
# job file's world)
bad_launch() { # EXPECTED-TEXT VAR=VALUE...
    local want=$1 cmd
    shift
    for cmd in env run; do
        if [ $cmd = env ]; then run env "$@" "$SHARDRUN" env "$T/c.ini"; else run env "$@" "$SHARDRUN" "$T/c.ini"; fi
        expect_rc 2 "$cmd with $*"
        expect_in "$err" "$want" "$cmd with $* names it"
        expect_not_in "$out" "[rank" "$cmd with $*: no worker started"
    done
}
run env PMI_RANK=0 PMI_SIZE=0 "$SHARDRUN" env "$SRC/examples/hello/hello.ini"
expect_rc 2 "PMI_SIZE=0 with the hello example"
bad_launch 'MPICH (PMI) launcher detected, but PMI_SIZE="0" is not a number of processes (a whole number from 1 to' PMI_RANK=0 PMI_SIZE=0
bad_launch 'PMI_RANK=3 is not below PMI_SIZE=3' PMI_RANK=3 PMI_SIZE=3
bad_launch 'MPI_LOCALRANKID is set but MPI_LOCALNRANKS is not' PMI_RANK=0 PMI_SIZE=2 MPI_LOCALRANKID=0
bad_launch 'PMI_SIZE=5000 without MPI_LOCALNRANKS means 5000 processes on one node, more than 4096' PMI_RANK=0 PMI_SIZE=5000
bad_launch 'Open MPI launcher detected, but OMPI_COMM_WORLD_SIZE="0" is not a number of processes' \
    OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=0
bad_launch 'OMPI_COMM_WORLD_RANK="x" is not a rank' OMPI_COMM_WORLD_RANK=x OMPI_COMM_WORLD_SIZE=2
bad_launch 'OMPI_COMM_WORLD_LOCAL_SIZE="0" is not a number of processes per node' OMPI_COMM_WORLD_RANK=1 \
    OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_LOCAL_RANK=0 OMPI_COMM_WORLD_LOCAL_SIZE=0
bad_launch 'OMPI_COMM_WORLD_LOCAL_RANK=2 is not below OMPI_COMM_WORLD_LOCAL_SIZE=2' OMPI_COMM_WORLD_RANK=2 \
    OMPI_COMM_WORLD_SIZE=4 OMPI_COMM_WORLD_LOCAL_RANK=2 OMPI_COMM_WORLD_LOCAL_SIZE=2
bad_launch 'torchrun launcher detected, but WORLD_SIZE="0" is not a number of processes' RANK=1 WORLD_SIZE=0 LOCAL_RANK=1
bad_launch 'RANK=4 is not below WORLD_SIZE=4' RANK=4 WORLD_SIZE=4 LOCAL_RANK=0
bad_launch 'RANK="-1" is not a rank' RANK=-1 WORLD_SIZE=4 LOCAL_RANK=0
bad_launch 'RANK="99999999999999999999" is not a rank' RANK=99999999999999999999 WORLD_SIZE=4 LOCAL_RANK=0
bad_launch 'LOCAL_RANK=2 is not below LOCAL_WORLD_SIZE=2' RANK=0 WORLD_SIZE=4 LOCAL_RANK=2 LOCAL_WORLD_SIZE=2
bad_launch 'LOCAL_WORLD_SIZE="0" is not a number of processes per node' RANK=0 WORLD_SIZE=4 LOCAL_RANK=0 LOCAL_WORLD_SIZE=0
bad_launch 'WORLD_SIZE=6 is not a multiple of LOCAL_WORLD_SIZE=4' RANK=0 WORLD_SIZE=6 LOCAL_RANK=0 LOCAL_WORLD_SIZE=4
bad_launch 'GROUP_RANK=2 is not below the number of nodes, 2' RANK=0 WORLD_SIZE=4 LOCAL_RANK=0 LOCAL_WORLD_SIZE=2 GROUP_RANK=2
bad_launch 'MASTER_PORT="70000" is not a TCP port' RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 MASTER_PORT=70000
bad_launch 'MASTER_ADDR="" is not a host name or address' RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 MASTER_ADDR=
bad_launch 'RANK and WORLD_SIZE are set but LOCAL_RANK is not' RANK=1 WORLD_SIZE=2
bad_launch 'Slurm launcher detected, but SLURM_NNODES="0" is not a number of nodes' SLURM_PROCID=0 SLURM_NODEID=0 SLURM_NNODES=0
bad_launch 'SLURM_NODEID=2 is not below SLURM_NNODES=2' SLURM_PROCID=0 SLURM_NODEID=2 SLURM_NNODES=2
bad_launch 'SLURM_NTASKS="0" is not a number of tasks' SLURM_PROCID=0 SLURM_NODEID=0 SLURM_NNODES=1 SLURM_NTASKS=0
bad_launch 'SLURM_PROCID=4 is not below SLURM_NTASKS=4' SLURM_PROCID=4 SLURM_NODEID=0 SLURM_NNODES=1 SLURM_NTASKS=4 SLURM_STEP_ID=0
bad_launch "SLURM_LOCALID=2 is not below the step's tasks per node, 2" SLURM_PROCID=1 SLURM_NODEID=0 SLURM_NNODES=2 \
    SLURM_NTASKS=4 SLURM_LOCALID=2 SLURM_STEP_ID=0
bad_launch 'SLURM_RESTART_COUNT="abc" is not a count of restarts' SLURM_RESTART_COUNT=abc
# `shardrun selftest` reads SLURM_NNODES (several nodes: it says what it cannot check on one)
run env SLURM_NNODES=two "$SHARDRUN" selftest
expect_rc 2 "selftest with SLURM_NNODES=two"
expect_in "$err" 'selftest: SLURM_NNODES="two" is not a number of nodes (a whole number from 1 to 65536)' "selftest names it"
# a partial torchrun set is not read once the topology is given
run env RANK=1 WORLD_SIZE=2 "$SHARDRUN" env "$T/c.ini" --nnodes 1 --node-rank 0
expect_rc 0 "RANK and WORLD_SIZE with --nnodes/--node-rank"
done_checks
