"""The runs app's rows of the bad-input table (the shape of tests/test_bad_input.py): each (method, url, body, field)
is refused with a 400 naming the field, and nothing is written (rows counted before and after). ``{scenario}``,
``{schedule}`` and ``{run}`` stand for ids made by the fixture. Given / when / then."""
import json

import pytest
from django_celery_beat.models import CrontabSchedule, IntervalSchedule, PeriodicTask

from twin.runs.models import Job, RunArray, Scenario, SimulationRun

BIG = "9" * 30                           # past any database integer (an OverflowError, a 500, before)
RUN = "/api/runs/"
SHARED_DEMO = True  # demo-256 built once for the module (tests/module_db.py); no test here is transactional
SCHEDULES = "/api/runs/schedules/"


def collective(**params):
    return {"kind": "collective", "cluster": "demo-256", "params": params}


def job(**params):
    return {"kind": "job", "cluster": "demo-256", "params": {"model": "llama3-8b", **params}}


def jobs(entries, **params):
    return {"kind": "jobs", "cluster": "demo-256",
            "params": {"jobs": entries if isinstance(entries, str) else json.dumps(entries), **params}}


def checkpoint(**params):
    return {"kind": "checkpoint", "cluster": "demo-256", "params": {"gpus": 64, **params}}


def sweep(**axes):
    return {"kind": "sweep", "cluster": "demo-256", "params": {"kind": "collective", "params": {}, "sweep": axes}}


def schedule(**when):
    return {"name": "bad", "scenario": "{scenario}", **when}


