"""Print the markdown tables of docs/engine.md from a figure's JSON (``python -m sim figure ... --out DIR``):

    .venv/bin/python bench/figure_tables.py DIR/allgather-scale.json [--at-size]

One row per series, one column per job size: the normalized busbw limit in %, median (min-max) over the seeds (with
``--at-size``: the normalized busbw at the figure's message size, latency included). The docs' tables are pasted from
this output, so they hold what the simulation gave.
"""
import argparse
import json


def cell(lo: float, med: float, hi: float) -> str:
    f = lambda x: f"{100 * x:.0f}" if 100 * x >= 10 else f"{100 * x:.1f}"  # noqa: E731
    return f(med) if f(lo) == f(med) == f(hi) else f"{f(med)} ({f(lo)}-{f(hi)})"


def table(doc: dict, at_size: bool) -> str:
    summary = doc["summary"]
    jobs = sorted({s["gpus"] for s in summary})
    order = list(dict.fromkeys(s["series"] for s in summary))
    label = {s["series"]: s["label"] for s in summary}
    key = ("at_size_min", "at_size_median", "at_size_max") if at_size else ("min", "median", "max")
    lines = ["| series | " + " | ".join(f"{n:,}" for n in jobs) + " |", "|---" * (len(jobs) + 1) + "|"]
    for series in order:
        by_n = {s["gpus"]: s for s in summary if s["series"] == series}
        cells = [cell(*(by_n[n][k] for k in key)) if n in by_n else "" for n in jobs]
        lines.append(f"| {label[series]} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", help="a figure's JSON file")
    ap.add_argument("--at-size", action="store_true", help="the value at the figure's size, latency included")
    args = ap.parse_args()
    with open(args.json) as fh:
        doc = json.load(fh)
    print(f"{doc['cluster']}, hash {doc.get('hash', 'uniform')}, {doc['seeds']} seeds, {doc['seconds']:.0f} s")
    print(table(doc, args.at_size))


if __name__ == "__main__":
    main()
