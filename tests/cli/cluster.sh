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
expect_in "$err" "torchrun launcher detected, but RANK=\"x\" is not a non-negative integer" "names the variable"
run env RANK=3 WORLD_SIZE=4 LOCAL_RANK=0 LOCAL_WORLD_SIZE=2 GROUP_RANK=0 "$SHARDRUN" "$T/c.ini"
expect_rc 2 "inconsistent ranks"
expect_in "$err" "is not a homogeneous layout" "inconsistent layout explained"
done_checks
