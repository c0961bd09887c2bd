"""sim.core.published: a published range beside a simulated figure."""
import pytest

from sim.core.published import Reference, beside

REF = Reference("k", "MFU", 0.38, 0.43, "fraction", "S3", "405B on 16,384 GPUs", "no bubble model")


def test_a_figure_inside_the_range_is_within_and_its_ratio_is_to_the_middle():
    row = beside(REF, 0.40, same_case=True)
    assert row["within"] is True and row["ratio"] == pytest.approx(0.40 / 0.405)
    assert row["source"] == "S3" and row["same_case"] is True and row["differs"] == ""


def test_a_figure_outside_the_range_is_not_within_and_a_missing_one_has_no_ratio():
    assert beside(REF, 0.31, same_case=False, differs="model 70B")["within"] is False
    row = beside(REF, None, same_case=True)
    assert row["simulated"] is None and row["ratio"] is None and row["within"] is None


@pytest.mark.parametrize("kw, text", [({"unit": "furlongs"}, "unit"), ({"low": 2.0}, "low")])
def test_a_reference_with_an_unknown_unit_or_an_inverted_range_is_refused(kw, text):
    fields = {"key": "k", "what": "w", "low": 1.0, "high": 1.0, "unit": "s", "source": "S3", "case": "c"} | kw
    with pytest.raises(ValueError, match=text):
        Reference(**fields)
