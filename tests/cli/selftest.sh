# shardrun selftest on a machine without a GPU: the CPU half runs (2 ranks, gloo, the collectives over shm and over tcp; every size, the
# chunked large-buffer path too), says plainly that the GPU half did not, exits 0 and writes its JSON; against deliberately broken kernels
# (tests/selftest/broken_kernels.c through SHARDRUN_SELFTEST_DUT) it fails, exits 1 and names
# each broken entry point -- and only those.
. "$(dirname "$0")/lib.sh"
BROKEN=$BUILD/tests/selftest/broken_kernels.so
[ -f "$BROKEN" ] || { fail "no $BROKEN: build the tests"; done_checks; exit 1; }

mkdir "$T/tmp"
TMPDIR=$T/tmp run "$SHARDRUN" selftest --results "$T/st.json"
expect_rc 0 "selftest on the CPU"
expect_in "$out" "shardrun selftest: CPU half: 2 ranks, gloo" "the CPU half runs on 2 ranks"
expect_in "$out" "GPU half NOT RUN: no CUDA device is visible" "says plainly the GPU half was not run"
expect_in "$out" "verdict: PASS: all " "verdict"
expect_not_in "$out" "FAIL " "no line fails"
for line in "device.cast bf16->fp16" "device.adamw" "gpt2.layernorm_backward fp32" "gpt2.gemm_batched NT fp32" \
            "gpt2.cross_entropy fp32" "all_reduce bf16 avg" "reduce_scatter int64 max" "broadcast fp16" \
            "split + all_reduce in the child" "bandwidth  all_reduce" "gpt2 step FULL_SHARD x2 vs 1 CPU rank" \
            "gpt2 step FULL_SHARD + offload x2 vs 1 CPU rank" "device.cast fp32->bf16 large" "gpt2.add fp32 large"; do
    expect_in "$(grep '^PASS' <<<"$out")" "$line" "PASS line for $line"
done
expect_in "$(grep 'all_reduce int32 sum' <<<"$out")" "[2 ranks]" "collective lines merge both ranks"
/usr/bin/python3 - "$T/st.json" <<'PY' && pass || fail "results JSON"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["verdict"] == "PASS" and r["failed"] == 0 and r["skipped"] == 0 and r["checks"] == len(r["lines"]) > 80, r["checks"]
assert r["gpu_half"].startswith("not run"), r["gpu_half"]
bw = [l for l in r["lines"] if l["group"] == "bandwidth"]
assert len(bw) == 6 and all(l["metrics"]["busbw_gbps"] > 0 for l in bw), bw
PY
expect_eq "$(ls -A "$T/tmp")" "" "the temporary folder (jobs, logs, checkpoints) is removed"

# broken kernels: exit 1, a FAIL line naming each, the others still pass
SHARDRUN_SELFTEST_DUT=$BROKEN run "$SHARDRUN" selftest --quick --results "$T/broken.json"
expect_rc 1 "selftest against broken kernels"
fails=$(grep '^FAIL' <<<"$out")
expect_in "$fails" "gpt2.add fp32" "the off-by-one add is named"
expect_in "$fails" "gpt2.add fp32                      rank 0: n=1 out: 1 of 1 elements off, first [0]" "... with the size and element it got wrong"
expect_in "$fails" "gpt2.gemm NN fp32                  rank 0: 17x33x65 C: 561 of 597 elements off" "... and the gemm shape (1x1x1 cannot show a stride)"
expect_in "$fails" "gpt2.gemm NN fp32" "the wrong-stride gemm is named (NN)"
expect_in "$fails" "gpt2.gemm TN fp32" "the wrong-stride gemm is named (TN)"
expect_in "$fails" "device.accumulate fp32" "the off-by-one accumulate is named"
expect_eq "$(wc -l <<<"$fails")" 7 "exactly the broken entry points fail (add; gemm NN, NT, TN; accumulate x 3 dtypes): $fails"
expect_in "$out" "PASS  kernel     gpt2.gelu_forward fp32" "unbroken kernels still pass"
expect_in "$out" "PASS  gemm       gpt2.gemm_batched NN fp32" "the batched gemm (not broken) passes"
expect_in "$out" "device under test                  test:broken_kernels.so" "the device under test is named"
expect_in "$out" "verdict: FAIL: 7 of " "verdict"
/usr/bin/python3 - "$T/broken.json" <<'PY' && pass || fail "results JSON of the failed selftest"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["verdict"] == "FAIL" and r["failed"] == 7, (r["verdict"], r["failed"])
names = sorted(l["name"] for l in r["lines"] if l["status"] == "FAIL")
assert names == ["device.accumulate bf16", "device.accumulate fp16", "device.accumulate fp32", "gpt2.add fp32",
                 "gpt2.gemm NN fp32", "gpt2.gemm NT fp32", "gpt2.gemm TN fp32"], names
