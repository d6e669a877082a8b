# A decoder task in C against the same model in PyTorch, from the same random weights exchanged
# through safetensors:
#   bash tests/transformer/vs_torch.sh gpt2|bloom|llama
# The family's reference (tests/gpt2/gpt2_torch.py, tests/bloom/bloom_torch.py,
# tests/llama/llama_torch.py: HF's GPT2LMHeadModel, BloomForCausalLM and LlamaForCausalLM math and
# names) writes the weights; the task trains one step from them (tests/gpt2/lib.sh's REF_STEP), and
# its first micro-batch's logits and loss (the task's `dump`) and every parameter's gradient (one AdamW
# step with beta1 = 0 leaves exp_avg = the gradient in the FULL checkpoint's optimizer.safetensors)
# agree within 1e-4 of each tensor's largest value with the reference's float64 ones.  The batch mixes
# padded and truncated samples (checked: the dump has ignored labels, -100), so the ignored labels and
# a tied head's gradient are covered, and its 100 positions span two of the attention's 64-query
# blocks (the second one partial).  A case with 2 ranks runs FULL_SHARD with one unit per block, whose
# rank 0 dumps its own micro-batch; gradients are the global batch's, so they are compared on 1 rank.
# The cases of each family (the `cases` lines below):
#   gpt2   the tiny model (2 blocks, 4 heads, 64 channels), 1 and 2 ranks;
#   bloom  head counts 4 (a power of two) and 6 (ALiBi's extra heads: slopes 2^-1, 2^-3 from base
#          2^(-4/4)), 1 and 2 ranks; 12 (2^-0.5 ... from base 2^(-4/8), not exact in float32), hidden
#          48, and bloom-560m's 16 (base 2^-0.5; hidden 64), 1 rank;
#   llama  configured by an HF config.json (`[task] config`, which the reference reads too): 4 query
#          heads on 4, 2 and 1 key/value heads (MHA, GQA, MQA), 6 on 3 with Llama 3's rope_scaling
#          (llama3) and a tied head, 6 on 2 as a Qwen2 config (q/k/v biases) and 4 on 2 with
#          attention_bias and mlp_bias (every bias); GQA and llama3 on 1 and 2 ranks, the others on 1.
# One Python process for every PyTorch call (torch_py, tests/transformer/torch_server.sh).
. "$(dirname "$0")/family_lib.sh" "$@"
mixed_text

# Each family: its cases ("NAME RANKS ARGS..." with RANKS as 1,2, then |-separated config.json members
# for llama) and `setup NAME ARGS...`, which sets `ref` (the reference's command), `init` (the flags
# of `$ref init` after the weights' file), `model` (the job's model lines), `check` (the model's flags
# for `$ref check`), `label` and `show` (the report lines printed for a 1-rank check).
case $family in
gpt2)
    cls=GPT2Block
    cases=("tiny 1,2 4")
    setup() { # NAME HEADS
        ref=$TORCH_GPT2 check=(--n_head "$2") label="$2 heads"
        init=(--n_layer 2 --n_head "$2" --n_embd 64 --n_positions 128 --vocab_size 300 --seed 3)
        model="size = tiny
n_layer = 2
n_embd = 64
n_head = $2
n_positions = 128
vocab_size = 300"
        show="logits|loss|transformer.wte.weight.grad|transformer.h.0.attn.c_attn.weight.grad"
    }
    ;;
bloom)
    cls=BloomBlock
    cases=("h4 1,2 4 48" "h6 1,2 6 48" "h12 1 12 48" "h16 1 16 64")
    setup() { # NAME HEADS HIDDEN
        ref=$TORCH_BLOOM check=(--n_head "$2") label="$2 heads"
        init=(--n_layer 2 --n_head "$2" --hidden_size "$3" --vocab_size 300 --seed "$2")
        model="size = tiny
n_layer = 2
hidden_size = $3
n_head = $2
vocab_size = 300"
        show="logits|loss|transformer.word_embeddings.weight.grad|transformer.h.0.self_attention.query_key_value.weight.grad"
    }
    ;;
llama)
    cls=LlamaDecoderLayer
    R3='"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 64}'
    cases=(
        "mha 1 4 4"
        "gqa 1,2 4 2"
        "mqa 1 4 1"
        "llama3 1,2 6 3|$R3|\"tie_word_embeddings\": true|\"rope_theta\": 500000.0"
        "qwen2 1 6 2|\"model_type\": \"qwen2\"|\"rms_norm_eps\": 1e-06|\"sliding_window\": 4096|\"use_sliding_window\": false"
        "biases 1 4 2|\"attention_bias\": true|\"mlp_bias\": true"
    )
    setup() { # NAME HEADS KV_HEADS, the config.json's extra members in "${members[@]}"
        llama_config "$1.json" "$2" "$3" "${members[@]}"
        ref=$TORCH_LLAMA check=(--config "$T/$1.json") label="$1 ($2 heads, $3 kv heads)"
        init=(--config "$T/$1.json" --vocab_size 300 --seed "$2$3")
        model="config = $T/$1.json
vocab_size = 300"
        show="logits|loss|model.embed_tokens.weight.grad|lm_head.weight.grad|model.layers.0.self_attn.(q|k)_proj.(weight|bias).grad"
    }
    ;;
esac

for c in "${cases[@]}"; do
    IFS='|' read -r -a members <<<"$c"
    read -r name ranks args <<<"${members[0]}"
    members=("${members[@]:1}")
    # shellcheck disable=SC2086 # ARGS: words
    setup "$name" $args
    w="$T/w-$name.safetensors"
    $ref init "$w" "${init[@]}" >/dev/null && pass || fail "$family $label: the reference's init"
    ${family}_job "$name.ini" "fsdp.sharding_strategy = NO_SHARD" "fsdp.state_dict_type = FULL_STATE_DICT" <<EOF2
$model
$REF_STEP
init_weights = $w
EOF2
    for n in ${ranks//,/ }; do
        rm -rf "$T/out" "$T/dump.safetensors"
        extra=() grads=()
        [ "$n" -eq 2 ] && extra=(--set accelerate.fsdp.sharding_strategy=FULL_SHARD
            --set accelerate.fsdp.auto_wrap_policy=TRANSFORMER_BASED_WRAP --set accelerate.fsdp.transformer_layer_cls_to_wrap=$cls)
        [ "$n" -eq 1 ] && grads=(--grads "$T/out/checkpoint-1/optimizer.safetensors")
        run "$SHARDRUN" "$T/$name.ini" --nproc-per-node "$n" "${extra[@]}"
        expect_rc 0 "$family $label: one step on $n rank(s)"
        [ -f "$T/dump.safetensors" ] && pass || fail "$family $label, $n rank(s): the task wrote its dump"
        labels=$($READ_ST "$T/dump.safetensors" --dump labels | grep -c -- '^-100$')
        [ "${labels:-0}" -gt 0 ] && pass || fail "$family $label: the dumped batch has padding (labels -100): $labels"
        r=$($ref check "$T/dump.safetensors" "$w" "${check[@]}" "${grads[@]}" --tol 1e-4 2>&1) && pass ||
            fail "C vs torch, $family $label on $n rank(s): $r"
        echo "$label, $n rank(s): padded labels in the dump: $labels; $(tail -1 <<<"$r")"
        [ "$n" -eq 1 ] && grep -E "^($show) " <<<"$r"
    done
done
done_checks
