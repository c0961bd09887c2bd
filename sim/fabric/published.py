"""Published collective figures beside a preset's simulated ones (:mod:`sim.core.published`), for the preset page
(:mod:`sim.fabric.preset_figure`).

Only Meta's RoCE cluster has a published bus-bandwidth figure in docs/sources.md: Gangidi et al. [S2] give the
normalized AllGather busbw at large messages as ranges (small clusters 90 %+ out of the box; the unoptimized large
cluster 10-90 %; optimized 90 %+). Neither NVIDIA's SuperPOD reference architecture [S68] nor any other source in
docs/sources.md publishes a busbw for the other presets: their pages say so (``published_note``) rather than
showing a number from elsewhere. Nothing here is a target: no constant is tuned to meet these ranges.
"""
from __future__ import annotations

from sim.core.published import Reference, beside

S2_CASE = "Meta's 24k-GPU RoCE cluster (Llama 3), normalized AllGather busbw at message sizes where roofline " \
          "performance is expected"
S2_WHY = ("the paper gives ranges over its jobs, not data points: its small clusters are not sized (here one AI "
          "zone) and its large cluster's fragmentation is production's (here random hosts over the cluster)")

# preset -> (reference, the page's run it is set beside: (collective, configuration, job: "zone" or "largest")); the
# zone job is the page's one-zone job (its smallest when its jobs were given)
REFERENCES = {
    "meta-roce-24k": (
        (Reference("s2-small-oob", "normalized AllGather busbw, small cluster out of the box", 0.90, 1.00,
                   "fraction", "S2", S2_CASE, S2_WHY), ("allgather", "topology", "zone")),
        (Reference("s2-large-unoptimized", "normalized AllGather busbw, large cluster before the fixes", 0.10, 0.90,
                   "fraction", "S2", S2_CASE, S2_WHY), ("allgather", "fragmented", "largest")),
        (Reference("s2-large-optimized", "normalized AllGather busbw, large cluster optimized", 0.90, 1.00,
                   "fraction", "S2", S2_CASE, S2_WHY), ("allgather", "optimized", "largest")),
    ),
}
NONE_PUBLISHED = ("No source in docs/sources.md publishes a bus bandwidth for this preset (NVIDIA's SuperPOD "
                  "reference architecture [S68], for one, gives the fabric, not nccl-tests figures): simulated "
                  "figures only.")


def preset_published(preset: str, doc: dict) -> dict:
    """``{"published": [...], "published_note": str}`` for the page ``doc`` of ``preset``: each reference beside
    the large-message normalized busbw of its run (:func:`sim.core.published.beside`), or none and why."""
    refs = REFERENCES.get(preset)
    if not refs:
        return {"published": [], "published_note": NONE_PUBLISHED}
    sizes = sorted(j["gpus"] for j in doc["jobs"])
    zone = next((j["gpus"] for j in doc["jobs"] if j.get("unit") == "zone"), sizes[0])
    out = []
    for ref, (collective, config, job) in refs:
        gpus = zone if job == "zone" else sizes[-1]
        run = next((r for r in doc["runs"] if (r["collective"], r["config"], r["gpus"]) == (collective, config, gpus)),
                   None)
        row = beside(ref, run["limit_norm"] if run else None, same_case=False,
                     differs=f"{collective}, {config}, {gpus:,} GPUs")
        out.append(row)
    return {"published": out, "published_note": "Published ranges [S2] beside the simulated large-message limit."}
