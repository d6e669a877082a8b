# The reference job's environment, byte for byte, for 1 node x 4 and 2 nodes x 2: from the dry
# run and from the real workers.  The expectation is written out by hand from what torchrun and
# accelerate launch write (docs/environment.md), not generated from shardrun's tables.
. "$(dirname "$0")/lib.sh"
REF=$SRC/tests/jobs/reference.ini

fsdp_block() {
    cat <<'X'
ACCELERATE_MIXED_PRECISION=fp16
ACCELERATE_USE_FSDP=true
FSDP_ACTIVATION_CHECKPOINTING=false
FSDP_AUTO_WRAP_POLICY=TRANSFORMER_BASED_WRAP
FSDP_BACKWARD_PREFETCH=BACKWARD_PRE
FSDP_CPU_RAM_EFFICIENT_LOADING=true
FSDP_FORWARD_PREFETCH=false
FSDP_OFFLOAD_PARAMS=false
FSDP_SHARDING_STRATEGY=FULL_SHARD
FSDP_STATE_DICT_TYPE=SHARDED_STATE_DICT
FSDP_SYNC_MODULE_STATES=true
FSDP_TRANSFORMER_CLS_TO_WRAP=GPT2Block
FSDP_USE_ORIG_PARAMS=true
FSDP_VERSION=1
X
}

# expected RANK LOCAL_RANK NODE NNODES NPROC MASTER_ADDR
expected() {
    {
        fsdp_block
        cat <<X
GROUP_RANK=$3
GROUP_WORLD_SIZE=$4
LOCAL_RANK=$2
LOCAL_WORLD_SIZE=$5
MASTER_ADDR=$6
MASTER_PORT=29500
NODE_RANK=$3
OMP_NUM_THREADS=1
RANK=$1
ROLE_NAME=default
ROLE_RANK=$1
ROLE_WORLD_SIZE=$(($4 * $5))
TORCHELASTIC_MAX_RESTARTS=0
TORCHELASTIC_RESTART_COUNT=0
TORCHELASTIC_RUN_ID=none
TORCH_NCCL_ASYNC_ERROR_HANDLING=1
WORLD_SIZE=$(($4 * $5))
X
    } | LC_ALL=C sort
}

# 1 node x 4: dry run for every rank
for r in 0 1 2 3; do
    expected $r $r 0 1 4 127.0.0.1 >"$T/want$r"
    run "$SHARDRUN" env "$REF" --rank $r
    expect_rc 0 "shardrun env --rank $r"
    printf '%s\n' "$out" >"$T/got$r"
    expect_same_file "$T/got$r" "$T/want$r" "1x4 dry run, rank $r"
done

# 1 node x 4: what the real workers receive (exec:/usr/bin/env in a clean environment)
run env -i PATH=/usr/bin:/bin "$SHARDRUN" "$REF"
expect_rc 0 "1x4 run of exec:/usr/bin/env"
# SHARDRUN_JOB_ID (set by shardrun, not a plugin: one launch of the job) is the same for every rank
expect_eq "$(grep -o 'SHARDRUN_JOB_ID=.*' <<<"$out" | sort -u | wc -l)" "1" "1x4: every rank has the same SHARDRUN_JOB_ID"
grep -q '^\[rank0\]: SHARDRUN_JOB_ID=[0-9a-f]\{16\}$' <<<"$out" && pass || fail "1x4: SHARDRUN_JOB_ID is 16 hex digits"
for r in 0 1 2 3; do
    grep "^\[rank$r\]: " <<<"$out" | sed "s/^\[rank$r\]: //" | grep -v '^PATH=\|^SHARDRUN_JOB_ID=' | LC_ALL=C sort >"$T/real$r"
    expect_same_file "$T/real$r" "$T/want$r" "1x4 worker environment, rank $r"
done

# 2 nodes x 2 (node_rank given): every rank, from the agent of its node
for r in 0 1 2 3; do
    node=$((r / 2))
    expected $r $((r % 2)) $node 2 2 10.1.2.3 >"$T/want$r"
    run "$SHARDRUN" env "$REF" --nnodes 2 --node-rank $node --nproc-per-node 2 --master-addr 10.1.2.3 --rank $r
    expect_rc 0 "2x2 dry run, rank $r"
    printf '%s\n' "$out" >"$T/got$r"
    expect_same_file "$T/got$r" "$T/want$r" "2x2 dry run, rank $r"
done
# both nodes' agents for real, on loopback (each worker prints its environment)
P=$(free_port_pair)
export SHARDRUN_RDZV_TOKEN=env-reference-test
for node in 0 1; do
    env -i "PATH=/usr/bin:/bin" "SHARDRUN_RDZV_TOKEN=$SHARDRUN_RDZV_TOKEN" "$SHARDRUN" "$REF" --nnodes 2 --node-rank $node \
        --nproc-per-node 2 --master-addr 127.0.0.1 --master-port "$P" >"$T/node$node.out" 2>"$T/node$node.err" &
    pids[$node]=$!
done
wait "${pids[0]}"; rc0=$?
wait "${pids[1]}"; rc1=$?
expect_eq "$rc0/$rc1" "0/0" "2x2 run on two agents ($(cat "$T/node0.err" "$T/node1.err"))"
for r in 0 1 2 3; do
    node=$((r / 2))
    expected $r $((r % 2)) $node 2 2 127.0.0.1 | sed "s/^MASTER_PORT=29500$/MASTER_PORT=$P/" >"$T/want$r"
    grep "^\[rank$r\]: " "$T/node$node.out" | sed "s/^\[rank$r\]: //" | grep -v '^PATH=\|^SHARDRUN_RDZV_TOKEN=\|^SHARDRUN_JOB_ID=' |
        LC_ALL=C sort >"$T/real$r"
    expect_same_file "$T/real$r" "$T/want$r" "2x2 worker environment, rank $r"
done
expect_eq "$(cat "$T/node0.out" "$T/node1.out" | grep -o 'SHARDRUN_JOB_ID=.*' | sort -u | wc -l)" "1" "2x2: both nodes' ranks share one SHARDRUN_JOB_ID (node 0's)"
expect_not_in "$(cat "$T/node1.out")" "[rank0]" "node 1 starts only ranks 2 and 3"
unset SHARDRUN_RDZV_TOKEN

# nothing else on stdout, and an explicit OMP_NUM_THREADS is kept
run env OMP_NUM_THREADS=3 "$SHARDRUN" env "$REF" --rank 1
expect_not_in "$out" "OMP_NUM_THREADS" "an exported OMP_NUM_THREADS is left alone"
expect_eq "$(grep -vc '^[A-Z_][A-Z0-9_]*=' <<<"$out")" "0" "every stdout line is NAME=VALUE"
done_checks
