"""sim.calibrate (issue 39): the measurements schema with provenance (errors naming the file and field), the kinds
collective and power and the new quantities predicted by each kind's engine entry point, entries on their own
preset, the least-squares fit's identifiability (refusals naming the measurement that would determine a parameter,
rank deficiency), and the held-out error with a known parameter recovered."""
import json
import math

import numpy as np
import pytest

from sim.calibrate import fit as fitmod
from sim.calibrate.fit import Predictor, calibrate, fit, splits, would
from sim.calibrate.measurements import parse_measurements, read_measurements
from sim.cli import main
from sim.core.errors import ParamError
from sim.fabric.entry import run_collective
from sim.fabric.params import COLLECTIVE
from sim.fabric.topology import load_topology
from sim.failures.entry import run_failures
from sim.failures.params import FAILURES
from sim.jobs.entry import run_job
from sim.jobs.params import JOB
from sim.jobs.step import GEMM_EFFICIENCY
from sim.power.entry import run_power
from sim.power.params import POWER
from sim.storage.entry import run_checkpoint
from sim.storage.params import CHECKPOINT

SOURCE = '[source]\nid = "foo"\ntitle = "a title"\nurl = "https://example.org/x"\ndate = "2023-08-14"\n'
ENTRY = ('[[entry]]\nkind = "collective"\nname = "ar"\ncluster = "dgx-h100-superpod"\nwhere = "table 1"\n'
         'hardware = "1 x DGX H100"\nbusbw_gbps = 400.0\n[entry.params]\ncollective = "allreduce"\ngpus = 8\n'
         'sizes = "1G"\n')


@pytest.fixture(scope="module")
def demo():
    return load_topology("demo-256")[1]


# ------------------------------------------------------------------------------------------------------ schema
def test_provenance_is_read_and_optional_for_users():
    m = parse_measurements(SOURCE + ENTRY)
    assert m.source["id"] == "foo" and m.source["kind"] is None
    e = m.entries[0]
    assert e.cluster == "dgx-h100-superpod" and e.provenance["where"] == "table 1" and e.id == "foo/ar"
    assert e.observations[0].size == 1 << 30 and e.observations[0].label == "busbw_gbps 1G"
    # a user's file: none of it required
    bare = ENTRY.replace('cluster = "dgx-h100-superpod"\nwhere = "table 1"\nhardware = "1 x DGX H100"\n', "")
    e = read_measurements(bare)[0]
    assert e.cluster is None and e.source is None and e.provenance == {"where": None, "hardware": None, "note": None}


@pytest.mark.parametrize("text, field", [
    (ENTRY, "source"),                                                          # no [source]
    (SOURCE.replace('url = "https://example.org/x"\n', "") + ENTRY, "source.url"),
    (SOURCE.replace('"2023-08-14"', '"14 Aug 2023"') + ENTRY, "source.date"),
    (SOURCE.replace('id = "foo"', 'id = "bar"') + ENTRY, "source.id"),          # not the file's name
    (SOURCE + '[source.extra]\n', "source.extra"),
    (SOURCE + ENTRY.replace('cluster = "dgx-h100-superpod"\n', ""), "entry[0].cluster"),
    (SOURCE + ENTRY.replace('"dgx-h100-superpod"', '"no-such-preset"'), "entry[0].cluster"),
    (SOURCE + ENTRY.replace('hardware = "1 x DGX H100"\n', ""), "entry[0].hardware"),
    (SOURCE + ENTRY.replace('where = "table 1"\n', ""), "entry[0].where"),
    (SOURCE + ENTRY + ENTRY.replace('name = "ar"', 'name = "ar2"').replace('sizes = "1G"', 'sizes = "1M,1G"'),
     "entry[1].params.sizes"),
    (SOURCE + ENTRY.replace("busbw_gbps = 400.0", "busbw_gbps = 400.0\ntime_us = 9.0"), "entry[0].time_us"),
    (SOURCE + ENTRY.replace("busbw_gbps = 400.0", "mfu = 0.4"), "entry[0].mfu"),  # not a collective's quantity
])
def test_corpus_errors_name_the_file_and_field(text, field):
    with pytest.raises(ParamError) as got:
        parse_measurements(text, require_provenance=True, origin="corpus/foo.toml")
    (key,) = got.value.errors
    assert key == f"corpus/foo.toml: {field}", got.value.errors
    assert str(got.value).startswith(f"corpus/foo.toml: {field}: ")


