"""Defaults that run (issue 40, item 4): every model of the registry (sim.jobs.models.MODELS) on every preset
(sim/presets) starts with a layout that fits that cluster and runs, from the model's published recipe where there is
one, else a search over the layouts that fit memory (sim.jobs.defaults); a refused layout names the layouts nearest
it that fit this cluster, never more GPUs than it has."""
import json
import math
import re

import numpy as np
import pytest

from sim.core.errors import ParamError
from sim.fabric.spec import load_spec, preset_names
from sim.jobs import defaults
from sim.jobs.defaults import Where, default_layout, min_gpus, nearest, with_nearest
from sim.jobs.layout import model_of, resolve_job
from sim.jobs.models import MODELS
from sim.jobs.params import JOB
from sim.jobs.published import RUNS, nearest as published_nearest
from sim.jobs.step import step_breakdown

PAIRS = [(preset, model) for preset in preset_names() for model in MODELS]


def where(preset: str) -> Where:
    return Where.of_spec(load_spec(preset))


@pytest.mark.parametrize("preset,model", PAIRS, ids=[f"{p}-{m}" for p, m in PAIRS])
def test_every_model_starts_on_every_preset_with_a_layout_that_fits_and_runs(preset, model):
    w = where(preset)
    try:
        d = default_layout(model, w)
    except ParamError as e:
        # refused only where no layout can fit: the weights, gradients and Adam state alone exceed all its memory
        assert "model" in e.errors and min_gpus(MODELS[model], w) > w.gpus, e.errors
        assert MODELS[model].params * 20 > w.gpus * w.hbm_gb * 1e9
        return
    assert d.params["model"] == model and d.why and d.source in ("published", "searched")
    # accepted by the validation that refuses bad layouts, with this cluster's GPU memory, on its usable GPUs
    p = resolve_job(JOB.validate({**d.params, "hbm_gb": w.hbm_gb}))
    assert p["gpus"] == d.params["gpus"] <= w.gpus and p["tp"] * p["cp"] * p["pp"] * p["dp"] == p["gpus"]
    assert p["tp"] <= w.gpus_per_host
    assert max(s["total"] for s in p["memory_stages"]) <= w.hbm_gb * 1e9
    # a step simulates: the step engine (pipeline schedule, compute per kernel, each dimension's collectives)
    p["gpu"] = w.gpu_model()
    step = step_breakdown(model_of(p), p, *defaults.uncontended_fabric(p, w))
    assert np.isfinite(step["step"]) and step["step"] > step["compute"] > 0
    assert math.isclose(step["step"], d.step_s, rel_tol=1e-9)


def test_the_published_recipe_is_taken_as_published_where_the_cluster_holds_it():
    for preset in ("meta-roce-24k", "dgx-h100-eos"):
        w = where(preset)
        d = default_layout("llama3-405b", w)
        run = max((r for r in RUNS if r.model == "llama3-405b" and r.gpus <= w.gpus
                   and r.seq == JOB.by_name["seq"].default), key=lambda r: r.gpus)
        assert d.source == "published" and run.case in d.why and "[S3]" in d.why
        p = JOB.validate(d.params)
        assert published_nearest(p)[1], published_nearest(p)          # the same case as the published run
    # on a cluster smaller than every published run, its TP and PP with as many replicas as fit
    small = where("demo-256")
    d = default_layout("llama3-405b", small)
    smallest = min((r for r in RUNS if r.model == "llama3-405b"), key=lambda r: r.gpus)
    assert d.source == "published" and "scaled" in d.why and smallest.case in d.why
    assert (d.params["tp"], d.params["pp"]) == (smallest.tp, smallest.pp) and d.params["gpus"] <= small.gpus


def test_without_a_published_recipe_the_search_takes_the_fastest_layout_it_found_that_fits():
    w = where("demo-256")
    d = default_layout("llama3-70b", w)
    assert d.source == "searched" and f"fastest of {d.layouts} layouts" in d.why and d.layouts > 1
    # no layout of those it tries is faster: each TP, schedule and the pipeline depths around the chosen one
    for tp, pp, schedule, v in ((1, 4, "1f1b", 1), (2, 2, "1f1b", 1), (8, 2, "interleaved", 2)):
        values = {**d.params, "tp": tp, "pp": pp, "schedule": schedule, "virtual_stages": v}
        values["dp"] = defaults.most_replicas(values, tp * pp, pp, w)
        values["gpus"] = tp * pp * values["dp"]
        other = defaults.fits(values, w)
        if other is not None:
            assert defaults.step_estimate(other, w) >= d.step_s, values


