"""CLI probe (issue 24): bad invocations of ``python -m sim`` of a checkout: every command's every option with wrong
types and out-of-range values, missing, empty and special files, unwritable dump paths, and hostile dumps for
``debug analyze`` (pickles whose ``__reduce__`` would create a sentinel file, alone, in our header and among good
dumps; an 8 GB sparse dump made with truncate; huge rank numbers in file names). Counts invocations, exit codes
(0, 2, other, timeout), tracebacks on stderr, and whether a payload ran. Always exits 0.

    .venv/bin/python bench/probe_cli.py [--checkout DIR] [--jobs 2] [--timeout 20] [--json out.json]

Speed: each invocation is ``sim.cli.main(argv)`` in a process forked from a server that runs the checkout's own
interpreter in its directory with the command modules imported (as ``python -m sim`` runs it: an uncaught exception
prints its traceback and exits 1), so a refused invocation costs milliseconds, not a numpy import. ``--spawn`` runs
each as a real ``python -m sim`` process instead (slower). Every command runs on the small preset demo-256.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRESET = "demo-256"

# The fork server, run by the checkout's interpreter in its directory: one JSON line in (argv, cwd), one out.
SERVER = r'''
import io, json, os, signal, sys, time, traceback, importlib
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, os.getcwd())
import sim.cli
for name, (package, _h) in sim.cli.commands().items():
    try:
        importlib.import_module(package + ".cli")
    except Exception:
        pass
if sys.argv[1:] == ["describe"]:
    out = {}
    for name in sim.cli.commands():
        parser, argv, module = sim.cli.build_parser([name])
        sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
        acts = []
        for a in sub.choices[name]._actions:
            if a.dest == "help":
                continue
            acts.append({"opts": a.option_strings, "dest": a.dest, "nargs": a.nargs,
                         "value": a.nargs != 0, "choices": [str(c) for c in a.choices] if a.choices else None,
                         "metavar": str(a.metavar or ""), "type": getattr(a.type, "__name__", str(a.type)),
                         "required": a.required})
        out[name] = acts
    print(json.dumps(out))
    sys.exit(0)
for line in sys.stdin:
    job = json.loads(line)
    err_path = job["stderr"]
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.setsid()
        fd = os.open(err_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(fd, 2)
        nul = os.open(os.devnull, os.O_WRONLY)
        os.dup2(nul, 1)
        os.chdir(job["cwd"])
        sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", closefd=False), write_through=True)
        sys.stderr = io.TextIOWrapper(os.fdopen(2, "wb", closefd=False), write_through=True)
        code = 1
        try:
            code = sim.cli.main(job["argv"])
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except BaseException:
            traceback.print_exc()
            code = 1
        try:
            sys.stderr.flush(); sys.stdout.flush()
        except Exception:
            pass
        os._exit(code or 0)
    deadline = t0 + job["timeout"]
    status = None
    while time.monotonic() < deadline:
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            status = os.waitstatus_to_exitcode(st)
            break
        time.sleep(0.01)
    if status is None:
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(pid, 0)
        status = "timeout"
    print(json.dumps({"code": status, "seconds": round(time.monotonic() - t0, 2)}), flush=True)
'''

# A valid small invocation of each command: one option at a time is made bad on top of it.
BASE = {
    "debug": ["--preset", PRESET, "--gpus", "16", "--entries", "50", "--quiet"],
    "startup": ["--preset", PRESET, "--quiet"],
    "collective": ["--preset", PRESET, "--gpus", "8", "--sizes", "1M", "--quiet"],
    "figure": ["--quiet"],
    "failures": ["--preset", PRESET, "--gpus", "256", "--pp", "4", "--days", "1", "--quiet"],
    "job": ["--preset", PRESET, "--gpus", "16", "--quiet"],
    "schedule": ["--preset", PRESET, "--arrivals", "10", "--days", "1", "--quiet"],
    "jobs": ["--preset", PRESET, "--quiet"],
    "checkpoint": ["--preset", PRESET, "--quiet"],
    "storage-fanout": ["--preset", PRESET, "--quiet"],
    "debug-analyze": ["--preset", PRESET, "--quiet"],
}
PATHLIKE = ("FILE", "DIR", "PATH")


class Server:
    def __init__(self, checkout: Path, timeout: float):
        self.timeout = timeout
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen([str(checkout / ".venv/bin/python"), "-c", SERVER], cwd=checkout, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def run(self, argv, cwd, err_path, timeout=None):
        self.proc.stdin.write(json.dumps({"argv": argv, "cwd": str(cwd), "stderr": str(err_path),
                                          "timeout": timeout or self.timeout}) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def spawn_run(checkout, argv, cwd, err_path, timeout):
    t0 = time.monotonic()
    with open(err_path, "wb") as err:
        p = subprocess.Popen([str(checkout / ".venv/bin/python"), "-m", "sim", *argv], cwd=cwd, stdout=subprocess.DEVNULL,
                             stderr=err, env={**os.environ, "PYTHONPATH": str(checkout)}, start_new_session=True)
        try:
            code = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, 9)
            p.wait()
            code = "timeout"
    return {"code": code, "seconds": round(time.monotonic() - t0, 2)}


def describe(checkout: Path) -> dict:
    out = subprocess.run([str(checkout / ".venv/bin/python"), "-c", SERVER, "describe"], cwd=checkout,
                         capture_output=True, text=True, timeout=120, env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    return json.loads(out.stdout)


def argv_of(command):
    return ["debug", "analyze"] if command == "debug-analyze" else [command]


def bad_values(act, files):
    """(label, value) pairs for one option."""
    meta, t = act["metavar"].upper(), act["type"]
    if act["choices"]:
        return [("bad choice", "bogus"), ("empty", "")]
    if any(k in meta for k in PATHLIKE) or act["dest"] in ("spec", "jobs", "dump", "dir", "rates"):
        return [("missing file", str(files / "no-such-file")), ("empty file", str(files / "empty.txt")),
                ("/dev/null", "/dev/null"), ("a directory", str(files / "adir")),
                ("binary file", str(files / "binary.bin")), ("deep JSON", str(files / "deep.json"))]
    if t == "int" or meta == "N":
        return [("not a number", "abc"), ("negative", "-1"), ("huge", str(10 ** 30)), ("float", "1.5")]
    if t == "float" or meta == "X":
        return [("not a number", "abc"), ("nan", "nan"), ("inf", "inf"), ("negative", "-1e309")]
    return [("empty", ""), ("garbage", "::,,==@@"), ("long", "x" * 20_000), ("deep", "[" * 5000)]


def make_files(d: Path):
    (d / "empty.txt").write_bytes(b"")
    (d / "adir").mkdir(exist_ok=True)
    (d / "binary.bin").write_bytes(bytes(range(256)) * 64)
    (d / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (d / "existing-file").write_text("x")


def payload_pickle(sentinel: Path) -> bytes:
    """A pickle whose loading runs ``touch SENTINEL`` (os.system through __reduce__), protocol 2."""
    cmd = f"touch {sentinel}".encode()
    return b"\x80\x02cposix\nsystem\nq\x00X" + len(cmd).to_bytes(4, "little") + cmd + b"\x85R."


def payload_in_header(checkout: Path, sentinel: Path) -> bytes:
    """Our dump format's header (sim/debug/dumpformat.py HEAD) with the payload as the value of its first key."""
    cmd = f"touch {sentinel}".encode()
    head = b"\x80\x02}(X\t\x00\x00\x00twin_memo"
    return head + b"cposix\nsystem\nX" + len(cmd).to_bytes(4, "little") + cmd + b"\x85RX\x07\x00\x00\x00entries](e" \
        + b"u."


