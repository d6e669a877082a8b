#!/usr/bin/env bash
# rdzv_backend = etcd against the built-in store, on this host (docs/benchmarks.md "Elastic jobs in
# etcd").  A single etcd member on loopback, started here and stopped by its pid; every figure from
# one run of this script:
#   rendezvous  K agents (AGENTS, default "64 256"), one rank each, nnodes = K:K, task exec:/bin/true,
#               all started at once: built-in (agent k is --node-rank k, --master-addr 127.0.0.1) and
#               etcd (every agent alike), alternating; from the first agent's launch and from the
#               last's until every agent said "started 1 worker", and until every agent exited; with
#               etcd, the requests etcd served per agent, by kind
#   traffic     etcd's own counters (GET /metrics: gRPC messages received by method, raft proposals
#               committed) around the first world of 3 agents forming, a non-leader agent killed
#               (SIGKILL) until the world of 2 started, the leader killed until the world of 2
#               started, and while the job stands still (the lease renewals), per agent per second
#   failover    the GPT-2 demo job (examples/gpt2/fsdp_cpu.ini, or -j JOB) on 3 agents, one rank each,
#               nnodes = 2:3, checkpoints every 5 steps, rank 0 paused after step 7
#               (SHARDRUN_DEBUG_PAUSE_AT) while the steady traffic is counted; then an agent's
#               shardrun killed (SIGKILL): the leader (rank 0's agent) or a non-leader (rank 2's)
#               with etcd, node 2 with the built-in store (bench/elastic_latency.sh's "lost").
#               Seconds from the kill: a survivor says the leader or a node went away -> the leader's
#               lease expired (the leader key's DELETE, seen by a watch of the job's keys) -> a new
#               leader elected (the leader key's PUT) -> the new world's rank 0 started -> the
#               checkpoint loaded -> the new world's first step done
# Median of RUNS runs each.  The watch this script keeps on the job's keys is one Watch stream, not
# counted in the tables.
# Usage: bench/elastic_etcd.sh BUILD_DIR [-j JOB.ini] [-r RUNS] [-- MORE SHARDRUN ARGS (the GPT-2 job's)]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/agents_lib.sh"
bench_args "$0 BUILD_DIR [-j JOB.ini] [-r RUNS] [-- MORE SHARDRUN ARGS]" "$@"
command -v etcd >/dev/null || { echo "$0: no etcd on PATH: apt-get install etcd-server" >&2; exit 2; }
tmp=$(mktemp -d)
etcd_pid=
trap '[ -z "$etcd_pid" ] || kill "$etcd_pid" 2>/dev/null; wait; rm -rf "$tmp"' EXIT
cd "$tmp"
ulimit -n "$(ulimit -Hn)" # 256 agents: the leader's store holds a connection per agent, etcd two
export OMP_NUM_THREADS=1 SHARDRUN_RDZV_TOKEN=elastic-etcd-$$
client=$(free_port_pair) # its neighbour is the peer port
etcd --name m0 --data-dir "$tmp/etcd" --listen-client-urls "http://127.0.0.1:$client" \
    --advertise-client-urls "http://127.0.0.1:$client" --listen-peer-urls "http://127.0.0.1:$((client + 1))" \
    --initial-advertise-peer-urls "http://127.0.0.1:$((client + 1))" \
    --initial-cluster "m0=http://127.0.0.1:$((client + 1))" --heartbeat-interval 50 --election-timeout 500 \
    >"$tmp/etcd.log" 2>&1 &
etcd_pid=$!
printf '[shardrun]\ntask = exec:/bin/true\nnproc_per_node = 1\n' >"$tmp/true.ini"
/usr/bin/python3 -u - "$build/shardrun" "$job" "$runs" "$here" "127.0.0.1:$client" "${AGENTS:-64 256}" \
    "$etcd_pid" "${extra[@]}" <<'PY'
import atexit, base64, json, os, re, signal, statistics, subprocess, sys, threading, time, urllib.request

shardrun, job, runs, here, endpoint, counts, etcd_pid, extra = (
    sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5], [int(k) for k in sys.argv[6].split()],
    int(sys.argv[7]), sys.argv[8:])
sys.path.insert(0, here)
from proc_tree import descendants  # bench/proc_tree.py
etcd_url = "http://" + endpoint
serial = [0]
everyone = []  # every Agents: what is left of them is killed when the script ends, however it ends
atexit.register(lambda: [a.kill() for a in everyone])

