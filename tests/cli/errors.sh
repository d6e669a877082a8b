# Configuration errors: each one exits 2 before anything starts, with a message that names the
# place (file:line, variable or flag), what was expected, and what to do.
. "$(dirname "$0")/lib.sh"

# bad JOB_BODY... : writes the job, runs it, expects exit 2, empty stdout; leaves $err
bad() {
    printf '%s\n' "$@" >"$T/bad.ini"
    run "$SHARDRUN" "$T/bad.ini"
    expect_rc 2 "job [$*]"
    expect_eq "$out" "" "nothing on stdout for [$*]"
}
HEAD='[shardrun]
task = exec:/bin/true
plugins = torch,accelerate
nproc_per_node = 2
[accelerate]'

bad "$HEAD" "fsdp.sharding_stratgy = FULL_SHARD"
expect_in "$err" "$T/bad.ini:6: [accelerate] has no key \"fsdp.sharding_stratgy\"; did you mean \"fsdp.sharding_strategy\"?" "unknown key with suggestion"

bad "$HEAD" "fsdp.sharding_strategy = FULL"
expect_in "$err" "$T/bad.ini:6: [accelerate] fsdp.sharding_strategy: expected one of FULL_SHARD, SHARD_GRAD_OP, NO_SHARD, HYBRID_SHARD, HYBRID_SHARD_ZERO2 (or 1-5 in that order), got \"FULL\"" "bad enum lists the accepted values"

bad "$HEAD" "mixed_precision = FP32"
expect_in "$err" "mixed_precision: expected one of no, fp16, bf16, got \"FP32\"" "bad mixed precision"

bad "$HEAD" "fsdp.offload_params = maybe"
expect_in "$err" "fsdp.offload_params: expected a boolean (y yes t true on 1 / n no f false off 0 (any case)), got \"maybe\"" "bad boolean"

bad "$HEAD" "fsdp.auto_wrap_policy = SIZE_BASED_WRAP"
expect_in "$err" "SIZE_BASED_WRAP needs a positive fsdp.min_num_params" "SIZE_BASED_WRAP without min_num_params"
expect_in "$err" "$T/bad.ini:6" "... names the policy's line"

bad "$HEAD" "fsdp.auto_wrap_policy = SIZE_BASED_WRAP" "fsdp.min_num_params = 0"
expect_in "$err" "$T/bad.ini:7: [accelerate] fsdp.min_num_params: SIZE_BASED_WRAP needs a positive fsdp.min_num_params" "SIZE_BASED_WRAP with min_num_params = 0"

bad "$HEAD" "fsdp.min_num_params = 1000"
expect_in "$err" "fsdp.min_num_params: only applies to auto_wrap_policy = SIZE_BASED_WRAP" "min_num_params without SIZE_BASED_WRAP"

bad "$HEAD" "fsdp.sync_module_states = false"
expect_in "$err" "fsdp.cpu_ram_efficient_loading: is true (the default), which requires fsdp.sync_module_states = true" "cpu_ram_efficient_loading (default) without sync_module_states"
bad "$HEAD" "fsdp.cpu_ram_efficient_loading = true" "fsdp.sync_module_states = false"
expect_in "$err" "$T/bad.ini:6: [accelerate] fsdp.cpu_ram_efficient_loading: is true, which requires fsdp.sync_module_states = true" "cpu_ram_efficient_loading without sync_module_states"

bad "$HEAD" "fsdp.version = 2" "fsdp.backward_prefetch = BACKWARD_PRE" "fsdp.sharding_strategy = FULL_SHARD"
expect_in "$err" "$T/bad.ini:7: [accelerate] fsdp.backward_prefetch: is an FSDP version 1 key, but fsdp.version = 2; remove it" "v1-only key under version 2"
expect_in "$err" "$T/bad.ini:8: [accelerate] fsdp.sharding_strategy: is an FSDP version 1 key, but fsdp.version = 2 (use fsdp.reshard_after_forward)" "sharding_strategy under version 2"
bad "$HEAD" "fsdp.reshard_after_forward = false"
expect_in "$err" "fsdp.reshard_after_forward: is an FSDP version 2 key, but fsdp.version = 1" "v2-only key under version 1"
bad "$HEAD" "fsdp.version = 2" "fsdp.state_dict_type = LOCAL_STATE_DICT"
expect_in "$err" "LOCAL_STATE_DICT does not exist in FSDP version 2" "LOCAL_STATE_DICT under version 2"
bad "$HEAD" "fsdp.version = 3"
expect_in "$err" "fsdp.version: expected an integer from 1 to 2, got \"3\"" "bad version"
bad "$HEAD" "fsdp.transformer_layer_cls_to_wrap = GPT2Block,,Foo" "fsdp.auto_wrap_policy = TRANSFORMER_BASED_WRAP"
expect_in "$err" "expected a comma-separated list without empty items" "empty list item"

