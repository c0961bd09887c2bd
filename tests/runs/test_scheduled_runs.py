"""Scenarios and schedules as a user meets them (issue 25, item 1): a scenario takes its cluster by name as
/api/runs/ does (its id still accepted, one field), the browsable API's form lists the clusters, a run a schedule
starts records the schedule (a field, and its name in the notes) and is found by it, the Schedules page's forms are
built from the declarations, and the run page links to its schedule and scenario. Real database, DRF's clients.
Given / when / then."""
from __future__ import annotations

import json
import re

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django_celery_beat.models import PeriodicTask
from django_celery_beat.schedulers import ModelEntry
from rest_framework.test import APIClient

from twin.celery import app as celery_app
from twin.runs.api.serializers import CrontabSerializer
from twin.runs.models import SimulationRun
from twin.runs.schedules import CRONTAB_FIELDS, PERIOD_SECONDS
from twin.runs.tasks import run_scenario

PARAMS = {"collective": "allgather", "gpus": 8, "sizes": "1M"}


@pytest.fixture
def su(db):
    user = User.objects.create_superuser("root-sched", password="pw")
    client = APIClient()
    client.force_authenticate(user)
    return user, client


def _scenario(client, cluster, name="by-name"):
    return client.post("/api/runs/scenarios/", {"name": name, "cluster": cluster, "kind": "collective",
                                                "params": PARAMS}, format="json")


def test_a_scenario_takes_its_cluster_by_name_or_by_id(demo, su):
    _, client = su
    # when a scenario names its cluster as /api/runs/ does, and another gives its id
    by_name, by_id = _scenario(client, "demo-256"), _scenario(client, demo.pk, "by-id")
    # then both are saved on demo-256, and the answer names it
    assert by_name.status_code == 201, by_name.json()
    assert by_id.status_code == 201, by_id.json()
    for answer in (by_name.json(), by_id.json()):
        assert answer["cluster"]["id"] == demo.pk and answer["cluster"]["name"] == "demo-256"
    # and a PATCH by name moves nothing but says the name back
    patched = client.patch(f"/api/runs/scenarios/{by_id.json()['id']}/", {"cluster": "demo-256"}, format="json")
    assert patched.status_code == 200 and patched.json()["cluster"]["name"] == "demo-256"


@pytest.mark.parametrize("cluster, says", [("no-such-cluster", "no cluster named 'no-such-cluster'"),
                                           (987654, "does not exist"), ([1], "Incorrect type")])
def test_a_scenario_naming_no_cluster_is_a_400_naming_the_field(demo, su, cluster, says):
    answer = _scenario(su[1], cluster)
    assert answer.status_code == 400 and list(answer.json()) == ["cluster"], answer.json()
    assert says in str(answer.json()["cluster"])


def test_the_browsable_apis_scenario_form_lists_the_clusters_by_name(demo, su):
    # given the superuser in the browsable API
    client = Client()
    client.force_login(su[0])
    # when they open the scenarios' list
    html = client.get("/api/runs/scenarios/", HTTP_ACCEPT="text/html").content.decode()
    # then the form's Cluster dropdown offers demo-256 by its name (it was empty)
    select = re.search(r'<select[^>]*name="cluster"[^>]*>(.*?)</select>', html, re.S)
    assert select, "no cluster field in the form"
    assert re.search(r'<option value="demo-256"\s*>\s*demo-256\s*</option>', select.group(1)), select.group(1)
    # and what it posts (the name) is taken
    assert client.post("/api/runs/scenarios/", {"name": "from-form", "cluster": "demo-256", "kind": "collective",
                                                "params": json.dumps(PARAMS)}).status_code == 201


