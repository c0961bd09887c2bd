"""sim.validation's pure parts: the thresholds (each one breaks on its own), the folds, the summaries, the committed
median read back from docs/validation.md's mark, and the excused list's refusals."""
import numpy as np
import pytest

from sim.core.errors import ParamError
from sim.validation import thresholds
from sim.validation.corpus import read_excused
from sim.validation.markdown import committed_median, committed_medians
from sim.validation.stats import by_kind, summarize


def _report(errors, kinds=None, excused=None, cv=None, sources=10):
    kinds = kinds or ["collective"] * len(errors)
    excused = excused or [None] * len(errors)
    rows = [{"id": f"s/{i}", "kind": k, "error": e, "excused": x} for i, (e, k, x) in enumerate(zip(errors, kinds,
                                                                                                    excused))]
    overall, by = by_kind(rows)
    return {"overall": overall, "kinds": by, "observations": rows, "cross_validated": cv,
            "sources": [{}] * sources}


def test_summary_is_of_absolute_errors():
    s = summarize([-0.2, 0.1, 0.0, 0.3])
    assert s == {"count": 4, "median": pytest.approx(0.15), "p90": pytest.approx(np.percentile([0, .1, .2, .3], 90)),
                 "max": pytest.approx(0.3)}
    assert summarize([])["count"] == 0


def test_a_corpus_within_every_threshold_passes():
    assert thresholds.broken(_report([0.05] * 150), 0.05, whole_corpus=True) == []


@pytest.mark.parametrize("change, needle", [
    (dict(errors=[0.11] * 150), "overall median"),
    (dict(errors=[0.05] * 140 + [0.2] * 10, kinds=["collective"] * 140 + ["job"] * 10), "job: median"),
    (dict(errors=[0.05] * 149 + [0.5]), "beyond 35%"),
    (dict(errors=[0.05] * 150, cv={"median": 0.09}), "cross-validated"),
    (dict(errors=[0.05] * 149), "149 observations"),
    (dict(errors=[0.05] * 150, sources=9), "9 sources"),
])
def test_each_threshold_breaks_alone(change, needle):
    broken = thresholds.broken(_report(**change), None, whole_corpus=True)
    assert len(broken) == 1 and needle in broken[0], broken


def test_excused_observations_pass_up_to_their_share():
    ok = _report([0.05] * 143 + [0.6] * 7, excused=[None] * 143 + ["no MoE"] * 7)
    assert thresholds.broken(ok, None, whole_corpus=True) == []
    too_many = _report([0.05] * 142 + [0.6] * 8, excused=[None] * 142 + ["no MoE"] * 8)
    assert any("excused" in b for b in thresholds.broken(too_many, None, whole_corpus=True))


def test_a_rise_of_the_median_over_the_committed_one_breaks():
    r = _report([0.07] * 150)
    assert thresholds.broken(r, 0.061, whole_corpus=True) == []
    assert "rose" in thresholds.broken(r, 0.059, whole_corpus=True)[0]


def test_committed_median_is_read_from_the_mark(tmp_path):
    doc = tmp_path / "validation.md"
    doc.write_text("# x\n\n<!-- median all: 0.0712 -->\n")
    assert committed_median(doc) == pytest.approx(0.0712)
    assert committed_median(tmp_path / "missing.md") is None


def test_excused_rows_need_an_id_and_a_mechanism(tmp_path):
    p = tmp_path / "excused.toml"
    p.write_text('[[excused]]\nid = "a/b"\nmechanism = "no MoE"\n')
    assert read_excused(p) == {"a/b": "no MoE"}
    p.write_text('[[excused]]\nid = "a/b"\n')
    with pytest.raises(ParamError, match=r"excused\[0\]\.mechanism"):
        read_excused(p)


def test_regressions_are_medians_risen_above_the_committed_ones(tmp_path):
    r = _report([0.05] * 140 + [0.2] * 10, kinds=["collective"] * 140 + ["job"] * 10)
    doc = tmp_path / "validation.md"
    doc.write_text("<!-- median all: 0.0450 -->\n<!-- median collective: 0.0300 -->\n<!-- median job: 0.2500 -->\n")
    committed = committed_medians(doc)
    assert committed == {"all": 0.045, "collective": 0.03, "job": 0.25}
    got = thresholds.regressions(r, committed)
    assert len(got) == 1 and got[0].startswith("collective median 5.00% rose")   # all: +0.5 point, job: fell
