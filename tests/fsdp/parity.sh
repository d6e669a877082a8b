# Loss parity of the FSDP engine: the toy model trained 20 steps on a global batch of 12 gives the
# same per-step loss, grad norm (clipping active) and final parameters (every tensor of the FULL
# checkpoint each run ends with) at world size 2, 3 and 4,
# under every sharding strategy and prefetch mode, as world size 1 without sharding (fp32, rtol
# 1e-5).  Also: gradient accumulation, replicated training without ACCELERATE_USE_FSDP, activation
# checkpointing, FSDP version 2, HYBRID_SHARD on 2 nodes x 2 ranks, bf16 and fp16 (with an
# injected overflow that every rank skips).
. "$(dirname "$0")/lib.sh"
CMP="/usr/bin/python3 $SRC/tests/fsdp/compare_logs.py"
RTOL=1e-5
cat >"$T/task.part" <<EOF
samples = 240
max_steps = 20
learning_rate = 1e-2
warmup_steps = 3
weight_decay = 0.1
max_grad_norm = 0.5
logging_steps = 1
EOF
# every run ends with a FULL checkpoint: the final parameters are compared tensor by tensor
W="fsdp.auto_wrap_policy = TRANSFORMER_BASED_WRAP"
C="fsdp.transformer_layer_cls_to_wrap = MLPBlock,MixerBlock"
toy_job toy.ini "$W" "$C" "fsdp.state_dict_type = FULL_STATE_DICT" <"$T/task.part"
toy_job v2.ini "fsdp.version = 2" "$W" "$C" "fsdp.state_dict_type = FULL_STATE_DICT" <"$T/task.part"
toy_job ddp.ini "use_fsdp = false" <"$T/task.part"

# train NAME NPROC BATCH ACCUM [shardrun args...]: a run whose log lands in $T/NAME/train_log.jsonl
# (the job file is $JOB, default toy.ini)
train() {
    local name=$1 n=$2 bs=$3 acc=$4
    shift 4
    run "$SHARDRUN" "$T/${JOB:-toy.ini}" --nproc-per-node "$n" --set task.per_device_train_batch_size="$bs" \
        --set task.gradient_accumulation_steps="$acc" --set task.output_dir="$T/$name" "$@"
    expect_rc 0 "$name trains"
}
# same NAME [RTOL] [FIELDS]: NAME's log matches the baseline's
same() {
    local r
    r=$($CMP "$T/$1/train_log.jsonl" "$T/base/train_log.jsonl" "${2:-$RTOL}" ${3:-}) && pass || fail "$1 vs world size 1: $r"
    printf '  %-34s %s\n' "$1" "$(head -1 <<<"$r")"
}
# same_params NAME: the final parameters' sum and sum of squares match the baseline's
same_params() {
    local s q
    s=$(result param_sum) q=$(result param_sumsq)
    /usr/bin/python3 -c "import sys; s,q,S,Q=map(float,sys.argv[1:]); sys.exit(0 if abs(s-S)<=1e-4*abs(S) and abs(q-Q)<=1e-5*abs(Q) else 1)" \
        "$s" "$q" "$base_sum" "$base_sumsq" && pass || fail "$1: final parameters differ: sum $s sumsq $q vs $base_sum $base_sumsq"
}

# world size 1, no sharding: the reference
train base 1 12 1 --set accelerate.fsdp.sharding_strategy=NO_SHARD
base_sum=$(result param_sum) base_sumsq=$(result param_sumsq)
expect_in "$out" '"world_size": 1' "baseline ran on one rank"
clipped=$(/usr/bin/python3 -c "import json,sys; print(sum(json.loads(l)['grad_norm'] > 0.5 for l in open(sys.argv[1])))" "$T/base/train_log.jsonl")
[ "$clipped" -ge 5 ] && pass || fail "clipping is exercised: only $clipped of 20 steps had grad_norm > max_grad_norm"
falling=$(/usr/bin/python3 -c "import json,sys; L=[json.loads(l)['loss'] for l in open(sys.argv[1])]; print(int(L[-1] < L[0] - 0.05))" "$T/base/train_log.jsonl")
expect_eq "$falling" 1 "the loss falls over 20 steps"

