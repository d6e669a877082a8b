#!/usr/bin/python3
"""The FSDP strategy study: the body of bench/fsdp_study.sh, whose comment says what it runs, measures,
checks and writes.  Standard library only; run through the shell script."""
import argparse
import csv
import fnmatch
import io
import json
import os
import random
import re
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from load_meter import LoadMeter

HERE = os.path.dirname(os.path.abspath(__file__))

PROG = "bench/fsdp_study.sh"
STRATEGIES = ("FULL_SHARD", "SHARD_GRAD_OP", "NO_SHARD", "HYBRID_SHARD")
# keys the study sets itself on every run: a --set of one of them would change what is measured
CONTROLLED = {"task.max_steps": "--steps", "task.logging_steps": None, "task.eval_strategy": None,
              "task.eval_steps": None, "task.save_steps": None, "task.save_final": None, "task.output_dir": None,
              "accelerate.use_fsdp": None, "accelerate.fsdp.sharding_strategy": None,
              "accelerate.fsdp.offload_params": None, "shardrun.nproc_per_node": None, "shardrun.nnodes": None,
              "shardrun.node_rank": None, "shardrun.master_port": None, "shardrun.master_addr": None}


def die(msg, code=1):
    print(f"{PROG}: {msg}", file=sys.stderr)
    sys.exit(code)


# ---- the plan ------------------------------------------------------------------------------------

def plan():
    """every run of the study, in order: id, strategy (none: no FSDP), nodes, ranks per node, offload"""
    runs = [dict(id="1-none", strategy="none", nodes=1, per_node=1, offload=False),
            dict(id="1-FULL_SHARD", strategy="FULL_SHARD", nodes=1, per_node=1, offload=False)]
    for s in STRATEGIES:
        for off in (False, True):
            nodes, per = (2, 1) if s.startswith("HYBRID") else (1, 2)
            base = f"{nodes}x{per}" if nodes > 1 else str(nodes * per)
            runs.append(dict(id=f"{base}-{s}" + ("-offload" if off else ""), strategy=s, nodes=nodes, per_node=per,
                             offload=off))
    runs.append(dict(id="pgbench", strategy="pgbench", nodes=1, per_node=2, offload=False))
    return runs


# ---- the job file --------------------------------------------------------------------------------

KEYLINE = re.compile(r"^([^=:;#\s\[][^=:]*?)\s*[=:]\s*(.*)$")


def strip_comment(v):
    return re.split(r"\s[;#]", v, maxsplit=1)[0].strip()


def read_ini(path):
    """{section: {key: value}} as shardrun reads a job file (inline '; comments', continuation lines)"""
    out, section, last = {}, None, None
    for line in open(path):
        s = line.strip()
        if not s or s[0] in ";#":
            continue
        if line[0].isspace() and last and section is not None:  # a continuation line
            out[section][last] += " " + strip_comment(s)
            continue
        m = re.match(r"^\[([^\]]+)\]", s)
        if m:
            section, last = m.group(1).strip(), None
            out.setdefault(section, {})
            continue
        m = KEYLINE.match(line.rstrip("\n"))
        if m and section is not None:
            last = m.group(1).strip()
            out[section][last] = strip_comment(m.group(2))
    return out


def accel_key(k):
    """the accelerate plugin's spelling of a key: fsdp_x, fsdp.fsdp_x -> fsdp.x"""
    rest = k[5:] if k.startswith("fsdp.") else None
    if rest is not None and rest.startswith("fsdp_"):
        rest = rest[5:]
    elif rest is None and k.startswith("fsdp_"):
        rest = k[5:]
    return k if rest is None else "fsdp." + rest


def is_fsdp_set(s):
    """whether --set s sets one of accelerate's fsdp.* keys"""
    k = s.split("=", 1)[0].strip()
    return k.startswith("accelerate.") and accel_key(k[len("accelerate."):]).startswith("fsdp.")


