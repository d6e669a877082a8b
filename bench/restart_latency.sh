#!/usr/bin/env bash
# Restart latency: how long a job stands still after a rank dies, until it trains again.
#   1. shardrun, a model task: the GPT-2 demo job (examples/gpt2/fsdp_cpu.ini, or the job given
#      with -j), checkpoints every 5 steps, max_restarts = 1, rank 1 killed (SIGKILL) right after
#      step 7 (SHARDRUN_DEBUG_KILL_AT).  Every output line is timestamped as it arrives; reported:
#      death (the agent's "restarting" line, printed when it reaps the rank) -> workers started again
#      -> checkpoint-5 loaded ("resumed from") -> step 6 done again.
#   2. the same exec: program under shardrun and under torchrun (--max-restarts 1, --standalone,
#      --monitor_interval 0.1, torchrun's best case; its default polls every 5 s): a torch script
#      that forms a gloo group, passes a barrier and prints the time; in the first attempt rank 1
#      then prints the time and exits 1.  Reported: the dying rank's time to the restarted ranks'
#      barrier, median of RUNS runs, alternating.
# The exec: figures include Python's start (importing torch) and torch's own rendezvous (its
# TCPStore client retries once a second), which both launchers pay alike.
# Usage: bench/restart_latency.sh BUILD_DIR [-j JOB.ini] [-r RUNS] [-- MORE SHARDRUN ARGS for 1.]
#   e.g. -- --set task.size=gpt2 --set task.per_device_train_batch_size=4 (GPT-2 124M)
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 BUILD_DIR [-j JOB.ini] [-r RUNS]" >&2; exit 2; }
build=$(cd "$1" && pwd)
shift
here=$(cd "$(dirname "$0")" && pwd)
job=$here/../examples/gpt2/fsdp_cpu.ini
runs=5
while [ $# -gt 0 ]; do
    case $1 in
    -j) job=$(cd "$(dirname "$2")" && pwd)/$(basename "$2"); shift 2 ;;
    -r) runs=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "$0: unknown argument $1" >&2; exit 2 ;;
    esac
done
[ -x "$build/shardrun" ] || { echo "$0: build $build first" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/die_once.py" <<'PY'
import os, sys, time
import torch.distributed as dist
dist.init_process_group("gloo")
dist.barrier()
attempt = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))
print(f"ready {attempt} {time.time():.6f}", flush=True)
if attempt == 0 and dist.get_rank() == 1:
    print(f"dying {time.time():.6f}", flush=True)
    os._exit(1)
dist.barrier()
PY
printf '[shardrun]\ntask = exec:/usr/bin/python3 %s\nplugins = torch\nnproc_per_node = 2\nmax_restarts = 1\n' \
    "$tmp/die_once.py" >"$tmp/die_once.ini"
cd "$tmp"
TMPDIR="$tmp" /usr/bin/python3 - "$build/shardrun" "$job" "$runs" "$@" <<'PY'
import re, statistics, subprocess, sys, time

shardrun, job, runs, extra = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]

def timed_lines(cmd, env=None):
    """Runs cmd; returns [(seconds since start, line)] of stdout+stderr as they arrive, and rc."""
    t0 = time.time()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    lines = [(time.time(), line.rstrip("\n")) for line in p.stdout]
    return lines, p.wait(), t0

import os
def model_task():
    env = dict(os.environ, SHARDRUN_DEBUG_KILL_AT="1:7")
    lines, rc, _ = timed_lines([shardrun, job, "--set", "task.output_dir=" + os.getcwd() + "/out",
                                "--set", "task.save_steps=5", "--set", "task.logging_steps=1",
                                "--set", "shardrun.max_restarts=1", "--set", "task.max_steps=12",
                                "--set", "task.overwrite_output_dir=true"] + extra, env)
    if rc != 0:
        sys.exit("model task run failed:\n" + "\n".join(l for _, l in lines[-20:]))
    def first(pat, after=0.0):
        for t, l in lines:
            if t >= after and re.search(pat, l):
                return t
        sys.exit(f"no line matching {pat!r}")
    death = first(r"restarting the job")
    started = first(r"started \d+ workers? .*restart 1", death)
    loaded = first(r"resumed from .*checkpoint-5", death)
    step6 = first(r"step 6/", death)
    return started - death, loaded - death, step6 - death

def exec_task(cmd):
    lines, rc, _ = timed_lines(cmd)
    text = "\n".join(l for _, l in lines)
    if rc != 0:
        sys.exit("exec run failed:\n" + text[-3000:])
    dying = [float(m) for m in re.findall(r"dying (\d+\.\d+)", text)]
    ready = [float(m) for m in re.findall(r"ready 1 (\d+\.\d+)", text)]
    if len(dying) != 1 or len(ready) != 2:
        sys.exit("unexpected output:\n" + text[-3000:])
    return max(ready) - dying[0]

m = [model_task() for _ in range(runs)]
print(f"model task ({os.path.basename(job)} {' '.join(extra)}, rank 1 killed after step 7, resume from checkpoint-5), median of {runs}:")
for i, what in enumerate(["death -> workers started again", "death -> checkpoint-5 loaded", "death -> step 6 done again"]):
    print(f"  {what:34s} {statistics.median(x[i] for x in m):7.3f} s   (runs: {', '.join(f'{x[i]:.3f}' for x in m)})")

torchrun = ["/usr/bin/python3", "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
            "--max_restarts", "1", "--monitor_interval", "0.1", "--redirects", "1", "--tee", "1", "die_once.py"]
ours = [shardrun, "die_once.ini"]
s, t = [], []
for _ in range(runs):
    s.append(exec_task(ours))
    t.append(exec_task(torchrun))
print(f"exec: torch script, rank 1 exits 1 after the first barrier; its death -> both ranks past a barrier again, median of {runs}:")
print(f"  shardrun (max_restarts = 1)                          {statistics.median(s):7.3f} s   (runs: {', '.join(f'{x:.3f}' for x in s)})")
print(f"  torchrun (--max_restarts 1, --monitor_interval 0.1)  {statistics.median(t):7.3f} s   (runs: {', '.join(f'{x:.3f}' for x in t)})")
print(f"  ratio torchrun / shardrun: {statistics.median(t) / statistics.median(s):.2f}")
PY
