# The same model whatever the nodes do (docs/elastic.md): an elastic job (nnodes = 2:3, 4 samples per
# device, gradient_accumulation_steps 2: 24 samples a step) on three nodes, each a network namespace
# on one switch, loses node 2 after step 7 (its namespace deleted) and goes on with two (accumulation
# 3, the same 24 samples a step) from checkpoint-5; once the two reached step 12, node 2 comes back
# with a new namespace, every rank saves after step 12 and the three finish the run.  Every step's
# loss and the final parameters are those of the uninterrupted run on three nodes within RTOL, and
# trainer_state.json records the three memberships.
. "$(dirname "$0")/lib.sh"
# The same samples make each step in both runs; only the order of the sums differs (three ranks of
# two micro-batches, or two of three, and the optimizer state resharded from 3 to 2 ranks and back).
# The bound is the FSDP parity tests' (tests/fsdp/parity.sh); measured on the 2-core development
# machine, 2026-11-29: see docs/elastic.md.
RTOL=1e-5
ATOL=1e-5 # parameters near 0 (Adam's steps there are as large as anywhere)
CHK="/usr/bin/python3 $SRC/tests/fsdp/check_records.py"
restart_job 20
sed -i '/^nproc_per_node = 2$/d' "$T/job.ini"
# 192 samples, a multiple of 2 and 3 ranks' 4-sample micro-batches: the epoch pads the same way
sed -i "s/^logging_steps = 1$/&\nmax_train_samples = 192\ngradient_accumulation_steps = 2/" "$T/job.ini"
J=$T/job.ini
nodes_up 3

# the uninterrupted run on three nodes
P=$(free_port_pair) OUT=$T/ref
start_world 3
for n in 0 1 2; do wait_node_for "$n" 120; done
expect_eq "${rc[0]}/${rc[1]}/${rc[2]}" "0/0/0" "the uninterrupted run on three nodes ($(logs))"
expect_in "$(cat "$T/n0.out")" "batch 4 x 2 accumulation x 3 ranks = 24 per step" "the uninterrupted run: 24 samples a step"

# the run that loses node 2 after step 7 and takes it in again after step 12
P=$(free_port_pair) OUT=$T/el
SHARDRUN_DEBUG_PAUSE_AT=0:7,0:12@1 start_world 3
wait_for "$T/n0.out" "step 7/20" 120 && pass || fail "the run reached step 7 ($(logs))"
node_gone 2
unset "pid[2]"
wait_for "$T/n0.out" "step 12/20" 120 && pass || fail "the two nodes reached step 12 ($(logs))"
ip netns add "$(ns_of 2)" && ip -n "$(ns_of 2)" link set lo up &&
    ip link add "sre$$n2" netns "$(ns_of 2)" type veth peer name "sre$$s2" netns "$NSW" &&
    ip -n "$NSW" link set "sre$$s2" master sreb && ip -n "$NSW" link set "sre$$s2" up &&
    ip -n "$(ns_of 2)" addr add "$(addr_of 2)/24" dev "sre$$n2" && ip -n "$(ns_of 2)" link set "sre$$n2" up ||
    fail "cannot give node 2 a namespace and a link again"
start_node 2 2 "$OUT"
for n in 0 1 2; do wait_node_for "$n" 120; done
expect_eq "${rc[0]}/${rc[1]}/${rc[2]}" "0/0/0" "the three nodes finish the run ($(logs))"
out=$(cat "$T/n0.out")
expect_in "$out" "[rank0]: shardrun: resumed from $T/el/checkpoint-5 at step 5" "the two resume from checkpoint-5"
expect_in "$out" "elastic: 2 nodes, 2 of 3 ranks: gradient_accumulation_steps 2 -> 3, the global batch stays 24 samples per step" "the two keep the global batch"
expect_in "$out" "[rank0]: shardrun: resumed from $T/el/checkpoint-12 at step 12" "the three resume from the join's checkpoint-12"
expect_not_in "$out" "warning" "no warning"
r=$(/usr/bin/python3 "$SRC/tests/fsdp/compare_logs.py" "$T/el/train_log.jsonl" "$T/ref/train_log.jsonl" $RTOL loss) &&
    pass || fail "every step's loss is the uninterrupted run's: $r"
echo "losses: $r"
r=$(/usr/bin/python3 "$SRC/tests/fsdp/compare_params.py" $RTOL $ATOL "$T/ref/checkpoint-20/model.safetensors" \
    "$T/el/checkpoint-20/model.safetensors") && pass || fail "the final parameters are the uninterrupted run's: $r"
/usr/bin/python3 - "$T/ref/checkpoint-20/model.safetensors" "$T/el/checkpoint-20/model.safetensors" <<'PY'
import json, struct, sys
import numpy as np
def load(p):
    raw = open(p, "rb").read(); n = struct.unpack("<Q", raw[:8])[0]; h = json.loads(raw[8:8 + n]); h.pop("__metadata__", None)
    return {k: np.frombuffer(raw[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]], "<f4") for k, v in h.items()}
a, b = load(sys.argv[1]), load(sys.argv[2])
d = max(float(np.max(np.abs(a[k] - b[k]))) for k in a)
print("parameters: largest absolute difference %.3g, largest parameter %.3g" % (d, max(float(np.max(np.abs(v))) for v in a.values())))
PY
m=$($CHK membership "$T/el")
expect_eq "$(grep -c world_size <<<"$m")" 3 "trainer_state.json records the three memberships: $m"
expect_in "$m" "world_size=3" "the first membership: three ranks"
expect_in "$m" "step=5 world_size=2 nodes=2 gradient_accumulation_steps=3 global_batch=24 restart=1" "the second: two nodes from step 5"
expect_in "$m" "step=12 world_size=3 nodes=3 gradient_accumulation_steps=2 global_batch=24 restart=2" "the third: three nodes again from step 12"
done_checks