def hostile_dumps(checkout: Path, work: Path, server_run) -> list[tuple[str, list, Path]]:
    """(label, argv, sentinel or None) of the debug analyze probes; good dumps made by a small debug run."""
    good = work / "good"
    made = server_run(["debug", "--preset", PRESET, "--gpus", "16", "--entries", "50", "--quiet", "--dump", str(good)],
               "make good dumps")
    if made["code"] != 0:
        print(f"probe_cli: the good dumps were not made ({made}): the probes among good dumps are alone",
              file=sys.stderr)
    cases = []

    def folder(name, files: dict, sentinel_name=None, with_good=False):
        d = work / name
        d.mkdir()
        if with_good and good.is_dir():
            for f in good.iterdir():
                (d / f.name).write_bytes(f.read_bytes())
        for fname, data in files.items():
            if callable(data):
                data(d / fname)
            else:
                (d / fname).write_bytes(data)
        return d

    for label, make, with_good in (
            ("pickle payload alone", lambda s: {"nccl_trace_rank_0": payload_pickle(s)}, False),
            ("payload in our header", lambda s: {"nccl_trace_rank_0": payload_in_header(checkout, s)}, False),
            ("payload among 16 good dumps", lambda s: {"nccl_trace_rank_16": payload_pickle(s)}, True),
            ("payload replacing a good dump", lambda s: {"nccl_trace_rank_3": payload_pickle(s)}, True)):
        sentinel = work / f"PWNED-{label.replace(' ', '-')}"
        d = folder(label.replace(" ", "-"), make(sentinel), with_good=with_good)
        cases.append((f"debug analyze: {label}", ["debug", "analyze", str(d), "--preset", PRESET, "--quiet"],
                      sentinel))

    def sparse(p):
        with open(p, "wb") as f:
            f.truncate(8 * 1024 ** 3)
    cases.append(("debug analyze: 8 GB sparse dump", ["debug", "analyze", str(folder("sparse", {
        "nccl_trace_rank_0": sparse})), "--preset", PRESET, "--quiet"], None))
    one = (good / "nccl_trace_rank_0").read_bytes() if (good / "nccl_trace_rank_0").exists() else b"\x80\x02}."
    for label, rank in (("rank 4000000000", 4_000_000_000), ("rank 2**70", 2 ** 70), ("rank -1", "-1"),
                        ("rank 1e9", "1e9")):
        cases.append((f"debug analyze: file {label}", ["debug", "analyze", str(folder(
            f"rank-{label.split()[-1]}", {f"nccl_trace_rank_{rank}": one})), "--preset", PRESET, "--quiet"], None))
    for label, files in (("empty folder", {}), ("empty dump", {"nccl_trace_rank_0": b""}),
                         ("truncated dump", {"nccl_trace_rank_0": one[: len(one) // 2]}),
                         ("garbage dump", {"nccl_trace_rank_0": os.urandom(4096)}),
                         ("JSON dump", {"nccl_trace_rank_0": b'{"entries": []}'})):
        cases.append((f"debug analyze: {label}", ["debug", "analyze", str(folder(label.replace(" ", "-"), files)),
                                                  "--preset", PRESET, "--quiet"], None))
    cases.append(("debug analyze: missing folder", ["debug", "analyze", str(work / "nope"), "--quiet"], None))
    cases.append(("debug analyze: a file, not a folder", ["debug", "analyze", "/etc/hostname", "--quiet"], None))
    cases.append(("debug analyze: demo-256 dumps with meta-roce-24k", ["debug", "analyze", str(good), "--preset",
                                                                      "meta-roce-24k", "--quiet"], None))
    return cases


def corpus(spec: dict, files: Path, work: Path) -> list[tuple[str, list, Path | None]]:
    cases = []
    for command, acts in spec.items():
        base = BASE.get(command, ["--quiet"])
        for act in acts:
            if not act["value"] or not act["opts"]:
                continue
            opt = next((o for o in act["opts"] if o.startswith("--")), act["opts"][0])
            for label, value in bad_values(act, files):
                argv = argv_of(command) + [a for a in _without(base, act["opts"])] + [opt, value]
                if command == "debug" and act["dest"] != "dump":
                    argv += ["--dump", str(work / "dumps" / f"d{len(cases)}")]
                if command == "debug-analyze":
                    argv.append(str(files / "adir"))
                cases.append((f"{command} {opt} {label}", argv, None))
    # dump paths that cannot be written: refused before simulating?
    for label, path in (("unwritable", "/proc/no/such/dir"), ("existing file", str(files / "existing-file")),
                        ("/dev/null", "/dev/null"), ("root-owned", "/sys/kernel/x")):
        cases.append((f"debug --dump {label}", argv_of("debug") + BASE["debug"] + ["--dump", path], None))
    for label, extra in (("--jobs empty file", ["--jobs", str(files / "empty.txt")]),
                         ("--jobs deep JSON", ["--jobs", str(files / "deep.json")])):
        for command in ("schedule", "jobs"):
            cases.append((f"{command} {label}", argv_of(command) + BASE[command] + extra, None))
    cases.append(("unknown command", ["nope"], None))
    cases.append(("no command", [], None))
    return cases


def _without(base, opts):
    out, skip = [], False
    for a in base:
        if skip:
            skip = False
            continue
        if a in opts:
            skip = True
            continue
        out.append(a)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkout", type=Path, default=ROOT)
    ap.add_argument("--jobs", type=int, default=2, help="invocations in parallel")
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds per invocation")
    ap.add_argument("--spawn", action="store_true", help="a real python -m sim process per invocation")
    ap.add_argument("--json", help="write the figures here")
    args = ap.parse_args()
    t0 = time.monotonic()
    checkout = args.checkout.resolve()
    work = Path(tempfile.mkdtemp(prefix="sim-cli-probe-"))
    files = work / "files"
    files.mkdir()
    make_files(files)
    (work / "dumps").mkdir()
    results = []
    try:
        spec = describe(checkout)
        servers = [] if args.spawn else [Server(checkout, args.timeout) for _ in range(args.jobs)]
        errs = work / "stderr"
        errs.mkdir()

        def run_one(i, argv, server, timeout=None):
            err = errs / f"{i}.txt"
            if server is None:
                r = spawn_run(checkout, argv, work, err, timeout or args.timeout)
            else:
                r = server.run(argv, work, err, timeout)
            text = err.read_text(errors="replace")
            return r | {"stderr": text[-2000:]}

        first = servers[0] if servers else None
        cases = hostile_dumps(checkout, work, lambda argv, label: run_one("setup", argv, first, 300))
        cases += corpus(spec, files, work)
        lock, nxt = threading.Lock(), iter(enumerate(cases))

        def worker(server):
            while True:
                with lock:
                    item = next(nxt, None)
                if item is None:
                    return
                i, (label, argv, sentinel) = item
                r = run_one(i, argv, server)
                r |= {"label": label, "argv": argv}
                if sentinel is not None:
                    r["payload_ran"] = sentinel.exists()
                with lock:
                    results.append(r)

        threads = [threading.Thread(target=worker, args=(s,)) for s in (servers or [None] * args.jobs)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for s in servers:
            s.close()
    except Exception as e:
        print(f"probe_cli: stopped early: {type(e).__name__}: {e}", file=sys.stderr)
    finally:
        subprocess.run(["rm", "-rf", str(work)])
    figures = summarize(results)
    figures |= {"checkout": str(checkout), "seconds": round(time.monotonic() - t0, 1),
                "date": time.strftime("%Y-%m-%d %H:%M")}
    print_figures(figures)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1))
    return 0


def summarize(results):
    codes = Counter("0" if r["code"] == 0 else "2" if r["code"] == 2 else "timeout" if r["code"] == "timeout"
                    else "other" for r in results)
    tb = [r for r in results if "Traceback (most recent call last)" in r["stderr"]]
    payload = [r for r in results if "payload_ran" in r]

    def last_line(r):
        lines = [ln for ln in r["stderr"].strip().splitlines() if ln.strip()]
        return lines[-1][:140] if lines else ""
    return {
        "invocations": len(results), "exit_codes": dict(sorted(codes.items())),
        "tracebacks": len(tb), "traceback_cases": sorted(f"{r['label']}: {last_line(r)}" for r in tb),
        "other_exits": sorted(f"{r['label']} -> {r['code']}: {last_line(r)}" for r in results
                              if r["code"] not in (0, 2) and r not in tb),
        "accepted_bad": sorted(r["label"] for r in results if r["code"] == 0),
        "payload_probes": len(payload), "payload_executed": sum(1 for r in payload if r["payload_ran"]),
        "payload_cases": [f"{r['label']}: {'EXECUTED' if r['payload_ran'] else 'not executed'} (exit {r['code']})"
                          for r in payload],
        "analyze_cases": sorted(f"{r['label']} -> {r['code']}: {last_line(r)}" for r in results
                                if r["label"].startswith("debug analyze")),
    }


def print_figures(f, out=sys.stdout):
    p = lambda *a: print(*a, file=out)  # noqa: E731
    p(f"invocations: {f['invocations']}")
    p("exit codes: " + ", ".join(f"{k}: {v}" for k, v in f["exit_codes"].items()))
    p(f"tracebacks on stderr: {f['tracebacks']}")
    for s in f["traceback_cases"]:
        p(f"  {s}")
    p(f"other exits without traceback: {len(f['other_exits'])}")
    for s in f["other_exits"]:
        p(f"  {s}")
    p(f"bad invocations accepted (exit 0): {len(f['accepted_bad'])}")
    for s in f["accepted_bad"]:
        p(f"  {s}")
    p(f"payload executed: {'yes' if f['payload_executed'] else 'no'} ({f['payload_executed']}/{f['payload_probes']})")
    for s in f["payload_cases"]:
        p(f"  {s}")
    p("debug analyze probes:")
    for s in f["analyze_cases"]:
        p(f"  {s}")
    p(f"({f['seconds']} s)")


if __name__ == "__main__":
    sys.exit(main())
