"""sim.calibrate: parameters recovered from measurements the twin itself generated, reuse of the expensive parts,
identifiability, refused input (CLI exit 2 naming the entry and field) and the --json document."""
import json

import pytest

from sim.calibrate.fit import Predictor, calibrate, fittable
from sim.calibrate.measurements import MAX_ENTRIES, read_measurements
from sim.cli import main
from sim.core.errors import ParamError
from sim.fabric.topology import load_topology
from sim.jobs.entry import run_job
from sim.jobs.params import JOB
from sim.jobs.step import GEMM_EFFICIENCY

TRUE_GEMM = 0.6
JOBS = [dict(model="llama3-8b", gpus=64, tp=8, batch_tokens="1M"),
        dict(model="llama3-8b", gpus=128, tp=4, pp=2, batch_tokens="2M"),
        dict(model="llama3-8b", gpus=32, tp=8, seq=4096, batch_tokens="512K")]


@pytest.fixture(scope="module")
def demo():
    return load_topology("demo-256")[1]


@pytest.fixture(scope="module")
def job_file(demo):
    """Three job step times the twin computes with gemm_efficiency 0.6."""
    entries = [{"kind": "job", "name": f"j{i}", "params": p,
                "step_time_s": run_job(demo, JOB.validate({**p, "gemm_efficiency": TRUE_GEMM})).result.step_time}
               for i, p in enumerate(JOBS)]
    return json.dumps({"entry": entries})


def test_recovers_gemm_efficiency(demo, job_file):
    assert GEMM_EFFICIENCY != TRUE_GEMM                     # the fit starts elsewhere
    cal = calibrate(demo, read_measurements(job_file), ["gemm_efficiency"])
    p = cal.parameters["gemm_efficiency"]
    assert p["start"] == GEMM_EFFICIENCY and p["value"] == pytest.approx(TRUE_GEMM, rel=0.01)
    assert p["identifiable"] and p["low"] <= p["value"] <= p["high"]
    d = cal.to_dict()
    assert d["after"]["job"]["worst_abs_error"] < 0.01 < d["before"]["job"]["median_abs_error"]
    # the solve ran once per job; the fit re-ran only the closed-form step
    assert cal.runs == len(JOBS) and cal.evaluations > 3


def test_cached_step_is_the_full_run(demo, job_file):
    """A job's solve reused under other step-only parameters (sim.jobs.job.STEP_ONLY) gives exactly what a full run
    gives: efficiencies, and memory parameters that change the recomputation."""
    entries = read_measurements(job_file)
    pred = Predictor(demo, entries)
    pred.predict({})
    theta = {"gemm_efficiency": 0.5, "attention_efficiency": 0.7}
    full = [run_job(demo, JOB.validate({**p, **theta})).result.step_time for p in JOBS]
    assert list(pred.predict(theta)) == full and pred.runs == len(JOBS)
    one = Predictor(demo, entries[:1])
    base = one.predict({})[0]
    theta = {"hbm_gb": 12.0, "fragmentation": 0.1, "framework_gb": 1.0}       # 12 GB: layers recomputed
    full = run_job(demo, JOB.validate({**JOBS[0], **theta})).result
    assert sum(full.params["recompute_layers"]) > 0 and full.step_time != base
    assert one.predict(theta)[0] == full.step_time and one.runs == 1


def test_default_fit_is_what_the_measurements_inform(demo, job_file):
    """With no names the fit takes the job kind's parameters that move a step time (and only those); three step
    times cannot determine all of them at once, so the refused ones are named, not applied."""
    cal = calibrate(demo, read_measurements(job_file), None)
    assert "gemm_efficiency" in cal.parameters
    assert not set(cal.parameters) - {n for n, p in fittable(["job"], demo).items()}      # the job kind's only
    assert not set(cal.fit) & {n for n, p in cal.parameters.items() if not p["identifiable"]}
    assert "restart_s" not in cal.parameters and "server_cores" not in cal.parameters


def test_unidentifiable_parameter_is_refused(demo, job_file):
    """A storage server's cores from job step times only: refused (kept at its start, no interval), named with the
    measurement that would determine it."""
    cal = calibrate(demo, read_measurements(job_file), ["gemm_efficiency", "server_cores"])
    s = cal.parameters["server_cores"]
    assert s["identifiable"] is False and s["value"] == s["start"] and s["low"] is None
    assert s["refused"] == "no measurement moves it" and "checkpoint" in s["would"]
    assert cal.fit == ["gemm_efficiency"]
    assert [r["name"] for r in cal.to_dict()["refused"]] == ["server_cores"]
    assert any(w.startswith("server_cores: refused (no measurement moves it)") for w in cal.warnings)
    assert cal.parameters["gemm_efficiency"]["value"] == pytest.approx(TRUE_GEMM, rel=0.01)


