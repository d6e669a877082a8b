# Precedence: command line > SHARDRUN_* > the final variable > job file > default, and
# `shardrun env --explain` names the winner.
. "$(dirname "$0")/lib.sh"
job p.ini <<'X'
[shardrun]
task = exec:/bin/true
plugins = torch,accelerate
nproc_per_node = 2

[accelerate]
fsdp.sharding_strategy = SHARD_GRAD_OP
X
J=$T/p.ini
line() { grep "^$1=" <<<"$out"; }

run "$SHARDRUN" env "$J" --explain
expect_in "$(line FSDP_SHARDING_STRATEGY)" "FSDP_SHARDING_STRATEGY=SHARD_GRAD_OP" "job file value"
expect_in "$(line FSDP_SHARDING_STRATEGY)" "$J:7" "explain names the job file line"

run env FSDP_SHARDING_STRATEGY=3 "$SHARDRUN" env "$J" --explain
expect_in "$(line FSDP_SHARDING_STRATEGY)" "FSDP_SHARDING_STRATEGY=NO_SHARD" "exported final name beats the job file"
expect_in "$(line FSDP_SHARDING_STRATEGY)" "environment FSDP_SHARDING_STRATEGY" "explain names the final variable"

run env FSDP_SHARDING_STRATEGY=NO_SHARD SHARDRUN_ACCELERATE_FSDP_SHARDING_STRATEGY=hybrid_shard "$SHARDRUN" env "$J" --explain
expect_in "$(line FSDP_SHARDING_STRATEGY)" "FSDP_SHARDING_STRATEGY=HYBRID_SHARD" "SHARDRUN_* beats the final name"
expect_in "$(line FSDP_SHARDING_STRATEGY)" "environment SHARDRUN_ACCELERATE_FSDP_SHARDING_STRATEGY" "explain names SHARDRUN_*"

run env FSDP_SHARDING_STRATEGY=NO_SHARD SHARDRUN_ACCELERATE_FSDP_SHARDING_STRATEGY=HYBRID_SHARD \
    "$SHARDRUN" env "$J" --explain --set accelerate.fsdp.sharding_strategy=5
expect_in "$(line FSDP_SHARDING_STRATEGY)" "FSDP_SHARDING_STRATEGY=HYBRID_SHARD_ZERO2" "--set beats the environment"
expect_in "$(line FSDP_SHARDING_STRATEGY)" "command line --set accelerate.fsdp.sharding_strategy=5" "explain names --set"

# accelerate's YAML spelling is accepted as the same key
run "$SHARDRUN" env "$J" --set accelerate.fsdp_sharding_strategy=NO_SHARD
expect_in "$out" "FSDP_SHARDING_STRATEGY=NO_SHARD" "fsdp_ prefix alias"

# topology: torchrun flag > SHARDRUN_NPROC_PER_NODE > job file
run "$SHARDRUN" env "$J"
expect_in "$out" "LOCAL_WORLD_SIZE=2" "nproc_per_node from the job file"
run env SHARDRUN_NPROC_PER_NODE=3 "$SHARDRUN" env "$J" --explain
expect_in "$out" "LOCAL_WORLD_SIZE=3" "SHARDRUN_NPROC_PER_NODE beats the job file"
expect_in "$(line LOCAL_WORLD_SIZE)" "environment SHARDRUN_NPROC_PER_NODE" "explain names SHARDRUN_NPROC_PER_NODE"
run env SHARDRUN_NPROC_PER_NODE=3 "$SHARDRUN" env "$J" --explain --nproc_per_node 5
expect_in "$(line LOCAL_WORLD_SIZE)" "LOCAL_WORLD_SIZE=5" "--nproc_per_node (torchrun 1.13 spelling) beats the environment"
expect_in "$(line LOCAL_WORLD_SIZE)" "command line --nproc_per_node" "explain names the flag"
run "$SHARDRUN" env "$J" --nproc-per-node=6 --set shardrun.nproc_per_node=7
expect_in "$out" "LOCAL_WORLD_SIZE=7" "the later command-line override wins"

# standalone: localhost, a free port, a fresh run id
run "$SHARDRUN" env "$J" --standalone
expect_in "$out" "MASTER_ADDR=localhost" "standalone master address"
port=$(sed -n 's/^MASTER_PORT=//p' <<<"$out")
[ "$port" -gt 0 ] && [ "$port" != 29500 ] && pass || fail "standalone picks a free port, got $port"
expect_eq "$(sed -n 's/^TORCHELASTIC_RUN_ID=//p' <<<"$out" | grep -cE '^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$')" 1 "standalone run id is a uuid4"

# [task] overrides reach the task
job t.ini <<X
[shardrun]
task = $BUILD/tests/tasks/behave.so
nproc_per_node = 1
[task]
say = from the file
act_rank = -1
others = ok
X
run env SHARDRUN_TASK_SAY="from the environment" "$SHARDRUN" "$T/t.ini"
expect_in "$out" "[rank0]: from the environment (rank 0)" "SHARDRUN_TASK_SAY beats [task] say"
run env SHARDRUN_TASK_SAY="from the environment" "$SHARDRUN" "$T/t.ini" --set "task.say=from the command line"
expect_in "$out" "[rank0]: from the command line (rank 0)" "--set task.say beats SHARDRUN_TASK_SAY"

# a SHARDRUN_* typo is pointed out
run env SHARDRUN_ACCELERATE_FSDP_SHARDING_STRATEGI=1 "$SHARDRUN" env "$J"
expect_rc 2 "a stray SHARDRUN_* variable is a configuration error"
expect_in "$err" "environment variable SHARDRUN_ACCELERATE_FSDP_SHARDING_STRATEGI matches no key of this run" "stray variable named"
expect_in "$err" "did you mean SHARDRUN_ACCELERATE_FSDP_SHARDING_STRATEGY" "stray variable suggestion"
done_checks