@pytest.mark.parametrize("entry, field", [
    ({"kind": "job", "params": {"model": "llama3-8b", "gpus": 64}, "mfu": 1.2}, "entry[0].mfu"),
    ({"kind": "job", "params": {"model": "llama3-8b", "gpus": 64}, "mfu": 0.4, "tokens_per_s_per_gpu": 9e3},
     "entry[0].mfu"),
    ({"kind": "checkpoint", "params": {"gpus": 64}, "read_gbps": 10}, "entry[0].read_gbps"),
    ({"kind": "power", "params": {"model": "llama3-8b", "gpus": 64, "pp": 1}, "gpu_mean_w": -1}, "entry[0].gpu_mean_w"),
    ({"kind": "power", "params": {"model": "llama3-8b", "gpus": 64, "pp": 1}}, "entry[0].gpu_mean_w"),
    ({"kind": "collective", "params": {"collective": "allreduce", "gpus": 8, "sizes": "1G"}}, "entry[0].busbw_gbps"),
    ({"kind": "job", "params": {"gpus": 64}, "step_time_s": 1, "cluster": 3}, "entry[0].cluster"),
])
def test_new_quantities_refused_input(entry, field):
    with pytest.raises(ParamError) as got:
        read_measurements(json.dumps([entry]))
    assert list(got.value.errors) == [field], got.value.errors


# -------------------------------------------------------------------------------------- new kinds, quantities
def test_new_kinds_predicted_by_their_engines(demo):
    """Each quantity is what the kind's own entry point gives a user's run of the same parameters."""
    job = {"model": "llama3-8b", "gpus": 64, "tp": 8}
    power = {"model": "llama3-8b", "gpus": 64, "pp": 1, "tp": 8}
    coll = {"collective": "allreduce", "gpus": 16, "sizes": "64M"}
    ckpt = {"gpus": 64, "bytes_per_gpu": "1G"}
    entries = [
        {"kind": "job", "name": "mfu", "params": job, "mfu": 0.4},
        {"kind": "job", "name": "tpg", "params": job, "tokens_per_s_per_gpu": 9000.0},
        {"kind": "collective", "name": "bus", "params": coll, "busbw_gbps": 100.0},
        {"kind": "collective", "name": "alg", "params": coll, "algbw_gbps": 50.0},
        {"kind": "collective", "name": "t", "params": coll, "time_us": 900.0},
        {"kind": "checkpoint", "name": "w", "params": ckpt, "write_gbps": 50.0},
        {"kind": "restore", "name": "r", "params": ckpt, "read_gbps": 50.0},
        {"kind": "failures", "name": "f", "params": {"gpus": 128, "days": 5.0}, "mtbf_hours": 10.0},
        {"kind": "power", "name": "p", "params": power, "gpu_mean_w": 600.0, "gpu_peak_w": 700.0,
         "cluster_peak_mw": 0.3, "swing_mw": 0.1, "energy_per_token_j": 3.0, "gpu_energy_per_token_j": 1.5,
         "node_mean_kw": 7.0, "node_peak_kw": 8.0},
    ]
    got = Predictor(demo, read_measurements(json.dumps(entries))).predict({})
    r = run_job(demo, JOB.validate({**job, "hottest": 0})).result
    assert got[0] == pytest.approx(r.mfu) and got[1] == pytest.approx(r.tokens_per_s / 64)
    row = run_collective(demo, COLLECTIVE.validate({**coll, "hottest": 0})).seeded.median.result.rows[0]
    assert got[2] == pytest.approx(row.busbw / 1e9) and got[3] == pytest.approx(row.algbw / 1e9)
    assert got[4] == pytest.approx(row.time * 1e6)
    assert got[2] == pytest.approx(got[3] * 2 * 15 / 16)                     # nccl-tests' allreduce busbw factor
    c = run_checkpoint(demo, CHECKPOINT.validate(ckpt)).result
    assert got[5] == pytest.approx(64 * 2 ** 30 / c.durable_seconds / 1e9)
    c = run_checkpoint(demo, CHECKPOINT.validate({**ckpt, "restore": True})).result
    assert got[6] == pytest.approx(64 * 2 ** 30 / c.durable_seconds / 1e9)
    s = run_failures(demo, FAILURES.validate({"gpus": 128, "days": 5.0})).doc["summary"]
    assert got[7] == pytest.approx(24 / s["interruptions_per_day"]["mean"])
    d = run_power(demo, POWER.validate(power)).result.to_dict()
    mean = sum(st["mean_w"] * st["gpus"] for st in d["stages"]) / d["gpus"]
    assert got[8] == pytest.approx(mean) and got[9] == pytest.approx(max(st["peak_w"] for st in d["stages"]))
    assert got[10] == pytest.approx(d["cluster_peak_mw"]) and got[11] == pytest.approx(d["cluster_swing_mw"])
    assert got[12] == pytest.approx(d["energy_per_token_j"])
    assert got[13] == pytest.approx(d["gpu_energy_per_token_j"]) and 0 < got[13] < got[12]   # the GPUs alone
    assert got[9] <= 700.0 * (1 + 1e-9) and 0 < got[8] <= got[9]                 # H100 SXM's limit: 700 W
    assert got[14] == pytest.approx(d["hosts"]["mean_kw"]) and got[15] == pytest.approx(d["hosts"]["peak_kw"])
    assert 8 * got[8] / 1e3 < got[14] < got[15]                    # a node: its 8 GPUs' mean and its host's parts


