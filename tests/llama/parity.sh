# Llama under FSDP matches Llama on one rank: a small model (2 blocks, 6 heads on 2 key/value heads,
# untied head, Llama 3's rope_scaling) at world size 2 under FULL_SHARD and SHARD_GRAD_OP and 4 under
# FULL_SHARD, with activation checkpointing and with forward + BACKWARD_POST prefetch, against world
# size 1 without sharding (tests/transformer/parity_lib.sh).
. "$(dirname "$0")/lib.sh"
. "$SRC/tests/transformer/parity_lib.sh"
corpus
llama_config c.json 6 2 '"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 32}'
llama_job job.ini "fsdp.auto_wrap_policy = TRANSFORMER_BASED_WRAP" "fsdp.transformer_layer_cls_to_wrap = LlamaDecoderLayer" \
    "fsdp.backward_prefetch = BACKWARD_PRE" "fsdp.state_dict_type = FULL_STATE_DICT" <<EOF2
config = $T/c.json
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
lm_parity "2:FULL_SHARD 2:SHARD_GRAD_OP 4:FULL_SHARD"
done_checks
