# A bad FSDP or trainer configuration fails before the first step, with a message that names the
# variable or key, what was expected, and what to do; the run exits non-zero.
. "$(dirname "$0")/lib.sh"
toy_job toy.ini <<EOF
max_steps = 3
per_device_train_batch_size = 2
logging_steps = 1
EOF
sed -i 's/^plugins = torch,accelerate$/&\nnproc_per_node = 2/' "$T/toy.ini"
# the same model with the torch plugin only: FSDP_* exported by hand reach the engine unvalidated
sed -e 's/^plugins = torch,accelerate/plugins = torch/' -e '/^\[accelerate\]/,/^$/d' "$T/toy.ini" >"$T/torch_only.ini"
sed -e '/transformer_layer_cls_to_wrap/d' -e 's/TRANSFORMER_BASED_WRAP/SIZE_BASED_WRAP\nfsdp.min_num_params = 3000/' "$T/toy.ini" >"$T/size.ini"
engine_env() { run env ACCELERATE_USE_FSDP=true "$@" "$SHARDRUN" "$T/torch_only.ini"; }

# fails WHAT [shardrun args...]: exit 2, no training step ran
fails() {
    local what=$1
    shift
    run "$SHARDRUN" "$T/toy.ini" "$@"
    [ "$rc" -ne 0 ] && pass || fail "$what: exit code 0"
    expect_not_in "$out" "step 1/" "$what: fails before the first step"
}

fails "unknown wrap class" --set accelerate.fsdp.transformer_layer_cls_to_wrap=GPT2Block,MLPBlock
expect_in "$err" 'FSDP_TRANSFORMER_CLS_TO_WRAP names class "GPT2Block", which this model does not have; its module classes are: Embedding, MLPBlock, MixerBlock, LayerNorm, LMHead' \
    "unknown wrap class: names it and lists the model's classes"
expect_not_in "$err" '"MLPBlock", which' "a class the model has is not reported"
# the same set-up error on every rank is printed once (by local rank 0; the others hold theirs
# back and are stopped): its line, plus the agent's summary quoting it
expect_eq "$(grep -c 'names class "GPT2Block"' <<<"$err")" 2 "a set-up error shared by every rank is printed once"

# a [task] key that neither the task nor the trainer reads is a misspelling: named with its line
printf 'max_step = 5\n' >>"$T/toy.ini"
fails "a misspelt [task] key"
expect_in "$err" "toy.ini:$(grep -n '^max_step = 5' "$T/toy.ini" | cut -d: -f1): [task] max_step is read by neither; check its spelling" \
    "the unread key is named with its file and line"
expect_in "$err" "task toy_model reads these [task] keys: vocab, dim, seq, blocks, samples, eval_samples, data_seed, inject_overflow_step, inject_overflow_rank; the trainer reads transformers' TrainingArguments names" \
    "the task's keys are listed"
sed -i '/^max_step = 5$/d' "$T/toy.ini"
run "$SHARDRUN" "$T/toy.ini" --set task.data_seed=3
expect_rc 0 "a --set [task] key the task reads is fine"
fails "a misspelt --set [task] key" --set task.dat_seed=3
expect_in "$err" "[task] dat_seed is read by neither" "an unread --set key is named"

fails "class names are case-sensitive" --set accelerate.fsdp.transformer_layer_cls_to_wrap=mlpblock
expect_in "$err" 'names class "mlpblock", which this model does not have' "lowercase class name rejected"

fails "tie across units" --set accelerate.fsdp.transformer_layer_cls_to_wrap=Embedding
expect_in "$err" 'parameter "head.weight" (module head) is tied to "embed.weight" (module embed), but the wrap policy puts the two modules in different FSDP units' \
    "tied parameters in different units"