def test_entries_run_on_their_own_preset(demo):
    """An entry naming a preset runs there (each preset loaded once), the others on the run's cluster; with no run
    cluster at all (a corpus), every entry must name one."""
    coll = {"collective": "allreduce", "gpus": 256, "sizes": "1G"}
    entries = read_measurements(json.dumps([
        {"kind": "collective", "name": "here", "params": coll, "busbw_gbps": 100.0},
        {"kind": "collective", "name": "there", "cluster": "dgx-h100-superpod", "params": coll, "busbw_gbps": 100.0},
        {"kind": "collective", "name": "there2", "cluster": "dgx-h100-superpod",
         "params": {**coll, "sizes": "1M"}, "busbw_gbps": 10.0}]))
    pred = Predictor(demo, entries)
    got = pred.predict({})
    superpod = load_topology("dgx-h100-superpod")[1]
    for topo, k in ((demo, 0), (superpod, 1)):
        row = run_collective(topo, COLLECTIVE.validate({**coll, "hottest": 0})).seeded.median.result.rows[0]
        assert got[k] == pytest.approx(row.busbw / 1e9)
    assert got[0] != pytest.approx(got[1])                 # RoCE demo vs InfiniBand SuperPOD: not the same answer
    assert list(pred._presets) == ["dgx-h100-superpod"]
    with pytest.raises(Exception, match="names no cluster"):
        Predictor(None, entries)
    assert Predictor(None, entries[1:]).predict({}) == pytest.approx(got[1:])


# --------------------------------------------------------------------------------------------- identifiability
def test_parameter_no_measurement_moves_is_refused(demo):
    """gemm_efficiency from collective measurements alone: refused, named, with the measurement that would."""
    entries = read_measurements(json.dumps([
        {"kind": "collective", "name": f"c{s}", "params": {"collective": "allreduce", "gpus": 16, "sizes": s},
         "time_us": t} for s, t in (("8K", 40.0), ("64K", 60.0), ("1M", 100.0))]))
    r = fit(entries, ["gemm_efficiency", "base_rtt_us"], cluster=demo, folds=3)
    assert [x["name"] for x in r.refused] == ["gemm_efficiency"]
    g = r.parameters()["gemm_efficiency"]
    assert g["refused"] == "no measurement moves it" and "job" in g["would"] and g["value"] == GEMM_EFFICIENCY
    assert "gemm_efficiency" not in r.values and "base_rtt_us" in r.values
    assert any(w.startswith("gemm_efficiency: refused") for w in r.warnings)
    assert "inside one host" in would("nvlink_efficiency") and "8 GPUs" in would("nvlink_efficiency")


