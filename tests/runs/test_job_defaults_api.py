"""Defaults that run, through the API (issue 40, item 4): ``GET /api/runs/jobs/default/`` answers every model's
default layout on a cluster as the engine chooses it (sim.jobs.defaults on the cluster's usable GPUs), the runs API
takes it as it is, and a refused job's 400 names the layouts nearest it that fit this cluster."""
import re

import pytest

from sim.jobs.defaults import default_layout
from sim.jobs.models import MODELS
from twin.inventory.gpu_grid import usable_gpus
from twin.runs.job_layouts import where_of
from twin.runs.models import SimulationRun

SHARED_DEMO = True


@pytest.mark.django_db
def test_each_models_default_is_the_engines_and_is_accepted_as_it_is(runner, demo):
    for model in MODELS:
        r = runner.get(f"/api/runs/jobs/default/?cluster={demo.id}&model={model}")
        assert r.status_code == 200, r.json()
        d = r.json()
        assert d["cluster"] == demo.name and d["params"] == default_layout(model, where_of(demo)).params
        assert d["why"] and d["source"] in ("published", "searched") and d["params"]["gpus"] <= usable_gpus(demo)
        # submitted as the Jobs page submits it (the form's text, dp left to follow from gpus): accepted
        params = {**d["shown"], "dp": None}
        run = runner.post("/api/runs/", {"kind": "job", "cluster": demo.name, "params": params}, format="json")
        assert run.status_code == 201, run.json()
        SimulationRun.objects.filter(pk=run.json()["id"]).delete()      # no active-run limit between the models


@pytest.mark.django_db
def test_the_default_names_what_it_cannot_answer(runner, demo):
    r = runner.get(f"/api/runs/jobs/default/?cluster={demo.id}&model=gpt-9")
    assert r.status_code == 400 and "model" in r.json() and "llama3-8b" in r.json()["model"][0]
    for query, field in ((f"model=llama3-8b", "cluster"), (f"cluster=x&model=llama3-8b", "cluster"),
                         (f"cluster=999999&model=llama3-8b", "cluster")):
        r = runner.get(f"/api/runs/jobs/default/?{query}")
        assert r.status_code == 400 and field in r.json(), r.json()


@pytest.mark.django_db
def test_a_refused_layout_names_the_nearest_layouts_that_fit_this_cluster(runner, demo):
    usable = usable_gpus(demo)
    for params in ({"model": "llama3-405b", "tp": 8, "pp": 1, "gpus": 128},       # memory
                   {"model": "llama3-70b", "tp": 8, "pp": 4, "gpus": 1024},       # more GPUs than demo-256 has
                   {"model": "llama3-8b", "tp": 8, "gpus": 96}):                  # the batch does not split
        r = runner.post("/api/runs/", {"kind": "job", "cluster": demo.name, "params": params}, format="json")
        assert r.status_code == 400, r.json()
        said = " ".join(" ".join(v) for v in r.json()["params"].values())
        assert f"nearest layouts that fit {demo.name} ({usable:,} usable GPUs" in said, said
        named = re.findall(r"tp (\d+) · cp (\d+) · pp (\d+) · dp (\d+) \(([\d,]+) GPUs", said)
        assert named, said
        for tp, cp, pp, dp, gpus in named:           # each fits this cluster: the runs API takes it
            assert int(gpus.replace(",", "")) <= usable
            lay = {"tp": int(tp), "cp": int(cp), "pp": int(pp), "dp": int(dp), "gpus": int(gpus.replace(",", ""))}
            ok = runner.post("/api/runs/", {"kind": "job", "cluster": demo.name, "params": {**params, **lay}},
                             format="json")
            assert ok.status_code == 201, ok.json()
            SimulationRun.objects.filter(pk=ok.json()["id"]).delete()
