"""A validate run's result in the shape of CONTRACTS.md ("sim/validation": what ``run_validate`` returns), for the
tests of the Validation page that draw a stored result and need no engine (tests/web, tests/e2e). Its figures are
made up; the tests check what the page does with them (filters, summaries over the filtered observations), never
the engine's physics. The errors are chosen so the filtered summaries have exact answers: collective -0.05, 0.10,
0.20 (median 0.10, max 0.20); job 0.30 and -0.40 on two GPUs; before the fitted factors, twice each."""
from __future__ import annotations

import numpy as np

SOURCES = [
    {"id": "nccl-tests-issue-1", "title": "nccl-tests issue #1: DGX H100 all_reduce_perf", "date": "2023-08-14",
     "url": "https://github.com/NVIDIA/nccl-tests/issues/1", "publisher": "a user", "count": 3},
    {"id": "paper-2", "title": "A training paper, table 4", "date": "2024", "url": "https://arxiv.org/abs/0000.00000",
     "publisher": "a lab", "count": 2},
]


def observation(source, name, kind, gpu, measured, error, unit="GB/s"):
    src = next(s for s in SOURCES if s["id"] == source)
    return {"id": f"{source}/{name}", "source": source, "kind": kind, "gpu": gpu, "cluster": "dgx-h100-superpod",
            "label": f"{name} label", "quantity": "busbw_gbps" if kind == "collective" else "tokens_per_s_per_gpu",
            "unit": unit, "measured": measured, "predicted": measured * (1 + error), "error": error,
            "before": {"predicted": measured * (1 + 2 * error), "error": 2 * error},
            "url": src["url"], "title": src["title"], "where": f"table of {name}", "hardware": f"hardware of {name}",
            "note": f"note of {name}", "excused": None}


OBSERVATIONS = [
    observation("nccl-tests-issue-1", "ar-8G", "collective", "h100-sxm-80gb", 480.0, -0.05),
    observation("nccl-tests-issue-1", "ar-1G", "collective", "h100-sxm-80gb", 400.0, 0.10),
    observation("nccl-tests-issue-1", "ag-1G", "collective", "a100-sxm-80gb", 200.0, 0.20),
    observation("paper-2", "llama-8b", "job", "h100-sxm-80gb", 9000.0, 0.30, "tokens/s"),
    observation("paper-2", "llama-70b", "job", "a100-sxm-80gb", 1200.0, -0.40, "tokens/s"),
]


def block(errors) -> dict:
    e = np.abs(errors)
    return {"count": len(e), "median": float(np.median(e)), "p90": float(np.percentile(e, 90)), "max": float(e.max())}


def result() -> dict:
    errors = [o["error"] for o in OBSERVATIONS]
    kinds = {k: block([o["error"] for o in OBSERVATIONS if o["kind"] == k]) for k in ("collective", "job")}
    return {"overall": block(errors), "kinds": kinds,
            "before": {"overall": block([2 * e for e in errors]),
                       "kinds": {k: {**v, "median": 2 * v["median"]} for k, v in kinds.items()}},
            "cross_validated": {"folds": 5, "median": 0.25},
            "factors": [{"name": "nvlink_efficiency", "prior": 0.8, "value": 0.85, "low": 0.5, "high": 1.0,
                         "doc": "achievable share of NVLink"}],
            "sources": SOURCES, "observations": OBSERVATIONS,
            "thresholds": {"overall_median": 0.10, "kind_median": 0.15, "observation": 0.35},
            "passed": False, "broken": ["overall median 20.0 % > 10 %"]}


def stored_run(cluster, summary=None, status="succeeded", **params):
    """A validate run as a worker leaves it (succeeded, its summary the engine's document), without a worker."""
    from django.utils import timezone

    from twin.runs.models import SimulationRun
    return SimulationRun.objects.create(kind="validate", cluster=cluster, status=status, progress=100.0,
                                        params={"kind": None, "cross_validate": None, **params},
                                        summary=result() if summary is None and status == "succeeded" else summary,
                                        started_at=timezone.now(), finished_at=timezone.now())


# A calibrate run's result (sim.calibrate.fit.Calibration.to_dict's entries): measured, predicted before and after.
def calibrate_summary() -> dict:
    entries = [{"entry": 0, "name": "j0", "kind": "job", "quantity": "step_time_s", "label": "step", "measured": 2.0,
                "predicted": 2.2, "error": 0.1, "before": {"predicted": 3.0, "error": 0.5},
                "after": {"predicted": 2.2, "error": 0.1}},
               {"entry": 1, "name": "j1", "kind": "job", "quantity": "step_time_s", "label": "step", "measured": 4.0,
                "predicted": 3.6, "error": -0.1, "before": {"predicted": 6.0, "error": 0.5},
                "after": {"predicted": 3.6, "error": -0.1}},
               {"entry": 2, "name": "c0", "kind": "checkpoint", "quantity": "blocked_s", "label": "blocked",
                "measured": 10.0, "predicted": 13.0, "error": 0.3, "before": {"predicted": 20.0, "error": 1.0},
                "after": {"predicted": 13.0, "error": 0.3}}]
    return {"cluster": "demo-256", "fit": ["gemm_efficiency"], "entries": entries,
            "parameters": {"gemm_efficiency": {"value": 0.6}}, "before": {}, "after": {}, "warnings": []}
