"""Checks of the trainer's records (tests/fsdp/records.sh): eval losses, trainer_state.json against
transformers' TrainerState and train_log.jsonl, loss.svg against log_history.

    check_records.py evals DIR                     print "STEP EVAL_LOSS EPOCH" per evaluation
    check_records.py same_evals DIR BASE RTOL [STEPS]
                                                   DIR's eval losses equal BASE's within RTOL (at
                                                   the comma-separated STEPS only, when given)
    check_records.py state DIR STEPS_PER_EPOCH     trainer_state.json: schema, values, checkpoints
    check_records.py svg SVG DIR...                the SVG's polylines are DIR's log_history values
    check_records.py best DIR                      print "BEST NEWEST" checkpoint steps by eval_loss
    check_records.py membership DIR                an elastic run's membership entries, one line each
                                                   ("step=0 world_size=1 ..."), checked, HF's
                                                   TrainerState loads the file, every checkpoint
                                                   holds the log_history up to its step
    check_records.py flatten CKPT                  rewrite CKPT/trainer_state.json as an older
                                                   shardrun wrote it (flat, no log_history)
Prints what differs and exits 1 on a failed check."""
import dataclasses
import glob
import json
import math
import os
import re
import sys
import typing
import xml.etree.ElementTree as ET


# The fields of transformers' TrainerState (trainer_callback.py), by name: load_from_json does
# TrainerState(**json.loads(text)), so a file with any other top-level member fails to load.
@dataclasses.dataclass
class TrainerState:
    epoch: typing.Optional[float] = None
    global_step: int = 0
    max_steps: int = 0
    logging_steps: int = 500
    eval_steps: int = 500
    save_steps: int = 500
    train_batch_size: typing.Optional[int] = None
    num_train_epochs: int = 0
    num_input_tokens_seen: int = 0
    total_flos: float = 0
    log_history: typing.Optional[list] = None
    best_metric: typing.Optional[float] = None
    best_global_step: typing.Optional[int] = None
    best_model_checkpoint: typing.Optional[str] = None
    is_local_process_zero: bool = True
    is_world_process_zero: bool = True
    is_hyper_param_search: bool = False
    trial_name: typing.Optional[str] = None
    trial_params: typing.Optional[dict] = None
    stateful_callbacks: typing.Optional[dict] = None


failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL: " + what)


def load(path):
    with open(path) as f:
        return json.load(f)


def evals(d):
    return [e for e in load(os.path.join(d, "trainer_state.json"))["log_history"] if "eval_loss" in e]


def rel(a, b):
    return abs(a - b) / max(abs(b), 1e-30)


def cmd_evals(d):
    for e in evals(d):
        print(e["step"], repr(e["eval_loss"]), e["epoch"])


def cmd_same_evals(d, base, rtol, steps=None):
    a, b = evals(d), evals(base)
    if steps is not None:
        keep = {int(s) for s in steps.split(",")}
        a, b = [e for e in a if e["step"] in keep], [e for e in b if e["step"] in keep]
    check([e["step"] for e in a] == [e["step"] for e in b], "%s evaluates at steps %s, the baseline at %s" % (
        d, [e["step"] for e in a], [e["step"] for e in b]))
    worst = max([rel(x["eval_loss"], y["eval_loss"]) for x, y in zip(a, b)] or [0])
    check(worst <= float(rtol), "%s: eval_loss differs from the baseline by %.3g relative (at most %s)" % (d, worst, rtol))
    print("max relative eval_loss difference %.3g over %d evaluations" % (worst, len(a)))


def hf_load(path):
    s = load(path)
    extra = set(s) - {f.name for f in dataclasses.fields(TrainerState)}
    check(not extra, "%s has members transformers' TrainerState lacks: %s" % (path, sorted(extra)))
    return TrainerState(**{k: v for k, v in s.items() if k not in extra}), s


MEMBERSHIP_ORDER = ["step", "world_size", "nodes", "gradient_accumulation_steps", "global_batch", "restart"]
MEMBERSHIP = set(MEMBERSHIP_ORDER)


