# The FULL_STATE_DICT checkpoint of a decoder task is the Hub's model.safetensors of its family:
#   bash tests/transformer/checkpoint.sh gpt2|bloom|llama
# 2 ranks train a small model 6 steps; the checkpoint has exactly HF's names, layouts and shapes, F32,
# and no lm_head.weight when the head is tied to the embeddings (the family's lines below).  It loads
# back into the task (init_weights; one step at learning rate 0 dumps the first micro-batch) and into
# the family's PyTorch reference with the same outputs: the task's logits and loss within 1e-4 of the
# reference's float64 ones, and the reference's own float32 logits within 1e-4 of the task's; on 2
# ranks with cpu_ram_efficient_loading only rank 0 reads the file (all its tensor bytes), and rank 0's
# first micro-batch, computed from the broadcast weights, agrees with torch too.
#   gpt2   the tiny model (2 blocks, 4 heads, 64 channels) from the task's initialisers: Conv1D weights
#          [in, out], lm_head tied to wte; it loads the same when saved without the "transformer."
#          prefix, as the Hub's gpt2 is.
#   bloom  2 blocks, 6 heads, hidden 48, from the PyTorch BLOOM's random weights (attention scores of
#          order 1, so a q/k/v layout slip on saving would show): nn.Linear weights [out, in],
#          query_key_value [3C, C] laid out per head, lm_head tied to word_embeddings; without the
#          prefix too, as the Hub's bloom files are.
#   llama  6 heads on 2 key/value heads, Llama 3's rope_scaling, from the PyTorch Llama's random
#          weights, with an untied lm_head and with tie_word_embeddings (lm_head.weight neither
#          declared nor saved); the 2 ranks under FULL_SHARD log the losses and gradient norms
#          (within 1e-5) and end on the parameters (within 1e-4) of 1 rank without sharding on the
#          same global batch.
. "$(dirname "$0")/family_lib.sh" "$@"
corpus

# Each family: its cases and `setup CASE`, which sets `label`, `ref` (the reference's command) and
# `refargs` (the model's flags for `$ref check` and `$ref logits`), `init` (the flags of `$ref init`
# after the weights' file; none: the task's own initialisers), `model` (the job's model lines), `bs`
# (the micro-batch of the 2-rank run), `want` (the tensor count and how it adds up), `has` and `lacks`
# ("TEXT|WHAT": a line of the checkpoint's names that must hold TEXT, that none may hold), `one_rank`
# (1: compare the 2-rank run with 1 rank) and `heads` (a line the 2-rank run must print).
case $family in
gpt2)
    cls=GPT2Block cases=(tiny) prefixed=1
    setup() {
        label=gpt2 ref=$TORCH_GPT2 refargs=(--n_head 4) init=() bs=4 one_rank=0 heads=""
        model="size = tiny
n_layer = 2
n_embd = 64
n_head = 4
per_device_train_batch_size = 4"
        want="28 2 + 2 x 12 + 2"
        has=("transformer.wte.weight F32 257,64|wte [V, C]"
            "transformer.wpe.weight F32 256,64|wpe [P, C]"
            "transformer.h.1.attn.c_attn.weight F32 64,192|c_attn is a Conv1D [C, 3C]"
            "transformer.h.0.mlp.c_proj.weight F32 256,64|mlp.c_proj is a Conv1D [4C, C]"
            "transformer.ln_f.bias F32 64|ln_f")
        lacks=("lm_head|lm_head.weight is tied, not saved")
    }
    ;;
bloom)
    cls=BloomBlock cases=(h6) prefixed=1
    setup() {
        label=bloom ref=$TORCH_BLOOM refargs=(--n_head 6) bs=4 one_rank=0 heads=""
        init=(--n_layer 2 --n_head 6 --hidden_size 48 --vocab_size 257 --seed 11)
        model="size = tiny
n_layer = 2
hidden_size = 48
n_head = 6
per_device_train_batch_size = 4"
        want="29 3 + 2 x 12 + 2"
        has=("transformer.word_embeddings.weight F32 257,48|word_embeddings [V, C] (the byte tokenizer's 257)"
            "transformer.word_embeddings_layernorm.weight F32 48|word_embeddings_layernorm"
            "transformer.h.1.self_attention.query_key_value.weight F32 144,48|query_key_value [3C, C]"
            "transformer.h.1.self_attention.query_key_value.bias F32 144|query_key_value bias [3C]"
            "transformer.h.0.mlp.dense_h_to_4h.weight F32 192,48|dense_h_to_4h [4C, C]"
            "transformer.h.0.mlp.dense_4h_to_h.weight F32 48,192|dense_4h_to_h [C, 4C]"
            "transformer.h.0.post_attention_layernorm.bias F32 48|post_attention_layernorm"
            "transformer.ln_f.bias F32 48|ln_f")
        lacks=("lm_head|lm_head.weight is tied, not saved")
    }
    ;;