def without_fsdp(job, dest):
    """Writes a copy of the job file without the [accelerate] fsdp.* keys (the plugin refuses them with
    use_fsdp = false), its relative paths (shardrun's task, a plugin's path: read relative to the job
    file) made absolute, since the copy lives elsewhere."""
    jobdir = os.path.dirname(os.path.abspath(job))
    absol = lambda p: p if p.startswith("/") else os.path.join(jobdir, p)
    out, section, dropping = [], None, False
    for line in open(job):
        s = line.strip()
        if line[:1].isspace() and s and s[0] not in ";#":  # a continuation line: goes with its key
            if not dropping:
                out.append(line)
            continue
        m = re.match(r"^\[([^\]]+)\]", s)
        if m:
            section, dropping = m.group(1).strip(), False
            out.append(line)
            continue
        m = KEYLINE.match(line.rstrip("\n"))
        if not m or section is None:
            out.append(line)
            continue
        key, value = m.group(1).strip(), strip_comment(m.group(2))
        dropping = section == "accelerate" and (accel_key(key).startswith("fsdp.") or key == "use_fsdp")
        if dropping:
            continue
        if section == "shardrun" and key == "task":
            if value.startswith("exec:"):
                words = value[5:].split(None, 1)
                if words and "/" in words[0]:
                    value = "exec:" + " ".join([absol(words[0])] + words[1:])
            elif "/" in value:
                value = absol(value)
            line = f"task = {value}\n"
        elif section not in ("shardrun", "task") and key == "path":
            line = f"path = {absol(value)}\n"
        out.append(line)
    with open(dest, "w") as f:
        f.writelines(out)


# ---- running ---------------------------------------------------------------------------------------

def free_port_pair():
    """a port P with P and P + 1 (the rendezvous store across nodes) free now"""
    for _ in range(200):
        p = random.randint(20000, 60000)
        try:
            for q in (p, p + 1):
                s = socket.socket()
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind(("127.0.0.1", q))
                s.close()
            return p
        except OSError:
            pass
    die("no free pair of ports on 127.0.0.1 for the two-node run")


