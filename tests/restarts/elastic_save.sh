# An elastic job (nnodes = 1:2) on loopback: while every rank saves for a new world (node 1 joins),
# a SIGTERM to node 0's shardrun is a notice like the first, not a second signal: its rank finishes
# the checkpoint it was writing instead of being killed (SIGKILL) in the middle of it.  Node 0's rank
# waits after step 3 (SHARDRUN_DEBUG_PAUSE_AT) and is held stopped (SIGSTOP) while the join's
# checkpoint is asked for, so the SIGTERM lands inside the save; SIGCONT lets it write checkpoint-3.
# Node 0 cannot leave (it hosts the rendezvous): the job ends with the signal's exit (143), and
# node 1, which waited to join, hears that the job ended without it (exit 1).
. "$(dirname "$0")/lib.sh"
export SHARDRUN_RDZV_TOKEN=elastic-save-$$
restart_job 10
J=$T/job.ini
P=$(free_port_pair)
node_start() {
    local node=$1
    shift
    "$SHARDRUN" "$J" --nnodes 1:2 --nproc-per-node 1 --master-addr 127.0.0.1 --master-port "$P" \
        --set shardrun.rdzv_last_call=0 --set shardrun.preempt_grace=60 --set task.output_dir="$T/out" \
        "$@" >"$T/n$node.out" 2>"$T/n$node.err" &
    pid[$node]=$!
}
logs() { cat "$T/n0.err" "$T/n1.err"; }

SHARDRUN_DEBUG_PAUSE_AT=0:3 node_start 0
wait_for "$T/n0.out" "step 3/10" 120 && pass || fail "node 0 alone reached step 3 ($(logs))"
w=$(worker_of "${pid[0]}" 0)
[ -n "$w" ] && pass || fail "node 0's rank 0 found"
kill -STOP "$w"
node_start 1 --node-rank 1
wait_for "$T/n0.err" "the job's nodes change: a new node's shardrun (slot 1) joins the job" 60 && pass ||
    fail "node 1's arrival asks every rank for a checkpoint ($(logs))"
kill -TERM "${pid[0]}"
sleep 1 # node 0's shardrun takes the signal in while its rank is still stopped
kill -CONT "$w"
wait "${pid[0]}"
rc0=$?
wait "${pid[1]}"
rc1=$?
expect_eq "$rc0/$rc1" "143/1" "node 0 ends with the signal, node 1 without having been taken in ($(logs))"
[ -f "$T/out/checkpoint-3/model.safetensors" ] && pass ||
    fail "the checkpoint the join asked for was written: $(ls "$T/out") ($(logs))"
expect_in "$(cat "$T/n0.out")" "[rank0]: shardrun: saved $T/out/checkpoint-3 (FULL_STATE_DICT)" \
    "node 0's rank finished its checkpoint instead of being killed in the middle of it"
expect_in "$(cat "$T/n0.out")" '"exit_code": 143, ' "node 0's rank ended preempted"
expect_in "$(cat "$T/n1.err")" "error: node 0's shardrun was stopped by SIGTERM while the job restarted" \
    "node 1 says why it ends"
done_checks