llama)
    cls=LlamaDecoderLayer cases=(false true) prefixed=0
    R3='"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 16}'
    setup() { # TIE
        llama_config c.json 6 2 "$R3" "\"tie_word_embeddings\": $1"
        label="llama, tie $1" ref=$TORCH_LLAMA refargs=(--config "$T/c.json") bs=2 one_rank=1
        init=(--config "$T/c.json" --vocab_size 257 --seed 11)
        heads="$T/c.json: 6 heads on 2 key/value heads"
        model="config = $T/c.json"
        has=("model.embed_tokens.weight F32 257,48|embed_tokens [V, C]"
            "model.layers.1.self_attn.q_proj.weight F32 48,48|q_proj [C, C]"
            "model.layers.1.self_attn.k_proj.weight F32 16,48|k_proj [KV * hd, C]"
            "model.layers.0.self_attn.v_proj.weight F32 16,48|v_proj [KV * hd, C]"
            "model.layers.0.self_attn.o_proj.weight F32 48,48|o_proj [C, C]"
            "model.layers.0.mlp.gate_proj.weight F32 72,48|gate_proj [F, C]"
            "model.layers.0.mlp.up_proj.weight F32 72,48|up_proj [F, C]"
            "model.layers.0.mlp.down_proj.weight F32 48,72|down_proj [C, F]"
            "model.layers.1.input_layernorm.weight F32 48|input_layernorm"
            "model.layers.1.post_attention_layernorm.weight F32 48|post_attention_layernorm"
            "model.norm.weight F32 48|model.norm")
        lacks=("bias|no biases")
        if [ "$1" = false ]; then
            want="21 1 + 2 x 9 + 1 + lm_head"
            has+=("lm_head.weight F32 257,48|an untied lm_head is saved")
        else
            want="20 1 + 2 x 9 + 1"
            lacks+=("lm_head|a tied lm_head is not saved")
        fi
    }
    ;;
esac

gen() { # NAME WEIGHTS: one step at learning rate 0 from WEIGHTS, dumping the first micro-batch
    rm -f "$T/$1.safetensors"
    run "$SHARDRUN" "$T/job.ini" --nproc-per-node 1 --set task.max_steps=1 --set task.init_weights="$2" \
        --set task.dump="$T/$1.safetensors" --set task.learning_rate=0
    expect_rc 0 "$label: the task loads $2"
}

load_back() { # CK: into the task and into the reference
    local ck=$1 r d full reads
    gen dump "$ck"
    r=$($ref check "$T/dump.safetensors" "$ck" "${refargs[@]}" --tol 1e-4 2>&1) && pass ||
        fail "$label: task vs torch from the checkpoint: $r"
    echo "$label: checkpoint -> task and torch: $(tail -1 <<<"$r")"
    # torch's own float32 logits from the checkpoint (the reference's `logits`) against the task's
    $ref logits "$ck" "${refargs[@]}" --ids "$T/dump.safetensors" --out "$T/tl.safetensors" >/dev/null && pass ||
        fail "$label: the reference's logits from the checkpoint"
    d=$(PYTHONPATH="$SRC/tests/gpt2" torch_py - "$T/dump.safetensors" "$T/tl.safetensors" <<'PY'
import sys, numpy as np, gpt2_torch as g
c, t = g.read_safetensors(sys.argv[1])["logits"], g.read_safetensors(sys.argv[2])["logits"]
r = float(np.abs(c - t).max() / np.abs(t).max())
print(f"{r:.3e}", "OK" if r <= 1e-4 else "FAIL")
PY
)
    expect_eq "${d#* }" OK "$label: torch float32 logits from the checkpoint vs the task's (relative difference ${d% *})"
    # 2 ranks with cpu_ram_efficient_loading: only rank 0 reads the file (all its tensor bytes), and
    # rank 0's first micro-batch, computed from the broadcast weights, agrees with torch
    full=$(torch_py - "$ck" <<'PY'
import json, struct, sys
with open(sys.argv[1], "rb") as f:
    h = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
h.pop("__metadata__", None)
print(sum(v["data_offsets"][1] - v["data_offsets"][0] for v in h.values()))
PY
)
    rm -f "$T/dump2.safetensors"
    run "$SHARDRUN" "$T/job.ini" --nproc-per-node 2 --set task.max_steps=1 --set task.init_weights="$ck" \
        --set task.dump="$T/dump2.safetensors" --set task.learning_rate=0 \
        --set accelerate.fsdp.sync_module_states=true --set accelerate.fsdp.cpu_ram_efficient_loading=true
    expect_rc 0 "$label: 2 ranks load the checkpoint with cpu_ram_efficient_loading"
    reads=$(grep -o '"init_weights_bytes_read": [0-9]*' <<<"$out" | sed 's/.*: //' | tr '\n' ' ')
    expect_eq "$reads" "$full 0 " "$label: only rank 0 reads the weights (bytes read per rank: $reads)"
    r=$($ref check "$T/dump2.safetensors" "$ck" "${refargs[@]}" --tol 1e-4 2>&1) && pass ||
        fail "$label: 2-rank load vs torch: $r"
    [ "$prefixed" = 1 ] || return 0
    # the Hub's layout: no "transformer." prefix
    torch_py - "$ck" "$T/hubw.safetensors" <<'PY'
import json, struct, sys
raw = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", raw[:8])[0]
h = json.loads(raw[8:8 + n]); h.pop("__metadata__", None)
h = {k.split(".", 1)[1] if k.startswith("transformer.") else k: v for k, v in h.items()}
hdr = json.dumps(h).encode(); hdr += b" " * (-len(hdr) % 8)
open(sys.argv[2], "wb").write(struct.pack("<Q", len(hdr)) + hdr + raw[8 + n:])
PY
    gen hub "$T/hubw.safetensors"
    expect_in "$err" "found without their first name component" "$label: the prefix-less names are reported"
    cmp -s "$T/dump.safetensors" "$T/hub.safetensors" && pass || fail "$label: the prefix-less checkpoint gives other logits"
}

