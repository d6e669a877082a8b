# Memory accounting of the engine: with FULL_SHARD each rank persistently holds 16 bytes per
# parameter / world size (fp32 master, gradient, two AdamW moments) plus a pool bounded by two
# units in flight whatever the depth; at world size 4 that is at most 30% of NO_SHARD's.
# Prints the table of persistent + pool bytes per strategy and world size.
. "$(dirname "$0")/lib.sh"
toy_job toy.ini "fsdp.auto_wrap_policy = TRANSFORMER_BASED_WRAP" "fsdp.transformer_layer_cls_to_wrap = MLPBlock,MixerBlock" \
    "fsdp.backward_prefetch = BACKWARD_PRE" "fsdp.forward_prefetch = true" <<EOF
dim = 32
blocks = 16
max_steps = 2
per_device_train_batch_size = 2
EOF
declare -A pers pool
measure() { # STRATEGY N [args]
    local s=$1 n=$2
    shift 2
    run "$SHARDRUN" "$T/toy.ini" --nproc-per-node "$n" --set accelerate.fsdp.sharding_strategy="$s" "$@"
    expect_rc 0 "$s at world size $n"
    P=$(result model_params)
    pers[$s$n]=$(result engine_persistent_bytes) pool[$s$n]=$(result engine_pool_bytes)
    local peak
    peak=$(result peak_mem_gb)
    /usr/bin/python3 -c "import sys; p,a,b=map(float,sys.argv[1:]); sys.exit(0 if abs(p*1e9-(a+b)) < 2 else 1)" \
        "$peak" "${pers[$s$n]}" "${pool[$s$n]}" && pass || fail "$s/$n: peak_mem_gb ($peak) = persistent + pool"
}
printf '%-14s %4s %14s %12s %14s\n' strategy ranks persistent pool "16*P/ranks"
for s in NO_SHARD SHARD_GRAD_OP FULL_SHARD; do
    for n in 1 2 4; do
        measure $s $n
        shards=$n
        [ $s = NO_SHARD ] && shards=1
        printf '%-14s %4d %14d %12d %14d\n' $s $n "${pers[$s$n]}" "${pool[$s$n]}" $((16 * P / shards))
    done
done
for s in NO_SHARD SHARD_GRAD_OP FULL_SHARD; do
    for n in 1 2 4; do
        shards=$n
        [ $s = NO_SHARD ] && shards=1
        /usr/bin/python3 -c "import sys; got,P,n=map(int,sys.argv[1:]); e=16*P/n; sys.exit(0 if abs(got-e) <= 0.05*e else 1)" \
            "${pers[$s$n]}" "$P" "$shards" && pass || fail "$s at $n ranks: persistent ${pers[$s$n]} is not within 5% of 16*$P/$shards"
    done
done
full=$((pers[FULL_SHARD4] + pool[FULL_SHARD4])) none=$((pers[NO_SHARD4] + pool[NO_SHARD4]))
echo "FULL_SHARD at 4 ranks: $full bytes = $((100 * full / none))% of NO_SHARD's $none"
[ $((100 * full)) -le $((30 * none)) ] && pass || fail "FULL_SHARD at 4 ranks holds $full bytes, more than 30% of NO_SHARD's $none"

# the FULL_SHARD pool does not grow with depth (at most two units gathered); SHARD_GRAD_OP's does
measure FULL_SHARD 4 --set task.blocks=32
deep_full=${pool[FULL_SHARD4]}
measure FULL_SHARD 4
expect_eq "$deep_full" "${pool[FULL_SHARD4]}" "FULL_SHARD pool is the same with 32 blocks as with 16"
measure SHARD_GRAD_OP 4 --set task.blocks=32
deep_sgo=${pool[SHARD_GRAD_OP4]}
measure SHARD_GRAD_OP 4
[ "$deep_sgo" -gt "${pool[SHARD_GRAD_OP4]}" ] && pass || fail "SHARD_GRAD_OP keeps every unit gathered: its pool grows with depth"

done_checks
