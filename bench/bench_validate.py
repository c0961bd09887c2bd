"""Benchmark of the validation (sim/validation) against the budgets of issue 39.

Cases (each a whole process, as a user runs it: ``python -m sim validate -q --json ...``):

- ``all``: the whole corpus. Budget: 120 s on 2 cores.
- ``collective``: ``--kind collective``. Budget: 20 s.
- ``check``: ``--check`` as CI runs it (the whole corpus, 5-fold cross-validation, docs/validation.md compared).
  No budget of its own (reported: it is CI's step).

Run: ``.venv/bin/python bench/bench_validate.py [CASE ...]`` (default: all). Prints figures; it is not a test.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = {"all": [], "collective": ["--kind", "collective"], "check": ["--check"]}
BUDGETS = {"all": 120.0, "collective": 20.0}


def run_case(name: str) -> dict:
    args = [sys.executable, "-m", "sim", "validate", "-q", "--json", *CASES[name]]
    t = time.perf_counter()
    p = subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - t
    out = {"case": name, "seconds": round(seconds, 2), "exit": p.returncode}
    if p.stdout.strip():
        d = json.loads(p.stdout)
        out.update(observations=d["overall"]["count"], median=round(d["overall"]["median"], 4),
                   cv_median=(d["cross_validated"] or {}).get("median"))
    if p.returncode not in (0, 1):
        out["stderr"] = p.stderr.strip()[-500:]
    budget = BUDGETS.get(name)
    if budget is not None:
        out.update(budget=budget, met=seconds <= budget)
    return out


def main(argv: list[str]) -> int:
    names = argv or list(CASES)
    unknown = [n for n in names if n not in CASES]
    if unknown:
        print(f"bench_validate: unknown case {', '.join(unknown)} (cases: {', '.join(CASES)})", file=sys.stderr)
        return 2
    for name in names:
        print(json.dumps(run_case(name)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
