"""End to end: a run started over REST is executed by a real Celery worker, which pushes ordered binary frames
through the real channels_redis layer to a WebSocket client on the real ASGI app, until the run's final frame."""
import pytest
from asgiref.sync import async_to_sync, sync_to_async

from tests.live.test_push import open_socket, receive_frames, receive_meta

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_run_started_over_rest_pushes_ordered_frames_until_it_finishes(workers, runner, demo):
    def start_run():
        response = runner.post("/api/runs/", {
            "kind": "collective", "cluster": "demo-256",
            "params": {"collective": "allgather", "gpus": 128, "sizes": "1M:256M", "placement": "random",
                       "routing": "eecmp", "qps": 4, "seeds": 6}}, format="json")
        assert response.status_code == 201, response.json()
        return response.json()["id"]

    async def scenario():
        # given a client watching the cluster (subscribed before the run exists, so no frame can be missed)
        comm = await open_socket(f"/ws/clusters/{demo.name}/?index=0")
        meta = await receive_meta(comm)
        # when a run is started over REST
        run_id = await sync_to_async(start_run)()
        # then frames arrive until the run's final one
        got = await receive_frames(comm, until_final=True, timeout=60)
        await comm.disconnect()
        return meta, run_id, got

    meta, run_id, got = async_to_sync(scenario)()
    assert meta["type"] == "meta" and meta["cluster"]["name"] == "demo-256"
    assert all(f.run_id == run_id for f in got)
    seqs = [f.seq for f in got]
    assert seqs == sorted(set(seqs)), seqs  # strictly increasing: ordered, none repeated
    progress = [f.progress for f in got]
    assert progress == sorted(progress) and progress[-1] == 100.0
    assert len(got) >= 2 and got[-1].final and got[-1].status == "succeeded"
    assert "running" in {f.status for f in got[:-1]}
    run = runner.get(f"/api/runs/{run_id}/").json()
    assert run["status"] == "succeeded" and run["worker"] in workers.hostnames
