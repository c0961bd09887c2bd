"""Probes of issue 24 that the API accepted and a worker then failed on, or that answered 500: each is now a 400 at
the edge naming the field (and, for a jobs file, the entry and its line), and nothing is written. The bad jobs files
are read by the engine's own declaration (sim.jobs.params.SCHEDULE / JOBS), the same code the command line uses."""
import json

import pytest
from django_celery_beat.models import CrontabSchedule, IntervalSchedule, PeriodicTask

from twin.runs.models import Job, Scenario, SimulationRun

RUN = "/api/runs/"
SCHEDULES = "/api/runs/schedules/"
GOOD = {"model": "llama3-8b", "gpus": 8, "steps": 10}


def counts():
    return {m.__name__: m.objects.count()
            for m in (SimulationRun, Scenario, PeriodicTask, CrontabSchedule, IntervalSchedule, Job)}


def schedule_run(jobs):
    return {"kind": "schedule", "cluster": "demo-256",
            "params": {"jobs": jobs if isinstance(jobs, str) else json.dumps(jobs)}}


def lines(*entries):
    """A JSON list with one entry per line (the first entry on line 2)."""
    return "[\n" + ",\n".join(json.dumps(e) for e in entries) + "\n]\n"


# (jobs text, the field the 400 names, words its message holds): at least one bad file of each kind
BAD_QUEUES = [
    ("", "jobs", "empty"),
    ("\n\n   \n", "jobs", "empty"),
    ("# only a comment\n", "jobs", "non-empty list"),
    (lines(GOOD, {**GOOD, "model": "gpt-5"}), "jobs[1].model", ("unknown value 'gpt-5'", "(line 3)")),
    (lines(GOOD, {**GOOD, "gpus": "eight"}), "jobs[1].gpus", ("must be a whole number", "(line 3)")),
    (lines({**GOOD, "gpus": -8}), "jobs[0].gpus", ("must be at least 1", "(line 2)")),
    (lines(GOOD, {**GOOD, "steps": -1}), "jobs[1].steps", ("must be a whole number from 1", "(line 3)")),
    (lines({**GOOD, "gpus": 512}), "jobs[0].gpus", ("512 GPUs asked, demo-256 has 256 usable", "(line 2)")),
    (lines(GOOD, {**GOOD, "arrival_hours": -3}), "jobs[1].arrival_hours", ("must be a number of hours", "(line 3)")),
    (lines({**GOOD, "arrival_hours": "tomorrow"}), "jobs[0].arrival_hours", ("must be a number of hours", "(line 2)")),
    (lines({**GOOD, "name": "a"}, {**GOOD, "name": "a"}), "jobs[1].name",
     ("'a' is already the name of jobs[0]", "(line 3)")),
    (lines({**GOOD, "name": "x" * 65}), "jobs[0].name", ("must be text of 1 to 64 characters", "(line 2)")),
    (lines({"model": "llama3-8b", "gpus": 8}), "jobs[0].steps", ("give steps or hours", "(line 2)")),
    (lines(GOOD, 7), "jobs[1]", ("must be an object", "(line 3)")),
    ("[" + ",".join(["1"] * 100_001) + "]", "jobs", "100,001 jobs, at most 100,000"),
    ("x" * (4 * 1024 * 1024 + 1), "jobs", "at most 4,194,304 characters"),
    ("[[job]]\nmodel = 'llama3-8b'\ngpus = 8\nsteps = 1\n\n[[job]]\nmodel = 'llama3-8b'\ngpus = 'x'\nsteps = 1\n",
     "jobs[1].gpus", ("must be a whole number", "(line 6)")),
    ("[[job]]\nmodel = 'llama3-8b'\ngpus = = 8\n", "jobs", "line 3"),        # the decoder's own words
    ("[" * 100_000 + "]" * 100_000, "jobs", "nested too deeply"),
    (json.dumps([{**GOOD, "tp": [[[[[[1]]]]]]}]), "jobs[0].tp", ("must be a whole number", "(line 1)")),
]


@pytest.mark.django_db
@pytest.mark.parametrize("text, field, words", BAD_QUEUES, ids=[f"{i}-{f}" for i, (_, f, _) in enumerate(BAD_QUEUES)])
def test_a_bad_schedule_jobs_file_is_refused_naming_jobs_and_the_line(runner, demo, text, field, words):
    before = counts()
    r = runner.post(RUN, schedule_run(text), format="json")
    assert r.status_code == 400, (r.status_code, r.content[:300])
    errors = r.json()["params"]
    words = (words,) if isinstance(words, str) else words
    assert field in errors and any(all(w in m for w in words) for m in errors[field]), errors
    assert counts() == before


