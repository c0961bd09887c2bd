"""The Schedules page in a real browser (issue 25, item 1): a scenario and a schedule made from its forms, the
schedule paused from its row, a scenario's history drawn from its finished runs, and the link from a run a schedule
started (fired as beat fires it, run by the real worker) to its schedule, whose row links back to the run."""
from django_celery_beat.models import PeriodicTask
from django_celery_beat.schedulers import ModelEntry

from tests.e2e.browser import screenshot
from tests.e2e.test_live import fill_form
from tests.processes import wait_for
from twin.celery import app as celery_app

SCENARIO = {"name": "e2e-allgather-8", "description": "8 GPUs of demo-256", "kind": "collective",
            "cluster": "demo-256", "gpus": 8, "sizes": "1M"}


def test_a_scenario_and_a_schedule_made_from_the_page_are_paused_and_charted(admin, twin):
    # given the superuser on the Schedules page, reached from the header
    page = admin.visit("/schedules/", shot="schedules-empty")
    assert page.locator('header nav a[href="/schedules/"]').get_attribute("aria-current") == "page"
    # when they save a scenario of an 8-GPU AllGather on demo-256 (the cluster by its name)
    form = page.locator("form#scenario-form")
    fill_form(form, SCENARIO)
    form.locator("[type=submit]").click()
    row = page.locator("#scenarios-table tr[data-scenario]", has_text=SCENARIO["name"])
    row.wait_for()
    scenario = int(row.get_attribute("data-scenario"))
    saved = twin.api(f"/api/runs/scenarios/{scenario}/")
    assert saved["cluster"]["name"] == "demo-256" and saved["params"]["gpus"] == 8, saved
    assert "gpus=8" in row.inner_text()
    # and a schedule that starts it at 03:30 every day, from the schedule form (crontab fields drawn from the API's)
    form = page.locator("form#schedule-form")
    fill_form(form, {"name": "e2e nightly", "scenario": scenario, "minute": "30", "hour": "3"})
    form.locator("[type=submit]").click()
    srow = page.locator("#schedules-table tr[data-schedule]", has_text="e2e nightly")
    srow.wait_for()
    schedule = int(srow.get_attribute("data-schedule"))
    assert srow.get_attribute("data-enabled") == "true" and "cron 30 3 * * *" in srow.inner_text()
    # then pausing it from its row pauses it: the row and the API say so
    srow.locator("[data-toggle-schedule]").click()
    page.locator(f'#schedule-{schedule}[data-enabled="false"]').wait_for()
    assert twin.api(f"/api/runs/schedules/{schedule}/")["enabled"] is False
    assert "paused" in page.locator(f"#schedule-{schedule}").inner_text()
    screenshot(page, "schedules-paused")
    # and once two runs of the scenario have finished, its history is a chart of two points
    runs = [twin.api(f"/api/runs/scenarios/{scenario}/run/", {})["id"] for _ in range(2)]
    for run in runs:
        twin.wait_run(run)
    page.locator(f"#scenario-{scenario} [data-trend]").first.click()
    page.wait_for_function(f"document.getElementById('trend-chart').dataset.points === '2' && "
                           f"document.getElementById('trend-chart').dataset.scenario === '{scenario}'")
    assert page.eval_on_selector("#trend-chart", "(el) => el.chart.points().length") == 2
    assert f"#{runs[0]}" in page.locator("#trend-count").inner_text()
    # and every tick label of the chart is whole, inside the chart (the last date too)
    ticks = page.eval_on_selector("#trend-chart", "(el) => el.chart.ticks()")
    assert ticks
    for tick in ticks:
        assert -0.5 <= tick["left"] and tick["right"] <= tick["width"] + 0.5, tick
    screenshot(page, "schedules-trend")
    admin.probe.assert_clean()


def test_a_scheduled_run_links_to_its_schedule_and_back(admin, twin, orm):
    # given a schedule of a scenario (made over the API)
    scenario = twin.api("/api/runs/scenarios/", {"name": "e2e-fired", "cluster": "demo-256", "kind": "collective",
                                                 "params": {"gpus": 8, "sizes": "1M"}})["id"]
    schedule = twin.api("/api/runs/schedules/", {"name": "e2e fired", "scenario": scenario,
                                                 "interval": {"every": 1, "period": "days"}})["id"]
    # when beat fires it: its message sent as beat sends it (beat's headers name the schedule), to the real worker
    entry = ModelEntry(PeriodicTask.objects.get(pk=schedule), app=celery_app)
    celery_app.send_task(entry.task, entry.args, entry.kwargs,
                         **{**entry.options, "queue": twin.workers.all[0].queue})
    run = wait_for(lambda: (twin.api(f"/api/runs/?schedule={schedule}")["results"] or [None])[0], timeout=60,
                   interval=0.25, what="the scheduled run")["id"]
    twin.wait_run(run)
    # then the run's page says which schedule started it, and the link opens that schedule's row
    page = admin.visit(f"/experiments/{run}/")
    link = page.locator("a.run-schedule")
    assert link.inner_text() == "schedule e2e fired"
    admin.follow(link.click)
    admin.wait_ready()
    assert page.url.endswith(f"/schedules/#schedule-{schedule}")
    row = page.locator(f"#schedule-{schedule}")
    page.wait_for_function(f"document.getElementById('schedule-{schedule}')?.classList.contains('chosen')")
    assert row.is_visible()
    screenshot(page, "schedules-from-run")
    # and the schedule's row links back to its run
    admin.follow(row.locator(f'.recent-runs a[href="/experiments/{run}/"]').click)
    admin.wait_ready()
    assert page.url.endswith(f"/experiments/{run}/")
