#!/usr/bin/env bash
# Elastic jobs: how long the job stands still when a node leaves or joins, until the new world has
# trained a step (docs/elastic.md).  The GPT-2 demo job (examples/gpt2/fsdp_cpu.ini, or -j JOB) as an
# elastic job of one rank per node on loopback (nnodes = 2:3), checkpoints every 5 steps, node 0's
# rank paused after step 7 (SHARDRUN_DEBUG_PAUSE_AT) so that the event lands after step 7:
#   lost    3 nodes; node 2's shardrun killed (SIGKILL): the others go on from checkpoint-5
#   notice  3 nodes; node 2's shardrun gets SIGTERM: every rank saves after step 7, node 2 leaves
#   join    2 nodes; a third is started: every rank saves after step 7, the world grows
# Every line of node 0's output is timestamped as it arrives; reported, from the event (the kill,
# the signal, the third node's start): node 0 says the nodes change (detection) -> the checkpoint
# of the notice or the join written -> node 0's worker of the new world started (the world agreed
# and the old workers stopped) -> the checkpoint loaded ("resumed from") -> the first step of the
# new world done.  Steps recomputed: those trained after the checkpoint the new world starts from.
# For scale, the median time of a step before the event.
# Then a peer in the same run: the same torch program (init_process_group("gloo"), a barrier, then
# barriers until its world changes) as an elastic job of three agents on loopback under shardrun
# (exec:, nnodes = 2:3) and under torchrun (--nnodes 2:3, its c10d rendezvous, --max_restarts 3,
# --monitor_interval 0.1), alternating; the third agent and its worker killed (SIGKILL) once every
# rank passed its first barrier; reported: the kill -> both survivors' ranks past a barrier in a
# world of 2, median of RUNS.  It includes Python's start and torch's own rendezvous, which both
# pay alike.
# Median of RUNS runs each.
# Usage: bench/elastic_latency.sh BUILD_DIR [-j JOB.ini] [-r RUNS] [-- MORE SHARDRUN ARGS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/agents_lib.sh"
bench_args "$0 BUILD_DIR [-j JOB.ini] [-r RUNS] [-- MORE SHARDRUN ARGS]" "$@"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
ports() { free_port_pair; }
export OMP_NUM_THREADS=1 SHARDRUN_RDZV_TOKEN=elastic-latency-$$
cat >"$tmp/world_change.py" <<'PY'
import os, sys, time
import torch.distributed as dist
dist.init_process_group("gloo")
dist.barrier()
ws = dist.get_world_size()
print(f"ready {ws} {time.time():.6f}", flush=True)
if ws < 3:
    sys.exit(0)
end = time.time() + 300
while time.time() < end:  # the world in use until a peer is lost
    dist.barrier()
    time.sleep(0.05)
PY
printf '[shardrun]\ntask = exec:/usr/bin/python3 %s\nplugins = torch\nnproc_per_node = 1\n' "$tmp/world_change.py" \
    >"$tmp/world_change.ini"
/usr/bin/python3 - "$build/shardrun" "$job" "$runs" "$here" "${extra[@]}" <<'PY'
import os, re, signal, statistics, subprocess, sys, threading, time

shardrun, job, runs, here, extra = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5:]
sys.path.insert(0, here)
from proc_tree import descendants  # bench/proc_tree.py

def free_port():
    out = subprocess.run(["bash", "-c", f". {here}/agents_lib.sh; free_port_pair"], capture_output=True, text=True)
    return out.stdout.strip()

class Agent:
    """One shardrun agent; its stdout+stderr lines with the time each arrived."""
    def __init__(self, node, port, out, env=None):
        cmd = [shardrun, job, "--nnodes", "2:3", "--node-rank", str(node), "--nproc-per-node", "1",
               "--master-addr", "127.0.0.1", "--master-port", port, "--set", "shardrun.rdzv_last_call=2",
               "--set", "task.output_dir=" + out, "--set", "task.save_steps=5", "--set", "task.logging_steps=1",
               "--set", "task.max_steps=14", "--set", "task.overwrite_output_dir=true",
               "--set", "task.eval_strategy=no"] + extra
        self.p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                  env=dict(os.environ, **(env or {})))
        self.lines = []
        self.t = threading.Thread(target=self.read, daemon=True)
        self.t.start()
    def read(self):
        for line in self.p.stdout:
            self.lines.append((time.time(), line.rstrip("\n")))
    def wait_for(self, pat, limit=300):
        end = time.time() + limit
        while time.time() < end:
            for t, l in list(self.lines):
                if re.search(pat, l):
                    return t
            if self.p.poll() is not None and not self.t.is_alive():
                break
            time.sleep(0.01)
        sys.exit(f"no line matching {pat!r}:\n" + "\n".join(l for _, l in self.lines[-20:]))
    def first(self, pat, after):
        for t, l in self.lines:
            if t >= after and re.search(pat, l):
                return t
        sys.exit(f"no line matching {pat!r} after the event:\n" + "\n".join(l for _, l in self.lines[-30:]))

