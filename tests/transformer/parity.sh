# A decoder task under FSDP matches itself on one rank:
#   bash tests/transformer/parity.sh gpt2|bloom|llama
# A tiny model (2 blocks) trained 12 steps on a global batch of 8 (max_length 96 with paragraphs
# longer than that, clipping active, FULL checkpoints) on world size 1 without sharding is the
# baseline; each N:STRATEGY of the family's runs then trains the same and checks the same per-step
# loss and grad norm (rtol 1e-5) and the same final parameters (every tensor of the FULL checkpoint),
# that each data-parallel rank reads its own part of the data and together world size 1's; then
# activation checkpointing (one block's intermediates at a time instead of 2) and forward +
# BACKWARD_POST prefetch on 2 ranks.  Samples are never padded: the loss is a mean per micro-batch,
# as HF's Trainer computes it, so padding would weigh tokens differently per world size.
#   gpt2   4 heads; world size 2 and 4 under FULL_SHARD and SHARD_GRAD_OP
#   bloom  6 heads (ALiBi's extra-head slopes), hidden 48; 2 under FULL_SHARD and SHARD_GRAD_OP, 4
#          under FULL_SHARD
#   llama  6 heads on 2 key/value heads, untied head, Llama 3's rope_scaling; 2 under FULL_SHARD and
#          SHARD_GRAD_OP, 4 under FULL_SHARD
. "$(dirname "$0")/family_lib.sh" "$@"
corpus
case $family in
gpt2)
    cls=GPT2Block runs="2:FULL_SHARD 2:SHARD_GRAD_OP 4:FULL_SHARD 4:SHARD_GRAD_OP"
    model="size = tiny
n_layer = 2
n_embd = 64
n_head = 4"
    ;;
bloom)
    cls=BloomBlock runs="2:FULL_SHARD 2:SHARD_GRAD_OP 4:FULL_SHARD"
    model="size = tiny
n_layer = 2
hidden_size = 48
n_head = 6"
    ;;
llama)
    cls=LlamaDecoderLayer runs="2:FULL_SHARD 2:SHARD_GRAD_OP 4:FULL_SHARD"
    llama_config c.json 6 2 '"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 32}'
    model="config = $T/c.json"
    ;;
esac
${family}_job job.ini "fsdp.auto_wrap_policy = TRANSFORMER_BASED_WRAP" "fsdp.transformer_layer_cls_to_wrap = $cls" \
    "fsdp.backward_prefetch = BACKWARD_PRE" "fsdp.state_dict_type = FULL_STATE_DICT" <<EOF2
$model
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
    run "$SHARDRUN" "$T/job.ini" --nproc-per-node "$n" --set task.per_device_train_batch_size="$bs" \
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
buffers() { grep -o '"block_activation_buffers_peak": [0-9]*' <<<"$out" | sed 's/.*: //' | sort -u; }

train base 1 8 --set accelerate.fsdp.sharding_strategy=NO_SHARD
expect_in "$out" '"world_size": 1' "baseline ran on one rank"
base_sum=$(sums_of "$out")
falling=$(torch_py -c "import json,sys; L=[json.loads(l)['loss'] for l in open(sys.argv[1])]; print(int(L[-1] < L[0] - 0.5), L[0], L[-1])" "$T/base/train_log.jsonl")
expect_eq "${falling%% *}" 1 "the loss falls over 12 steps (first, last: ${falling#* })"
echo "per-step loss and grad norm, and final parameters, against world size 1:"
for run_ in $runs; do
    n=${run_%%:*} s=${run_#*:}
    train "ws$n-$s" "$n" $((8 / n)) --set accelerate.fsdp.sharding_strategy="$s"
    expect_in "$out" "\"world_size\": $n" "ws$n-$s world size"
    # each data-parallel rank reads its own part of the data: the parts differ, and together they
    # are the samples world size 1 trained on (12 steps x 8, no sample twice in an epoch)
    sums=$(sums_of "$out")
    expect_eq "$(sort -u <<<"$sums" | wc -l)" "$n" "ws$n-$s: every rank trained on other samples ($(tr '\n' ' ' <<<"$sums"))"
    expect_eq "$(awk '{s+=$1} END {print s}' <<<"$sums")" "$base_sum" "ws$n-$s: the ranks' samples together are world size 1's"
    expect_eq "$(grep -o '"samples_read": [0-9]*' <<<"$out" | sed 's/.*: //' | sort -u)" "$((96 / n))" "ws$n-$s: 96 / $n samples per rank"
    same "ws$n-$s"
done
train ws2-nockpt 2 4
expect_eq "$(buffers)" 2 "without activation checkpointing every block keeps its intermediates (2 blocks)"
train ws2-ckpt 2 4 --set accelerate.fsdp.activation_checkpointing=true
same ws2-ckpt
expect_eq "$(buffers)" 1 "with activation checkpointing one block's intermediates at a time"
train ws2-prefetch 2 4 --set accelerate.fsdp.forward_prefetch=true --set accelerate.fsdp.backward_prefetch=BACKWARD_POST
same ws2-prefetch
done_checks
