# Cluster detection: a launcher's variables give the topology when the job file and the command
# line do not; under a launcher that started one process per worker, shardrun starts exactly one.
. "$(dirname "$0")/lib.sh"
printf '[shardrun]\ntask = exec:/usr/bin/env\nplugins = torch\n' >"$T/c.ini"
val() { sed -n "s/^\[rank$1\]: $2=//p" <<<"$out"; }
dry() { sed -n "s/^$1=//p" <<<"$out"; }

# srun with 4 tasks on 2 nodes: this process is task 3 (node 1, local 1)
SRUN=(SLURM_PROCID=3 SLURM_NTASKS=4 SLURM_LOCALID=1 SLURM_NODEID=1 SLURM_NNODES=2 SLURM_STEP_ID=0
      "SLURM_JOB_NODELIST=gpu[07-08]")
run env "${SRUN[@]}" "$SHARDRUN" "$T/c.ini"
expect_rc 0 "srun per-task run"
expect_eq "$(grep -o '^\[rank[0-9]*\]' <<<"$out" | sort -u | tr '\n' ' ')" "[rank3] " "exactly one worker, rank 3"
expect_eq "$(val 3 RANK)/$(val 3 WORLD_SIZE)/$(val 3 LOCAL_RANK)/$(val 3 LOCAL_WORLD_SIZE)" "3/4/1/2" "rank/world/local from Slurm"
expect_eq "$(val 3 GROUP_RANK)/$(val 3 NODE_RANK)/$(val 3 GROUP_WORLD_SIZE)" "1/1/2" "node from Slurm"
expect_eq "$(val 3 MASTER_ADDR)" "gpu07" "master is the first host of the node list"
run env "${SRUN[@]}" "$SHARDRUN" env "$T/c.ini" --explain
expect_in "$(grep ^RANK= <<<"$out")" "RANK=3" "dry run defaults to this process's rank"
expect_in "$(grep ^MASTER_ADDR= <<<"$out")" "cluster (Slurm)" "explain names the cluster"

# one task per node (node mode): nproc_per_node workers on this node
run env SLURM_PROCID=1 SLURM_NTASKS=2 SLURM_LOCALID=0 SLURM_NODEID=1 SLURM_NNODES=2 SLURM_STEP_ID=0 \
    "SLURM_JOB_NODELIST=a1,b1" "$SHARDRUN" "$T/c.ini" --nproc-per-node 2
expect_rc 0 "srun node-mode run"
expect_eq "$(grep -o '^\[rank[0-9]*\]' <<<"$out" | sort -u | tr '\n' ' ')" "[rank2] [rank3] " "node 1 starts ranks 2 and 3"
expect_eq "$(val 2 WORLD_SIZE)/$(val 3 LOCAL_RANK)/$(val 2 MASTER_ADDR)" "4/1/a1" "node-mode topology"

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
