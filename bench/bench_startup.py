"""Start-up of the command line: the whole process of ``python -m sim collective`` on the one-switch case (4,096
single-GPU hosts on one switch, one 64 MB AllReduce: bench/specs/one-switch-4096.toml), and what importing the
command line costs alone. The command line imports only the chosen command's package (sim/cli.py), so a collective
pays for the fabric, not for storage, jobs, failures or debugging.

Run: ``.venv/bin/python bench/bench_startup.py [--repeat N]``. Prints the median and min wall seconds of N
processes (default 7) for each case; it is not a test (tests/test_architecture.py checks what is imported).
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "bench" / "specs"
CASES = {
    "one-switch collective (whole process)": [
        "-m", "sim", "collective", "--spec", str(SPECS / "one-switch-4096.toml"),
        "--catalog", str(SPECS / "one-switch-catalog.toml"), "--collective", "allreduce", "--gpus", "4096",
        "--sizes", "64M", "--quiet"],
    "python -m sim --help": ["-m", "sim", "--help"],
    "import sim.cli": ["-c", "import sim.cli"],
    "import numpy (the floor)": ["-c", "import numpy"],
}


def wall(args: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, *args], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=7)
    args = p.parse_args()
    for name, argv in CASES.items():
        wall(argv)                                          # warm the file cache and the bytecode
        times = [wall(argv) for _ in range(args.repeat)]
        print(f"{name:42} median {statistics.median(times):.3f} s  min {min(times):.3f} s  ({args.repeat} runs)")


if __name__ == "__main__":
    main()