def test_a_run_started_by_a_schedule_records_it(demo, su):
    # given a schedule of a scenario, as beat reads it
    _, client = su
    scenario = _scenario(client, "demo-256").json()["id"]
    schedule = client.post("/api/runs/schedules/", {"name": "nightly by name", "scenario": scenario,
                                                    "interval": {"every": 1, "period": "days"}}, format="json")
    assert schedule.status_code == 201, schedule.json()
    entry = ModelEntry(PeriodicTask.objects.get(pk=schedule.json()["id"]), app=celery_app)
    # when beat fires it, and a run of the same scenario is started by hand
    run_id = run_scenario.apply(args=entry.args, kwargs=entry.kwargs, **entry.options).get()
    by_hand = client.post(f"/api/runs/scenarios/{scenario}/run/").json()["id"]
    # then the scheduled run says which schedule made it (field and notes), the other none
    run = client.get(f"/api/runs/{run_id}/").json()
    assert run["schedule"]["id"] == schedule.json()["id"], run
    assert "started by schedule 'nightly by name'" in run["notes"]
    assert client.get(f"/api/runs/{by_hand}/").json()["schedule"] is None
    # and the runs list finds it by its schedule
    listed = client.get(f"/api/runs/?schedule={schedule.json()['id']}").json()["results"]
    assert [r["id"] for r in listed] == [run_id]
    assert [r["id"] for r in client.get("/api/runs/?schedule__isnull=false").json()["results"]] == [run_id]
    # and its page links to the schedule and to the scenario, on the Schedules page
    page = Client()
    page.force_login(su[0])
    html = page.get(f"/experiments/{run_id}/").content.decode()
    assert f'href="/schedules/#schedule-{schedule.json()["id"]}"' in html and "schedule nightly by name" in html
    assert f'href="/schedules/#scenario-{scenario}"' in html
    # and once the schedule is deleted the run stays, its notes still naming it
    assert client.delete(f"/api/runs/schedules/{schedule.json()['id']}/").status_code == 204
    kept = SimulationRun.objects.get(pk=run_id)
    assert kept.schedule_id is None and "nightly by name" in kept.notes


def _page_data(html, element_id):
    m = re.search(rf'<script id="{element_id}" type="application/json">(.*?)</script>', html, re.S)
    assert m, element_id
    return json.loads(m.group(1))


def test_the_schedules_page_builds_its_forms_from_the_declarations(demo, su):
    # given a reader with no permission, and the superuser
    reader = User.objects.create_user("reader-sched", password="pw")
    for user, may_add in ((reader, False), (su[0], True)):
        page = Client()
        page.force_login(user)
        # when they open the Schedules page (in the header's navigation)
        html = page.get("/schedules/").content.decode()
        assert 'href="/schedules/"' in html
        forms = _page_data(html, "schedule-forms")
        state = _page_data(html, "schedule-user")
        # then creation is offered only to who may add
        assert state["can_add_scenario"] is may_add and state["can_add_schedule"] is may_add
    # and the crontab's fields and defaults are the serializer's and CRONTAB_FIELDS', the interval's periods
    # PERIOD_SECONDS', the kinds' parameters their declarations'
    assert [(f["name"], f["default"]) for f in forms["crontab"]] == [(k, d) for k, (d, _) in CRONTAB_FIELDS.items()]
    assert list(CrontabSerializer().fields) == [f["name"] for f in forms["crontab"]]
    period = next(f for f in forms["interval"] if f["name"] == "period")
    assert period["choices"] == list(PERIOD_SECONDS)
    assert [f["name"] for f in forms["schedule"]] == ["name", "enabled"] and forms["schedule"][1]["default"] is True
    collective = next(k for k in forms["kinds"] if k["name"] == "collective")
    assert {"gpus", "collective", "sizes"} <= {f["name"] for f in collective["params"]}
    assert "sweep" not in [k["name"] for k in forms["kinds"]]


def test_a_user_who_may_add_scenarios_but_not_schedules_is_offered_only_scenarios(demo):
    user = User.objects.create_user("half-sched", password="pw")
    user.user_permissions.add(Permission.objects.get(codename="add_scenario"))
    page = Client()
    page.force_login(user)
    state = _page_data(page.get("/schedules/").content.decode(), "schedule-user")
    assert (state["can_add_scenario"], state["can_add_schedule"]) == (True, False)
