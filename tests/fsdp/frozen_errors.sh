# [task] freeze refused before any step, on the tiny GPT-2 (exit 2, a message naming the key and what
# to do): a pattern that matches no parameter (found by the agent, before a worker starts); patterns
# freezing every parameter; under FSDP_USE_ORIG_PARAMS = false a wrap unit mixing frozen and trainable
# parameters, as torch's FSDP refuses a FlatParameter of mixed requires_grad -- while units that are
# each all frozen or all trainable train; and FSDP version 2 (which always keeps original
# parameters) and plain data parallelism (no FSDP) train mixed units.
. "$(dirname "$0")/../gpt2/lib.sh"
corpus
gpt2_job job.ini "fsdp.auto_wrap_policy = TRANSFORMER_BASED_WRAP" "fsdp.transformer_layer_cls_to_wrap = GPT2Block" <<EOF2
size = tiny
n_layer = 2
n_embd = 64
n_head = 4
max_length = 96
min_chars = 100
data = $T/corpus.txt
max_steps = 2
per_device_train_batch_size = 4
EOF2
sr() { run "$SHARDRUN" "$T/job.ini" --nproc-per-node 2 "$@"; }

sr --set task.freeze='transformer.h.*.attn.*, transformer.h.9.*'
expect_rc 2 "a pattern that matches nothing"
expect_in "$err" '[task] freeze = transformer.h.*.attn.*, transformer.h.9.*: the pattern "transformer.h.9.*" matches no parameter of task gpt2' \
    "the key and the pattern are named"
expect_in "$err" '"transformer.wte.weight"' "the model's names are shown"
expect_not_in "$err" "started 2 workers" "found before a worker starts"

sr --set task.freeze='*'
expect_rc 2 "every parameter frozen"
expect_in "$err" "freezes every parameter of task gpt2's model: nothing would be trained" "nothing to train is refused"

sr --set task.freeze='transformer.h.*.attn.*' --set accelerate.fsdp.use_orig_params=false
expect_rc 2 "a mixed unit under use_orig_params = false"
expect_in "$err" 'FSDP unit transformer.h.0 mixes frozen and trainable parameters ("transformer.h.0.attn.c_attn.weight" is frozen, "transformer.h.0.ln_1.weight" is trained), and FSDP_USE_ORIG_PARAMS is false' \
    "the unit and one frozen and one trainable parameter are named"
expect_in "$err" "Set [accelerate] fsdp.use_orig_params = true" "what to do"
expect_not_in "$out" "step 1/" "refused before step 0"

sr --set task.freeze='transformer.h.*' --set accelerate.fsdp.use_orig_params=false
expect_rc 0 "units all frozen (the blocks) or all trainable (the root) train under use_orig_params = false"
expect_eq "$(result frozen_params)" 99968 "both blocks frozen: 2 x (12 x 64^2 + 13 x 64)"
sr --set task.freeze='transformer.h.*.attn.*' --set accelerate.fsdp.version=2
expect_rc 0 "FSDP version 2 trains mixed units (it has no use_orig_params)"
sed -e '/^fsdp\./d' -e 's/^\[accelerate\]$/[accelerate]\nuse_fsdp = false/' "$T/job.ini" >"$T/ddp.ini"
run "$SHARDRUN" "$T/ddp.ini" --nproc-per-node 2 --set task.freeze='transformer.h.*.attn.*'
expect_rc 0 "without FSDP (data parallel) mixed frozen and trainable parameters train"
expect_in "$out" "33280 of them frozen" "the description counts them"
done_checks