def one(kind):
    port, out = free_port(), os.path.join(os.getcwd(), "out-" + kind)
    pause = {"SHARDRUN_DEBUG_PAUSE_AT": "0:7"}
    n = 2 if kind == "join" else 3
    agents = [Agent(0, port, out, pause)] + [Agent(i, port, out) for i in range(1, n)]
    agents[0].wait_for(r"\[rank0\]: step 7/14")
    event = time.time()
    if kind == "lost":
        agents[2].p.send_signal(signal.SIGKILL)
    elif kind == "notice":
        agents[2].p.send_signal(signal.SIGTERM)
    else:
        agents.append(Agent(2, port, out))
    rcs = [a.p.wait() for a in agents]
    for a in agents:
        a.t.join()
    want = {"lost": [0, 0, -9], "notice": [0, 0, 143], "join": [0, 0, 0]}[kind]
    if rcs != want:
        sys.exit(f"{kind}: exit codes {rcs}, expected {want}:\n" + "\n".join(l for _, l in agents[0].lines[-30:]))
    a = agents[0]
    detect = a.first(r"the job's nodes change", event)
    start = a.first(r"started 1 worker \(rank 0 of \d+, restart 1\)", event)
    saved = a.first(r"\[rank0\]: shardrun: saved .*checkpoint-7", event) if kind != "lost" else None
    loaded = a.first(r"\[rank0\]: shardrun: resumed from .*checkpoint-(\d+)", event)
    frm = int(re.search(r"checkpoint-(\d+)", [l for t, l in a.lines if t == loaded][0]).group(1))
    step = a.first(rf"\[rank0\]: step {frm + 1}/14", loaded)
    steps = [t for t, l in a.lines if t < event and re.search(r"\[rank0\]: step \d+/14", l)]
    step_s = statistics.median(b - a_ for a_, b in zip(steps, steps[1:])) if len(steps) > 2 else float("nan")
    return {"step": step_s, "detection": detect - event, "checkpoint": (saved - event) if saved else None,
            "new world started": start - event, "checkpoint loaded": loaded - event,
            "first step done": step - event, "recomputed": 7 - frm}

print(f"{os.path.basename(job)} {' '.join(extra)}: 1 rank per node, nnodes = 2:3, loopback; "
      f"seconds from the event, median of {runs}")
for kind in ["lost", "notice", "join"]:
    r = [one(kind) for _ in range(runs)]
    cols = ["detection", "checkpoint", "new world started", "checkpoint loaded", "first step done"]
    med = {c: (statistics.median(x[c] for x in r) if r[0][c] is not None else None) for c in cols}
    print(f"  {kind:7s} " + "  ".join(f"{c} {med[c]:.2f}" if med[c] is not None else f"{c} -" for c in cols) +
          f"  steps recomputed {r[0]['recomputed']}  (a step before: {statistics.median(x['step'] for x in r):.2f})")
    runs_s = ", ".join("%.2f" % x["first step done"] for x in r)
    print(f"          (first step done, runs: {runs_s})")


def peer_run(launcher):
    """Three agents of the exec program; the third killed with its workers; kill -> both survivors ready in 2."""
    port = free_port()
    procs, lines = [], []
    def read(p):
        for line in p.stdout:
            lines.append((time.time(), line.rstrip("\n")))
    for node in range(3):
        if launcher == "shardrun":
            cmd = [shardrun, "world_change.ini", "--nnodes", "2:3", "--node-rank", str(node), "--master-addr",
                   "127.0.0.1", "--master-port", port, "--set", "shardrun.rdzv_last_call=2"]
        else:
            cmd = ["/usr/bin/python3", "-m", "torch.distributed.run", "--nnodes", "2:3", "--nproc_per_node", "1",
                   "--rdzv_backend", "c10d", "--rdzv_endpoint", "127.0.0.1:" + port, "--rdzv_id", "peer" + port,
                   "--max_restarts", "3", "--monitor_interval", "0.1", "--redirects", "1", "--tee", "1",
                   "world_change.py"]
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        threading.Thread(target=read, args=(p,), daemon=True).start()
        procs.append(p)
        time.sleep(0.5)  # torchrun's first agent hosts its store
    end = time.time() + 120
    while sum("ready 3 " in l for _, l in list(lines)) < 3 and time.time() < end:
        time.sleep(0.02)
    if time.time() >= end:
        sys.exit(f"{launcher}: no world of 3:\n" + "\n".join(l for _, l in lines[-20:]))
    kill = time.time()
    for pid in descendants(procs[2].pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    end = time.time() + 240
    while sum("ready 2 " in l for t, l in list(lines) if t > kill) < 2 and time.time() < end:
        time.sleep(0.02)
    for p in procs:
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            for pid in descendants(p.pid):
                os.kill(pid, signal.SIGKILL)
    ready = [float(l.split()[-1]) for t, l in lines if t > kill and "ready 2 " in l]
    if len(ready) < 2:
        sys.exit(f"{launcher}: the survivors did not form a world of 2:\n" + "\n".join(l for _, l in lines[-20:]))
    return max(ready) - kill

s_, t_ = [], []
for _ in range(runs):
    s_.append(peer_run("shardrun"))
    t_.append(peer_run("torchrun"))
print(f"exec: torch program, three agents (nnodes = 2:3), the third killed with its worker -> both survivors past a barrier in a world of 2, median of {runs}:")
print(f"  shardrun (nnodes = 2:3)                                    {statistics.median(s_):7.3f} s   (runs: {', '.join('%.3f' % x for x in s_)})")
print(f"  torchrun (--nnodes 2:3, c10d, --monitor_interval 0.1)      {statistics.median(t_):7.3f} s   (runs: {', '.join('%.3f' % x for x in t_)})")
print(f"  ratio torchrun / shardrun: {statistics.median(t_) / statistics.median(s_):.1f}")
PY