REFUSED = [
    ("meta-roce-24k", {"model": "llama3-405b", "tp": 8, "pp": 1, "gpus": 8192}),      # memory
    ("meta-roce-24k", {"model": "llama3-405b", "tp": 8, "pp": 16, "gpus": 24576}),    # the batch does not split
    ("demo-256", {"model": "llama3-70b", "tp": 8, "pp": 1}),                          # memory, 8 GPUs
    ("aws-p4d-pod", {"model": "llama3-70b", "tp": 4, "pp": 1, "gpus": 512}),          # 40 GB GPUs
    ("hgx-h200-pod", {"model": "llama3-405b", "tp": 8, "pp": 8, "gpus": 65536}),      # more GPUs than it has
]


@pytest.mark.parametrize("preset,values", REFUSED, ids=[f"{p}-{i}" for i, (p, _) in enumerate(REFUSED)])
def test_a_refused_layout_names_the_nearest_layouts_that_fit_this_cluster(preset, values):
    w = where(preset)
    with pytest.raises(ParamError) as e:
        p = JOB.validate({**values, "hbm_gb": w.hbm_gb})
        if p["gpus"] > w.gpus:
            raise ParamError("gpus", f"{p['gpus']:,} GPUs asked, {w.name} has {w.gpus:,}")
    found = nearest(values, w)
    assert found
    for lay in found:                      # each fits this cluster: its GPUs, its GPU's memory, the job's rules
        assert lay["gpus"] <= w.gpus
        layout = {k: lay[k] for k in ("gpus", "tp", "cp", "pp", "dp")}
        p = resolve_job(JOB.validate({**values, **layout, "hbm_gb": w.hbm_gb}))
        assert p["gpus"] == lay["gpus"] and p["memory"]["total"] <= w.hbm_gb * 1e9
        assert round(p["memory"]["total"] / 1e9, 1) == lay["memory_gb"]
    said = " ".join(sum(with_nearest(e.value, values, w).errors.values(), []))
    assert f"nearest layouts that fit {w.name}" in said
    named = [int(n.replace(",", "")) for n in re.findall(r"\(([\d,]+) GPUs, [\d.]+ GB\)", said)]
    assert named == [lay["gpus"] for lay in found] and max(named) <= w.gpus


def test_a_memory_refusal_suggests_the_same_gpus_first():
    values = {"model": "llama3-405b", "tp": 8, "pp": 1, "gpus": 8192, "hbm_gb": 80.0}
    with pytest.raises(ParamError) as e:
        JOB.validate(values)
    text = " ".join(e.value.errors["pp"])
    pp, dp = map(int, re.search(r"pp = (\d+) with dp = (\d+) \(the same 8,192 GPUs\)", text).groups())
    assert JOB.validate({**values, "pp": pp, "dp": dp})["gpus"] == 8192


def test_a_model_too_large_for_the_cluster_says_how_many_gpus_it_needs():
    w = Where("tiny", 16, 8, "h100-sxm-80gb", 80.0, 3600.0, 400.0)
    with pytest.raises(ParamError) as e:
        default_layout("llama3-405b", w)
    assert f"at least {min_gpus(MODELS['llama3-405b'], w):,} such GPUs" in e.value.errors["model"][0]
    said = with_nearest(ParamError("pp", "does not fit"), {"model": "llama3-405b"}, w).errors["pp"]
    assert "at least" in said[-1]
    with pytest.raises(ParamError) as e:
        default_layout("custom", w)
    assert "model" in e.value.errors


def test_the_command_line_runs_the_default_layout_and_names_nearest_layouts(capsys):
    from sim.cli import main
    assert main(["job", "--preset", "demo-256", "--model", "llama3-8b", "--default-layout", "--json", "-q"]) == 0
    doc = json.loads(capsys.readouterr().out)
    d = default_layout("llama3-8b", where("demo-256"))
    assert doc["default_layout"]["why"] == d.why
    assert {k: doc["layout"][k] for k in ("gpus", "tp", "cp", "pp", "dp")} == {k: d.params[k] for k in
                                                                              ("gpus", "tp", "cp", "pp", "dp")}
    assert main(["job", "--preset", "demo-256", "--model", "llama3-8b", "--default-layout", "--tp", "2"]) == 2
    assert "--default-layout sets --tp" in capsys.readouterr().err
    assert main(["job", "--preset", "demo-256", "--model", "llama3-70b", "--tp", "8", "-q"]) == 2
    err = capsys.readouterr().err
    assert "nearest layouts that fit demo-256" in err and "pp = 4 (32 GPUs)" in err