def etcd_healthy(limit):
    end = time.time() + limit
    while time.time() < end:
        try:
            if b'"true"' in urllib.request.urlopen(etcd_url + "/health", timeout=2).read():
                return True
        except OSError:
            pass
        try:
            os.kill(etcd_pid, 0)
        except ProcessLookupError:
            return False
        time.sleep(0.1)
    return False

if not etcd_healthy(10):
    sys.exit("etcd did not start or is not healthy within 10 s; its log:\n" + open("etcd.log").read()[-2000:])

def free_port():
    out = subprocess.run(["bash", "-c", f". {here}/agents_lib.sh; free_port_pair"], capture_output=True, text=True)
    return out.stdout.strip()

def backend_args(backend, node, rid):
    if backend == "etcd":
        return ["--rdzv-backend", "etcd", "--rdzv-endpoint", endpoint, "--rdzv-id", rid]
    return ["--node-rank", str(node), "--master-addr", "127.0.0.1"]


class Agents:
    """Agents of one job; every line of their stdout and stderr with the time it arrived, and when
    each exited."""
    def __init__(self):
        self.procs, self.lines, self.ended = [], [], {}
        everyone.append(self)
    def start(self, cmd, env=None):
        i = len(self.procs)
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             env=dict(os.environ, **(env or {})))
        self.procs.append(p)
        threading.Thread(target=self.read, args=(i, p), daemon=True).start()
    def read(self, i, p):
        for line in p.stdout:
            self.lines.append((time.time(), i, line.rstrip("\n")))
        p.wait()
        self.ended[i] = time.time()
    def tail(self, n=30):
        """the last lines, without the results lists; the agents' exit codes"""
        said = [f"[agent {i}] {l}" for _, i, l in self.lines if not re.match(r"\s*[\[\]{]", l)]
        codes = {}
        for i, p in enumerate(self.procs):
            codes.setdefault(p.poll(), []).append(i)
        return "\n".join(said[-n:] + [f"exit code {c}: agents {v[:20]}" for c, v in codes.items()])
    def when(self, pat, after=0.0):
        """the first line matching pat after a time: (time, agent, match), or None"""
        for t, i, l in list(self.lines):
            if t >= after:
                m = re.search(pat, l)
                if m:
                    return t, i, m
        return None
    def wait_for(self, pat, after=0.0, count=1, limit=300):
        end = time.time() + limit
        while time.time() < end:
            hits = [(t, i) for t, i, l in list(self.lines) if t >= after and re.search(pat, l)]
            if len({i for _, i in hits}) >= count:
                return max(min(t for t, j in hits if j == i) for i in {i for _, i in hits})
            if len(self.ended) == len(self.procs):
                break
            time.sleep(0.01)
        self.kill()
        sys.exit(f"{count} agent(s) with a line matching {pat!r}: not within {limit} s:\n" + self.tail())
    def wait_all(self, limit=300):
        end = time.time() + limit
        while len(self.ended) < len(self.procs) and time.time() < end:
            time.sleep(0.02)
        if len(self.ended) < len(self.procs):
            self.kill()
            sys.exit(f"the agents did not all exit within {limit} s:\n" + self.tail())
        return [p.returncode for p in self.procs]
    def kill(self):
        for p in self.procs:
            if p.poll() is None:
                for pid in reversed(descendants(p.pid)):
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass

def metrics():
    """etcd's counters: gRPC messages received by method, and raft proposals committed"""
    out = {}
    for line in urllib.request.urlopen(etcd_url + "/metrics", timeout=10).read().decode().splitlines():
        m = re.match(r'grpc_server_msg_received_total\{.*grpc_method="(\w+)".*\} (\S+)', line)
        if m:
            out[m.group(1)] = out.get(m.group(1), 0) + float(m.group(2))
        elif line.startswith("etcd_server_proposals_committed_total "):
            out["(raft proposals)"] = float(line.split()[1])
    return out

def delta(a, b):
    return {k: b[k] - a.get(k, 0) for k in b if k != "Watch" and b[k] - a.get(k, 0) > 0}

