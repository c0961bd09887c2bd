"""Benchmark of the twin's side of a ``power`` run (twin/capabilities/power/kinds.py) on the issue 29 case: Llama 3
405B on 16,384 GPUs of meta-roce-24k at 1 ms, as a worker runs it, on the preset's layout (no database: the kind's
run function with a reporter that encodes every report as a live frame, as the publisher does).

Prints: the engine's own wall time (``run_power``'s ``seconds.all``), the kind's whole wall time and the difference
(what the twin adds: each GPU's shares, the waveforms resampled and kept, the JSON-safe summary, the frames), the
frames' sizes, the arrays' compressed sizes (as :class:`twin.runs.models.RunArray` stores them: zlib of the declared
dtype) and the summary's JSON size. The issue's budget for the power over a step is 2 s beside the step itself;
the twin's share is reported beside it. Options: ``--days 54`` adds the timeline under failures.

Run: ``.venv/bin/python bench/bench_power_twin.py [--days D]``. It is not a test.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--days", type=float, default=None)
    args = ap.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "twin.settings")
    os.environ.setdefault("TWIN_WARM_STRUCTURES", "false")
    import django
    django.setup()
    import numpy as np

    from sim.fabric.layout import expand
    from sim.fabric.spec import load_spec
    from twin.live import frames
    from twin.runs import registry

    kind = registry.get("power")
    layout = expand(load_spec("meta-roce-24k"))
    values = {"model": "llama3-405b", "gpus": 16384, "tp": 8, "pp": 16, "dp": 128}
    if args.days:
        values |= {"days": args.days, "failures": True}
    params = kind.params.validate(values)
    sizes, encode_s = [], 0.0

    def progress(fraction=None, message="", *, force=False, **sections):
        nonlocal encode_s
        t = time.perf_counter()
        raw = frames.encode(frames.Frame(seq=len(sizes) + 1, run_id=1, progress=100 * (fraction or 0.0),
                                         status="running", time_ms=0.0, sections=frames.build_sections(**sections)))
        encode_s += time.perf_counter() - t
        sizes.append(len(raw))

    t0 = time.perf_counter()
    summary, arrays = kind.run(layout, params, progress)
    wall = time.perf_counter() - t0
    engine = summary["seconds"]["all"]
    stored = {name: len(zlib.compress(np.ascontiguousarray(a, dtype=kind.arrays[name]).tobytes()))
              for name, a in arrays.items()}
    print(json.dumps({
        "case": f"llama3-405b 16384 GPUs meta-roce-24k 1 ms{f', {args.days:g} days' if args.days else ''}",
        "engine_seconds": summary["seconds"], "kind_wall_s": round(wall, 3),
        "twin_added_s": round(wall - engine, 3), "frames_encode_s": round(encode_s, 3),
        "frames": len(sizes), "largest_frame_bytes": max(sizes), "stored_bins": summary["stored_bins"],
        "arrays_zlib_bytes": stored, "summary_json_bytes": len(json.dumps(summary)),
        "cluster_peak_mw": summary["cluster_peak_mw"], "cluster_swing_mw": summary["cluster_swing_mw"]}, indent=1))


if __name__ == "__main__":
    main()