echo "per-step loss and grad norm against world size 1 (max relative difference):"
strategies="FULL_SHARD SHARD_GRAD_OP NO_SHARD"
prefetches="BACKWARD_PRE BACKWARD_POST NO_PREFETCH"
for n in 2 3 4; do
    bs=$((12 / n))
    for s in $strategies; do
        for p in $prefetches; do
            for fp in false true; do
                name="ws$n-$s-$p-fwd$fp"
                train "$name" "$n" "$bs" 1 --set accelerate.fsdp.sharding_strategy=$s \
                    --set accelerate.fsdp.backward_prefetch=$p --set accelerate.fsdp.forward_prefetch=$fp
                expect_in "$out" "\"world_size\": $n" "$name: world size"
                expect_in "$out" "\"sharding_strategy\": \"$s\"" "$name: strategy"
                same "$name"
                same_params "$name"
            done
        done
    done
done

# FSDP version 2: reshard_after_forward true/false
for r in true false; do
    JOB=v2.ini train "v2-reshard-$r" 4 3 1 --set accelerate.fsdp.reshard_after_forward=$r
    same "v2-reshard-$r"
done

# FSDP_OFFLOAD_PARAMS: shards in host memory and staged to the device for every gather and
# reduction; on a CPU that path is forced with SHARDRUN_DEBUG_OFFLOAD_STAGING=1
export SHARDRUN_DEBUG_OFFLOAD_STAGING=1
for s in FULL_SHARD NO_SHARD; do
    train "offload-$s" 2 6 1 --set accelerate.fsdp.offload_params=true --set accelerate.fsdp.sharding_strategy=$s
    expect_in "$out" "shards offloaded to host memory" "offload-$s: the staging path ran"
    same "offload-$s"
    same_params "offload-$s"
done
train offload-bf16 2 6 1 --set accelerate.fsdp.offload_params=true --set accelerate.mixed_precision=bf16
same offload-bf16 2e-2 loss
unset SHARDRUN_DEBUG_OFFLOAD_STAGING
train offload-cpu 2 6 1 --set accelerate.fsdp.offload_params=true
expect_in "$err" "FSDP_OFFLOAD_PARAMS=true: the device is the CPU, so shards and optimizer state already live in host memory; nothing to offload" \
    "offload on a CPU says so"

# gradient accumulation: 4 micro-batches of 3 == 1 of 12; 2 ranks x 3 micro-batches of 2
train accum-1x3x4 1 3 4
same accum-1x3x4
train accum-2x2x3 2 2 3 --set accelerate.fsdp.sharding_strategy=FULL_SHARD
same accum-2x2x3

# without ACCELERATE_USE_FSDP: replicated, all-reduced gradients, same losses
JOB=ddp.ini train ddp-ws2 2 6 1
expect_in "$out" '"fsdp_enabled": false' "use_fsdp=false: results say fsdp_enabled false"
expect_in "$out" "replicated on 2 ranks (ACCELERATE_USE_FSDP is not true)" "use_fsdp=false: the log says replicated"
same ddp-ws2
train fsdp-ws2 2 6 1
expect_in "$out" '"fsdp_enabled": true' "FSDP run: fsdp_enabled true"

# activation checkpointing: the same losses, and the task was asked to recompute
train ckpt-ws2 2 6 1 --set accelerate.fsdp.activation_checkpointing=true
same ckpt-ws2
recomputes=$(result toy_recompute_calls)
[ "${recomputes:-0}" -gt 0 ] && pass || fail "activation checkpointing: the task recomputed ${recomputes:-0} modules"