class Watch:
    """The job's keys in etcd: (time, PUT or DELETE, key) as etcd reports them"""
    def __init__(self, rid):
        self.prefix, self.events = f"/shardrun/{rid}/", []
        b64 = lambda s: base64.b64encode(s.encode()).decode()
        body = json.dumps({"create_request": {"key": b64(self.prefix), "range_end": b64(self.prefix[:-1] + "0")}})
        self.resp = urllib.request.urlopen(urllib.request.Request(etcd_url + "/v3/watch", data=body.encode()))
        threading.Thread(target=self.read, daemon=True).start()
    def read(self):
        for line in self.resp:
            for e in json.loads(line).get("result", {}).get("events", []):
                key = base64.b64decode(e["kv"]["key"]).decode()[len(self.prefix):]
                self.events.append((time.time(), e.get("type", "PUT"), key))
    def when(self, kind, key, after):
        return next((t for t, k, name in list(self.events) if t >= after and k == kind and name.startswith(key)), None)

# ---- rendezvous: K agents of exec:/bin/true
def rendezvous(k, backend):
    serial[0] += 1
    port, rid = free_port(), f"rdzv-{os.getpid()}-{serial[0]}"
    a = Agents()
    before = metrics()
    first = time.time()
    for node in range(k):
        a.start([shardrun, "true.ini", "--nnodes", f"{k}:{k}", "--nproc-per-node", "1", "--master-port", port] +
                backend_args(backend, node, rid))
    last = time.time()
    rcs = a.wait_all(limit=600)
    if rcs != [0] * k:
        sys.exit(f"{backend}, {k} agents: exit codes {sorted(set(rcs))}:\n" + a.tail())
    started = [t for t, i, l in a.lines if re.search(rf"started 1 worker \(rank \d+ of {k}\)", l)]
    if len(started) != k:
        sys.exit(f"{backend}, {k} agents: {len(started)} said they started their worker:\n" + a.tail())
    traffic = delta(before, metrics()) if backend == "etcd" else {}
    return {"launch": last - first, "from first": max(started) - first, "from last": max(started) - last,
            "ended": max(a.ended.values()) - first, "traffic": traffic}

def med(xs):
    return statistics.median(xs)

load = lambda: open("/proc/loadavg").read().split()[0]
print(f"load average {load()} at the start; etcd {subprocess.run(['etcd', '--version'], capture_output=True, text=True).stdout.split()[2]}, one member "
      f"on loopback; {os.cpu_count()} cores; seconds; median of {runs}")
print("rendezvous: K agents, exec:/bin/true, nnodes = K:K, all launched at once")
for k in counts:
    res = {"builtin": [], "etcd": []}
    for _ in range(runs):
        for backend in res:
            res[backend].append(rendezvous(k, backend))
    for backend, r in res.items():
        cols = "  ".join(f"{c} {med([x[c] for x in r]):6.2f}" for c in ["launch", "from first", "from last", "ended"])
        print(f"  {k:4d} {backend:7s}  {cols}   (all started from the first launch, runs: "
              f"{', '.join('%.2f' % x['from first'] for x in r)})")
    t = res["etcd"]
    kinds = sorted({m for x in t for m in x["traffic"]})
    print(f"       etcd requests per agent: " +
          ", ".join(f"{m} {med([x['traffic'].get(m, 0) for x in t]) / k:.2f}" for m in kinds))