def child_env(threads, extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACCELERATE_", "FSDP_"))}
    for k in ("SHARDRUN_PROFILE", "SHARDRUN_DEBUG_OFFLOAD_STAGING", "SHARDRUN_RDZV_TOKEN"):
        env.pop(k, None)
    env["OMP_NUM_THREADS"] = str(threads)
    env.update(extra)
    return env


def run_agents(cmds, env, logs):
    """Starts one shardrun agent per command (its stdout and stderr to its log) and waits for all;
    when one fails, the others get 60 s to end by themselves, then SIGTERM.  The exit codes."""
    procs = []
    for c, lg in zip(cmds, logs):
        with open(lg, "w") as f:
            procs.append(subprocess.Popen(c, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env))
    failed_at = None
    while any(p.poll() is None for p in procs):
        if failed_at is None and any(p.returncode not in (None, 0) for p in procs):
            failed_at = time.monotonic()
        if failed_at is not None and time.monotonic() - failed_at > 60:
            for p in procs:
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
            failed_at = float("inf")
        time.sleep(0.1)
    return [p.returncode for p in procs]


# rank 0's profile of one logging interval: its header, then (other ranks' lines may come between) its
# "step" line, the interval's milliseconds per step
STEP_PROFILE = re.compile(r"^\[rank0\]: profile: steps (\d+)-(\d+), per step \(rank 0\):\n"
                          r"(?:(?!\[rank0\]: profile:).*\n)*?\[rank0\]:\s+step\s+([\d.]+)\s+100\.0%", re.M)


class RunFailed(Exception):
    pass


def check(ok, what):
    if not ok:
        raise RunFailed(what)


def train_run(r, a, job, nofsdp_job, sets, rundir):
    world = r["nodes"] * r["per_node"]
    threads = a.threads[0] if world == 1 else a.threads[1]
    outdir = os.path.join(rundir, "output")
    results = os.path.join(rundir, "results.json")
    fsdp = r["strategy"] != "none"
    opts = [f"task.max_steps={a.steps}", "task.logging_steps=1", "task.eval_strategy=steps",
            f"task.eval_steps={a.steps}", "task.save_steps=0", "task.save_final=false", f"task.output_dir={outdir}"]
    if a.batch:
        opts.append(f"task.per_device_train_batch_size={a.batch}")
    if a.max_length:
        opts.append(f"task.max_length={a.max_length}")
    if fsdp:
        opts += ["accelerate.use_fsdp=true", f"accelerate.fsdp.sharding_strategy={r['strategy']}",
                 f"accelerate.fsdp.offload_params={'true' if r['offload'] else 'false'}"]
        if a.wrap:
            opts += ["accelerate.fsdp.auto_wrap_policy=TRANSFORMER_BASED_WRAP",
                     f"accelerate.fsdp.transformer_layer_cls_to_wrap={a.wrap}"]
        user = sets
    else:
        opts.append("accelerate.use_fsdp=false")
        user = [s for s in sets if not is_fsdp_set(s)]  # the plugin refuses fsdp.* keys with use_fsdp = false
    setargs = [x for s in user + opts for x in ("--set", s)]
    extra = {"SHARDRUN_PROFILE": "1"}
    if r["offload"] and a.offload_staging:
        extra["SHARDRUN_DEBUG_OFFLOAD_STAGING"] = "1"
    log = os.path.join(rundir, "log.txt")
    if r["nodes"] == 1:
        cmds = [[a.shardrun, job if fsdp else nofsdp_job, "--nnodes", "1", "--nproc-per-node", str(r["per_node"]),
                 "--master-port", "0", "--results", results] + setargs]
        logs = [log]
    else:
        port = free_port_pair()
        extra["SHARDRUN_RDZV_TOKEN"] = f"fsdp-study-{os.getpid()}-{port}"
        cmds = [[a.shardrun, job, "--nnodes", str(r["nodes"]), "--node-rank", str(k), "--nproc-per-node",
                 str(r["per_node"]), "--master-addr", "127.0.0.1", "--master-port", str(port)]
                + (["--results", results] if k == 0 else []) + setargs for k in range(r["nodes"])]
        logs = [log] + [os.path.join(rundir, f"log.node{k}.txt") for k in range(1, r["nodes"])]
    env = child_env(threads, extra)
    with open(os.path.join(rundir, "command.txt"), "w") as f:
        for c in cmds:
            f.write(" ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(extra.items())) +
                    f" OMP_NUM_THREADS={threads} " + shlex.join(c) + "\n")
    meter = LoadMeter()
    codes = run_agents(cmds, env, logs)
    wall, load = meter.wall(), meter.other_cores()
    text = open(log).read()
    check(all(c == 0 for c in codes), f"exit code{'s' if len(codes) > 1 else ''} "
          f"{'/'.join(map(str, codes))}; log: {' '.join(logs)}")
    try:
        ranks = json.load(open(results))
    except (OSError, ValueError) as e:
        raise RunFailed(f"no results JSON ({e})")
    want = "DDP" if not fsdp else r["strategy"]
    check(isinstance(ranks, list) and sorted(x.get("rank") for x in ranks) == list(range(world)),
          f"the results list ranks {[x.get('rank') for x in ranks] if isinstance(ranks, list) else ranks}, "
          f"expected 0..{world - 1}")
    for x in ranks:
        rk = x["rank"]
        check(x.get("exit_code") == 0, f"rank {rk}: exit_code {x.get('exit_code')}")
        check(x.get("world_size") == world, f"rank {rk}: world_size {x.get('world_size')}, expected {world}")
        check(x.get("fsdp_enabled") is fsdp, f"rank {rk}: fsdp_enabled {x.get('fsdp_enabled')}, expected {fsdp}")
        check(x.get("sharding_strategy") == want, f"rank {rk}: sharding_strategy {x.get('sharding_strategy')}, "
              f"expected {want}")
        check(x.get("global_step") == a.steps, f"rank {rk}: global_step {x.get('global_step')}, expected {a.steps}")
        check(x.get("eval_step") == a.steps and isinstance(x.get("eval_loss"), (int, float)),
              f"rank {rk}: no evaluation after step {a.steps} (eval_step {x.get('eval_step')}, eval_loss "
              f"{x.get('eval_loss')}); the job needs eval data (e.g. --set task.validation_split_percentage=5)")
        if "cpu_threads" in x:
            check(x["cpu_threads"] == threads, f"rank {rk}: cpu_threads {x['cpu_threads']}, expected "
                  f"OMP_NUM_THREADS={threads}")
        for k in ("peak_mem_gb", "peak_rss_gb", "engine_persistent_bytes"):
            check(isinstance(x.get(k), (int, float)) and x[k] > 0, f"rank {rk}: no {k}")
    check(len({x["eval_loss"] for x in ranks}) == 1, f"the ranks report different eval_loss: "
          f"{[x['eval_loss'] for x in ranks]}")
    if fsdp:
        m = re.search(r"^\[rank0\]: shardrun: FSDP (\w+) on (\d+) ranks?.*?(\d+) units? \((\d+) wrapped", text, re.M)
        check(m and m.group(1) == r["strategy"] and int(m.group(2)) == world,
              f"rank 0's log does not say \"FSDP {r['strategy']} on {world} rank(s)\"")
        check(int(m.group(4)) > 0, f"FSDP wrapped no module ({m.group(0)}): give the class to wrap (--wrap)")
        if r["nodes"] > 1:
            check(f"shard group {r['per_node']}, replicas {r['nodes']}" in m.group(0),
                  f"HYBRID_SHARD on {r['nodes']} nodes does not shard within a node: {m.group(0)}")
    else:
        check(re.search(r"^\[rank0\]: shardrun: replicated on 1 rank \(ACCELERATE_USE_FSDP is not true\)", text, re.M),
              "rank 0's log does not say it trained replicated (ACCELERATE_USE_FSDP is not true)")
    staged = "shards offloaded to host memory" in text
    noop = "FSDP_OFFLOAD_PARAMS=true" in text
    if r["offload"]:
        check(staged if a.offload_staging else (staged or noop),
              "offload is on but rank 0's log says nothing of it" if not a.offload_staging else
              "offload staging was asked for, but rank 0's log does not say \"shards offloaded to host memory\"")
    else:
        check(not staged and not noop, "offload is off but rank 0's log mentions offloading")
    per_step = re.search(r"= (\d+) per step", text)
    check(per_step, "rank 0's log has no \"= K per step\" line (samples per optimizer step)")
    steps = {int(m.group(1)): float(m.group(3)) / 1e3 for m in STEP_PROFILE.finditer(text) if m.group(1) == m.group(2)}
    check(sorted(steps) == list(range(1, a.steps + 1)),
          f"rank 0's log has step times for steps {sorted(steps)}, expected 1..{a.steps}")
    step_s = statistics.median(steps[k] for k in range(2, a.steps + 1))
    r0 = min(ranks, key=lambda x: x["rank"])
    mx = lambda k: max(x[k] for x in ranks)
    return dict(id=r["id"], strategy=r["strategy"], nodes=r["nodes"], ranks_per_node=r["per_node"],
                offload="on" if r["offload"] else "off", threads=threads, step_s=step_s,
                samples_per_step=int(per_step.group(1)), samples_s=int(per_step.group(1)) / step_s,
                hf_train_samples_s=r0["train_samples_per_second"], engine_gb=mx("peak_mem_gb"),
                persistent_gb=mx("engine_persistent_bytes") / 1e9, rss_gb=mx("peak_rss_gb"),
                eval_loss=r0["eval_loss"], model_params=r0.get("model_params"), load=load, wall_s=wall,
                step_times=[steps[k] for k in sorted(steps)])


def pgbench_run(a, torch_keys, sets, rundir):
    """pgbench on 2 ranks over the transport the training runs use: the job's [torch] keys (with their
    --set overrides; the backend is gloo, host buffers) and the --set shardrun.* keys"""
    job = os.path.join(rundir, "pgbench.ini")
    so = os.path.join(a.build, "examples", "pgbench.so")
    with open(job, "w") as f:
        f.write(f"[shardrun]\ntask = {so}\nplugins = torch\n\n[torch]\nbackend = gloo\n")
    results = os.path.join(rundir, "results.json")
    user = [f"torch.{k}={v}" for k, v in torch_keys.items() if k not in ("backend", "path")] + \
        [s for s in sets if s.startswith("shardrun.")]
    opts = [f"task.min_bytes={a.pg_bytes}", f"task.max_bytes={a.pg_bytes}", f"task.iters={a.pg_iters}",
            "task.latency_iters=500"]
    cmd = [a.shardrun, job, "--nnodes", "1", "--nproc-per-node", "2", "--master-port", "0", "--results", results] + \
          [x for s in user + opts for x in ("--set", s)]
    log = os.path.join(rundir, "log.txt")
    with open(os.path.join(rundir, "command.txt"), "w") as f:
        f.write("OMP_NUM_THREADS=1 " + shlex.join(cmd) + "\n")
    meter = LoadMeter()
    code, = run_agents([cmd], child_env(1, {}), [log])
    load = meter.other_cores()
    check(code == 0, f"exit code {code}; log: {log}")
    text = open(log).read()
    try:
        ranks = json.load(open(results))
    except (OSError, ValueError) as e:
        raise RunFailed(f"no results JSON ({e})")
    check(isinstance(ranks, list) and sorted(x.get("rank") for x in ranks) == [0, 1] and all(x.get("exit_code") == 0 and x.get("errors") == 0
                                                                  for x in ranks),
          f"pgbench reports errors or misses a rank: {ranks}")
    r0 = min(ranks, key=lambda x: x["rank"])
    hdr = re.search(r"# pgbench: (\d+) ranks, (\w+) over (\w+)", text)
    check(hdr and hdr.group(1) == "2", "pgbench's header line is missing")
    return dict(ag=r0["busbw_all_gather"], rs=r0["busbw_reduce_scatter"], ar=r0["busbw_all_reduce"],
                memcpy=r0.get("memcpy_gbs"), latency=r0.get("latency_us_all_reduce_8B"),
                backend=hdr.group(2), transport=hdr.group(3), load=load)


# ---- the report ------------------------------------------------------------------------------------

def ranks_text(row):
    return f"{row['nodes']} x {row['ranks_per_node']}" if row["nodes"] > 1 else str(row["ranks_per_node"])


def report(a, rows, pg, header, total_load, total_wall):
    o = io.StringIO()
    p = lambda s="": print(s, file=o)
    for line in header:
        p(line)
    p()
    p("| run | strategy | ranks (nodes x per node) | offload | OMP threads per rank | step s (median, steps 2..N) | "
      "samples/s | engine GB per rank | peak RSS GB per rank | eval loss | other load (cores) |")
    p("|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        strat = "none (replicated, use_fsdp = false)" if r["strategy"] == "none" else r["strategy"]
        p(f"| {r['id']} | {strat} | {ranks_text(r)} | {r['offload']} | {r['threads']} | {r['step_s']:.3f} | "
          f"{r['samples_s']:.2f} | {r['engine_gb']:.3f} | {r['rss_gb']:.3f} | {r['eval_loss']:.4f} | {r['load']:.2f} |")
    if pg:
        p()
        p(f"pgbench, 2 ranks, {pg['backend']} over {pg['transport']}, {a.pg_bytes} bytes fp32 ({a.pg_iters} "
          f"iterations): bus bandwidth all-gather {pg['ag']:.3f}, reduce-scatter {pg['rs']:.3f}, all-reduce "
          f"{pg['ar']:.3f} GB/s" + (f"; one thread's memcpy {pg['memcpy']:.3f} GB/s" if pg.get("memcpy") else "")
          + (f"; 8-byte all-reduce {pg['latency']:.2f} us" if pg.get("latency") else "")
          + f" (other load {pg['load']:.2f} cores)")
    p()
    p(f"total {total_wall:.0f} s; other processes used {total_load:.2f} of {os.cpu_count()} cores meanwhile")
    return o.getvalue()


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        f.write(text)
    os.replace(tmp, path)


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def main():
    ap = argparse.ArgumentParser(prog=PROG, description="The FSDP strategy study of a model task's job file "
                                 "(see the comment at the top of bench/fsdp_study.sh).")
    ap.add_argument("job", nargs="?", help="the model task's job file (e.g. examples/gpt2/fsdp_cpu.ini)")
    ap.add_argument("--build", default=os.path.join(HERE, "..", "build"), help="the build folder (default: build/)")
    ap.add_argument("--steps", type=int, default=4, help="optimizer steps per run, at least 2 (default 4)")
    ap.add_argument("--batch", type=int, help="task.per_device_train_batch_size (default: the job's)")
    ap.add_argument("--max-length", type=int, help="task.max_length (default: the job's)")
    ap.add_argument("--out", help="folder for the table, CSV, SVG and the runs (default: a new temporary folder)")
    ap.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                    help="passed to every training run (shardrun.* also to pgbench, which takes the job's [torch] keys); "
                    "repeatable")
    ap.add_argument("--only", help="comma-separated shell patterns of the run IDs to run (--list shows them)")
    ap.add_argument("--wrap", help="the module class FSDP wraps (default: the job's fsdp.transformer_layer_cls_to_wrap)")
    ap.add_argument("--threads", default="2,1", help="OMP_NUM_THREADS for 1-rank runs and per rank for 2-rank "
                    "runs (default 2,1)")
    ap.add_argument("--pg-bytes", type=int, default=64 << 20, help="pgbench's buffer size (default 64 MiB)")
    ap.add_argument("--pg-iters", type=int, default=5, help="pgbench's timed calls (default 5)")
    ap.add_argument("--offload-staging", action="store_true", help="offload runs take the GPU's staging path "
                    "on the CPU (SHARDRUN_DEBUG_OFFLOAD_STAGING=1)")
    ap.add_argument("--title", help="the chart's title")
    ap.add_argument("--list", action="store_true", help="print the run IDs and exit")
    a = ap.parse_args()
    runs = plan()
    if a.list:
        print("\n".join(r["id"] for r in runs))
        return 0
    bad = lambda m: die(m + f"\nusage: {ap.format_usage().split(': ', 1)[1].strip()}", 2)
    if not a.job:
        bad("give the model task's job file, e.g. examples/gpt2/fsdp_cpu.ini")
    if a.steps < 2:
        bad(f"--steps {a.steps}: at least 2 (the first step warms up and is left out of the median)")
    for name, v in (("--batch", a.batch), ("--max-length", a.max_length)):
        if v is not None and v < 1:
            bad(f"{name} {v}: a positive number")
    try:
        a.threads = [int(x) for x in a.threads.split(",")]
        assert len(a.threads) == 2 and min(a.threads) >= 1
    except (ValueError, AssertionError):
        bad(f"--threads {a.threads}: two positive numbers, ONE,TWO (e.g. 2,1)")
    for s in a.set:
        k = s.split("=", 1)[0].strip()
        if "=" not in s or "." not in k:
            bad(f"--set {s}: expected SECTION.KEY=VALUE")
        kn = "accelerate." + accel_key(k[len("accelerate."):]) if k.startswith("accelerate.") else k
        if kn in CONTROLLED:
            bad(f"--set {s}: the study sets {kn} itself on every run" +
                (f"; use {CONTROLLED[kn]}" if CONTROLLED[kn] else ""))
        if (kn == "task.per_device_train_batch_size" and a.batch) or (kn == "task.max_length" and a.max_length):
            bad(f"--set {s}: given twice (also by --batch / --max-length); keep one")
    if a.only:
        pats = [p.strip() for p in a.only.split(",") if p.strip()]
        for p in pats:
            if not any(fnmatch.fnmatchcase(r["id"], p) for r in runs):
                bad(f"--only {p}: matches no run; the runs are {', '.join(r['id'] for r in runs)}")
        runs = [r for r in runs if any(fnmatch.fnmatchcase(r["id"], p) for p in pats)]
    if not os.path.isfile(a.job):
        bad(f"no job file {a.job}")
    a.build = os.path.abspath(a.build)
    a.shardrun = os.path.join(a.build, "shardrun")
    if not os.access(a.shardrun, os.X_OK):
        die(f"no shardrun at {a.shardrun}: build first (cmake -S . -B build && cmake --build build) or give --build", 2)
    if any(r["id"] == "pgbench" for r in runs) and not os.path.isfile(os.path.join(a.build, "examples", "pgbench.so")):
        die(f"no {a.build}/examples/pgbench.so: build the whole tree", 2)

    # what the job says, with the --set overrides: the header, and the checks that need no run
    ini = read_ini(a.job)
    eff = {f"{sec}.{accel_key(k) if sec == 'accelerate' else k}": v for sec, kv in ini.items() for k, v in kv.items()}
    for s in a.set:
        k, v = s.split("=", 1)
        k = k.strip()
        eff["accelerate." + accel_key(k[len("accelerate."):]) if k.startswith("accelerate.") else k] = v.strip()
    plugins = [p.strip() for p in eff.get("shardrun.plugins", "").split(",")]
    if "accelerate" not in plugins or "torch" not in plugins:
        die(f"{a.job}: [shardrun] plugins = {eff.get('shardrun.plugins', '(unset)')}: the study needs torch,accelerate "
            "(accelerate's use_fsdp and fsdp.* keys switch FSDP and its strategy)", 2)
    policy = "TRANSFORMER_BASED_WRAP" if a.wrap else eff.get("accelerate.fsdp.auto_wrap_policy", "NO_WRAP").upper()
    wrap = a.wrap or eff.get("accelerate.fsdp.transformer_layer_cls_to_wrap")
    if policy == "NO_WRAP" or (policy == "TRANSFORMER_BASED_WRAP" and not wrap):
        die(f"{a.job}: FSDP would wrap no module (auto_wrap_policy {policy}, transformer_layer_cls_to_wrap "
            f"{wrap or 'unset'}): every strategy would hold the whole model as one unit; give the model's block "
            "class with --wrap CLASS (e.g. GPT2Block, BloomBlock) or in the job file's [accelerate]", 2)

    out = os.path.abspath(a.out) if a.out else tempfile.mkdtemp(prefix="fsdp_study.")
    os.makedirs(os.path.join(out, "runs"), exist_ok=True)
    nofsdp_job = os.path.join(out, "runs", "job_without_fsdp.ini")
    without_fsdp(a.job, nofsdp_job)

    t0, meter = time.perf_counter(), LoadMeter()
    rows, pg = [], None
    for r in runs:
        rundir = os.path.join(out, "runs", r["id"])
        shutil.rmtree(rundir, ignore_errors=True)  # nothing of an earlier study in the same --out is read
        os.makedirs(rundir)
        t = time.perf_counter()
        try:
            if r["id"] == "pgbench":
                pg = pgbench_run(a, {k[len("torch."):]: v for k, v in eff.items() if k.startswith("torch.")},
                                 a.set, rundir)
            else:
                rows.append(train_run(r, a, os.path.abspath(a.job), nofsdp_job, a.set, rundir))
        except RunFailed as e:
            die(f"FAILED: run {r['id']}: {e}\n  command: {os.path.join(rundir, 'command.txt')}\n"
                f"  log: {os.path.join(rundir, 'log.txt')}")
        print(f"  {r['id']}: done in {time.perf_counter() - t:.0f} s", file=sys.stderr, flush=True)
    total_wall, total_load = time.perf_counter() - t0, meter.other_cores()
    # the same data, global batch and seed: every strategy at one world size trains the same model, so
    # their eval losses agree (within rounding; mixed precision rounds more)
    tol = 1e-4 if eff.get("accelerate.mixed_precision", "no") == "no" else 2e-2
    for n in sorted({r["nodes"] * r["ranks_per_node"] for r in rows}):
        same = [r for r in rows if r["nodes"] * r["ranks_per_node"] == n]
        lo, hi = min(r["eval_loss"] for r in same), max(r["eval_loss"] for r in same)
        if hi - lo > tol * max(abs(hi), 1e-12):
            die(f"FAILED: the eval losses at {n} rank{'s' if n > 1 else ''} differ by more than {tol:g} (relative): "
                + ", ".join(f"{r['id']} {r['eval_loss']:.6f}" for r in same) + f"; the runs are in {out}/runs/")

    task = eff.get("shardrun.task", "?")
    size = eff.get("task.size")
    params = next((r["model_params"] for r in rows if r.get("model_params")), None)
    spstep = sorted({(r["nodes"] * r["ranks_per_node"], r["samples_per_step"]) for r in rows})
    header = [
        f"FSDP strategy study: job {a.job} (task {task}" + (f", size {size}" if size else "") +
        (f", {params} parameters" if params else "") + f"), {a.steps} steps per run, [accelerate] mixed_precision = "
        f"{eff.get('accelerate.mixed_precision', 'no')}; "
        f"wrap {policy}" + (f" on {wrap}" if wrap else ""),
        f"batch per rank {a.batch or eff.get('task.per_device_train_batch_size', 'the task default')}, max_length "
        f"{a.max_length or eff.get('task.max_length', 'the task default')}; samples per step: " +
        ", ".join(f"{k} at {n} rank{'s' if n > 1 else ''}" for n, k in spstep) +
        (f"; --set {' --set '.join(a.set)}" if a.set else "") +
        (" (the fsdp.* ones not on the run without FSDP)" if any(is_fsdp_set(x) for x in a.set) else ""),
        f"machine: {cpu_model()}, {os.cpu_count()} cores; OMP_NUM_THREADS = {a.threads[0]} for 1-rank runs, "
        f"{a.threads[1]} per rank for 2-rank runs; CPU offload "
        + ("through the staging path (SHARDRUN_DEBUG_OFFLOAD_STAGING=1)" if a.offload_staging else
           "as on any CPU: nothing moves (shards and optimizer state already live in host memory)"),
        "step s: the median of rank 0's step times over steps 2..N; samples/s: samples per step / that; memory: "
        "the largest over the ranks (engine: peak_mem_gb, persistent shards + pool; RSS: peak_rss_gb); eval loss "
        f"after step {a.steps}; other load: CPU time of other processes during the run, in cores",
    ]
    text = report(a, rows, pg, header, total_load, total_wall)
    cmdline = PROG + " " + shlex.join(sys.argv[1:])
    write_atomic(os.path.join(out, "fsdp_study.md"), f"```\n{cmdline}\n```\n\n" + text)
    if rows:
        buf = io.StringIO()
        cols = ["config", "strategy", "nodes", "ranks_per_node", "offload", "threads", "step_s", "samples_s",
                "hf_train_samples_s", "engine_gb", "persistent_gb", "rss_gb", "eval_loss", "other_load", "wall_s",
                "step_times_s"]
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(cols)
        for r in rows:
            w.writerow([r["id"], r["strategy"], r["nodes"], r["ranks_per_node"], r["offload"], r["threads"],
                        f"{r['step_s']:.4f}", f"{r['samples_s']:.3f}", f"{r['hf_train_samples_s']:.3f}",
                        f"{r['engine_gb']:.4f}", f"{r['persistent_gb']:.4f}", f"{r['rss_gb']:.4f}",
                        f"{r['eval_loss']:.6f}", f"{r['load']:.3f}", f"{r['wall_s']:.1f}",
                        " ".join(f"{x:.4f}" for x in r["step_times"])])
        csv_path = os.path.join(out, "fsdp_study.csv")
        write_atomic(csv_path, buf.getvalue())
        title = a.title or f"FSDP strategy study: task {task}" + (f", size {size}" if size else "") + f", {a.steps} steps"
        p = subprocess.run([sys.executable, os.path.join(HERE, "fsdp_study_plot.py"), csv_path, "--title", title,
                            "--out", os.path.join(out, "fsdp_study.svg")])
        if p.returncode != 0:
            die("the chart could not be drawn (bench/fsdp_study_plot.py failed)")
    print(text, end="")
    print(f"\nwritten: {out}/fsdp_study.md" + (", fsdp_study.csv, fsdp_study.svg" if rows else "") +
          f"; each run's command, log and results: {out}/runs/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