ROWS = [
    # schedules: every crontab field as Celery reads it, a minimum interval (TWIN_SCHEDULE_MIN_INTERVAL_SECONDS)
    ("post", SCHEDULES, schedule(crontab={"hour": "-1"}), "hour"),
    ("post", SCHEDULES, schedule(crontab={"minute": "banana"}), "minute"),
    ("post", SCHEDULES, schedule(crontab={"minute": "99"}), "minute"),
    ("post", SCHEDULES, schedule(crontab={"day_of_week": "8"}), "day_of_week"),
    ("post", SCHEDULES, schedule(crontab={"day_of_month": "32"}), "day_of_month"),
    ("post", SCHEDULES, schedule(crontab={"month_of_year": "0"}), "month_of_year"),
    ("post", SCHEDULES, schedule(crontab={"minute": "*"}), "minute"),
    ("post", SCHEDULES, schedule(interval={"every": 1, "period": "seconds"}), "every"),
    ("post", SCHEDULES, schedule(interval={"every": int(BIG), "period": "days"}), "every"),
    ("post", SCHEDULES, {"name": "bad", "scenario": int(BIG), "interval": {"every": 1, "period": "days"}},
     "scenario"),
    ("patch", SCHEDULES + "{schedule}/", {"crontab": {"hour": "24"}}, "hour"),
    ("patch", SCHEDULES + "{schedule}/", {"crontab": {"minute": "*/1"}}, "minute"),
    # runs: each limit (TWIN_RUNS_MAX_*), the engine's own bounds, usable GPUs
    ("post", RUN, collective(seeds=10_000), "seeds"),
    ("post", RUN, collective(seed=2**64), "seed"),
    ("post", RUN, collective(sizes="0"), "sizes"),
    ("post", RUN, collective(gpus=257), "gpus"),
    ("post", RUN, collective(protocol="fast"), "protocol"),
    ("post", RUN, collective(protocol=128), "protocol"),
    ("post", RUN, collective(collective="alltoall", gpus=16, protocol="LL128"), "protocol"),
    ("post", RUN, collective(collective="alltoall", gpus=256, qps=16), "gpus"),
    ("post", RUN, collective(gpus=256, channels=64, qps=128, seeds=100), "cost"),
    ("post", RUN, collective(hash="md5"), "hash"),
    ("post", RUN, collective(udp_sport=3), "udp_sport"),
    ("post", RUN, collective(max_channels=65), "max_channels"),
    ("post", RUN, collective(channels=8, min_channels=4), "channels"),
    ("post", RUN, {"kind": "fabric_health", "cluster": "demo-256", "params": {"udp_sport": "random"}}, "udp_sport"),
    ("post", RUN, {"kind": "figure", "cluster": "demo-256", "params": {"hash": "xor"}}, "hash"),
    ("post", RUN, {"kind": "fabric_health", "cluster": "demo-256", "params": {"gpus": 257}}, "gpus"),
    # training jobs: the engine's layout rules (sim.jobs.params.JOB) and the cluster's usable GPUs; job lookups
    ("post", RUN, job(gpus=512, tp=8), "gpus"),
    ("post", RUN, job(gpus=64, tp=8, pp=2, dp=3), "gpus"),
    ("post", RUN, job(model="gpt-5"), "model"),
    ("post", RUN, job(tp=0), "tp"),
    ("post", RUN, job(seq="long"), "seq"),
    ("post", RUN, job(placement="anywhere"), "placement"),
    ("post", RUN, job(gpus=48, tp=3), "tp"),
    ("post", RUN, {"kind": "schedule", "cluster": "demo-256", "params": {"policy": "lottery"}}, "policy"),
    # jobs sharing the fabric: the jobs file (each entry a JOB), the cluster's usable GPUs, the fabric's options
    ("post", RUN, {"kind": "jobs", "cluster": "demo-256", "params": {}}, "jobs"),
    ("post", RUN, jobs("[{not json or toml"), "jobs"),
    ("post", RUN, jobs([]), "jobs"),
    ("post", RUN, jobs([{"model": "llama3-8b", "gpus": 8}, {"model": "llama3-8b", "gpus": 24, "tp": 3}]),
     "jobs[1].tp"),
    ("post", RUN, jobs([{"model": "llama3-8b", "gpus": 512}]), "jobs[0].gpus"),
    ("post", RUN, jobs([{"model": "llama3-8b", "gpus": 128}] * 2 + [{"model": "llama3-8b", "gpus": 64}]), "jobs"),
    ("post", RUN, jobs([{"model": "llama3-8b", "gpus": 8}], qps=0), "qps"),
    ("get", f"/api/runs/jobs/?cluster={BIG}", None, "cluster"),
    ("get", "/api/runs/jobs/?state=lost", None, "state"),
    ("get", "/api/runs/jobs/on-gpu/?cluster={cluster}&gpu=" + BIG, None, "gpu"),
    ("get", "/api/runs/jobs/on-gpu/?cluster={cluster}", None, "gpu"),
    # host and GPU lists, read against the inventory (an unusable GPU: test_a_list_with_an_unusable_gpu...)
    ("post", RUN, collective(hosts="demo-256.z00.r000.h0\nnot-a-host\n"), "hosts"),
    ("post", RUN, collective(hosts="z00.r000.h0\nz00.r000.h0\n"), "hosts"),
    ("post", RUN, collective(hosts="z00.r000.h0 slots=9\n"), "hosts"),
    ("post", RUN, collective(hosts="# nothing\n"), "hosts"),
    ("post", RUN, collective(hosts="z00.r000.h0\n", gpus=9), "hosts"),
    ("post", RUN, collective(hosts="x" * (4 * 1024 * 1024 + 1)), "hosts"),
    ("post", RUN, collective(hosts=["z00.r000.h0"]), "hosts"),
    ("post", RUN, collective(gpu_list="0\n1\n0\n"), "gpu_list"),
    ("post", RUN, collective(gpu_list="0\n1\n256\n"), "gpu_list"),
    ("post", RUN, collective(gpu_list="0\n1\n", hosts="z00.r000.h0\n"), "gpu_list"),
    ("post", RUN, collective(gpu_list="0\n1\n", placement="random"), "placement"),
    ("post", RUN, collective(placement="given"), "placement"),
    ("post", RUN, collective(gpu_list="0\n1\n", collective="broadcast", root=2), "root"),
    ("post", RUN, collective(intra_order="pci"), "intra_order"),
    ("post", RUN, sweep(qps=list(range(1, 17)), seed=list(range(17))), "sweep"),
    # checkpoints and storage: the engine's bounds, the cluster's GPUs, stores and servers
    ("post", RUN, checkpoint(bytes_per_gpu=-1), "bytes_per_gpu"),
    ("post", RUN, checkpoint(bytes_per_gpu="2T"), "bytes_per_gpu"),
    ("post", RUN, checkpoint(gpus=257), "gpus"),
    ("post", RUN, checkpoint(gpus=64, writers=65), "writers"),
    ("post", RUN, checkpoint(store="lustre"), "store"),
    ("post", RUN, checkpoint(servers=0), "servers"),
    ("post", RUN, checkpoint(servers=9), "servers"),
    ("post", RUN, checkpoint(mode="eventually"), "mode"),
    ("post", RUN, {"kind": "storage", "cluster": "demo-256", "params": {"clients": 0}}, "clients"),
    ("post", RUN, {"kind": "storage", "cluster": "demo-256", "params": {"clients": 2049, "clients_per_host": 8}},
     "clients"),
    ("post", RUN, {"kind": "storage", "cluster": "demo-256", "params": {"store": "nfs"}}, "store"),
    ("post", RUN, {"kind": "collective", "cluster_id": int(BIG)}, "cluster_id"),
    ("post", RUN, {"scenario": int(BIG)}, "scenario"),
    ("post", "/api/runs/scenarios/", {"name": "bad", "kind": "collective", "cluster": "{cluster}",
                                      "params": {"seeds": 10_000}}, "seeds"),
    # ids past the database's range, in filters and the compare page
    ("get", f"{RUN}?id={BIG}", None, "id"),
    ("get", f"{RUN}?id__in=1,{BIG}", None, "id__in"),
    ("get", f"{RUN}?parent={BIG}", None, "parent"),
    ("get", f"{RUN}?scenario={BIG}", None, "scenario"),
    ("get", f"{RUN}?cluster={BIG}", None, "cluster"),
    ("get", f"/api/runs/scenarios/?id={BIG}", None, "id"),
    ("get", f"/experiments/compare/?runs={BIG}", None, "runs"),
    ("get", "/experiments/compare/?runs={run}," + BIG, None, "runs"),
]