# SIZE_BASED_WRAP without min_num_params: the plugin refuses the job file (and an exported
# variable, which it validates like a key); the engine refuses it when it arrives unvalidated
# (accelerate would silently wrap nothing)
run env FSDP_AUTO_WRAP_POLICY=SIZE_BASED_WRAP "$SHARDRUN" "$T/size.ini" --set accelerate.fsdp.min_num_params=0
expect_rc 2 "SIZE_BASED_WRAP with min_num_params 0 (job file)"
expect_in "$err" "SIZE_BASED_WRAP needs a positive fsdp.min_num_params" "plugin: names min_num_params"
engine_env FSDP_AUTO_WRAP_POLICY=SIZE_BASED_WRAP
[ "$rc" -ne 0 ] && pass || fail "engine: SIZE_BASED_WRAP without FSDP_MIN_NUM_PARAMS accepted"
expect_in "$err" "FSDP_AUTO_WRAP_POLICY=SIZE_BASED_WRAP needs FSDP_MIN_NUM_PARAMS, a positive integer (it is unset" \
    "engine: SIZE_BASED_WRAP needs FSDP_MIN_NUM_PARAMS"
expect_not_in "$out" "step 1/" "engine: SIZE_BASED_WRAP without min params fails before the first step"
engine_env FSDP_AUTO_WRAP_POLICY=SIZE_BASED_WRAP FSDP_MIN_NUM_PARAMS=0
expect_in "$err" 'needs FSDP_MIN_NUM_PARAMS, a positive integer (it is "0"' "engine: FSDP_MIN_NUM_PARAMS=0 rejected"

# a size-based policy that works: consecutive modules grouped until they reach the minimum
run "$SHARDRUN" "$T/size.ini"
expect_rc 0 "SIZE_BASED_WRAP with min_num_params trains"
expect_in "$out" "FSDP FULL_SHARD on 2 ranks (shard group 2, replicas 1): 2 units (1 wrapped + root)" \
    "SIZE_BASED_WRAP: blocks.0-2 reach 3000 parameters; blocks.3-5 and norm_f do not before the tied head, so they stay in the root"

# mixed precision the task cannot compute in
run "$SHARDRUN" "$T/toy.ini" --set shardrun.task="$BUILD/tests/tasks/fp32_only.so" --set accelerate.mixed_precision=bf16
[ "$rc" -ne 0 ] && pass || fail "bf16 with an fp32-only task: accepted"
expect_in "$err" "ACCELERATE_MIXED_PRECISION=bf16: task fp32_only computes in fp32 only; set [accelerate] mixed_precision to one of those (fp32: mixed_precision = no)" \
    "unsupported mixed precision names the task's dtypes"
expect_not_in "$out" "step 1/" "unsupported mixed precision fails before the first step"

# values exported under their final names: with the accelerate plugin they are validated like
# job-file keys; without it they reach the engine, which reads them with accelerate's rules
run env FSDP_SHARDING_STRATEGY=7 "$SHARDRUN" "$T/toy.ini"
expect_rc 2 "plugin: FSDP_SHARDING_STRATEGY=7"
expect_in "$err" 'fsdp.sharding_strategy: expected one of FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, HYBRID_SHARD, HYBRID_SHARD_ZERO2 (or 1-5 in that order), got "7"' \
    "plugin: bad exported strategy"
