"""A newcomer's first ``scripts/run`` (the README's command) on a fresh clone: where the time goes until its URL
answers, until the overview page is usable, and until the default clusters are built; then a second start of the
same clone (the database kept).

Run: ``.venv/bin/python bench/bench_first_start.py [--fresh-venv] [--port P] [--repo PATH]``. It clones this
checkout's HEAD (or --repo's) into a
temporary directory; the clone's ``.venv`` is a symlink to this checkout's (so ``scripts/bootstrap`` has nothing to
do), or with ``--fresh-venv`` none, and bootstrap's own time (venv + pip, from pip's configured index and cache) is
timed apart. REDIS_URL is passed on when set (else the launcher's embedded Redis). Each phase is printed as seconds
since ``scripts/run`` started, with the load average before and after; it is not a test (tests/test_launcher.py
checks the behaviour).
"""
from __future__ import annotations

import argparse
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# launcher lines -> phase names (the first line matching each, seconds since scripts/run started)
PHASES = [
    ("checked settings, database, Redis", re.compile(r"^twin: (migrate|migrate: the database is up to date)$")),
    ("migrated", re.compile(r"^(created superuser|twin: migrate: the database is up to date)")),
    ("URL printed", re.compile(r"^Twin running at ")),
    ("first cluster built", re.compile(r"^(build\s+\| )?\S+: built ")),
    ("default clusters built", re.compile(r"^twin: default clusters built")),
]


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def answers(url: str, want: str | None = None) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.status == 200 and (want is None or want in r.read().decode(errors="replace"))
    except OSError:
        return False


def start(clone: Path, port: int, label: str, timeout: float) -> None:
    """One ``scripts/run`` in ``clone``: its phases printed; stopped by SIGINT once the clusters are built."""
    print(f"\n{label}  (load average before: {load()})")
    t0 = time.monotonic()
    proc = subprocess.Popen(["scripts/run", "--port", str(port)], cwd=clone, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    lines: queue.Queue = queue.Queue()
    log: list[str] = []

    def read():
        for line in proc.stdout:
            lines.put((time.monotonic() - t0, line.rstrip("\n")))
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    url = f"http://127.0.0.1:{port}/"
    seen: dict[str, float] = {}
    usable = built_page = None
    deadline = t0 + timeout
    try:
        while time.monotonic() < deadline:
            try:
                item = lines.get(timeout=0.1)
            except queue.Empty:
                item = ()
            if item is None:
                print(f"  the launcher exited early ({proc.wait()}):\n" + "\n".join(log[-40:]))
                return
            if item:
                at, line = item
                log.append(line)
                for name, pattern in PHASES:
                    if name not in seen and pattern.search(line):
                        seen[name] = at
                        print(f"  {at:6.1f} s  {name}")
            if "URL printed" in seen and usable is None and answers(url):
                usable = time.monotonic() - t0
                print(f"  {usable:6.1f} s  overview page answers 200 (usable)")
            if usable is not None and built_page is None and answers(url, 'class="panel cluster-card"'):
                built_page = time.monotonic() - t0
                print(f"  {built_page:6.1f} s  overview shows a cluster card")
            done = "default clusters built" in seen or (
                "URL printed" in seen and not any("build   pid" in x for x in log))
            if usable is not None and built_page is not None and done:
                break
        else:
            print(f"  not done within {timeout:.0f} s:\n" + "\n".join(log[-40:]))
    finally:
        print(f"  load average after: {load()}")
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fresh-venv", action="store_true", help="no .venv in the clone: bootstrap makes one (timed)")
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--repo", type=Path, default=ROOT,
                   help="the checkout to clone (default this one; e.g. an older one for the before figures)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds a start may take before it is given up")
    args = p.parse_args()
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=args.repo, capture_output=True, text=True).stdout
    work = Path(tempfile.mkdtemp(prefix="twin-first-start-"))
    clone = work / "twin"
    try:
        subprocess.run(["git", "clone", "-q", str(args.repo), str(clone)], check=True)
        print(f"fresh clone of {args.repo} at {head.strip()} in {clone}; {os.cpu_count()} CPUs; "
              f"REDIS_URL {'set' if os.environ.get('REDIS_URL') else 'unset (embedded Redis)'}")
        if args.fresh_venv:
            print(f"\nscripts/bootstrap  (load average before: {load()})")
            t = time.monotonic()
            done = subprocess.run(["scripts/bootstrap"], cwd=clone, capture_output=True, text=True)
            if done.returncode:
                sys.exit(f"scripts/bootstrap failed ({done.returncode}):\n{done.stderr[-3000:]}")
            print(f"  {time.monotonic() - t:6.1f} s  .venv made and requirements.txt installed "
                  f"(load average after: {load()})")
        else:
            (clone / ".venv").symlink_to((ROOT / ".venv").resolve())
        start(clone, args.port, "first start (scripts/run --port %d)" % args.port, args.timeout)
        start(clone, args.port, "second start (the same clone, its var/ kept)", args.timeout)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