def test_json_document(tmp_path, capsys, job_file):
    f = tmp_path / "m.json"
    f.write_text(job_file)
    assert main(["calibrate", "--preset", "demo-256", "--measurements", str(f), "--fit", "gemm_efficiency",
                 "--json", "-q"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert set(d) >= {"entries", "parameters", "before", "after", "warnings", "fit"}
    assert len(d["entries"]) == len(JOBS)
    for row in d["entries"]:
        assert set(row) >= {"predicted", "measured", "error", "before", "after", "kind", "name"}
        assert set(row["before"]) == set(row["after"]) == {"predicted", "error"}
        assert row["error"] == pytest.approx(row["predicted"] / row["measured"] - 1)
    assert set(d["parameters"]["gemm_efficiency"]) >= {"value", "low", "high", "bounds", "identifiable"}
    assert set(d["before"]) == set(d["after"]) == {"all", "job"}
    assert set(d["after"]["job"]) == {"count", "median_abs_error", "worst_abs_error"}
    # the text table names the fitted parameter
    assert main(["calibrate", "--preset", "demo-256", "--measurements", str(f), "--fit", "gemm_efficiency",
                 "-q"]) == 0
    assert "gemm_efficiency" in capsys.readouterr().out


def test_toml_file_and_other_kinds(tmp_path, capsys):
    f = tmp_path / "m.toml"
    f.write_text('[[entry]]\nkind = "checkpoint"\nblocked_s = 2.0\ndurable_s = 10.0\n[entry.params]\ngpus = 64\n'
                 'bytes_per_gpu = "1G"\n\n[[entry]]\nkind = "restore"\ndurable_s = 5.0\n[entry.params]\ngpus = 64\n'
                 'bytes_per_gpu = "1G"\n')
    assert main(["calibrate", "--preset", "demo-256", "--measurements", str(f), "--json", "-q"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert [(r["kind"], r["quantity"]) for r in d["entries"]] == [("checkpoint", "blocked_s"),
                                                                   ("checkpoint", "durable_s"),
                                                                   ("restore", "durable_s")]
    assert all(r["before"]["predicted"] > 0 for r in d["entries"])


JOB_ENTRY = {"kind": "job", "params": {"model": "llama3-8b", "gpus": 64}, "step_time_s": 2.0}


@pytest.mark.parametrize("entries, fit, field", [
    ([{"kind": "nccl"}], None, "entry[0].kind"),
    ([JOB_ENTRY, {**JOB_ENTRY, "step_time_s": 0}], None, "entry[1].step_time_s"),
    ([{**JOB_ENTRY, "step_time_s": -1.5}], None, "entry[0].step_time_s"),
    ([{**JOB_ENTRY, "params": {"gpus": 64, "tp": 0}}], None, "entry[0].params.tp"),
    ([{**JOB_ENTRY, "params": {"gpus": 64, "warp": 2}}], None, "entry[0].params.warp"),
    ([{**JOB_ENTRY, "tokens_per_s": 1e6}], None, "entry[0].tokens_per_s"),
    ([{"kind": "job", "params": {"gpus": 64}}], None, "entry[0].step_time_s"),
    ([{"kind": "failures", "effective_ratio": 1.5}], None, "entry[0].effective_ratio"),
    ([{"kind": "nccl-tests", "log": "#  size  count  type\n"}], None, "entry[0].log"),
    ([{"kind": "restore", "durable_s": 1, "params": {"restore": False}}], None, "entry[0].params.restore"),
    ([{**JOB_ENTRY, "name": "a"}, {**JOB_ENTRY, "name": "a"}], None, "entry[1].name"),
    ([JOB_ENTRY], "gpus", "fit"),
    ([JOB_ENTRY], "days", "fit"),
])
def test_bad_input_names_entry_and_field(tmp_path, capsys, entries, fit, field):
    f = tmp_path / "m.json"
    f.write_text(json.dumps({"entry": entries}))
    argv = ["calibrate", "--preset", "demo-256", "--measurements", str(f), "-q"] + (["--fit", fit] if fit else [])
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"python -m sim calibrate: error: {field}: ")


def test_file_limits():
    with pytest.raises(ParamError, match="measurements"):
        read_measurements("this is neither = [")
    with pytest.raises(ParamError, match=f"at most {MAX_ENTRIES:,}"):
        read_measurements(json.dumps([JOB_ENTRY] * (MAX_ENTRIES + 1)))
