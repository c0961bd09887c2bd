"""Schedules: every crontab field read by Celery's parser before it is saved, a minimum interval between two starts,
a partial PATCH that keeps the schedule's other fields and never touches another schedule's row, and a real beat
that survives a row it cannot read. Given / when / then."""
import json
from datetime import timedelta

import pytest
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django_celery_beat.models import CrontabSchedule, PeriodicTask

from sim.core.errors import ParamError
from tests.processes import wait_for
from tests.runs.beat import Beat
from twin.runs.constants import SCHEDULE_TASK
from twin.runs.models import Scenario, SimulationRun
from twin.runs.schedules import closest_firings, validated_crontab


@pytest.mark.parametrize("fields, field, says", [
    ({"hour": "-1"}, "hour", "negative"),
    ({"minute": "banana"}, "minute", "expected numbers"),
    ({"minute": "99"}, "minute", "59"),
    ({"hour": "24"}, "hour", "23"),
    ({"day_of_week": "8"}, "day_of_week", "6"),
    ({"day_of_week": "someday"}, "day_of_week", "someday"),
    ({"day_of_month": "0"}, "day_of_month", "1"),
    ({"month_of_year": "13"}, "month_of_year", "12"),
    ({"minute": "*/0"}, "minute", "step"),
    ({"minute": "1,,2"}, "minute", "empty"),
    ({"minute": ""}, "minute", "empty"),
    ({"hour": "9" * 30}, "hour", "23"),
    ({"hour": "1" * 200}, "hour", "characters"),
    ({"second": "5"}, "second", "not a crontab field"),
])
def test_a_crontab_field_celery_cannot_read_is_refused_naming_it(fields, field, says, settings):
    with pytest.raises(ParamError) as e:
        validated_crontab(fields)
    assert list(e.value.errors) == [field] and says in str(e.value.errors[field]), e.value.errors


@pytest.mark.parametrize("fields", [
    {"minute": "30", "hour": "2"}, {"minute": "0,30", "hour": "*/6", "day_of_week": "mon-fri"},
    {"minute": "*/15", "day_of_month": "1,15", "month_of_year": "1-12/3"}, {"minute": "50-10/10"},
    {"day_of_week": "sun"},
])
def test_crontabs_celery_reads_are_kept_as_given(fields):
    assert {k: v for k, v in validated_crontab(fields).items() if k in fields} == fields


@pytest.mark.parametrize("fields, gap, field", [
    ({"minute": "*"}, 60, "minute"),
    ({"minute": "*/15"}, 900, "minute"),
    ({"minute": "0,58"}, 120, "hour"),                  # 00:58 -> 01:00
    ({"minute": "59", "hour": "23,0"}, 3600, "hour"),
    ({"minute": "0", "hour": "*"}, 3600, "hour"),
    ({"minute": "30", "hour": "2"}, 86400, "hour"),
])
def test_the_closest_two_firings_of_a_crontab(fields, gap, field):
    assert closest_firings({"minute": "0", **fields}) == (gap, field)


def _scenario(runner, demo, name="health"):
    return runner.post("/api/runs/scenarios/", {"name": name, "cluster": demo.pk, "kind": "fabric_health",
                                                "params": {}}, format="json").json()["id"]


@pytest.mark.django_db
@pytest.mark.parametrize("body, where, field", [
    ({"crontab": {"hour": "-1"}}, "crontab", "hour"),
    ({"crontab": {"minute": "banana"}}, "crontab", "minute"),
    ({"crontab": {"minute": "99"}}, "crontab", "minute"),
    ({"crontab": {"minute": "*"}}, "crontab", "minute"),                 # every minute: under the minimum
    ({"crontab": {"minute": "*/2"}}, "crontab", "minute"),
    ({"interval": {"every": 1, "period": "seconds"}}, "interval", "every"),
    ({"interval": {"every": 4, "period": "minutes"}}, "interval", "every"),
    ({"interval": {"every": 10**30, "period": "days"}}, "interval", "every"),
    ({"interval": {"every": 400, "period": "days"}}, "interval", "every"),
])
def test_a_bad_schedule_is_refused_naming_the_field_and_nothing_is_written(runner, demo, body, where, field):
    scenario = _scenario(runner, demo)
    before = (PeriodicTask.objects.count(), CrontabSchedule.objects.count())
    r = runner.post("/api/runs/schedules/", {"name": "bad", "scenario": scenario, **body}, format="json")
    assert r.status_code == 400 and field in r.json()[where], r.json()
    assert (PeriodicTask.objects.count(), CrontabSchedule.objects.count()) == before


@pytest.mark.django_db
def test_the_minimum_interval_is_a_setting(runner, demo, settings):
    scenario = _scenario(runner, demo)
    body = {"name": "every 2 min", "scenario": scenario, "crontab": {"minute": "*/2"}}
    assert runner.post("/api/runs/schedules/", body, format="json").status_code == 400
    settings.TWIN_SCHEDULE_MIN_INTERVAL_SECONDS = 120
    assert runner.post("/api/runs/schedules/", body, format="json").status_code == 201


