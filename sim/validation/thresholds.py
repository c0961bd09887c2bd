"""What the validation must reach, declared once (issue 39; docs/validation.md prints them from here).

Errors are absolute relative errors ``|predicted / measured - 1|`` as fractions. ``--check`` breaks when any of
these does; an observation over :data:`OBSERVATION_MAX` counts only if it is not excused (``excused.toml``: the
mechanism the model leaves out), and the excused may be at most :data:`EXCUSED_MAX_SHARE` of the corpus.
"""
from __future__ import annotations

OVERALL_MEDIAN_MAX = 0.10         # the whole corpus's median absolute error
KIND_MEDIAN_MAX = 0.15            # every kind's median
OBSERVATION_MAX = 0.35            # every observation, except the excused
EXCUSED_MAX_SHARE = 0.05          # excused observations at most this share of the corpus
CROSS_VALIDATED_GAP_MAX = 0.03    # the cross-validated median at most this above the in-sample median
MEDIAN_RISE_MAX = 0.01            # a median (overall, each kind's) at most this above the one in docs/validation.md
MIN_OBSERVATIONS = 150            # the whole corpus
MIN_SOURCES = 10
CHECK_FOLDS = 5                   # --check cross-validates with this many folds unless --cross-validate says


def table() -> list[tuple[str, str]]:
    """The thresholds as (what, value) rows, for the report and docs/validation.md."""
    return [("overall median absolute error", f"<= {OVERALL_MEDIAN_MAX:.0%}"),
            ("every kind's median", f"<= {KIND_MEDIAN_MAX:.0%}"),
            ("every observation", f"<= {OBSERVATION_MAX:.0%}, except the excused (at most "
                                  f"{EXCUSED_MAX_SHARE:.0%} of the corpus)"),
            (f"cross-validated ({CHECK_FOLDS}-fold) median", f"within {CROSS_VALIDATED_GAP_MAX * 100:.0f} points "
                                                            f"of the in-sample median"),
            ("overall median against the committed one", f"at most {MEDIAN_RISE_MAX * 100:.0f} point above"),
            ("corpus", f">= {MIN_OBSERVATIONS} observations from >= {MIN_SOURCES} sources")]


def broken(report: dict, committed_median: float | None, whole_corpus: bool) -> list[str]:
    """Every threshold ``report`` (:func:`sim.validation.report.validate`'s) breaks, one sentence each."""
    out = []
    o = report["overall"]
    if o["count"] == 0:
        return ["no observation was validated"]
    if o["median"] > OVERALL_MEDIAN_MAX:
        out.append(f"overall median {o['median']:.1%} > {OVERALL_MEDIAN_MAX:.0%}")
    for kind, s in report["kinds"].items():
        if s["median"] > KIND_MEDIAN_MAX:
            out.append(f"{kind}: median {s['median']:.1%} > {KIND_MEDIAN_MAX:.0%}")
    over = [r for r in report["observations"] if abs(r["error"]) > OBSERVATION_MAX and not r["excused"]]
    out += [f"{r['id']}: error {r['error']:+.1%} beyond {OBSERVATION_MAX:.0%} and not excused" for r in over]
    excused = [r for r in report["observations"] if r["excused"]]
    if len(excused) > EXCUSED_MAX_SHARE * o["count"]:
        out.append(f"{len(excused)} excused observations > {EXCUSED_MAX_SHARE:.0%} of {o['count']}")
    cv = report.get("cross_validated")
    if cv and cv["median"] - o["median"] > CROSS_VALIDATED_GAP_MAX:
        out.append(f"cross-validated median {cv['median']:.1%} more than {CROSS_VALIDATED_GAP_MAX * 100:.0f} "
                   f"points above the in-sample {o['median']:.1%}")
    if committed_median is not None and o["median"] > committed_median + MEDIAN_RISE_MAX:
        out.append(f"overall median {o['median']:.2%} rose more than {MEDIAN_RISE_MAX * 100:.0f} point above the "
                   f"committed {committed_median:.2%} (docs/validation.md)")
    if whole_corpus:
        if o["count"] < MIN_OBSERVATIONS:
            out.append(f"{o['count']} observations < {MIN_OBSERVATIONS}")
        if len(report["sources"]) < MIN_SOURCES:
            out.append(f"{len(report['sources'])} sources < {MIN_SOURCES}")
    return out


def regressions(report: dict, committed: dict[str, float]) -> list[str]:
    """Each median (``all``, then each kind's) that rose more than :data:`MEDIAN_RISE_MAX` above the one committed
    in docs/validation.md (``committed``: :func:`sim.validation.markdown.committed_medians`), one sentence each:
    what ``--regression`` (CI) holds while the absolute thresholds are not all met."""
    now = {"all": report["overall"]["median"], **{k: s["median"] for k, s in report["kinds"].items()}}
    return [f"{k} median {v:.2%} rose more than {MEDIAN_RISE_MAX * 100:.0f} point above the committed "
            f"{committed[k]:.2%} (docs/validation.md)" for k, v in now.items()
            if k in committed and v > committed[k] + MEDIAN_RISE_MAX]
