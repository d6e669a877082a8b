#!/usr/bin/python3
"""One Python process for a test script's many Python commands (tests/transformer/torch_server.sh).

Importing torch costs about a second of CPU, and a reference test runs its PyTorch reference (and
the small numpy tools beside it) a dozen times: this server imports torch and numpy once.  It runs
every request as `/usr/bin/python3 SCRIPT ARGS...` would (or `python3 - ARGS` on a file of code, or
`python3 -c CODE ARGS`): the script's code in a new __main__ module, sys.argv and sys.path[0] as
Python sets them, in the caller's folder, with the caller's PYTHONPATH in front, file descriptors
1 and 2 on the request's output files.  The exit status is SystemExit's code (None: 0, a number: it
modulo 256, anything else: printed, 1), 0 when the script ends, 1 after an uncaught exception (its
traceback printed, without this server's frames).

What a new process would find, each request finds:
  - the modules of the installation (the standard library, torch, numpy, ...) stay imported (that is
    the point), but any other module a request imports (the tests' own: gpt2_torch, bpe_reference,
    ...) is forgotten after it: the next request imports it anew, with new module-level state
    (caches, globals);
  - the process-wide settings a script may change are put back: torch's default dtype, thread
    count, grad mode, anomaly mode and default generator (a random seed, as a new process's),
    numpy's error and print options, the warning filters (and the once-only warnings' registries),
    sys.path, sys.argv, os.environ, the current folder, sys.stdout and sys.stderr.

    torch_server.py DIR OWNER_PID

DIR holds the FIFOs `req` (requests) and `resp` (answers) and the files `out` and `err`, rewritten for
each request.  A request is NUL-terminated fields: "TS1", an id, the caller's folder, its PYTHONPATH,
the mode ("file", "stdin": a file of code run as `python3 -`, "code": `python3 -c`), the script
(the file, or the code), the argument count N, then N arguments.  The answer is one line on resp,
"ID STATUS".  The server ends when OWNER_PID (the test script's shell) is gone or DIR is removed,
checked every second while idle.
"""
import gc
import importlib.abc
import os
import select
import site
import sys
import sysconfig
import traceback
import types
import warnings

DIR, OWNER = sys.argv[1], int(sys.argv[2])
MAGIC = b"TS1"

