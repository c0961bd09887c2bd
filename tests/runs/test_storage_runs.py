"""The checkpoint and storage run kinds end to end: REST -> Redis -> a real Celery worker -> database -> REST, on the
inventory as it is (a failed storage rack). Given / when / then."""
import numpy as np
import pytest

from tests.runs.test_runs import finished
from twin.inventory.models import Host, Link, Rack, StorageServer
from twin.capabilities.storage import live as storage_live

CHECKPOINT = {"gpus": 64, "bytes_per_gpu": "256M", "store": "tectonic", "mode": "async"}


def start(client, kind, params):
    r = client.post("/api/runs/", {"kind": kind, "cluster": "demo-256", "params": params}, format="json")
    assert r.status_code == 201, r.json()
    return finished(client, r.json()["id"], timeout=60)


def arrays(client, run_id):
    out = client.get(f"/api/runs/{run_id}/results/").json()["arrays"]
    return {k: np.array(v["data"], dtype=v["dtype"]).reshape(v["shape"]) for k, v in out.items()}


def failed_ids(ids, tectonic):
    return np.isin(ids, [s.id for s in tectonic[:2]])


@pytest.mark.django_db(transaction=True)
def test_a_checkpoint_run_and_a_failed_storage_rack(workers, runner, demo):
    # given demo-256 (one tectonic rack of 8 servers, two hammerspace servers) and two workers
    tectonic = StorageServer.objects.filter(cluster=demo, storage_cluster__kind="tectonic").order_by("id")
    ids = list(StorageServer.objects.filter(cluster=demo).order_by("id").values_list("id", flat=True))
    on_tectonic = np.isin(ids, list(tectonic.values_list("id", flat=True)))
    # when a checkpoint is started over REST
    run = start(runner, "checkpoint", CHECKPOINT)
    # then a worker runs it: blocked until staged, durable later, every tectonic server written, nothing else
    assert run["status"] == "succeeded", run["error"]
    s = run["summary"]
    assert 0 < s["blocked_seconds"] < s["durable_seconds"]
    assert s["servers_used"] == 8 and s["hosts_used"] == 8 and s["direction"] == "write"
    # and its stored summary carries the published figures beside the simulated ones (sim/storage/published.py)
    assert {p["key"] for p in s["published"]} == {"tectonic-peak", "tectonic-sustained"}
    assert next(p for p in s["published"] if p["key"] == "tectonic-peak")["simulated"] == \
        pytest.approx(s["peak_rate"] / 1e12)
    assert [p["name"] for p in s["phases"]] == ["staging", "metadata", "uploading", "durable"]
    assert len(s["series"]["rate"]) == len(s["series"]["times"]) - 1 == 100
    assert s["rated"]["sustained"] < s["rated"]["peak"]
    assert [h["key"] for h in run["headline"]] == ["blocked_seconds", "durable_seconds", "peak_rate",
                                                   "checkpoint_rate"]
    a = arrays(runner, run["id"])
    assert a["server_mean"].shape == (len(ids),)
    assert (a["server_mean"][on_tectonic] > 0).all() and (a["server_mean"][~on_tectonic] == 0).all()
    assert a["server_rate"].shape == (100, len(ids))
    # the per-server rates add up to the aggregate series (GB/s against bytes/s; float16 storage)
    assert np.allclose(a["server_rate"].astype(np.float64).sum(1) * 1e9, s["series"]["rate"], rtol=2e-3, atol=1e6)
    only = runner.get(f"/api/runs/{run['id']}/results/?arrays=base64&names=server_mean,nope").json()["arrays"]
    assert list(only) == ["server_mean"] and isinstance(only["server_mean"]["data"], str)
    n_front = Link.objects.filter(cluster=demo, fabric__role=1).count()
    assert a["frontend_utilization"].shape == (n_front,) and 0 < a["frontend_utilization"].max() <= 1.001
    hosts = Host.objects.filter(cluster=demo).count()
    assert a["host_progress"].shape == (100, hosts)
    last = a["host_progress"][-1]
    out = storage_live.HOST_NOT_IN_JOB
    assert np.sum(last != out) == 8 and (last[last != out] == storage_live.PROGRESS_SCALE).all()
    assert (a["host_done"] == -1).sum() == hosts - 8 and (a["host_done"][a["host_done"] >= 0] > 0).all()

    # when two tectonic servers fail, and the rack of the hammerspace servers (demo-256 has one tectonic rack),
    # and tectonic takes a checkpoint again
    for server in tectonic[:2]:
        assert runner.patch(f"/api/inventory/storage-servers/{server.id}/", {"status": "failed"},
                            format="json").status_code == 200
    rack = Rack.objects.filter(storage_servers__storage_cluster__kind="hammerspace", cluster=demo).distinct().get()
    assert runner.patch(f"/api/inventory/racks/{rack.id}/", {"status": "failed"}, format="json").status_code == 200
    # (the engine's layout sees the rack's servers as failed)
    from twin.inventory.adapter import layout_from_db
    on_hammerspace = np.isin(ids, list(rack.storage_servers.values_list("id", flat=True)))
    status = layout_from_db(demo).server_status
    assert (status[on_hammerspace] != 0).all() and (status[failed_ids(ids, tectonic)] != 0).all()
    second = start(runner, "checkpoint", CHECKPOINT)
    # then the failed servers are routed around: 6 servers take the bytes, the failed ones none, and it takes longer
    assert second["status"] == "succeeded", second["error"]
    assert second["summary"]["servers_used"] == 6
    b = arrays(runner, second["id"])
    failed = failed_ids(ids, tectonic)
    assert (b["server_mean"][failed] == 0).all() and (b["server_mean"][on_tectonic & ~failed] > 0).all()
    assert second["summary"]["durable_seconds"] > s["durable_seconds"]
    # and the hammerspace store, its only rack failed, is refused at the API naming the field
    r = runner.post("/api/runs/", {"kind": "checkpoint", "cluster": "demo-256",
                                   "params": {**CHECKPOINT, "store": "hammerspace"}}, format="json")
    assert r.status_code == 400 and "store" in r.json()["params"], r.json()


@pytest.mark.django_db(transaction=True)
def test_a_storage_fanout_run_reports_the_time_per_client_count(workers, runner, demo):
    # given demo-256's hammerspace (2 servers); when 256 clients open 20 files each
    run = start(runner, "storage", {"store": "hammerspace", "clients": 256, "clients_per_host": 8, "files": 20})
    # then the run says how long it took, what bounds it, and which servers served the files
    assert run["status"] == "succeeded", run["error"]
    s = run["summary"]
    assert s["clients"] == 256 and s["hosts"] == 32 and s["seconds"] > 0
    assert s["limit"] in ("metadata-latency", "metadata-service", "data")
    assert s["opens_per_s"] == pytest.approx(256 * 20 / s["seconds"])
    assert len(s["per_server"]["name"]) == 2
    a = arrays(runner, run["id"])
    assert (a["server_mean"] > 0).sum() == 2
