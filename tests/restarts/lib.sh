# Shared by the restart and preemption tests: the GPT-2 test helpers, and one small GPT-2 job.
. "$(dirname "$0")/../gpt2/lib.sh"
# two agents of one rank each on 2 cores: one OpenMP thread per rank, or their spinning threads
# take turns on the cores and a step takes seconds
export OMP_NUM_THREADS=1

# restart_job: $T/job.ini, GPT-2 tiny on 2 ranks (FULL_SHARD per GPT2Block, FULL_STATE_DICT
# checkpoints every 5 steps), `max_steps` steps, one log line per step.  The caller sets
# output_dir with --set.
restart_job() {
    local steps=${1:-12}
    corpus
    gpt2_job job.ini "fsdp.auto_wrap_policy = TRANSFORMER_BASED_WRAP" "fsdp.transformer_layer_cls_to_wrap = GPT2Block" \
        "fsdp.state_dict_type = FULL_STATE_DICT" <<EOT
size = tiny
data = $T/corpus.txt
max_length = 64
min_chars = 100
max_steps = $steps
per_device_train_batch_size = 4
learning_rate = 1e-3
warmup_steps = 2
save_steps = 5
logging_steps = 1
EOT
    sed -i 's/^plugins = torch,accelerate$/&\nnproc_per_node = 2/' "$T/job.ini"
}

# node_job [STEPS]: restart_job with one rank per agent (nproc_per_node given by each node's
# command), the job file in $J: the multi-node and elastic tests' job
node_job() {
    restart_job "$@"
    sed -i '/^nproc_per_node = 2$/d' "$T/job.ini"
    J=$T/job.ini
}

# steps_of LOG: "step loss" per line of a train_log.jsonl
steps_of() {
    /usr/bin/python3 -c '
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(r["step"], r["loss"])' "$1"
}

# The nodes' agents of the multi-node tests (tests/links/, tests/elastic/), in the arrays pid and rc
# by node: wait_node NODE waits for it; wait_node_for NODE SECONDS waits that long at most (wall
# clock, not a count of polls: the machine may be loaded), rc 124 when it is still running (then
# killed)
wait_node() { wait "${pid[$1]}"; rc[$1]=$?; unset "pid[$1]"; }
wait_node_for() {
    local end=$(($(now_ms) + $2 * 1000))
    while kill -0 "${pid[$1]}" 2>/dev/null && [ "$(now_ms)" -lt "$end" ]; do sleep 0.1; done
    if kill -0 "${pid[$1]}" 2>/dev/null; then
        kill -KILL "${pid[$1]}" 2>/dev/null
        wait "${pid[$1]}" 2>/dev/null
        rc[$1]=124
        unset "pid[$1]"
    else
        wait_node "$1"
    fi
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }
# wait_for_any TEXT SECONDS FILE...: until one of the files holds the line (wall clock); 1 when none did
wait_for_any() {
    local text=$1 end=$(($(now_ms) + $2 * 1000))
    shift 2
    while [ "$(now_ms)" -lt "$end" ]; do
        grep -qF -- "$text" "$@" 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}
