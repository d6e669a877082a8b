# A LoRA fine-tune under FSDP matches one on one rank: GPT-2 tiny (2 blocks) with adapters on all
# four linear layers (r 4), 12 steps on a global batch of 8, trained on world size 1 without
# sharding, then on 2 ranks under FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, and FULL_SHARD with
# activation checkpointing (the recompute path: the MLP's down projection adapter input is
# recomputed too), on 4 ranks under FULL_SHARD and SHARD_GRAD_OP, and under HYBRID_SHARD on 2 nodes
# x 2 ranks (two agents on loopback: sharded within a node, replicated across).  Each
# GPT2Block unit mixes frozen base weights and trainable adapters.  The same per-step loss and grad
# norm (rtol 1e-5), the same final parameters, and in every run the base weights of the checkpoint
# are the initial ones bit for bit.
. "$(dirname "$0")/lib.sh"
corpus
lora_base "$T/base.safetensors"
gpt2_job job.ini "fsdp.auto_wrap_policy = TRANSFORMER_BASED_WRAP" "fsdp.transformer_layer_cls_to_wrap = GPT2Block" \
    "fsdp.state_dict_type = FULL_STATE_DICT" <<EOF2
$LORA_GPT2_TASK
max_steps = 12
learning_rate = 1e-2
warmup_steps = 2
weight_decay = 0.1
max_grad_norm = 0.5
logging_steps = 1
lora_r = 4
lora_alpha = 16
lora_target_modules = c_attn, c_proj, c_fc
EOF2
train() { # NAME NPROC [shardrun args...]   (NAME hybrid-*: 2 agents of NPROC / 2 ranks each)
    local name=$1 n=$2 P pid
    shift 2
    if [[ $name == hybrid-* ]]; then
        P=$(free_port_pair)
        SHARDRUN_RDZV_TOKEN=lora-parity-$$ "$SHARDRUN" "$T/job.ini" --nnodes 2 --node-rank 1 --nproc-per-node $((n / 2)) \
            --master-addr 127.0.0.1 --master-port "$P" --set task.per_device_train_batch_size=$((8 / n)) \
            --set task.output_dir="$T/$name" "$@" >"$T/$name.n1.out" 2>"$T/$name.n1.err" &
        pid=$!
        run env SHARDRUN_RDZV_TOKEN=lora-parity-$$ "$SHARDRUN" "$T/job.ini" --nnodes 2 --node-rank 0 \
            --nproc-per-node $((n / 2)) --master-addr 127.0.0.1 --master-port "$P" \
            --set task.per_device_train_batch_size=$((8 / n)) --set task.output_dir="$T/$name" "$@"
        wait "$pid" || { rc=1 err="$err; node 1: $(tail -n 3 "$T/$name.n1.err")"; }
        expect_in "$out" "shard group 2, replicas 2" "$name: shards within a node, replicas across nodes"
    else
        run "$SHARDRUN" "$T/job.ini" --nproc-per-node "$n" --set task.per_device_train_batch_size=$((8 / n)) \
            --set task.output_dir="$T/$name" "$@"
    fi
    expect_rc 0 "$name trains"
    r=$(torch_py -c "
import json, struct, sys
import numpy as np  # numpy only: no torch to import
def load(path):
    raw = open(path, 'rb').read()
    n = struct.unpack('<Q', raw[:8])[0]
    h = json.loads(raw[8:8 + n]); h.pop('__metadata__', None)
    return {k: np.frombuffer(raw[8 + n + v['data_offsets'][0]:8 + n + v['data_offsets'][1]], '<u4') for k, v in h.items()}
base, ck = load('$T/base.safetensors'), load('$T/$name/checkpoint-12/model.safetensors')
moved = [k for k in base if not np.array_equal(base[k], ck[k])]
print('base unchanged' if not moved else f'{len(moved)} base tensors changed: {moved[:3]}')
sys.exit(1 if moved else 0)" 2>&1) && pass || fail "$name: $r"
}
train base 1 --set accelerate.fsdp.sharding_strategy=NO_SHARD
falling=$(torch_py -c "import json,sys; L=[json.loads(l)['loss'] for l in open(sys.argv[1])]; print(int(L[-1] < L[0] - 0.3), L[0], L[-1])" "$T/base/train_log.jsonl")
expect_eq "${falling%% *}" 1 "the loss falls over 12 steps with the adapters alone (first, last: ${falling#* })"
for v in "ws2-fs:2:FULL_SHARD" "ws2-sgo:2:SHARD_GRAD_OP" "ws2-ns:2:NO_SHARD" \
    "ws2-ckpt:2:FULL_SHARD:--set accelerate.fsdp.activation_checkpointing=true" "ws4-fs:4:FULL_SHARD" \
    "ws4-sgo:4:SHARD_GRAD_OP" "hybrid-2x2:4:HYBRID_SHARD"; do
    IFS=: read -r name n strategy extra <<<"$v"
    # shellcheck disable=SC2086
    train "$name" "$n" --set accelerate.fsdp.sharding_strategy="$strategy" $extra
    r=$($CMP "$T/$name/train_log.jsonl" "$T/base/train_log.jsonl" 1e-5) && pass || fail "$name vs world size 1: $r"
    p=$($PCMP 1e-5 1e-6 "$T/base/checkpoint-12/model.safetensors" "$T/$name/checkpoint-12/model.safetensors") && pass ||
        fail "$name: final parameters differ from world size 1's: $p"
    printf '  %-14s %s; %s\n' "$name" "$(head -1 <<<"$r")" "$(tail -1 <<<"$p")"
done
done_checks