# HYBRID_SHARD and HYBRID_SHARD_ZERO2: shard within each node (2 ranks), replicate across 2 nodes
export SHARDRUN_RDZV_TOKEN=parity-test
for s in HYBRID_SHARD HYBRID_SHARD_ZERO2; do
    P=$(free_port_pair)
    for node in 0 1; do
        "$SHARDRUN" "$T/toy.ini" --nnodes 2 --node-rank $node --nproc-per-node 2 --master-addr 127.0.0.1 --master-port "$P" \
            --set task.per_device_train_batch_size=3 --set task.output_dir="$T/$s" \
            --set accelerate.fsdp.sharding_strategy=$s --set accelerate.fsdp.backward_prefetch=BACKWARD_PRE \
            >"$T/$s.n$node.out" 2>"$T/$s.n$node.err" &
        pids[$node]=$!
    done
    wait "${pids[0]}"; r0=$?
    wait "${pids[1]}"; r1=$?
    expect_eq "$r0/$r1" "0/0" "$s on 2 nodes x 2 ($(tail -n 3 "$T/$s.n0.err" "$T/$s.n1.err"))"
    expect_in "$(cat "$T/$s.n0.out")" "shard group 2, replicas 2" "$s: shards within a node, replicas across nodes"
    same "$s"
done
unset SHARDRUN_RDZV_TOKEN

# bf16: parameters gathered and computed in bf16, gradients reduced in bf16, fp32 master weights.
# Stated tolerance: every step's loss within 2% of fp32's.
train bf16-ws2 2 6 1 --set accelerate.mixed_precision=bf16
expect_in "$out" "bf16 compute" "bf16 run computes in bf16"
same bf16-ws2 2e-2 loss
identical=$($CMP "$T/bf16-ws2/train_log.jsonl" "$T/base/train_log.jsonl" 0 loss >/dev/null && echo yes || echo no)
expect_eq "$identical" no "bf16 really differs from fp32 (the run is not secretly fp32)"

# fp16 with dynamic loss scaling; rank 1 injects an inf gradient at step 5: every rank skips
# that step (and only that one), the scale halves, and training goes on
train fp16-overflow 2 6 1 --set accelerate.mixed_precision=fp16 --set task.inject_overflow_step=5 \
    --set task.inject_overflow_rank=1
for r in 0 1; do
    expect_in "$(grep "\"rank\": $r," <<<"$out")" '"skipped_steps": 1' "fp16: rank $r skipped exactly one step"
done
expect_in "$out" "step 6/20  loss" "fp16: step 6 logged"
expect_in "$(grep '^\[rank0\]: step 6/20' <<<"$out")" "(fp16 overflow: step skipped)" "fp16: the log names the skipped step"
scales=$(/usr/bin/python3 -c "import json,sys; print(' '.join('%g' % json.loads(l)['loss_scale'] for l in open(sys.argv[1])))" "$T/fp16-overflow/train_log.jsonl")
expect_in "$scales" "65536 65536 65536 65536 65536 65536 32768" "fp16: scale 65536 until the overflow, then halved"
same fp16-overflow 2e-2 loss

# the final parameters of every fp32 run, tensor by tensor, against world size 1's
echo "final parameters against world size 1 (FULL checkpoints, every tensor):"
fp32_runs=$(cd "$T" && ls -d */checkpoint-20 | grep -v -e '^base/' -e bf16 -e fp16 | sed 's|$|/model.safetensors|')
expect_eq "$(wc -w <<<"$fp32_runs")" 66 "every fp32 run saved its final parameters"
r=$(cd "$T" && /usr/bin/python3 "$SRC/tests/fsdp/compare_params.py" 1e-5 1e-6 base/checkpoint-20/model.safetensors $fp32_runs)
rc=$?
echo "$r" | awk '{print $NF}' | sort -g | tail -1 | sed 's/^/  largest relative difference of any parameter in any run: /'
[ $rc -eq 0 ] && pass || fail "final parameters differ from world size 1: $(grep MISMATCH <<<"$r" | head -5)"

done_checks
