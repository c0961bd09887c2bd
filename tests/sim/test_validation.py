"""sim.validation end to end on synthetic corpora the twin itself generated: a known fitted factor recovered
across the corpus (and its held-out error near 0), ``validate --check`` passing on the factor's true value and
failing when the factor in effect is perturbed, and a malformed corpus file refused naming its file and field."""
import json

import pytest

from sim.cli import main
from sim.core import fitted
from sim.fabric.entry import run_collective
from sim.fabric.params import COLLECTIVE
from sim.fabric.topology import load_topology
from sim.validation.corpus import load_corpus
from sim.validation.report import fit_corpus

TRUE_NVLINK = 0.8
CASES = [("allreduce", 8, s) for s in ("64M", "256M", "1G")] + [("allgather", 8, s) for s in ("64M", "1G")] + \
        [("reducescatter", 8, "256M"), ("allreduce", 16, "1G"), ("allreduce", 16, "256M")]


def _busbw(topo, collective, gpus, size, **factor):
    """The twin's busbw with every fitted factor of the collective at its prior but ``factor`` (the measured values
    must not depend on the fitted values the repository holds now)."""
    priors = {f.name: f.prior for f in fitted.FACTORS if "collective" in f.kinds}
    v = COLLECTIVE.validate({"collective": collective, "gpus": gpus, "sizes": size, **priors, **factor})
    return run_collective(topo, v).seeded.median.result.rows[0].busbw / 1e9


def _write_corpus(folder, topo, **factor):
    """Two sources' files of busbw observations, measured = the twin's own with ``factor`` set."""
    folder.mkdir()
    for half, cases in (("synthetic-a", CASES[::2]), ("synthetic-b", CASES[1::2])):
        lines = [f'[source]\nid = "{half}"\ntitle = "synthetic {half}"\nurl = "https://example.org/{half}"\n'
                 f'date = "2026-12-07"\n']
        for i, (coll, gpus, size) in enumerate(cases):
            lines.append(f'[[entry]]\nkind = "collective"\nname = "{coll}-{gpus}-{size}"\ncluster = "demo-256"\n'
                         f'where = "row {i}"\nhardware = "8 x H100 per host"\n'
                         f'busbw_gbps = {_busbw(topo, coll, gpus, size, **factor)!r}\n'
                         f'[entry.params]\ncollective = "{coll}"\ngpus = {gpus}\nsizes = "{size}"\n')
        (folder / f"{half}.toml").write_text("\n".join(lines))
    return folder


@pytest.fixture(scope="module")
def demo():
    return load_topology("demo-256")[1]


@pytest.fixture(scope="module")
def corpus_dir(demo, tmp_path_factory):
    return _write_corpus(tmp_path_factory.mktemp("c") / "corpus", demo, nvlink_efficiency=TRUE_NVLINK)


def test_a_known_factor_is_recovered_across_the_corpus(corpus_dir, tmp_path, monkeypatch):
    assert fitted.factor("nvlink_efficiency").prior != TRUE_NVLINK
    monkeypatch.setattr(fitted, "FITTED_PATH", tmp_path / "none.toml")     # every other factor at its prior
    fitted.fitted_file.cache_clear()
    fit = fit_corpus(load_corpus(corpus_dir))
    got = fit["factors"]["nvlink_efficiency"]
    assert got["applied"] and got["value"] == pytest.approx(TRUE_NVLINK, rel=0.02)
    assert fit["holdout"]["median_abs_error"] < 0.01            # held out, the factor still predicts the folds
    fitted.fitted_file.cache_clear()


def test_check_passes_on_the_true_factor_and_fails_when_it_is_perturbed(corpus_dir, tmp_path, monkeypatch, capsys):
    good = tmp_path / "good.toml"                              # the other factors: their priors
    good.write_text(f"[factor.nvlink_efficiency]\nvalue = {TRUE_NVLINK}\n")
    monkeypatch.setattr(fitted, "FITTED_PATH", good)
    fitted.fitted_file.cache_clear()
    assert main(["validate", "--corpus", str(corpus_dir), "--check", "--cross-validate", "2", "-q", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["overall"]["median"] < 1e-6 and report["passed"]
    bad = tmp_path / "bad.toml"
    bad.write_text(f"[factor.nvlink_efficiency]\nvalue = {TRUE_NVLINK * 0.7}\n")
    monkeypatch.setattr(fitted, "FITTED_PATH", bad)
    fitted.fitted_file.cache_clear()
    assert main(["validate", "--corpus", str(corpus_dir), "--check", "--cross-validate", "2", "-q"]) == 1
    assert "threshold broken: overall median" in capsys.readouterr().err
    fitted.fitted_file.cache_clear()


def test_a_malformed_corpus_file_is_refused_naming_file_and_field(corpus_dir, tmp_path, capsys):
    bad = tmp_path / "bad"
    bad.mkdir()
    text = (corpus_dir / "synthetic-a.toml").read_text().replace('cluster = "demo-256"\n', "", 1)
    (bad / "synthetic-a.toml").write_text(text)
    assert main(["validate", "--corpus", str(bad), "-q"]) == 2
    assert "corpus/synthetic-a.toml: entry[0].cluster" in capsys.readouterr().err


@pytest.mark.parametrize("argv, field", [(["--cross-validate", "1"], "cross_validate: must be at least 2"),
                                         (["--kind", "weather"], "kind: unknown value 'weather'")])
def test_bad_options_exit_2_naming_the_field(argv, field, capsys):
    assert main(["validate", "-q", *argv]) == 2
    assert field in capsys.readouterr().err


def test_one_kind_of_the_repository_corpus_as_the_readme_runs_it(capsys):
    """README: ``python -m sim validate --kind collective`` (without the cross-validation: its fits are CI's)."""
    assert main(["validate", "--kind", "collective", "-q", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report["kinds"]) == {"collective"} and report["overall"]["count"] >= 100
    assert all(r["predicted"] > 0 for r in report["observations"])
