"""The power run kind end to end: REST -> Redis -> a real Celery worker -> database -> REST and the cluster's live
stream, on demo-256 as the inventory holds it. The figures are checked against the physics they come from (energy
conserved between the stored waveforms and the summary, each GPU's share back to its stage's watts, each rack's
share back to its peak against the budget, a cap's clock share), never against recorded numbers. Given / when /
then."""
import numpy as np
import pytest

from sim.fabric.spec import parse_spec
from sim.power import devices
from tests.runs.test_runs import finished
from twin.capabilities.power import live as power_live
from twin.live import scope
from twin.live.sections import GPU_IN_JOB

# Llama 3 8B on 64 GPUs of demo-256 (tp 8, pp 2, dp 4), a cap sweep, one day under failures
JOB = {"model": "llama3-8b", "gpus": 64, "tp": 8, "pp": 2, "dp": 4, "batch_tokens": "1M"}


def start(client, params):
    r = client.post("/api/runs/", {"kind": "power", "cluster": "demo-256", "params": params}, format="json")
    assert r.status_code == 201, r.json()
    return finished(client, r.json()["id"], timeout=90)


def arrays(client, run_id):
    out = client.get(f"/api/runs/{run_id}/results/").json()["arrays"]
    return {k: np.array(v["data"], dtype=v["dtype"]).reshape(v["shape"]) for k, v in out.items()}


@pytest.mark.django_db(transaction=True)
def test_a_power_run_on_a_worker_stores_its_waveforms_and_publishes_its_sections(workers, runner, demo):
    # when a power run with a cap sweep and a day under failures is started over REST
    run = start(runner, {**JOB, "cap_sweep": [400, 500, 700], "days": 1, "failures": True})
    # then a worker runs it and its summary is the engine's document with the GPU's watts
    assert run["status"] == "succeeded", run["error"]
    s = run["summary"]
    gpu = devices.gpu_power(parse_spec(demo.spec).layout.gpu)
    assert s["gpus"] == 64 and s["cap_w"] == gpu.max_cap and s["gpu_w"]["tdp"] == gpu.at_cap
    assert [h["key"] for h in run["headline"]] == ["cluster_peak_mw", "cluster_swing_mw", "cluster_ramp_mw_per_s",
                                                   "energy_per_token_j", "step_s"]
    assert [r["cap_w"] for r in s["sweep"]] == [400, 500, 700] and s["timeline"]["days"] == 1
    assert {p["key"] for p in s["published"]} == {"llama3-power-swing", "torchtitan-cap"}
    a = arrays(runner, run["id"])
    # and the stored waveforms hold the step's energy: their time-weighted mean is the summary's mean
    w = np.diff(a["step_edges_s"])
    assert w.sum() == pytest.approx(s["step_s"])
    assert float(a["cluster_mw"] @ w) / s["step_s"] == pytest.approx(s["cluster_mean_mw"], rel=1e-5)
    assert a["cluster_mw"].max() == pytest.approx(s["cluster_peak_mw"], rel=1e-5)
    # and the buildings are within the cluster (storage and core switches count in the cluster only)
    assert a["building_mw"].shape == (len(s["buildings"]), w.size)
    assert (a["building_mw"].sum(axis=0) <= a["cluster_mw"] * (1 + 1e-6)).all()
    assert a["stage_w"].shape == (2, w.size) and a["stage_w"].max() <= gpu.at_cap * (1 + 1e-6)
    # and each GPU's share is its stage's mean draw (the job's 64) or idle (the rest), as quantized
    share = a["gpu_power"].astype(float) / power_live.GPU_SCALE
    in_job = share > gpu.idle / gpu.at_cap + 1 / power_live.GPU_SCALE
    assert in_job.sum() == 64
    assert share[~in_job] == pytest.approx(gpu.idle / gpu.at_cap, abs=0.5 / power_live.GPU_SCALE)
    stage_means = sorted(t["mean_w"] / gpu.at_cap for t in s["stages"])
    assert sorted(set(np.round(share[in_job], 3))) == pytest.approx(stage_means, abs=0.5 / power_live.GPU_SCALE)
    # and each GPU's rack share is its rack's peak over the budget; the racks over it are the summary's count
    racks = s["racks"]
    assert a["rack_peak_kw"].size == racks["count"] and a["rack_gpus"].sum() == 64
    assert a["rack_peak_kw"].max() == pytest.approx(racks["peak_kw"], rel=1e-5)
    assert int((a["rack_peak_kw"] > racks["budget_kw"]).sum()) == racks["over_budget"]
    rack_share = a["rack_power"].astype(float) / power_live.RACK_SCALE
    want = np.minimum(a["rack_peak_kw"].astype(float) / racks["budget_kw"], 254 / power_live.RACK_SCALE)
    assert np.abs(rack_share[:, None] - want[None, :]).min(axis=1).max() <= 0.5 / power_live.RACK_SCALE + 1e-6
    # and the days' series holds the timeline's energy
    tw = np.diff(a["timeline_edges_s"].astype(float))
    assert float(a["timeline_mw"] @ tw) / 3600 == pytest.approx(s["timeline"]["energy_mwh"], rel=1e-3)
    # and the cluster's stream carries the run's last frame: the job's GPUs, both shares and its figures
    frame = scope.last_frame(demo)
    assert frame.run_id == run["id"]
    assert np.array_equal(frame.value("gpu_power"), a["gpu_power"])
    assert np.array_equal(frame.value("rack_power"), a["rack_power"])
    assert np.array_equal(frame.value("gpu_state") == GPU_IN_JOB, in_job)      # the same GPUs: the job's
    row = frame.value("power_stats")[0]
    assert row["phase"] == "done" and row["cluster_peak_mw"] == pytest.approx(s["cluster_peak_mw"], rel=1e-5)
    assert row["racks_over_budget"] == racks["over_budget"]

    # when the same job runs under a 500 W cap and a rack budget its racks exceed without it
    capped = start(runner, {**JOB, "power_cap": 500, "rack_budget_kw": 15})
    c = capped["summary"]
    assert capped["status"] == "succeeded", capped["error"]
    # then its GEMMs run at the cap's clock share, the step is slower, the job draws less, and the racks over the
    # budget are counted with and without the cap
    assert c["clock_share"] == pytest.approx(devices.throughput_share(gpu, 500))
    assert c["step_s"] > s["step_s"] and c["step_time_cost"] > 0 and c["job_mean_saved_mw"] > 0
    assert c["uncapped"]["step_s"] == pytest.approx(s["step_s"])
    assert c["racks"]["over_budget_uncapped"] >= c["racks"]["over_budget"]
    assert c["racks"]["over_budget_uncapped"] > 0