class Collinear(Predictor):
    """Predictions ``c / (gemm_efficiency x attention_efficiency)``: two parameters every measurement moves the
    same way (perfectly collinear), and optionally a third (``fragmentation``) moving some of them only."""

    def entry(self, k, theta):
        g = theta.get("gemm_efficiency", 0.75)
        a = theta.get("attention_efficiency", 0.75)
        f = theta.get("fragmentation", 0.05)
        return [(1.0 + k) / (g * a) * (1 + f * (k % 2)) for _ in self.entries[k].observations]


def _job_entries(n):
    return read_measurements(json.dumps([{"kind": "job", "name": f"j{k}", "params": {"model": "llama3-8b",
                                                                                    "gpus": 64},
                                          "step_time_s": (1.0 + k) / (0.6 * 0.7) * (1 + 0.1 * (k % 2))}
                                         for k in range(n)]))


def test_collinear_parameters_rank_deficiency_reported(demo):
    entries = _job_entries(8)
    r = fit(entries, ["gemm_efficiency", "attention_efficiency", "fragmentation"], cluster=demo,
            predictor=Collinear(demo, entries), folds=4)
    assert r.rank == 2 and r.singular_values[-1] < 1e-6 * r.singular_values[0]
    refused = {x["name"]: x for x in r.refused}
    assert set(refused) == {"gemm_efficiency", "attention_efficiency"}
    assert "together with attention_efficiency" in refused["gemm_efficiency"]["reason"]
    assert "rank 2 of 3" in refused["gemm_efficiency"]["reason"]
    # the one the data determine: 0.1 in the joint fit; applied as fitted again with the refused ones at their
    # start (it then absorbs what they would have explained: on these data, more)
    assert r.optimum["fragmentation"] == pytest.approx(0.1, rel=1e-6)
    assert list(r.values) == ["fragmentation"] and r.values["fragmentation"] > 0.1
    assert r.identifiable == ["fragmentation"] and r.ci["fragmentation"] is not None
    assert r.rank_of == 3


def test_interval_is_the_linearised_one():
    """On an exactly linear-in-log model with noise, the 95 % interval is t x sqrt(s^2 (J^T J)^-1) in the
    parameter's units (checked against the closed form of a one-parameter fit)."""
    entries = _job_entries(6)
    noise = np.array([0.02, -0.01, 0.015, -0.03, 0.01, 0.0])
    for e, z in zip(entries, noise):
        e.observations[0].measured = 1.0 / 0.6 * math.exp(z)

    class One(Predictor):
        def entry(self, k, theta):
            return [1.0 / theta.get("gemm_efficiency", 0.75)]

    demo = load_topology("demo-256")[1]
    r = fit(entries, ["gemm_efficiency"], cluster=demo, predictor=One(demo, entries), folds=3)
    # log(pred/meas) = -log g + log 0.6 - z: the optimum is g = 0.6 exp(-mean z)
    g = 0.6 * math.exp(-noise.mean())
    assert r.values["gemm_efficiency"] == pytest.approx(g, rel=1e-6)
    s2 = float(((noise - noise.mean()) ** 2).sum()) / 5
    half = fitmod.t975(5) * math.sqrt(s2 / 6) * g            # d log pred / d g = -1/g: (J^T J)^-1 = g^2 / 6
    lo, hi = r.ci["gemm_efficiency"]
    assert lo == pytest.approx(g - half, rel=1e-4) and hi == pytest.approx(g + half, rel=1e-4)