def _fill(value, ids):
    text = json.dumps(value)
    for key, pk in ids.items():
        text = text.replace(f'"{{{key}}}"', str(pk)).replace(f"{{{key}}}", str(pk))
    return json.loads(text)


def _counts():
    return {m.__name__: m.objects.count()
            for m in (SimulationRun, RunArray, Scenario, PeriodicTask, CrontabSchedule, IntervalSchedule, Job)}


def _names(errors, field) -> bool:
    """Whether ``field`` is a key anywhere in the error document."""
    if isinstance(errors, dict):
        return field in errors or any(_names(v, field) for v in errors.values())
    if isinstance(errors, list):
        return any(_names(v, field) for v in errors)
    return False


@pytest.fixture
def ids(runner, demo):
    scenario = Scenario.objects.create(name="health", kind="fabric_health", cluster=demo, params={})
    schedule = runner.post(SCHEDULES, {"name": "nightly", "scenario": scenario.pk,
                                       "crontab": {"minute": "0", "hour": "3"}}, format="json").json()["id"]
    run = SimulationRun.objects.create(kind="collective", cluster=demo, status="succeeded")
    return {"scenario": scenario.pk, "schedule": schedule, "run": run.pk, "cluster": demo.pk}


@pytest.mark.django_db
@pytest.mark.parametrize("method, url, body, field", ROWS, ids=[f"{m} {u[:40]} {f}" for m, u, _, f in ROWS])
def test_bad_input_to_the_runs_app_is_refused_naming_the_field_and_writes_nothing(runner, ids, method, url, body,
                                                                                field):
    before = _counts()
    url = _fill(url, ids)
    if body is None:
        r = getattr(runner, method)(url)
    else:
        r = getattr(runner, method)(url, _fill(body, ids), format="json")
    assert r.status_code == 400, (r.status_code, r.content[:500])
    if r["Content-Type"].startswith("application/json"):
        assert _names(r.json(), field), r.json()
    else:                                           # a page: the message names the parameter
        assert f"{field}:" in r.content.decode()
    assert _counts() == before


@pytest.mark.django_db
@pytest.mark.parametrize("params, field, text", [
    ({"hosts": "z00.r000.h0\nz00.r000.h1\n"}, "hosts",
     "line 2: GPU slot 2 of host 'z00.r000.h1' is not usable"),
    ({"gpu_list": "0\n\ndemo-256.z00.r000.h1.gpu2\n"}, "gpu_list",
     "line 3: GPU 'demo-256.z00.r000.h1.gpu2' is not usable"),
    ({"hosts": "demo-256.z00.r000.h0\nnot-a-host\n"}, "hosts",
     "line 2: unknown host 'not-a-host': demo-256 has no such host"),
])
def test_a_list_is_read_against_the_inventory_naming_field_and_line(runner, demo, params, field, text):
    # given demo-256 with one GPU failed in the inventory
    from twin.inventory.models import GPU
    GPU.objects.filter(cluster=demo, name="demo-256.z00.r000.h1.gpu2").update(status="failed")
    before = _counts()
    # when a run names it in a host or GPU list
    r = runner.post(RUN, collective(**params), format="json")
    # then a 400 names the field and the line, and nothing is written
    assert r.status_code == 400 and text in r.json()["params"][field][0], r.json()
    assert _counts() == before
