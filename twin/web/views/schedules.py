"""The Schedules page: saved scenarios and the schedules that start them, listed, created, edited, paused and
deleted through the runs API (/api/runs/scenarios/, /api/runs/schedules/), each scenario's history drawn from its
``trend``, each schedule's recent runs linked (a run started by a schedule records it, :mod:`twin.runs.tasks`).
The page is a shell: its forms are built from the declarations the API validates with (the kinds' parameters,
:func:`twin.runs.params.form_fields`; the scenario's and the schedule's own fields and the crontab and interval
serializers, :func:`twin.runs.params.serializer_form_fields`), and what it offers follows the model permissions
(add) and each row's ``can_change`` (:mod:`twin.runs.ownership`)."""
from __future__ import annotations

from django.shortcuts import render
from django.urls import path

from twin.runs import registry
from twin.runs.api.serializers import (CrontabSerializer, IntervalSerializer, ScenarioSerializer,
                                      ScheduleSerializer)
from twin.runs.choices import FINISHED
from twin.runs.constants import TREND_LIMIT
from twin.runs.params import serializer_form_fields
from twin.web.access import readable
from twin.web.context import current_cluster
from twin.web.views.experiments import clusters_info, param_fields

ADD_SCENARIO = "runs.add_scenario"
ADD_SCHEDULE = "django_celery_beat.add_periodictask"       # a schedule is a django-celery-beat PeriodicTask


def forms() -> dict:
    """The two forms' fields, from the declarations: a scenario's name and description, its kind (every kind with
    parameters) and that kind's parameters; a schedule's name and enabled flag, its crontab or its interval."""
    kinds = [k for k in registry.kinds().values() if k.params is not None]
    return {
        "scenario": serializer_form_fields(ScenarioSerializer(), only=("name", "description")),
        "kinds": [{"name": k.name, "label": k.label, "main": list(k.main), "params": param_fields(k.name)}
                  for k in kinds],
        "schedule": serializer_form_fields(ScheduleSerializer(), only=("name", "enabled")),
        "crontab": serializer_form_fields(CrontabSerializer()),
        "interval": serializer_form_fields(IntervalSerializer()),
    }


@readable
def schedules_page(request):
    """Scenarios and their schedules; a scenario's history; the forms that make and edit them."""
    clusters = clusters_info()
    user = {"authenticated": request.user.is_authenticated,
            "current": current_cluster(request, [c["name"] for c in clusters]),
            "can_add_scenario": request.user.has_perm(ADD_SCENARIO),
            "can_add_schedule": request.user.has_perm(ADD_SCHEDULE)}
    return render(request, "web/schedules.html", {
        "nav": "schedules", "clusters_info": clusters, "forms": forms(), "user_state": user,
        "kind_info": registry.client_info(), "trend_limit": TREND_LIMIT, "finished": [str(s) for s in FINISHED]})


from twin.web.nav import NavItem, Page  # noqa: E402 - the page's registration (twin/web/nav.py)

PAGE = Page(nav=NavItem("schedules", "Schedules", "schedules", order=42, group="operations"), urlpatterns=[
    path("schedules/", schedules_page, name="schedules"),
])
