"""The validation capability's entry point (docs/engine.md "Entry points"): ``run_validate(values, progress=None)``
with ``values`` validated by :data:`sim.validation.params.VALIDATE`. Unlike the other capabilities it takes no
cluster: every corpus observation names the preset it ran on. Its ``to_dict()`` is ``python -m sim validate
--json``'s document."""
from __future__ import annotations

from sim.core.entry import Document
from sim.validation import thresholds
from sim.validation.corpus import load_corpus
from sim.validation.markdown import committed_medians
from sim.validation.report import validate


def run_validate(values: dict, progress=None, corpus_dir=None) -> Document:
    """The report of :func:`sim.validation.report.validate` on the repository's corpus (``corpus_dir`` for another:
    the command line's ``--corpus``), restricted to ``values['kind']`` when given, cross-validated with
    ``values['cross_validate']`` folds when given, with the thresholds it breaks (``broken``, ``passed``) and, on
    the whole repository corpus, the medians that rose above the committed ones (``regressions``)."""
    kind = values.get("kind")
    corpus = load_corpus(corpus_dir, kinds=[kind] if kind else None)
    report = validate(corpus, folds=values.get("cross_validate"), progress=progress)
    whole = kind is None and corpus_dir is None
    committed = committed_medians() if whole else {}
    report["broken"] = thresholds.broken(report, committed.get("all"), whole_corpus=whole)
    report["regressions"] = thresholds.regressions(report, committed)
    report["passed"] = not report["broken"]
    report["scope"] = {"kind": kind, "corpus": "repository" if corpus_dir is None else str(corpus_dir)}
    return Document(report)