def test_a_parameter_whose_optimum_is_at_a_bound_is_refused():
    """Measurements that want a parameter beyond its bounds leave it at the bound: the bound sets that value, not
    the data, so it is refused (kept at its start) and the refusal says which bound."""
    entries = _job_entries(6)
    noise = np.array([0.02, -0.01, 0.015, -0.03, 0.01, 0.0])
    for e, z in zip(entries, noise):
        e.observations[0].measured = 1.0 / 0.3 * math.exp(z)          # wants gemm_efficiency about 0.3

    class One(Predictor):
        def entry(self, k, theta):
            return [1.0 / theta.get("gemm_efficiency", 0.75)]

    demo = load_topology("demo-256")[1]
    r = fit(entries, ["gemm_efficiency"], cluster=demo, predictor=One(demo, entries), folds=3,
            bounds={"gemm_efficiency": (0.5, 5.0)})
    (refusal,) = r.refused
    assert refusal["name"] == "gemm_efficiency" and "at its lower bound 0.5" in refusal["reason"]
    assert "gemm_efficiency" not in r.values


def test_interval_takes_each_kinds_own_scatter():
    """The residual variance is per measurement kind: a parameter read by one tight kind alone keeps the narrow
    interval of that kind's scatter however loose another kind is; with one kind it is the classical
    s^2 (J'J)^-1 (the grouped sandwich reduces to it); and on a linear case the grouped form is checked against
    its closed form."""
    rng = np.random.default_rng(3)
    n = 40
    J = np.zeros((n, 2))
    J[:20, 0], J[20:, 1] = 1.0, 1.0                       # parameter 0 read by kind a, parameter 1 by kind b
    r = np.concatenate([0.01 * rng.standard_normal(20), 0.5 * rng.standard_normal(20)])
    kinds = np.array(["a"] * 20 + ["b"] * 20)
    pooled = fitmod.covariance(J, r, n - 2)
    grouped = fitmod.covariance(J, r, n - 2, kinds)
    assert np.allclose(pooled, fitmod.covariance(J, r, n - 2, np.array(["a"] * n)))
    assert np.allclose(pooled, float(r @ r) / (n - 2) * np.linalg.pinv(J.T @ J))
    s2a = float(r[:20] @ r[:20]) / 20 * n / (n - 2)
    assert grouped[0, 0] == pytest.approx(s2a / 20)        # kind a's own scatter over its 20 rows
    assert grouped[0, 0] < pooled[0, 0] / 100              # not widened by kind b's
    assert grouped[1, 1] == pytest.approx(float(r[20:] @ r[20:]) / 20 * n / (n - 2) / 20)


# ---------------------------------------------------------------------------------------------- held-out error
@pytest.fixture(scope="module")
def synthetic(demo):
    """Ten job measurements the twin generates with gemm_efficiency 0.6 (the default is 0.75)."""
    layouts = [dict(model="llama3-8b", gpus=g, tp=t, seq=s, batch_tokens=b)
               for g, t, s, b in ((64, 8, 8192, "1M"), (32, 8, 4096, "512K"), (128, 4, 8192, "2M"),
                                  (64, 4, 8192, "1M"), (16, 8, 8192, "256K"), (32, 4, 2048, "512K"),
                                  (64, 2, 4096, "1M"), (128, 8, 8192, "1M"), (16, 4, 4096, "256K"),
                                  (64, 8, 2048, "2M"))]
    return [{"kind": "job", "name": f"j{i}", "params": p,
             "step_time_s": run_job(demo, JOB.validate({**p, "gemm_efficiency": 0.6, "hottest": 0})).result.step_time}
            for i, p in enumerate(layouts)]


