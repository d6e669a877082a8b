# The step profile (SHARDRUN_PROFILE=1): rank 0 prints a table per logging step and one for the
# whole run; every rank reports profile_*_ms, whose rows add up to the step; the GPT-2 kernels show
# up by class (GEMM, attention, ...) with their rates, FULL_SHARD's collectives as waited on and
# overlapped.  Without the variable: no table, no profile_* result, and the same parameters bit for
# bit (profiling only watches).
. "$(dirname "$0")/lib.sh"
gpt2_job g.ini <<EOF2
size = tiny
data = /usr/share/common-licenses/*
max_length = 64
min_chars = 64
max_samples = 64
per_device_train_batch_size = 2
max_steps = 4
logging_steps = 2
EOF2
SHARDRUN_PROFILE=1 run "$SHARDRUN" "$T/g.ini" --nproc-per-node 2 --results "$T/p.json"
expect_rc 0 "a profiled run"
expect_in "$out" "profile: steps 1-2, per step (rank 0):" "the first logging step's table"
expect_in "$out" "profile: steps 3-4, per step (rank 0):" "the second window starts after the first"
expect_in "$out" "profile: the run, steps 2-4, per step (rank 0):" "the whole run's table, without its first step"
for r in GEMM attention softmax/cross-entropy norms/activations optimizer clipping casts/copies \
    "collectives waited on" "collectives overlapped" data step; do
    expect_in "$out" "  $r " "the table's $r row"
done
[ "$(grep -c 'profile: ' <<<"$out")" -eq 3 ] && pass || fail "rank 0 alone prints, 3 tables: $out"
/usr/bin/python3 - "$T/p.json" <<'PY' && pass || fail "the profile in the results"
import json, sys
ranks = json.load(open(sys.argv[1]))
assert len(ranks) == 2, ranks
rows = ["gemm", "attention", "softmax_ce", "norm_act", "task_other", "optimizer", "clipping", "casts_copies",
        "coll_wait", "data", "other"]
for r in ranks:
    step = r["profile_step_ms"]
    parts = sum(r[f"profile_{k}_ms"] for k in rows)
    assert abs(parts - step) <= 1e-6 * step + 1e-9, (r["rank"], parts, step)
    assert r["profile_gemm_ms"] > 0 and r["profile_gemm_gflops"] > 0, r
    assert r["profile_attention_ms"] > 0 and r["profile_optimizer_gbps"] > 0, r
    assert r["profile_coll_wait_ms"] + r["profile_coll_overlap_ms"] > 0, r  # FULL_SHARD gathers and reduces
    # the kernels take most of a step of this model (at most 30% elsewhere, generous for a busy machine)
    assert r["profile_task_other_ms"] < 0.3 * step, r
    # the profiled steps are the steps the trainer timed (its median lies within their range)
    assert 0.2 * step < r["step_time_ms"] < 5 * step, (r["step_time_ms"], step)
PY
run "$SHARDRUN" "$T/g.ini" --nproc-per-node 2 --results "$T/plain.json"
expect_rc 0 "the same run without profiling"
expect_not_in "$out" "profile:" "no table without SHARDRUN_PROFILE"
expect_not_in "$(cat "$T/plain.json")" "profile_" "no profile in the results without SHARDRUN_PROFILE"
/usr/bin/python3 - "$T/p.json" "$T/plain.json" <<'PY' && pass || fail "profiling changed the training"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
for x, y in zip(a, b):
    assert (x["param_sum"], x["param_sumsq"], x["final_loss"]) == (y["param_sum"], y["param_sumsq"], y["final_loss"]), (x, y)
PY
SHARDRUN_PROFILE=1 run "$SHARDRUN" "$T/g.ini" --nproc-per-node 1 --set task.max_steps=1 --results "$T/one.json"
expect_rc 0 "a profiled run of one step"
expect_in "$out" "profile: the run, steps 1-1, per step (rank 0):" "a run of one step: its table is that step's"
expect_in "$(cat "$T/one.json")" '"profile_step_ms"' "a run of one step reports its profile"
SHARDRUN_PROFILE=0 run "$SHARDRUN" "$T/g.ini" --nproc-per-node 1
expect_rc 0 "SHARDRUN_PROFILE=0"
expect_not_in "$out" "profile:" "SHARDRUN_PROFILE=0 is off"
done_checks
