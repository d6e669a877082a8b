#!/bin/bash
# The rendezvous at 1,024 agents against node 0's real hosting code (bench/store_sim.c): the
# fingerprint comparison (one agent started with another job: refused, and every other agent hears
# the one configuration verdict that names it), and a restart's membership (one agent lost after
# the join, one late that joins only while the job restarts, a second copy of an agent refused:
# the job restarts once with all of them and succeeds).  Each simulated agent checks what it is
# told; the host's own account names the lost agent.  The agents are split across two processes.
# World creation at a few sizes: Gloo's address exchange for a group that connects every pair at
# creation (48 ranks) and for one that connects a pair when an operation first needs it (200: the
# peers of a barrier and an all-reduce), NCCL's unique id; each rank checks that each address it
# read is its peer's address for it.  And the simulator cannot drift from the agent and the worker:
# it carries none of the protocol's keys (every request it makes is made by their own functions,
# which its binary holds).
set -u
SIM=${1:?usage: scale.sh path/to/store_sim [store_sim options]}
shift
N=1024
SRC=$(cd "$(dirname "$0")/../.." && pwd)/bench/store_sim.c
fail() { echo "FAIL: $*"; echo "--- output:"; tail -20 "$out"; exit 1; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT

[ -f "$SRC" ] || { echo "FAIL: no $SRC"; exit 1; }
if grep -v '^#include' "$SRC" | grep -nE '"(run|pg|wd)/|pair/|direct/|unique_id' >"$out"; then fail "bench/store_sim.c spells the protocol's keys itself (a copy that can drift):"; fi
for f in sr__rdzv_join sr__rdzv_prepare sr__rdzv_step sr__rdzv_report sr__pg_rehearse_world sr__watchdog_exchange \
         sr__gloo_plan_for sr__gloo_barrier_peers sr__gloo_ring_peers sr__gloo_fresh_peers sr__gloo_address_len \
         sr__gloo_store_init sr__gloo_mesh_exchange sr__gloo_pair_exchange sr__gloo_pair_publish sr__gloo_pair_fetch \
         sr__pg_nccl_id; do
    nm "$SIM" | grep -qiE " t $f\$" || { echo "FAIL: store_sim does not hold the agent's $f"; exit 1; }
done
for w in "48 gloo" "200 gloo" "200 nccl"; do
    read -r n kind <<<"$w"
    "$SIM" "$@" --agents "$n" --world "$kind" --per-process 128 --watchdog-rounds 1 --timeout 30 >"$out" 2>&1 \
        || fail "world $kind at $n ranks: store_sim failed"
    grep -q "^sim: ok" "$out" || fail "world $kind at $n ranks: a rank did not read its peers' addresses or id"
done

"$SIM" "$@" --agents $N --per-process 512 --scenario refused --timeout 20 >"$out" 2>&1 || fail "refused scenario: store_sim failed"
grep -q "^sim: ok" "$out" || fail "refused scenario: not every agent heard the configuration verdict"
grep -q "^sim: agent 1023 refused: the agents were started with different jobs: lr is \"3e-4\" on node 0 (host simhost0) but \"1e-3\" on node 1023" "$out" \
  || fail "the refusal does not name agent 1023 and its lr"
grep -q "^host: attempt 0, phase failed: the agents were started with different jobs: lr .* on node 1023" "$out" \
  || fail "node 0's verdict does not name node 1023"

"$SIM" "$@" --agents $N --per-process 512 --scenario restart --timeout 20 >"$out" 2>&1 || fail "restart scenario: store_sim failed"
grep -q "^sim: ok" "$out" || fail "restart scenario: not every agent heard the restart, the start and the verdict"
grep -q "^attempt 0: node 1022's shardrun (agent 1022) went away before the run ended" "$out" \
  || fail "node 0's account does not name the lost agent 1022"
grep -q "^sim: lost agent 1022 accepted into attempt 1" "$out" || fail "the lost agent did not come back into attempt 1"
grep -q "^sim: late agent 1023 accepted into attempt 1" "$out" || fail "the late agent did not join attempt 1"
grep -q "^sim: second copy of agent 1 refused: node 1's shardrun (agent 1) is already part of this run" "$out" \
  || fail "the second copy of agent 1 was not refused by name"
grep -q "^host: attempt 1, phase succeeded" "$out" || fail "attempt 1 did not succeed"
grep -q "^sim: $N agents in 2 processes" "$out" || fail "the agents were not split across two processes"
echo "PASS: $N agents (the agent's own code, in two processes): one refused by its job, one lost and back, one late, a duplicate refused, each named; Gloo and NCCL worlds through the worker's own exchange"