def test_cross_validation_recovers_a_known_factor(demo, synthetic):
    assert GEMM_EFFICIENCY != 0.6
    entries = read_measurements(json.dumps(synthetic))
    r = fit(entries, ["gemm_efficiency"], cluster=demo)
    assert r.values["gemm_efficiency"] == pytest.approx(0.6, rel=1e-3)
    h = r.holdout
    assert h["method"] == "folds" and h["folds"] == 5 and h["count"] == 10          # the default: 5 folds from 10
    assert h["median_abs_error"] < 1e-3 < 0.05 < h["before_median_abs_error"]
    # a random hold-out fraction instead
    r = fit(entries, ["gemm_efficiency"], cluster=demo, holdout=0.3, seed=4)
    assert r.holdout["method"] == "holdout" and r.holdout["count"] == 3 and r.holdout["median_abs_error"] < 1e-3


def test_held_out_error_is_out_of_sample(demo, synthetic):
    """With one measurement off by 30 %, its fold's held-out error is the full miss (it was not fitted to it),
    more than its in-sample error."""
    bad = [dict(e) for e in synthetic]
    bad[0]["step_time_s"] *= 1.3
    entries = read_measurements(json.dumps(bad))
    r = fit(entries, ["gemm_efficiency"], cluster=demo, folds=10)                    # leave-one-out
    assert r.holdout["median_abs_error"] > r.holdout["in_sample_median_abs_error"] > 0


def test_splits():
    method, sets, _ = splits(10, None, None, 0)
    assert method == "folds" and len(sets) == 5 and sorted(np.concatenate(sets).tolist()) == list(range(10))
    assert splits(4, None, None, 0)[0] == "leave-one-out" and len(splits(4, None, None, 0)[1]) == 4
    assert splits(2, None, None, 0)[0] == "leave-one-out"
    method, sets, why = splits(1, None, None, 0)
    assert method is None and "too few" in why
    assert splits(10, 0.2, None, 1)[1][0].size == 2
    assert splits(10, None, 3, 1)[0] == "folds"
    assert not np.array_equal(splits(10, None, 3, 1)[1][0], splits(10, None, 3, 2)[1][0])