@pytest.mark.django_db
def test_a_good_schedule_jobs_file_is_accepted_at_the_edge(runner, demo):
    from sim.jobs.params import SCHEDULE
    from twin.runs import registry
    text = lines(GOOD, {**GOOD, "name": "second", "hours": 2, "steps": None})
    assert registry.get("schedule").validated({"jobs": text}, demo)["jobs"] == text
    assert SCHEDULE.validate({"jobs": None})["jobs"] is None              # null: synthetic arrivals


@pytest.mark.django_db
@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000, '[{"model": ' + "[" * 100_000 + "]" * 100_000 + "}]",
                                  "[[job]]\nx = " + "[" * 100_000 + "]" * 100_000 + "\n"])
def test_a_deeply_nested_jobs_text_is_a_400_naming_jobs(runner, demo, text):
    before = counts()
    r = runner.post(RUN, {"kind": "jobs", "cluster": "demo-256", "params": {"jobs": text}}, format="json")
    assert r.status_code == 400, (r.status_code, r.content[:300])
    assert any(k.startswith("jobs") for k in r.json()["params"]), r.json()
    assert counts() == before


@pytest.fixture
def scenario(demo):
    return Scenario.objects.create(name="health", kind="fabric_health", cluster=demo, params={})


@pytest.mark.django_db
@pytest.mark.parametrize("when, key, words", [
    ({"crontab": {"day_of_month": "30", "month_of_year": "2"}}, "day_of_month", "never fires"),
    ({"crontab": {"day_of_month": "31", "month_of_year": "4,6,9,11"}}, "day_of_month", "never fires"),
    ({"crontab": {"minute": "0", "second": "30"}}, "second", "not a crontab field"),
    ({"crontab": {"minute": "0", "timezone": "UTC"}}, "timezone", "not a crontab field"),
    ({"interval": {"every": 366, "period": "days"}}, "every", "more than a year"),
    ({"interval": {"every": 24 * 367, "period": "hours"}}, "every", "more than a year"),
    ({"interval": {"every": 1, "period": "days", "offset": 3}}, "offset", "not an interval field"),
])
def test_a_schedule_that_cannot_fire_as_asked_is_a_400_naming_the_key(runner, scenario, when, key, words):
    before = counts()
    r = runner.post(SCHEDULES, {"name": "bad", "scenario": scenario.pk, **when}, format="json")
    assert r.status_code == 400, (r.status_code, r.content[:300])
    field = next(iter(when))
    assert any(words in m for m in r.json()[field][key]), r.json()
    assert counts() == before


@pytest.mark.django_db
def test_a_patch_to_a_crontab_that_never_fires_is_a_400(runner, scenario):
    made = runner.post(SCHEDULES, {"name": "monthly", "scenario": scenario.pk,
                                   "crontab": {"minute": "0", "hour": "3", "day_of_month": "30"}}, format="json")
    assert made.status_code == 201, made.json()
    r = runner.patch(f"{SCHEDULES}{made.json()['id']}/", {"crontab": {"month_of_year": "2"}}, format="json")
    assert r.status_code == 400 and "day_of_month" in r.json()["crontab"], r.content[:300]
    ok = runner.post(SCHEDULES, {"name": "leap", "scenario": scenario.pk,
                                 "crontab": {"day_of_month": "29", "month_of_year": "2"}}, format="json")
    assert ok.status_code == 201, ok.json()                              # 29 February fires in leap years
    year = runner.post(SCHEDULES, {"name": "yearly", "scenario": scenario.pk,
                                   "interval": {"every": 365, "period": "days"}}, format="json")
    assert year.status_code == 201, year.json()
    # a PATCH of part of an interval keeps the rest, and the whole is checked
    r = runner.patch(f"{SCHEDULES}{year.json()['id']}/", {"interval": {"every": 2}}, format="json")
    assert r.status_code == 200 and r.json()["interval"] == {"every": 2, "period": "days"}, r.content[:300]
    r = runner.patch(f"{SCHEDULES}{year.json()['id']}/", {"interval": {"every": 9000}}, format="json")
    assert r.status_code == 400 and "more than a year" in r.json()["interval"]["every"][0], r.content[:300]
