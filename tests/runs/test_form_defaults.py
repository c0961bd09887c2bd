"""Every form's defaults run (issue 25, item 5): for every run kind and every cluster the twin builds by default
(TWIN_DEFAULT_CLUSTERS) and demo-256, the parameters a page's form is filled with on that cluster
(:func:`twin.runs.params.form_fields`), submitted as the page submits them (frontend/js/run_form.js ``readFields``:
empty fields left out, a null choice sent as null), are accepted: 201. And the refusals that remain point to the
right fix."""
import io
import re

import pytest
from django.conf import settings
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from rest_framework.test import APIClient

from sim.core.params import Param
from sim.fabric.params import QPS
from sim.jobs.params import JOB
from twin.api.models import ApiToken
from twin.inventory.gpu_grid import usable_gpus
from twin.inventory.models import Cluster
from twin.runs import registry
from twin.runs.models import SimulationRun
from twin.runs.params import form_fields, validate_params

CLUSTERS = sorted({*settings.TWIN_DEFAULT_CLUSTERS, "demo-256"})


def as_the_page_fills(fields: list[dict]) -> dict:
    """The form's fields as readFields sends them untouched: a value for each field that shows one, null for a
    nullable choice (its "default" option), nothing for an empty field."""
    out = {}
    for f in fields:
        if f["default"] is not None:
            out[f["name"]] = f["default"]
        elif f["null"] and f["type"] == "choice":
            out[f["name"]] = None
    return out


def needs_input(kind) -> bool:
    """A kind one of whose parameters has no default (the jobs kind's jobs file): it has no default run."""
    return any(p.default is None and not p.nullable for p in kind.params)


@pytest.mark.django_db
@pytest.mark.parametrize("name", CLUSTERS)
def test_every_kinds_form_defaults_are_accepted_on_every_default_cluster(name):
    call_command("build_cluster", name, "--no-progress", stdout=io.StringIO())
    cluster = Cluster.objects.get(name=name)
    user = User.objects.create_user("starter")
    user.user_permissions.add(*Permission.objects.filter(content_type__app_label="runs"))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {ApiToken.issue(user)[1]}")
    tried, refused = [], {}
    for kind in registry.kinds().values():
        if kind.params is None or needs_input(kind) or not kind.run.__module__.startswith("twin."):
            continue
        params = as_the_page_fills(form_fields(kind.params, cluster))
        r = client.post("/api/runs/", {"kind": kind.name, "cluster": name, "params": params}, format="json")
        tried.append(kind.name)
        if r.status_code != 201:
            refused[kind.name] = (r.status_code, r.json())
        SimulationRun.objects.filter(created_by=user).delete()      # no active-run limit between the kinds
    assert not refused, refused
    assert {"collective", "figure", "job", "debug", "startup", "failures", "checkpoint", "power"} <= set(tried)
    # the GPU counts shown follow the cluster: at most its usable GPUs, as numbers
    usable = usable_gpus(cluster)
    for kind in ("failures", "checkpoint"):
        gpus = {f["name"]: f for f in form_fields(registry.get(kind).params, cluster)}["gpus"]
        assert isinstance(gpus["default"], int) and gpus["default"] <= usable, (kind, gpus)


def test_a_gpu_count_default_fits_a_smaller_cluster_as_a_power_of_two():
    p = Param("gpus", "int", 16384, "GPUs", min=1, fits=True)
    assert [p.default_for(n) for n in (None, 24_576, 16_384, 256, 300, 1)] == [16384, 16384, 16384, 256, 256, 1]
    assert Param("gpus", "int", 64, "GPUs").default_for(8) == 64          # not a fitted parameter


def test_the_collective_form_shows_the_gpu_count_null_stands_for():
    gpus = {f["name"]: f for f in form_fields(registry.get("collective").params)}["gpus"]
    assert gpus["default"] is None and gpus["shown"] == "64"


def test_qps_defaults_to_metas_qp_scaling_declared_once():
    # 16 QPs per GPU pair (docs/sources.md [S2]) on NCCL's 2 connections per pair: 8 per connection
    assert QPS.default == 8
    for kind in registry.kinds().values():
        if kind.params is not None and "qps" in kind.params.by_name:
            assert kind.params.by_name["qps"].default == QPS.default, kind.name


@pytest.mark.django_db
def test_a_job_too_large_for_a_gpu_is_refused_on_its_layout_with_the_numbers(demo):
    from rest_framework import serializers
    with pytest.raises(serializers.ValidationError) as e:
        validate_params("job", {"model": "llama3-70b", "tp": 8, "pp": 1}, demo)
    errors = e.value.detail["params"]
    assert "hbm_gb" not in errors and "pp" in errors, errors
    text = str(errors["pp"][0])
    need = re.search(r"pp = 4 \(32 GPUs\) needs ([0-9.]+) GB", text)
    assert "more than the GPU's 80 GB" in text and need and float(need.group(1)) <= 80, text
    # the layout it names is accepted
    assert validate_params("job", {"model": "llama3-70b", "tp": 8, "pp": 4}, demo)["gpus"] == 32
    # a model no pipeline fits is refused on the model
    with pytest.raises(serializers.ValidationError) as e:
        validate_params("job", {"model": "llama3-405b", "tp": 1}, demo)
    assert "model" in e.value.detail["params"], e.value.detail
    assert JOB.by_name["hbm_gb"].default is None