def test_cli_shows_refusals_intervals_and_held_out_error(tmp_path, capsys, synthetic):
    f = tmp_path / "m.json"
    f.write_text(json.dumps(synthetic[:5]))
    assert main(["calibrate", "--preset", "demo-256", "--measurements", str(f), "--fit",
                 "gemm_efficiency,server_cores", "--holdout", "0.4", "-q"]) == 0
    out = capsys.readouterr().out
    assert "refused: server_cores: no measurement moves it" in out and "checkpoint" in out
    assert "held-out error: median |error|" in out and "40 % held out" in out and "Jacobian rank 1 of 1" in out
    assert main(["calibrate", "--preset", "demo-256", "--measurements", str(f), "--fit", "gemm_efficiency",
                 "--folds", "5", "--json", "-q"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["holdout"]["method"] == "folds" and d["holdout"]["folds"] == 5 and d["refused"] == []
    assert d["rank"] == {"rank": 1, "parameters": 1, "singular_values": [pytest.approx(1.0)]}
    assert main(["calibrate", "--preset", "demo-256", "--measurements", str(f), "--folds", "1", "-q"]) == 2
    assert "folds" in capsys.readouterr().err


def test_calibrate_applies_only_what_is_determined(demo, synthetic):
    cal = calibrate(demo, read_measurements(json.dumps(synthetic[:4])), ["gemm_efficiency", "restart_s"],
                    folds=2)
    d = cal.to_dict()
    assert d["fit"] == ["gemm_efficiency"] and d["parameters"]["restart_s"]["refused"]
    assert d["holdout"]["method"] == "folds" and d["holdout"]["count"] == 4


# ------------------------------------------------------------------------------------ fitted factors, corpus
def test_a_fitted_factor_is_fittable_with_its_bounds(demo, monkeypatch):
    """A factor declared in sim.core.fitted (and as a nullable parameter of a kind) is fittable with the factor's
    bounds, starting from its value in effect, with nothing written in sim.calibrate."""
    from sim.core import fitted
    name = "client_core_gbs"                       # a nullable float of CHECKPOINT, not fittable on its own
    assert name not in fitmod.fittable(["checkpoint"], demo)
    monkeypatch.setattr(fitted, "FACTORS", fitted.FACTORS + (
        fitted.Factor(name, 2.5, 0.5, 8.0, ("checkpoint", "restore"), "test factor"),))
    got = fitmod.fittable(["checkpoint", "restore"], demo)[name]
    assert (got.low, got.high, got.start, got.kinds) == (0.5, 8.0, 2.5, ("checkpoint", "restore"))
    assert name in fitmod.fittable_names()


def test_corpus_fit_over_two_presets_recovers_a_parameter():
    """Entries of two sources on two presets (RoCE and InfiniBand), no run cluster: base_rtt_us recovered from small
    collectives the twin timed with 30 us, each on its own preset."""
    topos = {p: load_topology(p)[1] for p in ("demo-256", "dgx-h100-superpod")}
    texts = []
    for k, (preset, topo) in enumerate(topos.items()):
        rows = []
        for size in ("8K", "64K", "512K"):
            params = {"collective": "allreduce", "gpus": 32, "sizes": size}
            row = run_collective(topo, COLLECTIVE.validate({**params, "base_rtt_us": 30.0, "hottest": 0}))
            rows.append(f'[[entry]]\nkind = "collective"\nname = "ar-{size}"\ncluster = "{preset}"\nwhere = "t{k}"\n'
                        f'hardware = "H100"\ntime_us = {row.seeded.median.result.rows[0].time * 1e6!r}\n'
                        f'[entry.params]\ncollective = "allreduce"\ngpus = 32\nsizes = "{size}"\n')
        texts.append(SOURCE.replace('"foo"', f'"src{k}"') + "".join(rows))
    entries = [e for k, t in enumerate(texts)
               for e in parse_measurements(t, require_provenance=True, origin=f"corpus/src{k}.toml").entries]
    r = fit(entries, ["base_rtt_us"], folds=3)
    assert r.values["base_rtt_us"] == pytest.approx(30.0, rel=1e-3)
    assert r.holdout["method"] == "folds" and r.holdout["median_abs_error"] < 1e-3
    assert {e.id for e in entries} >= {"src0/ar-8K", "src1/ar-8K"}


def test_an_observation_predicted_zero_is_left_out_of_the_fit(demo, synthetic):
    """A prediction of 0 has no log error: the observation is said and left out of the fit and of the held-out
    error, the others fitted as without it."""
    entries = read_measurements(json.dumps(synthetic[:6]))

    class ZeroFirst(Predictor):
        def entry(self, k, theta):
            got = super().entry(k, theta)
            return [0.0] * len(got) if k == 0 else got

    r = fit(entries, ["gemm_efficiency"], cluster=demo, predictor=ZeroFirst(demo, entries))
    assert r.values["gemm_efficiency"] == pytest.approx(0.6, rel=1e-3)
    assert r.holdout["count"] == 5 and any("entry[0]" in w and "left out of the fit" in w for w in r.warnings)


def test_collective_entries_of_one_configuration_are_one_run(demo):
    """Entries that differ only in their size are one collective run of all their sizes, each the same row a run of
    its size alone gives."""
    base = {"collective": "allreduce", "gpus": 64}
    sizes = ("8K", "1M", "1G")
    entries = read_measurements(json.dumps(
        [{"kind": "collective", "name": s, "params": {**base, "sizes": s}, "busbw_gbps": 10.0} for s in sizes]
        + [{"kind": "collective", "name": "other", "params": {**base, "sizes": "1M", "qps": 1}, "busbw_gbps": 1.0}]))
    pred = Predictor(demo, entries)
    got = pred.predict({})
    assert pred.runs == 2
    cases = [(s, {}) for s in sizes] + [("1M", {"qps": 1})]
    for (s, over), g in zip(cases, got):
        row = run_collective(demo, COLLECTIVE.validate({**base, **over, "sizes": s, "hottest": 0})).seeded.median
        assert g == pytest.approx(row.result.rows[0].busbw / 1e9)
    pred.predict({"base_rtt_us": 40.0})
    assert pred.runs == 4
