# bench/fsdp_study.sh on GPT-2 tiny, 2 steps: all 10 training runs and pgbench pass their checks,
# the table has a row of numbers for each, the CSV and the chart hold the same 10 runs; a failing
# run fails the study with its log's path and leaves no table; commands the study cannot honour are
# refused before anything runs; a job without a wrapped class is refused, and --wrap supplies it.
. "$(dirname "$0")/../cli/lib.sh"
[ -f "$BUILD/examples/gpt2.so" ] && [ -f "$BUILD/examples/pgbench.so" ] \
    || { echo "FAIL: no $BUILD/examples/gpt2.so or pgbench.so; build the whole tree" >&2; exit 1; }
STUDY=$SRC/bench/fsdp_study.sh
JOB=$SRC/examples/gpt2/fsdp_cpu.ini

run "$STUDY" "$JOB" --build "$BUILD" --steps 2 --pg-bytes 1048576 --out "$T/study"
expect_rc 0 "the study on GPT-2 tiny"
ids="1-none 1-FULL_SHARD 2-FULL_SHARD 2-FULL_SHARD-offload 2-SHARD_GRAD_OP 2-SHARD_GRAD_OP-offload 2-NO_SHARD
2-NO_SHARD-offload 2x1-HYBRID_SHARD 2x1-HYBRID_SHARD-offload"
# every row: its id, then strategy, ranks, offload, threads and 6 numbers (step s .. other load)
/usr/bin/python3 - "$T/study" $ids <<'PY' && pass || fail "the table, CSV or chart (above); stdout: $out"
import csv, re, sys, xml.etree.ElementTree as ET
d, ids = sys.argv[1], sys.argv[2:]
md = open(f"{d}/fsdp_study.md").read()
rows = [l.split("|")[1:-1] for l in md.splitlines() if re.match(r"^\| [12]", l)]
assert [r[0].strip() for r in rows] == ids, f"table rows {[r[0] for r in rows]}"
for r in rows:
    c = [x.strip() for x in r]
    strat, ranks, off, thr = c[1], c[2], c[3], c[4]
    rid = c[0]
    assert (strat.startswith("none") if rid == "1-none" else strat == rid.split("-")[1]), (rid, strat)
    assert ranks == ("1" if rid.startswith("1-") else "2 x 1" if rid.startswith("2x1") else "2"), (rid, ranks)
    assert off == ("on" if rid.endswith("offload") else "off"), (rid, off)
    assert thr == ("2" if rid.startswith("1-") else "1"), (rid, thr)
    nums = [float(x) for x in c[5:]]
    assert len(nums) == 6 and all(v > 0 for v in nums[:5]) and nums[5] >= 0, (rid, c[5:])
assert re.search(r"^pgbench, 2 ranks, gloo over \w+, 1048576 bytes fp32 \(5 iterations\): bus bandwidth all-gather "
                 r"[\d.]+, reduce-scatter [\d.]+, all-reduce [\d.]+ GB/s", md, re.M), "the pgbench line"
assert re.search(r"other processes used [\d.]+ of \d+ cores", md), "the machine load"
assert "OMP_NUM_THREADS = 2 for 1-rank runs, 1 per rank for 2-rank runs" in md, "the threads in the header"
assert "wrap TRANSFORMER_BASED_WRAP on GPT2Block" in md, "the wrapped class in the header"
got = [r["config"] for r in csv.DictReader(open(f"{d}/fsdp_study.csv"))]
assert got == ids, f"CSV rows {got}"
svg = ET.parse(f"{d}/fsdp_study.svg").getroot()
bars = [e for e in svg.iter("{http://www.w3.org/2000/svg}rect") if e.find("{http://www.w3.org/2000/svg}title") is not None]
assert len(bars) == 30, f"{len(bars)} bars in the chart, expected 10 step times + 10 x 2 memory"
PY
# the run count: one folder per run, each with its command, log and results (HYBRID: both agents' logs)
expect_eq "$(cd "$T/study/runs" && ls -d */ | tr -d / | sort | tr '\n' ' ')" \
    "$(printf '%s\n' $ids pgbench | sort | tr '\n' ' ')" "one folder per run"
n=0
for d in $ids pgbench; do
    [ -s "$T/study/runs/$d/log.txt" ] && [ -s "$T/study/runs/$d/results.json" ] && [ -s "$T/study/runs/$d/command.txt" ] \
        && n=$((n + 1))
done
expect_eq "$n" 11 "every run has its command, log and results"
expect_eq "$(grep -c -- '--node-rank' "$T/study/runs/2x1-HYBRID_SHARD/command.txt")" 2 "HYBRID_SHARD: two agents"
[ -s "$T/study/runs/2x1-HYBRID_SHARD/log.node1.txt" ] && pass || fail "HYBRID_SHARD: node 1's log"
expect_in "$(cat "$T/study/runs/2x1-HYBRID_SHARD/log.txt")" "shard group 1, replicas 2" "HYBRID_SHARD shards within a node"
expect_in "$(cat "$T/study/runs/1-none/log.txt")" "replicated on 1 rank (ACCELERATE_USE_FSDP is not true)" \
    "the first run trains without FSDP"
expect_not_in "$(cat "$T/study/runs/job_without_fsdp.ini")" "fsdp." "the job without FSDP has no fsdp.* key"
expect_in "$out" "$T/study/fsdp_study.md" "the study names its table"

# a run that fails fails the study, naming the run and its log; no table is written
run "$STUDY" "$JOB" --build "$BUILD" --steps 2 --only 1-none --set task.no_such_key=1 --out "$T/broken"
expect_rc 1 "a failing run"
expect_in "$err" "FAILED: run 1-none: exit code 2" "the failing run is named"
expect_in "$err" "log: $T/broken/runs/1-none/log.txt" "its log is named"
[ ! -e "$T/broken/fsdp_study.md" ] && pass || fail "a failed study leaves no table"

# refused before any run
run "$STUDY" "$JOB" --build "$BUILD" --set task.max_steps=3 --out "$T/refused"
expect_rc 2 "--set of a key the study controls"
expect_in "$err" "the study sets task.max_steps itself on every run; use --steps" "names the option to use"
run "$STUDY" "$JOB" --build "$BUILD" --only 3-FULL_SHARD --out "$T/refused"
expect_rc 2 "--only matching no run"
[ ! -e "$T/refused" ] && pass || fail "a refused study creates no folder"

# the wrapped class comes from the job or --wrap, never assumed
grep -v -e '^fsdp.auto_wrap_policy' -e '^fsdp.transformer_layer_cls_to_wrap' "$JOB" \
    | sed "s|^task = gpt2\$|task = $BUILD/examples/gpt2.so|" >"$T/nowrap.ini"
run "$STUDY" "$T/nowrap.ini" --build "$BUILD" --steps 2 --only 2-FULL_SHARD --out "$T/nowrap"
expect_rc 2 "a job that wraps no module"
expect_in "$err" "--wrap CLASS" "names --wrap"
run "$STUDY" "$T/nowrap.ini" --build "$BUILD" --steps 2 --only 2-FULL_SHARD --wrap GPT2Block --out "$T/wrap"
expect_rc 0 "--wrap GPT2Block"
expect_in "$(cat "$T/wrap/runs/2-FULL_SHARD/log.txt")" "(4 wrapped + root)" "--wrap's class is wrapped"
done_checks