# ---- a GPT-2 job on 3 agents: traffic and failover
def job_run(backend, victim, steady_s):
    serial[0] += 1
    port, rid = free_port(), f"job-{os.getpid()}-{serial[0]}"
    out = os.path.join(os.getcwd(), rid)
    watch = Watch(rid) if backend == "etcd" else None
    a = Agents()
    m0 = metrics()
    for node in range(3):
        a.start([shardrun, job, "--nnodes", "2:3", "--nproc-per-node", "1", "--master-port", port,
                 "--set", "shardrun.rdzv_last_call=2", "--set", "task.output_dir=" + out, "--set", "task.save_steps=5",
                 "--set", "task.logging_steps=1", "--set", "task.max_steps=14",
                 "--set", "task.overwrite_output_dir=true", "--set", "task.eval_strategy=no"] +
                backend_args(backend, node, rid) + extra, env={"SHARDRUN_DEBUG_PAUSE_AT": "0:7"})
    formed = a.wait_for(r"started 1 worker \(rank \d+ of 3\)", count=3)
    m1 = metrics()
    ranks = {int(a.when(rf"started 1 worker \(rank {r} of 3\)")[1]): r for r in range(3)}
    target = next(i for i, r in ranks.items() if r == (0 if victim == "leader" else 2))
    a.wait_for(r"\[rank0\]: step 7/14", after=formed)
    m2 = metrics()
    time.sleep(steady_s)  # the job stands still: rank 0 paused, the others wait for it
    m3 = metrics()
    kill = time.time()
    a.procs[target].send_signal(signal.SIGKILL)
    started = a.wait_for(r"started 1 worker \(rank \d+ of 2, restart 1\)", after=kill, count=2)
    m4 = metrics()
    rcs = a.wait_all()  # (the watch's thread reads on until the script ends: closing its stream would wait for it)
    want = [0, 0, 0]
    want[target] = -9
    if rcs != want:
        sys.exit(f"{backend}, {victim} killed: exit codes {rcs}, expected {want}:\n" + a.tail())
    notice = a.when(r"went away|the job's nodes change", after=kill)
    rank0 = a.when(r"started 1 worker \(rank 0 of 2, restart 1\)", after=kill)
    loaded = a.when(r"\[rank0\]: shardrun: resumed from .*checkpoint-(\d+)", after=kill)
    if not (notice and rank0 and loaded):
        sys.exit(f"{backend}, {victim} killed: no notice, restart or resume after the kill:\n" + a.tail())
    frm = int(loaded[2].group(1))
    step = a.when(rf"\[rank0\]: step {frm + 1}/14", after=loaded[0])
    if not step:
        sys.exit(f"{backend}, {victim} killed: no step {frm + 1} after the resume:\n" + a.tail())
    r = {"noticed": notice[0] - kill, "lease expired": None, "elected": None, "started": rank0[0] - kill,
         "loaded": loaded[0] - kill, "first step": step[0] - kill, "recomputed": 7 - frm,
         "formed": delta(m0, m1), "change": delta(m3, m4), "change_s": started - kill,
         "steady": {m: v / steady_s / 3 for m, v in delta(m2, m3).items()} if steady_s > 0 else {}}
    steps = [t for t, i, l in a.lines if t < kill and re.search(r"\[rank0\]: step \d+/14", l)]
    r["step"] = med([y - x for x, y in zip(steps, steps[1:])]) if len(steps) > 2 else float("nan")
    if victim == "leader":  # (a non-leader's lease expires too, later: nothing waits for it)
        gone, put = watch.when("DELETE", "leader", kill), watch.when("PUT", "leader", kill)
        if not (gone and put):
            sys.exit(f"etcd, leader killed: the watch saw no DELETE and PUT of the leader key:\n{watch.events}")
        r["lease expired"], r["elected"] = gone - kill, put - kill
    return r

cases = [("etcd", "leader"), ("etcd", "other"), ("builtin", "other")]
res = {c: [] for c in cases}
for n in range(runs):
    for c in cases:
        res[c].append(job_run(*c, steady_s=5.0 if c[0] == "etcd" else 0.0))

def fmt(d):
    return ", ".join(f"{m} {v:.1f}" for m, v in sorted(d.items(), key=lambda kv: -kv[1]))

def med_dict(ds):
    return {m: med([d.get(m, 0) for d in ds]) for m in sorted({m for d in ds for m in d})}

print(f"etcd traffic, gRPC messages by method (median of {runs}), 3 agents of {os.path.basename(job)}:")
print(f"  first world of 3 formed:              {fmt(med_dict([x['formed'] for x in res[('etcd', 'leader')] + res[('etcd', 'other')]]))}")
for c, what in [(("etcd", "other"), "non-leader killed"), (("etcd", "leader"), "leader killed")]:
    print(f"  {what + ', to the world of 2:':38s}{fmt(med_dict([x['change'] for x in res[c]]))}"
          f"   (over {med([x['change_s'] for x in res[c]]):.2f} s)")
steady = med_dict([x["steady"] for c in cases if c[0] == "etcd" for x in res[c]])
print(f"  steady, per agent per second:         {', '.join(f'{m} {v:.2f}' for m, v in steady.items())}")
print(f"failover: seconds from the kill (SIGKILL of an agent's shardrun), median of {runs}; a step before: "
      f"{med([x['step'] for c in cases for x in res[c]]):.2f}")
cols = ["noticed", "lease expired", "elected", "started", "loaded", "first step"]
for c, what in [(("etcd", "leader"), "etcd, leader killed"), (("etcd", "other"), "etcd, non-leader killed"),
                (("builtin", "other"), "built-in, node 2 killed")]:
    r = res[c]
    line = "  ".join(f"{col} " + ("-" if r[0][col] is None else f"{med([x[col] for x in r]):.2f}") for col in cols)
    print(f"  {what:25s} {line}  recomputed {r[0]['recomputed']}  (first step, runs: "
          f"{', '.join('%.2f' % x['first step'] for x in r)})")
print(f"load average {load()} at the end")
PY