@pytest.mark.django_db(transaction=True)
def test_a_power_schedule_run_draws_the_idle_cluster_plus_its_running_jobs(workers, runner, demo):
    # when 20 synthetic jobs arrive over 2 days and a power schedule is run over REST
    r = runner.post("/api/runs/", {"kind": "power_schedule", "cluster": "demo-256",
                                   "params": {"arrivals": 20, "days": 2, "timeline_step_s": 60}}, format="json")
    assert r.status_code == 201, r.json()
    run = finished(runner, r.json()["id"], timeout=90)
    # then a worker runs it: the engine's document, the draw over time stored
    assert run["status"] == "succeeded", run["error"]
    s = run["summary"]
    a = arrays(runner, run["id"])
    assert s["jobs_run"] == len(s["jobs"]) > 0
    w = np.diff(a["schedule_edges_s"])
    assert w.sum() == pytest.approx(s["makespan_s"])
    # and the draw is the idle cluster plus the jobs running: never below idle, its energy the summary's, and its
    # mean the idle cluster's plus each job's draw over the time it ran
    assert a["schedule_mw"].min() >= s["idle_mw"] * (1 - 1e-6)
    assert float(a["schedule_mw"] @ w) / 3600 == pytest.approx(s["energy_mwh"], rel=1e-4)
    busy = sum(j["draw_mw"] * (j["end"] - j["start"]) for j in s["jobs"])
    assert s["mean_mw"] == pytest.approx(s["idle_mw"] + busy / s["makespan_s"], rel=1e-4)
    assert s["peak_mw"] <= s["idle_mw"] + sum(j["draw_mw"] for j in s["jobs"]) + 1e-9
