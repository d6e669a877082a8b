# BLOOM under FSDP matches BLOOM on one rank: the tiny model (2 blocks, 6 heads: ALiBi's extra-head
# slopes) trained 12 steps on a global batch of 8 gives the same per-step loss and grad norm
# (rtol 1e-5) and the same final parameters (every tensor of the FULL checkpoint) at world size 2
# -- FULL_SHARD, SHARD_GRAD_OP, activation checkpointing, forward + BACKWARD_POST prefetch -- and 4
# (FULL_SHARD) as world size 1 without sharding; each rank trains on its own samples, together on
# world size 1's; checkpointing holds 1 block's intermediates instead of 2.  Samples are never
# padded here (every paragraph is longer than max_length, 96: two attention blocks of 64 queries),
# since the loss is a mean per micro-batch, as HF's Trainer computes it.
. "$(dirname "$0")/lib.sh"
CMP="/usr/bin/python3 $SRC/tests/fsdp/compare_logs.py"
PCMP="/usr/bin/python3 $SRC/tests/fsdp/compare_params.py"
corpus
bloom_job b.ini "fsdp.auto_wrap_policy = TRANSFORMER_BASED_WRAP" "fsdp.transformer_layer_cls_to_wrap = BloomBlock" \
    "fsdp.backward_prefetch = BACKWARD_PRE" "fsdp.state_dict_type = FULL_STATE_DICT" <<EOF2
size = tiny
n_layer = 2
hidden_size = 48
n_head = 6
max_length = 96
min_chars = 100
data = $T/corpus.txt
max_steps = 12
learning_rate = 3e-3
warmup_steps = 2
weight_decay = 0.1
max_grad_norm = 0.5
logging_steps = 1
EOF2

train() { # NAME NPROC BATCH [shardrun args...]
    local name=$1 n=$2 bs=$3
    shift 3
    run "$SHARDRUN" "$T/b.ini" --nproc-per-node "$n" --set task.per_device_train_batch_size="$bs" \
        --set task.output_dir="$T/$name" "$@"
    expect_rc 0 "$name trains"
}
same() {
    local r p
    r=$($CMP "$T/$1/train_log.jsonl" "$T/base/train_log.jsonl" 1e-5) && pass || fail "$1 vs world size 1: $r"
    p=$($PCMP 1e-5 1e-6 "$T/base/checkpoint-12/model.safetensors" "$T/$1/checkpoint-12/model.safetensors") && pass ||
        fail "$1: final parameters differ from world size 1's: $p"
    printf '  %-30s %s; %s\n' "$1" "$(head -1 <<<"$r")" "$(tail -1 <<<"$p")"
}
# sums_of OUT: each rank's sum of the sample indices it trained on
sums_of() { grep -o '"sample_index_sum": [0-9]*' <<<"$1" | sed 's/.*: //'; }

train base 1 8 --set accelerate.fsdp.sharding_strategy=NO_SHARD
expect_in "$out" '"world_size": 1' "baseline ran on one rank"
base_sum=$(sums_of "$out")
falling=$(/usr/bin/python3 -c "import json,sys; L=[json.loads(l)['loss'] for l in open(sys.argv[1])]; print(int(L[-1] < L[0] - 0.5), L[0], L[-1])" "$T/base/train_log.jsonl")
expect_eq "${falling%% *}" 1 "the loss falls over 12 steps (first, last: ${falling#* })"
echo "per-step loss and grad norm, and final parameters, against world size 1:"
for run_ in 2:FULL_SHARD 2:SHARD_GRAD_OP 4:FULL_SHARD; do
    n=${run_%%:*} s=${run_#*:}
    train "ws$n-$s" "$n" $((8 / n)) --set accelerate.fsdp.sharding_strategy=$s
    expect_in "$out" "\"world_size\": $n" "ws$n-$s world size"
    # each data-parallel rank reads its own part of the data; together they are world size 1's
    sums=$(sums_of "$out")
    expect_eq "$(sort -u <<<"$sums" | wc -l)" "$n" "ws$n-$s: every rank trained on other samples ($(tr '\n' ' ' <<<"$sums"))"
    expect_eq "$(awk '{s+=$1} END {print s}' <<<"$sums")" "$base_sum" "ws$n-$s: the ranks' samples together are world size 1's"
    expect_eq "$(grep -o '"samples_read": [0-9]*' <<<"$out" | sed 's/.*: //' | sort -u)" "$((96 / n))" "ws$n-$s: 96 / $n samples per rank"
    same "ws$n-$s"
done
buffers() { grep -o '"block_activation_buffers_peak": [0-9]*' <<<"$out" | sed 's/.*: //' | sort -u; }
expect_eq "$(buffers)" 2 "without activation checkpointing every block keeps its intermediates (2 blocks)"
train ws2-ckpt 2 4 --set accelerate.fsdp.activation_checkpointing=true
same ws2-ckpt
expect_eq "$(buffers)" 1 "with activation checkpointing one block's intermediates at a time"
train ws2-prefetch 2 4 --set accelerate.fsdp.forward_prefetch=true --set accelerate.fsdp.backward_prefetch=BACKWARD_POST
same ws2-prefetch
done_checks