@pytest.mark.django_db
def test_a_partial_crontab_patch_keeps_the_other_fields_and_leaves_other_schedules_alone(runner, demo):
    scenario = _scenario(runner, demo)
    a = runner.post("/api/runs/schedules/", {"name": "a", "scenario": scenario,
                                             "crontab": {"minute": "15", "hour": "3", "day_of_week": "mon"}},
                    format="json").json()
    b = runner.post("/api/runs/schedules/", {"name": "b", "scenario": scenario,
                                             "crontab": {"minute": "15", "hour": "3", "day_of_week": "mon"}},
                    format="json").json()
    # given two schedules sharing one crontab row, as get_or_create made them before (and the admin may)
    shared = PeriodicTask.objects.get(pk=a["id"]).crontab
    PeriodicTask.objects.filter(pk=b["id"]).update(crontab=shared)
    # and a duplicate row of the crontab the patch will ask for (MultipleObjectsReturned before)
    for _ in range(2):
        CrontabSchedule.objects.create(minute="45", hour="3", day_of_week="mon", day_of_month="*",
                                       month_of_year="*")
    # when one schedule's minute is patched alone
    r = runner.patch(f"/api/runs/schedules/{a['id']}/", {"crontab": {"minute": "45"}}, format="json")
    # then its other fields stay, and the other schedule keeps its own time
    assert r.status_code == 200, r.json()
    assert r.json()["crontab"] == {"minute": "45", "hour": "3", "day_of_week": "mon", "day_of_month": "*",
                                   "month_of_year": "*"}
    other = runner.get(f"/api/runs/schedules/{b['id']}/").json()
    assert other["crontab"]["minute"] == "15"
    # and a bad partial patch is refused naming the field, changing nothing
    r = runner.patch(f"/api/runs/schedules/{a['id']}/", {"crontab": {"hour": "25"}}, format="json")
    assert r.status_code == 400 and "hour" in r.json()["crontab"]
    assert runner.get(f"/api/runs/schedules/{a['id']}/").json()["crontab"]["hour"] == "3"


@pytest.mark.django_db
def test_a_schedule_says_when_beat_starts_it_next(runner, demo):
    scenario = _scenario(runner, demo)
    # a crontab at 03:30 every day: its next start is the next 03:30 (UTC) after its last start, or after now
    nightly = runner.post("/api/runs/schedules/", {"name": "nightly", "scenario": scenario,
                                                   "crontab": {"minute": "30", "hour": "3"}}, format="json").json()
    now = timezone.now()
    expected = now.replace(hour=3, minute=30, second=0, microsecond=0)
    expected += timedelta(days=1) if expected <= now else timedelta(0)
    assert parse_datetime(nightly["next_run_at"]) == expected
    # an interval of 6 hours last started an hour ago: in 5 hours
    every = runner.post("/api/runs/schedules/", {"name": "every6", "scenario": scenario,
                                                 "interval": {"every": 6, "period": "hours"}}, format="json").json()
    PeriodicTask.objects.filter(pk=every["id"]).update(last_run_at=now - timedelta(hours=1))
    next_run = parse_datetime(runner.get(f"/api/runs/schedules/{every['id']}/").json()["next_run_at"])
    assert abs((next_run - (now + timedelta(hours=5))).total_seconds()) < 5
    # paused: none
    paused = runner.patch(f"/api/runs/schedules/{every['id']}/", {"enabled": False}, format="json").json()
    assert paused["next_run_at"] is None


@pytest.mark.django_db(transaction=True)
def test_beat_survives_a_crontab_row_it_cannot_read_and_keeps_scheduling_the_good_ones(workers, runner, demo,
                                                                                       tmp_path):
    # given a bad crontab row written by hand (or before the API checked them) and a good schedule every second
    bad_scenario = Scenario.objects.create(name="bad", kind="echo", cluster=demo, params={"n": 1})
    good_scenario = Scenario.objects.create(name="good", kind="echo", cluster=demo, params={"n": 1})
    bad = PeriodicTask.objects.create(
        name="bad hour", task=SCHEDULE_TASK, kwargs=json.dumps({"scenario_id": bad_scenario.pk}),
        crontab=CrontabSchedule.objects.create(minute="*", hour="-1"))
    from django_celery_beat.models import IntervalSchedule
    PeriodicTask.objects.create(name="good", task=SCHEDULE_TASK, kwargs=json.dumps({"scenario_id": good_scenario.pk}),
                                interval=IntervalSchedule.objects.create(every=1, period="seconds"))
    # when a real celery beat starts
    beat = Beat(tmp_path).start()
    try:
        # then the good schedule's runs are made and run by the workers
        ran = wait_for(lambda: SimulationRun.objects.filter(scenario=good_scenario, status="succeeded").count() >= 2
                       or not beat.alive, timeout=60, what="two runs of the good schedule")
        assert ran and beat.alive, beat.tail()
        # and beat stays up and keeps scheduling (a third run of the good schedule), with the bad row disabled and
        # named in its log
        ran = wait_for(lambda: SimulationRun.objects.filter(scenario=good_scenario).count() >= 3 or not beat.alive,
                       timeout=60, what="a third run of the good schedule")
        assert beat.alive, beat.tail()
        assert not PeriodicTask.objects.get(pk=bad.pk).enabled
        assert "'bad hour'" in beat.tail(20000) and "disabled" in beat.tail(20000)
        assert not SimulationRun.objects.filter(scenario=bad_scenario).exists()
    finally:
        beat.stop()