for c in "${cases[@]}"; do
    setup "$c"
    rm -rf "$T/train" "$T/ns1"
    from=()
    if [ ${#init[@]} -gt 0 ]; then
        $ref init "$T/w.safetensors" "${init[@]}" >/dev/null && pass || fail "$label: the reference's init"
        from=(--set task.init_weights="$T/w.safetensors")
    fi
    ${family}_job job.ini "fsdp.auto_wrap_policy = TRANSFORMER_BASED_WRAP" "fsdp.transformer_layer_cls_to_wrap = $cls" \
        "fsdp.state_dict_type = FULL_STATE_DICT" <<EOF2
$model
max_length = 32
data = $T/corpus.txt
learning_rate = 3e-3
logging_steps = 1
EOF2
    run "$SHARDRUN" "$T/job.ini" --nproc-per-node 2 --set task.max_steps=6 --set task.output_dir="$T/train" \
        --set task.per_device_train_batch_size="$bs" "${from[@]}"
    expect_rc 0 "$label: 2 ranks (FULL_SHARD) train 6 steps"
    [ -z "$heads" ] || expect_in "$out" "$heads" "$label: the config.json's heads"
    ck="$T/train/checkpoint-6/model.safetensors"
    if [ "$one_rank" = 1 ]; then
        run "$SHARDRUN" "$T/job.ini" --nproc-per-node 1 --set task.max_steps=6 --set task.output_dir="$T/ns1" \
            --set task.per_device_train_batch_size=$((2 * bs)) "${from[@]}" --set accelerate.fsdp.sharding_strategy=NO_SHARD
        expect_rc 0 "$label: 1 rank trains the same 6 steps"
        r=$($CMP "$T/train/train_log.jsonl" "$T/ns1/train_log.jsonl" 1e-5) && pass ||
            fail "$label: 2 ranks FULL_SHARD log other losses or gradient norms than 1 rank: $r"
        # the parameters within 1e-4: the two runs' GEMMs have other shapes (2 and 4 samples), and
        # AdamW turns those rounding differences in the gradients of rarely seen embedding rows into ~1e-5
        p=$($PCMP 1e-4 1e-4 "$T/ns1/checkpoint-6/model.safetensors" "$ck") && pass ||
            fail "$label: 2 ranks FULL_SHARD end with other parameters than 1 rank: $p"
        echo "$label: 2 ranks FULL_SHARD vs 1 rank over 6 steps: $r; $(tail -1 <<<"$p")"
    fi
    names=$($READ_ST "$ck" | awk '{print $1, $2, $3}')
    expect_eq "$(wc -l <<<"$names")" "${want%% *}" "$label: tensors in model.safetensors (${want#* })"
    for x in "${has[@]}"; do expect_in "$names" "${x%%|*}" "$label: ${x#*|}"; done
    for x in "${lacks[@]}"; do expect_not_in "$names" "${x%%|*}" "$label: ${x#*|}"; done
    load_back "$ck"
done
done_checks