for bad in "FSDP_SHARDING_STRATEGY=7|FSDP_SHARDING_STRATEGY=7: expected FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, HYBRID_SHARD, HYBRID_SHARD_ZERO2 (or 1-5 in that order)" \
    "FSDP_BACKWARD_PREFETCH=BACKWARD|FSDP_BACKWARD_PREFETCH=BACKWARD: expected NO_PREFETCH, BACKWARD_PRE, BACKWARD_POST" \
    "FSDP_ACTIVATION_CHECKPOINTING=maybe|FSDP_ACTIVATION_CHECKPOINTING=maybe: expected a boolean: y yes t true on 1 / n no f false off 0 (any case)" \
    "ACCELERATE_MIXED_PRECISION=BF16|ACCELERATE_MIXED_PRECISION=BF16: expected no, fp16 or bf16, lowercase (accelerate does not lowercase it)" \
    "FSDP_VERSION=3|FSDP_VERSION=3: expected 1 or 2" \
    "FSDP_IGNORED_MODULES=embed|ignored modules are not supported by shardrun's engine yet"; do
    var=${bad%%|*} msg=${bad#*|}
    engine_env "$var"
    [ "$rc" -ne 0 ] && pass || fail "engine: $var accepted"
    expect_in "$err" "$msg" "engine: $var: message"
    expect_not_in "$out" "step 1/" "engine: $var fails before the first step"
done
# digits 1-5 are strategy names too, and names are case-insensitive
engine_env FSDP_SHARDING_STRATEGY=2
expect_rc 0 "FSDP_SHARDING_STRATEGY=2 is accepted"
expect_in "$out" '"sharding_strategy": "SHARD_GRAD_OP"' "strategy 2 is SHARD_GRAD_OP"
engine_env FSDP_SHARDING_STRATEGY=no_shard
expect_in "$out" '"sharding_strategy": "NO_SHARD"' "strategy names are case-insensitive"
# without ACCELERATE_USE_FSDP=true no FSDP_* variable is read (as in accelerate): a stale one is harmless
run env FSDP_SHARDING_STRATEGY=bogus "$SHARDRUN" "$T/torch_only.ini"
expect_rc 0 "FSDP off: a stale FSDP_SHARDING_STRATEGY is not read"
expect_in "$out" '"fsdp_enabled": false' "FSDP off: replicated training"
engine_env ACCELERATE_USE_FSDP=1
expect_in "$err" "ACCELERATE_USE_FSDP=1 enables FSDP here, but accelerate itself only accepts the spelling \`true\`" \
    "ACCELERATE_USE_FSDP=1 warns"

# trainer arguments
# trainer arguments are checked by the agent, before any worker starts
fails "batch size 0" --set task.per_device_train_batch_size=0
expect_in "$err" 'command line --set task.per_device_train_batch_size=0: [task] per_device_train_batch_size = "0": expected an integer from 1 to 1048576, got "0" (a trainer argument of this model task)' \
    "batch size 0 named"
expect_eq "$rc" 2 "a bad trainer argument exits 2"
expect_not_in "$err" "started 2 workers" "a bad trainer argument stops the run before any worker starts"
sed 's/^logging_steps = 1/logging_steps = often/' "$T/toy.ini" >"$T/bad_arg.ini"
run "$SHARDRUN" "$T/bad_arg.ini"
expect_in "$err" "$T/bad_arg.ini:13: [task] logging_steps = \"often\": expected an integer" "a bad trainer argument names file and line"
fails "resume without a checkpoint" --set task.resume_from_checkpoint=true --set task.output_dir="$T/empty"
expect_in "$err" "resume_from_checkpoint: no checkpoint-N folder in $T/empty" "resume without a checkpoint"
fails "bad schedule" --set task.lr_scheduler_type=exponential
expect_in "$err" '[task] lr_scheduler_type = "exponential": expected one of linear, cosine, constant, constant_with_warmup, got "exponential"' "bad schedule"

# the dry run knows a model task's keys too: it asks the task's create() in a child process
run "$SHARDRUN" env "$T/toy.ini" --set task.learning_rte=0.1
expect_rc 2 "shardrun env with a misspelt model-task key"
expect_in "$err" "command line --set task.learning_rte=0.1: [task] learning_rte is read by neither; check its spelling" \
    "shardrun env names the misspelt key"
expect_eq "$out" "" "shardrun env prints no variables when a key is wrong"
run "$SHARDRUN" env "$T/toy.ini"
expect_rc 0 "shardrun env on the model task"
expect_in "$out" "FSDP_SHARDING_STRATEGY=" "shardrun env prints the variables"
expect_not_in "$out" "toy" "only NAME=VALUE lines on stdout"
# and so does the run, before its rendezvous: no worker starts
run "$SHARDRUN" "$T/toy.ini" --set task.learning_rte=0.1
expect_rc 2 "a run with a misspelt model-task key"
expect_in "$err" "[task] learning_rte is read by neither; check its spelling" "the run names the misspelt key"
expect_not_in "$err" "started" "no worker started"
done_checks