PY

# Ctrl-C in the middle: the run under way is stopped, no verdict, 130, nothing left behind
mkdir "$T/tmp2"
TMPDIR=$T/tmp2 "$SHARDRUN" selftest >"$T/int.out" 2>"$T/int.err" &
pid=$!
for _ in $(seq 200); do ls "$T"/tmp2/*/selftest-cpu.log >/dev/null 2>&1 && break; sleep 0.05; done
kill -INT $pid
wait $pid
expect_eq "$?" 130 "SIGINT during the selftest: exit 130"
expect_in "$(cat "$T/int.err")" "selftest: stopped by signal 2; no verdict" "says it was stopped"
expect_not_in "$(cat "$T/int.out")" "verdict" "no verdict"
expect_eq "$(ls -A "$T/tmp2")" "" "the temporary folder is removed"

# two agents (nodes) of 2 ranks each: the collectives run on 4 ranks; each agent prints its own
# ranks' lines; the FSDP step (one node only) is left out, saying so
port=$(free_port_pair)
export SHARDRUN_RDZV_TOKEN=selftest-$$
"$SHARDRUN" selftest --quick --nnodes 2 --node-rank 1 --master-addr 127.0.0.1 --master-port "$port" >"$T/n1.out" 2>&1 &
n1=$!
run "$SHARDRUN" selftest --quick --nnodes 2 --node-rank 0 --master-addr 127.0.0.1 --master-port "$port"
wait $n1
expect_eq "$?" 0 "selftest on the second node: $(tail -3 "$T/n1.out")"
unset SHARDRUN_RDZV_TOKEN
expect_rc 0 "selftest on the first of two nodes"
expect_in "$out" "CPU half: 2 ranks per node, gloo" "ranks per node"
expect_in "$out" "all_reduce bf16 avg over shm       counts 1,7,1021 on 4 ranks (gloo over shm)" "collectives on 4 ranks (one machine: shm)"
expect_in "$out" "all_reduce bf16 avg over tcp       counts 1,7,1021 on 4 ranks (gloo over tcp)" "... and over Gloo's TCP"
expect_in "$(cat "$T/n1.out")" "all_gather int64 over tcp          counts 1,7,1021 on 4 ranks (gloo over tcp)" "... also on the second node"
expect_in "$out" "several nodes: the FSDP step comparison was not run" "says the FSDP step was left out"
expect_not_in "$out" "fsdp " "no FSDP line"

# usage errors: exit 2 before anything runs
run "$SHARDRUN" selftest job.ini
expect_rc 2 "selftest takes no job file"
expect_in "$err" "unknown argument job.ini" "says which argument"
run "$SHARDRUN" selftest --gpu
expect_rc 2 "--gpu on a machine without a GPU"
expect_in "$err" "selftest --gpu: no CUDA device is visible" "says why"
run "$SHARDRUN" selftest --results /nonexistent/dir/r.json
expect_rc 2 "--results in a missing folder"
expect_in "$err" "selftest: --results: /nonexistent/dir/r.json: the folder /nonexistent/dir does not exist" "names the file"
run "$SHARDRUN" selftest --nproc-per-node 0
expect_rc 2 "--nproc-per-node 0"
done_checks