def cmd_state(d, spe):
    spe = int(spe)
    st, raw = hf_load(os.path.join(d, "trainer_state.json"))
    hist = st.log_history
    with open(os.path.join(d, "train_log.jsonl")) as f:
        lines = [json.loads(l) for l in f]
    train = [e for e in hist if "loss" in e]
    check(len(train) == len(lines), "%d train entries in log_history, %d lines in train_log.jsonl" % (len(train), len(lines)))
    for e, l in zip(train, lines):
        for k in ("step", "loss", "learning_rate", "grad_norm"):
            check(e[k] == l[k], "step %s: log_history %s = %r, train_log.jsonl %r" % (l["step"], k, e.get(k), l[k]))
        check(set(e) == {"loss", "grad_norm", "learning_rate", "epoch", "step"}, "train entry members: %s" % sorted(e))
        check(abs(e["epoch"] - e["step"] / spe) < 1e-8, "step %s: epoch %r, expected %r" % (e["step"], e["epoch"], e["step"] / spe))
    for e in hist:
        if "eval_loss" in e:
            check(set(e) == {"eval_loss", "eval_perplexity", "eval_runtime", "eval_samples_per_second",
                             "eval_steps_per_second", "epoch", "step"}, "eval entry members: %s" % sorted(e))
            check(rel(e["eval_perplexity"], math.exp(e["eval_loss"])) < 1e-6, "eval_perplexity = exp(eval_loss)")
            check(e["eval_runtime"] > 0 and e["eval_samples_per_second"] > 0, "eval speed measured")
        if "world_size" in e:  # an elastic run's membership, one per attempt (docs/model-tasks.md)
            check_membership(e)
    last = hist[-1]
    check(set(last) == {"train_runtime", "train_samples_per_second", "train_steps_per_second", "train_loss", "epoch",
                        "step"}, "the last entry is the summary: %s" % sorted(last))
    check(last["step"] == st.global_step and st.global_step == lines[-1]["step"], "global_step %s" % st.global_step)
    losses = [l["loss"] for l in lines]
    if len(losses) == st.global_step:  # logging_steps = 1: train_loss is their mean
        check(rel(last["train_loss"], sum(losses) / len(losses)) < 1e-6, "train_loss %r is the mean of the steps' losses %r" % (
            last["train_loss"], sum(losses) / len(losses)))
    check(abs(st.epoch - st.global_step / spe) < 1e-8, "epoch %r" % st.epoch)
    check(st.max_steps == st.global_step, "max_steps %s" % st.max_steps)
    check(st.num_train_epochs == math.ceil(st.max_steps / spe), "num_train_epochs %s" % st.num_train_epochs)
    for k in ("logging_steps", "eval_steps", "save_steps", "train_batch_size"):
        check(isinstance(getattr(st, k), int), "%s is an integer" % k)
    # every checkpoint: HF's shape too, shardrun's resume keys under stateful_callbacks, and the
    # log_history of the final state up to its step
    ckpts = check_checkpoints(d, hist[:-1])
    print("%s: %d log_history entries, %d checkpoints" % (d, len(hist), len(ckpts)))


def check_membership(e):
    check(set(e) == MEMBERSHIP, "membership entry members: %s" % sorted(e))
    check(all(type(v) is int for v in e.values()), "membership entry of integers: %s" % e)


def check_checkpoints(d, hist):
    ckpts = sorted(glob.glob(os.path.join(d, "checkpoint-*")), key=lambda p: int(p.rsplit("-", 1)[1]))
    check(ckpts, "checkpoints in %s" % d)
    for c in ckpts:
        step = int(c.rsplit("-", 1)[1])
        cs, craw = hf_load(os.path.join(c, "trainer_state.json"))
        check(cs.global_step == step, "%s: global_step %s" % (c, cs.global_step))
        sh = (cs.stateful_callbacks or {}).get("shardrun", {})
        check(sh.get("global_step") == step and re.fullmatch("[0-9a-f]{32}", sh.get("checkpoint_id", "")),
              "%s: stateful_callbacks.shardrun holds the resume keys: %s" % (c, sh))
        # (the membership of an attempt that resumed from this very checkpoint came after it)
        want = [e for e in hist if e["step"] < step or (e["step"] == step and "world_size" not in e)]
        check(cs.log_history == want, "%s: its log_history is the run's up to step %d" % (c, step))
    return ckpts


def cmd_membership(d):
    st, raw = hf_load(os.path.join(d, "trainer_state.json"))
    for e in st.log_history:
        if "world_size" in e:
            check_membership(e)
            print(" ".join("%s=%s" % (k, e.get(k)) for k in MEMBERSHIP_ORDER))
    check_checkpoints(d, st.log_history[:-1] if st.log_history and "train_runtime" in st.log_history[-1] else
                      st.log_history)


def cmd_svg(svg, *dirs):
    tree = ET.parse(svg)  # well-formed XML, or this raises
    ns = {"s": "http://www.w3.org/2000/svg"}
    lines = tree.getroot().findall(".//s:polyline", ns)
    for d in dirs:
        name = os.path.basename(os.path.normpath(d))
        hist = load(os.path.join(d, "trainer_state.json"))["log_history"]
        for cls, key in (("train", "loss"), ("eval", "eval_loss")):
            want = [(float(e["step"]), float(e[key])) for e in hist if e.get(key) is not None]
            got = [l for l in lines if l.get("class") == cls and l.get("data-run") == name]
            if not want:
                check(not got, "%s: no %s polyline without %s values" % (name, cls, key))
                continue
            check(len(got) == 1, "%s: one %s polyline (found %d)" % (name, cls, len(got)))
            if got:
                pts = [tuple(map(float, p.split(","))) for p in got[0].get("points").split()]
                check(pts == want, "%s %s polyline points %s, log_history %s" % (name, cls, pts[:4], want[:4]))
                print("%s %s: %d points equal log_history's" % (name, cls, len(pts)))


def cmd_best(d):
    ev = {e["step"]: e["eval_loss"] for e in load(os.path.join(d, "trainer_state.json"))["log_history"] if "eval_loss" in e}
    saved = sorted(int(p.rsplit("-", 1)[1]) for p in glob.glob(os.path.join(d, "checkpoint-*")))
    print(min((s for s in ev if s > 0), key=lambda s: ev[s]), max(saved))


def cmd_flatten(c):
    p = os.path.join(c, "trainer_state.json")
    s = load(p)["stateful_callbacks"]["shardrun"]
    with open(p, "w") as f:
        json.dump(s, f)


def main():
    cmds = {"evals": cmd_evals, "same_evals": cmd_same_evals, "state": cmd_state, "svg": cmd_svg, "best": cmd_best,
            "flatten": cmd_flatten, "membership": cmd_membership}
    cmds[sys.argv[1]](*sys.argv[2:])
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