# version 2 works and writes RESHARD_AFTER_FORWARD instead of the v1 keys
printf '%s\n' "$HEAD" "fsdp.version = 2" "fsdp.reshard_after_forward = no" >"$T/v2.ini"
run "$SHARDRUN" env "$T/v2.ini"
expect_rc 0 "version 2 job"
expect_in "$out" "FSDP_RESHARD_AFTER_FORWARD=false" "v2 writes reshard_after_forward"
expect_in "$out" "FSDP_STATE_DICT_TYPE=SHARDED_STATE_DICT" "v2 default state dict"
expect_not_in "$out" "FSDP_SHARDING_STRATEGY" "v2 omits the strategy"
expect_not_in "$out" "FSDP_SYNC_MODULE_STATES" "v2 omits sync_module_states"

# the environment is checked like the file
printf '%s\n' "$HEAD" >"$T/ok.ini"
run env FSDP_OFFLOAD_PARAMS=perhaps "$SHARDRUN" "$T/ok.ini"
expect_rc 2 "bad exported final variable"
expect_in "$err" "environment FSDP_OFFLOAD_PARAMS: [accelerate] fsdp.offload_params: expected a boolean" "names the variable"
run env SHARDRUN_NNODES=two "$SHARDRUN" "$T/ok.ini"
expect_in "$err" "environment SHARDRUN_NNODES: [shardrun] nnodes: expected an integer from 1 to 65536, or MIN:MAX (an elastic job), got \"two\"" "bad SHARDRUN_NNODES"
run "$SHARDRUN" "$T/ok.ini" --set accelerate.fsdp.nope=1
expect_rc 2 "unknown --set key"
expect_in "$err" "command line --set accelerate.fsdp.nope=1: [accelerate] has no key \"fsdp.nope\"" "unknown --set key named"
run "$SHARDRUN" "$T/ok.ini" --set nodot=1
expect_in "$err" "--set nodot=1: expected SECTION.KEY=VALUE" "malformed --set"
run "$SHARDRUN" "$T/ok.ini" --set deepspeed.stage=3
expect_in "$err" "command line --set deepspeed.stage=3: no section [deepspeed] in this run" "--set of an unknown section"
run "$SHARDRUN" "$T/ok.ini" --nnodes 2 --node-rank 2
expect_in "$err" "node_rank 2 (command line --node-rank) must be below nnodes 2 (command line --nnodes)" "node_rank out of range"
run "$SHARDRUN" "$T/ok.ini" --nnodes 2 --master-port 0
expect_in "$err" "master_port = 0 (pick a free port) only works on one node" "free port with several nodes"
run "$SHARDRUN" "$T/ok.ini" --bogus
expect_rc 2 "unknown option"
expect_in "$err" "unknown option --bogus" "unknown option named"

# job file syntax and structure
bad "[shardrun]" "task = exec:/bin/true" "this line is not ini"
expect_in "$err" "$T/bad.ini:3: syntax error: expected \"[section]\", \"key = value\" or a comment (; or #), got \"this line is not ini\"" "syntax error names the line"
bad "[shardrun" "task = exec:/bin/true"
expect_in "$err" "$T/bad.ini:1: syntax error" "unclosed section"
bad "task = exec:/bin/true"
expect_in "$err" "$T/bad.ini:1: key \"task\" is outside any section" "key before any section"
bad "[shardrun]" "task = exec:/bin/true" "task = exec:/bin/false"
expect_in "$err" "$T/bad.ini:3: [shardrun] task is given twice (first at line 2)" "duplicate key"
bad "[shardrun]" "task = exec:/bin/true" "plugins = torch,accelerate" "[acelerate]" "x = 1"
expect_in "$err" "$T/bad.ini:5: unknown section [acelerate]; did you mean [accelerate]?" "unknown section"
bad "[shardrun]" "task = exec:/bin/true" "nproc_per_node = 0"
expect_in "$err" "$T/bad.ini:3: [shardrun] nproc_per_node: expected an integer from 1 to 4096, got \"0\"" "nproc_per_node = 0"
bad "[shardrun]" "tsk = exec:/bin/true"
expect_in "$err" "did you mean \"task\"?" "unknown [shardrun] key"
bad "[shardrun]" "nproc_per_node = 1"
expect_in "$err" "$T/bad.ini: [shardrun] task is not set" "missing task"
bad "[shardrun]" "task = exec:/bin/true" "x = $(printf 'y%.0s' $(seq 1 250))"
expect_in "$err" "$T/bad.ini:3: line longer than 198 characters" "over-long line"
printf '[shardrun]\ntask = exec:/usr/bin/printf\n  "%%s|" continued\nnproc_per_node = 1\n' >"$T/cont.ini"
run "$SHARDRUN" "$T/cont.ini"
expect_rc 0 "an indented continuation line extends the value"
expect_in "$out" "[rank0]: continued|" "continued words become arguments"
run "$SHARDRUN" "$T/missing.ini"
expect_rc 2 "missing job file"
expect_in "$err" "cannot read job file $T/missing.ini: No such file or directory" "missing job file named"
done_checks
