# The FULL_STATE_DICT checkpoint of a GPT-2 run is a GPT-2 model.safetensors: HF's names and
# layouts (Conv1D weights [in, out], no lm_head.weight: it is tied to wte), F32.  It loads back
# into the task (init_weights) and into the PyTorch GPT-2 with the same outputs (logits within
# 1e-4) -- also on 2 ranks with cpu_ram_efficient_loading, where only rank 0 reads it -- and loads
# the same when saved without the "transformer." prefix, as the Hub's gpt2 is.
. "$(dirname "$0")/lib.sh"
. "$SRC/tests/transformer/checkpoint_lib.sh"
corpus
gpt2_job job.ini "fsdp.auto_wrap_policy = TRANSFORMER_BASED_WRAP" "fsdp.transformer_layer_cls_to_wrap = GPT2Block" \
    "fsdp.state_dict_type = FULL_STATE_DICT" <<EOF2
size = tiny
n_layer = 2
n_embd = 64
n_head = 4
max_length = 32
data = $T/corpus.txt
per_device_train_batch_size = 4
learning_rate = 3e-3
EOF2
run "$SHARDRUN" "$T/job.ini" --nproc-per-node 2 --set task.max_steps=6 --set task.output_dir="$T/train"
expect_rc 0 "2 ranks train 6 steps"
ck="$T/train/checkpoint-6/model.safetensors"
names=$(/usr/bin/python3 $SRC/tests/interop/read_safetensors.py "$ck" | awk '{print $1, $2, $3}')
expect_eq "$(wc -l <<<"$names")" 28 "tensors in model.safetensors (2 + 2 x 12 + 2)"
expect_in "$names" "transformer.wte.weight F32 257,64" "wte [V, C]"
expect_in "$names" "transformer.wpe.weight F32 256,64" "wpe [P, C]"
expect_in "$names" "transformer.h.1.attn.c_attn.weight F32 64,192" "c_attn is a Conv1D [C, 3C]"
expect_in "$names" "transformer.h.0.mlp.c_proj.weight F32 256,64" "mlp.c_proj is a Conv1D [4C, C]"
expect_in "$names" "transformer.ln_f.bias F32 64" "ln_f"
expect_not_in "$names" "lm_head" "lm_head.weight is tied, not saved"

# load it into the task and into torch: same logits
load_back "$ck" "$TORCH_GPT2" 4
done_checks