# what a new process starts with
PRISTINE_PATH = list(sys.path[1:])  # sys.path[0] is each script's own
PRISTINE_ENV = dict(os.environ)
PRISTINE_WARNINGS = list(warnings.filters)
PRISTINE = {}  # module name -> its process-wide settings right after its first import
# the installation's modules (the standard library, torch, numpy, ...) stay imported; any other module
# a request imports (the tests' own: gpt2_torch, bpe_reference, ...) is forgotten after it, so that the
# next request imports it anew, its module-level state (caches, globals) that of a new process
INSTALLED = tuple(os.path.join(os.path.realpath(p), "") for p in
                  {sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")}
                  | set(site.getsitepackages()) | {site.getusersitepackages()})


def forget_modules(before):
    for name in set(sys.modules) - before:
        f = getattr(sys.modules[name], "__file__", None)
        if f and not os.path.realpath(f).startswith(INSTALLED):
            del sys.modules[name]


def _record(name, module):
    if name == "torch":
        PRISTINE[name] = dict(dtype=module.get_default_dtype(), threads=module.get_num_threads(),
                              anomaly=module.is_anomaly_enabled())
    elif name == "numpy":
        PRISTINE[name] = dict(err=module.geterr(), print=module.get_printoptions())


class _RecordOnImport(importlib.abc.MetaPathFinder):
    """records torch's and numpy's settings as their first import leaves them, before any script
    can change them"""

    def find_spec(self, name, path=None, target=None):
        if name not in ("torch", "numpy") or name in PRISTINE:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        execute = spec.loader.exec_module

        def exec_module(module):
            execute(module)
            _record(name, module)
        spec.loader.exec_module = exec_module
        return spec


sys.meta_path.insert(0, _RecordOnImport())


def reset():
    sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    warnings.filters[:] = PRISTINE_WARNINGS
    warnings._filters_mutated()  # forget which once-only warnings were shown
    if "torch" in PRISTINE:
        import torch
        p = PRISTINE["torch"]
        torch.set_default_dtype(p["dtype"])
        torch.set_num_threads(p["threads"])
        torch.seed()  # a new process's default generator starts from a random seed
        torch.set_grad_enabled(True)
        torch.set_anomaly_enabled(p["anomaly"])
    if "numpy" in PRISTINE:
        import numpy
        numpy.seterr(**PRISTINE["numpy"]["err"])
        numpy.set_printoptions(**PRISTINE["numpy"]["print"])


def exit_status(e, err):
    code = e.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code % 256
    print(code, file=err)
    return 1


def run(cwd, pythonpath, mode, script, args):
    """the request's exit status; its output on fds 1 and 2"""
    reset()
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(PRISTINE_ENV)
    if pythonpath:
        os.environ["PYTHONPATH"] = pythonpath
    extra = [os.path.abspath(p) for p in pythonpath.split(":") if p]
    main = types.ModuleType("__main__")
    main.__dict__["__builtins__"] = __builtins__
    if mode == "file":
        sys.argv = [script] + args
        sys.path[:] = [os.path.dirname(os.path.realpath(script))] + extra + PRISTINE_PATH
        main.__file__ = script
        with open(script, "rb") as f:
            code = compile(f.read(), script, "exec", dont_inherit=True)
    elif mode == "stdin":
        sys.argv = ["-"] + args
        sys.path[:] = [""] + extra + PRISTINE_PATH
        with open(script, "rb") as f:
            code = compile(f.read(), "<stdin>", "exec", dont_inherit=True)
    else:
        sys.argv = ["-c"] + args
        sys.path[:] = [""] + extra + PRISTINE_PATH
        code = compile(script, "<string>", "exec", dont_inherit=True)
    saved_main = sys.modules["__main__"]
    sys.modules["__main__"] = main
    try:
        exec(code, main.__dict__)
        return 0
    finally:
        sys.modules["__main__"] = saved_main


def serve_one(fields):
    rid, cwd, pythonpath, mode, script = (f.decode("utf-8", "surrogateescape") for f in fields[:5])
    args = [f.decode("utf-8", "surrogateescape") for f in fields[6:]]
    saved = os.dup(1), os.dup(2), os.getcwd()
    before = set(sys.modules)
    sys.stdout.flush()
    sys.stderr.flush()
    out = os.open(os.path.join(DIR, "out"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    err = os.open(os.path.join(DIR, "err"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(out, 1)
    os.dup2(err, 2)
    os.close(out)
    os.close(err)
    try:
        try:
            status = run(cwd, pythonpath, mode, script, args)
        except SystemExit as e:
            status = exit_status(e, sys.__stderr__)
        except BaseException as e:  # as Python's own handler: the traceback, status 1
            tb = e.__traceback__
            while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
                tb = tb.tb_next  # the script's frames only
            traceback.print_exception(type(e), e, tb)
            status = 1
        for f in (sys.stdout, sys.stderr):
            try:
                f.flush()
            except Exception:
                pass
    finally:
        forget_modules(before)
        reset()
        sys.argv = [__file__, DIR, str(OWNER)]
        sys.path[:] = [os.path.dirname(os.path.abspath(__file__))] + PRISTINE_PATH
        os.environ.clear()
        os.environ.update(PRISTINE_ENV)
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])
        os.chdir(saved[2])
        gc.collect()  # the script's models and tensors
    return rid, status


def owner_alive():
    try:
        with open(f"/proc/{OWNER}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X") and os.path.isdir(DIR)


def parse(buf):
    """(fields, rest) for the first complete request in buf, or None; ValueError when buf does not
    start with one"""
    fields, start = [], 0
    while True:
        end = buf.find(b"\0", start)
        if end < 0:
            return None
        fields.append(buf[start:end])
        start = end + 1
        if fields[0] != MAGIC:
            raise ValueError(f"a request that does not start with {MAGIC!r}: {bytes(buf[:80])!r}")
        if len(fields) >= 7 and len(fields) == 7 + int(fields[6]):
            return fields[1:], buf[start:]


def main():
    os.closerange(3, 1024)  # the caller's descriptors (its lock among them) are not the server's
    req = os.open(os.path.join(DIR, "req"), os.O_RDWR)
    resp = os.open(os.path.join(DIR, "resp"), os.O_RDWR)
    print(f"torch_server.py: pid {os.getpid()}, serving {DIR} for {OWNER}", flush=True)
    buf = b""
    while True:
        ready, _, _ = select.select([req], [], [], 1.0)
        if not ready:
            if not owner_alive():
                return 0
            continue
        buf += os.read(req, 1 << 16)
        while True:
            try:
                got = parse(buf)
            except ValueError as e:
                print(f"torch_server.py: {e}; dropped", flush=True)
                buf = b""
                break
            if got is None:
                break
            fields, buf = got
            rid, status = serve_one(fields)
            os.write(resp, f"{rid} {status}\n".encode())


if __name__ == "__main__":
    sys.exit(main())
