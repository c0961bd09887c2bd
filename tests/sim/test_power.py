"""The power engine (sim/power): analytic cases of a step's power, the cap/clock relation, energy as the integral
of power, budgets and caps derived from them, and refused input."""
import numpy as np
import pytest

from sim.cli import main
from sim.core.errors import ParamError
from sim.fabric.layout import TIER_CORE, TIER_LEAF, TIER_SPINE
from sim.fabric.topology import load_topology
from sim.power import devices
from sim.power.cluster import draw, job_places
from sim.power.params import POWER
from sim.power.places import places
from sim.power.run import run_power
from sim.power.step import Levels, levels, waveforms

JOB = {"model": "llama3-8b", "gpus": 64, "tp": 1, "pp": 1, "dp": 64}


@pytest.fixture(scope="module")
def demo():
    return load_topology("demo-256")[1]


def run(topo, **kw):
    return run_power(topo, POWER.validate({**JOB, **kw}))


def test_an_idle_cluster_draws_the_sum_of_its_idle_powers(demo):
    # Given the demo cluster with no job: every GPU and host idle, every switch, storage server and SSD on
    lay = demo.layout
    pl = places(lay, 1.0)           # the host's device-table draw (host_power_scale at its prior, whatever is fitted)
    jp = job_places(pl, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), 1)
    gpu = devices.gpu_power(lay.spec.layout.gpu)
    host = devices.host_power(lay.spec.layout.host_platform)
    nics = np.bincount(lay.nic_host[lay.nic_host >= 0], minlength=len(lay.host_rack))
    expected = (len(lay.gpu_host) * gpu.idle
                + sum(host.watts(lay.spec.layout.cpus_per_host, int(k), False) for k in nics)
                + sum(devices.switch_power(lay.switch_models[m]) for m in lay.switch_model)
                + sum(devices.storage_server_power(lay.spec.storage[s].server) for s in lay.server_storage)
                + sum(devices.ssd_power(lay.spec.storage[lay.server_storage[s]].ssd) for s in lay.ssd_server))
    # Then the cluster's draw is that sum, every place's share adding up to it
    assert jp.cluster_const == pytest.approx(expected, rel=1e-12)
    assert jp.rack_const.sum() + pl.zone_fixed_w.sum() + pl.cluster_fixed_w == pytest.approx(expected, rel=1e-12)
    tiers = lay.switch_tier
    assert pl.cluster_fixed_w == pytest.approx(sum(devices.switch_power(lay.switch_models[m])
                                                   for m in lay.switch_model[tiers == TIER_CORE]))
    assert pl.zone_fixed_w.sum() == pytest.approx(sum(devices.switch_power(lay.switch_models[m])
                                                      for m in lay.switch_model[tiers == TIER_SPINE]))
    assert np.count_nonzero(tiers == TIER_LEAF) > 0


def test_gpus_all_in_phase_swing_by_gpus_times_compute_minus_wait():
    # Given one stage computing 0.4 s then waiting 0.6 s (an operation of pure compute), at 1 ms
    lv = Levels(compute=700.0, comm=300.0, wait=110.0)
    tl = np.array([[0, 0, 0, 0, 0.6, 1.0]])                      # stage, kind F, micro-batch, chunk, start, end
    comp = np.full((3, 1, 1), 0.4)
    sp = waveforms(tl, comp, 1.0, 1, lv, 1e-3, dp_end=[1.0])
    # Then each GPU's waveform is at wait then at compute power, and n GPUs in phase swing by n (compute - wait)
    assert sp.watts[0, :600] == pytest.approx(110.0) and sp.watts[0, 600:] == pytest.approx(700.0)
    n = 16384
    cluster = n * sp.watts[0]
    assert cluster.max() - cluster.min() == pytest.approx(n * (700.0 - 110.0))
    # and the energy is the integral of the power
    assert sp.energy[0] == pytest.approx(0.6 * 110.0 + 0.4 * 700.0)


def test_an_operation_mixing_compute_and_exposed_comm_draws_their_time_weighted_mean():
    lv = Levels(compute=700.0, comm=300.0, wait=110.0)
    tl = np.array([[0, 1, 0, 0, 0.0, 1.0]])
    comp = np.full((3, 1, 1), 0.25)                              # a quarter of the operation computes
    sp = waveforms(tl, comp, 1.0, 1, lv, 0.1, dp_end=[1.0])
    assert sp.watts[0] == pytest.approx(0.25 * 700 + 0.75 * 300)


def test_a_real_job_all_in_phase_swings_by_gpus_times_compute_minus_comm(demo):
    # Given a DP-only job (pp 1, tp 1: every GPU in phase, no TP inside its operations); after its pipeline the
    # exposed DP collectives run at communication power
    r = run(demo)
    sp, d = r.case.draw.sp, r.case.draw
    gpu = r.places.gpu
    assert r.case.job.breakdown["dp"] > 0.002                    # longer than two bins
    # Then the cluster swings by GPUs x (compute - comm), up to the one bin that straddles the two phases
    assert d.cluster.max() - d.cluster.min() == pytest.approx(64 * (gpu.at_cap - gpu.comm), rel=1e-9)
    # and with a floor above the communication power the swing is GPUs x (compute - floor)
    f = run(demo, power_floor=500)
    df = f.case.draw
    assert df.cluster.max() - df.cluster.min() == pytest.approx(64 * (gpu.at_cap - 500), rel=1e-9)
    assert f.case.draw.job_energy > r.case.draw.job_energy   # the floor costs energy


def test_a_cap_below_the_gpus_draw_slows_compute_by_the_cap_clock_relation(demo):
    gpu = devices.gpu_power("h100-sxm-80gb")
    share = devices.throughput_share(gpu, 500.0)
    assert share == pytest.approx(((500 - gpu.static) / (gpu.at_cap - gpu.static)) ** (1 / 3))
    assert devices.cap_for_share(gpu, share) == pytest.approx(500.0)
    assert devices.throughput_share(gpu, gpu.at_cap) == 1.0
    r = run(demo, power_cap=500)
    capped, free = r.case.job.breakdown, r.uncapped.job.breakdown
    # GEMMs and attention are compute-bound: their time grows by 1 / share; the memory-bound kernels (HBM's clock)
    # and the launches do not change, nor does communication
    cp, fp = capped["compute_parts"], free["compute_parts"]
    assert cp["gemm"] + cp["attention"] == pytest.approx((fp["gemm"] + fp["attention"]) / share, rel=1e-12)
    assert cp["memory"] == pytest.approx(fp["memory"], rel=1e-12) and cp["launch"] == fp["launch"]
    assert capped["compute"] > free["compute"]
    assert capped["dp"] == pytest.approx(free["dp"], rel=1e-9)
    # the GPU never draws above its cap, and the job draws less power
    assert r.case.draw.sp.watts.max() <= 500.0 + 1e-6
    assert r.to_dict()["job_mean_mw"] < r.to_dict()["uncapped"]["job_mean_mw"]
    assert r.to_dict()["step_time_cost"] > 0


def test_energy_is_the_integral_of_power_at_any_resolution(demo):
    a = run(demo, resolution_ms=1.0, cap_sweep=[400, 700])
    b = run(demo, resolution_ms=37.0)
    for r in (a, b):
        d, sp = r.case.draw, r.case.draw.sp
        assert float(d.job @ sp.widths) == pytest.approx(d.job_energy, rel=1e-9)
        assert sp.edges[-1] == pytest.approx(sp.step_s)
    assert a.case.draw.job_energy == pytest.approx(b.case.draw.job_energy, rel=1e-9)
    assert a.to_dict()["energy_per_token_j"] == pytest.approx(a.to_dict()["sweep"][1]["energy_per_token_j"])


def test_budgets_exceeded_and_not_and_the_cap_a_rack_budget_derives(demo):
    ok = run(demo).to_dict()["racks"]
    assert ok["over_budget"] == 0 and ok["peak_kw"] < ok["budget_kw"]
    tight = run(demo, rack_budget_kw=16).to_dict()
    assert tight["racks"]["over_budget"] > 0
    assert all(w["headroom_kw"] < 0 for w in tight["racks"]["worst"][:tight["racks"]["over_budget"]])
    # a cap derived from the 16 kW rack budget keeps every rack within it, even with all its GPUs at the cap
    capped = run(demo, rack_budget_kw=16, cap_from="rack")
    d = capped.to_dict()
    assert d["cap_source"] == "rack budget" and d["racks"]["over_budget"] == 0
    jp = capped.jplaces
    n = jp.rack_n.sum(axis=1)
    assert np.all(jp.rack_const + n * d["cap_w"] <= 16e3 + 1e-6)
    assert np.any(jp.rack_const + n * (d["cap_w"] + 1) > 16e3)          # the tightest rack sets it (whole W)
    # a building budget
    b = run(demo, building_budget_mw=0.1).to_dict()["buildings"]
    assert b[0]["over_budget"] and not run(demo, building_budget_mw=10).to_dict()["buildings"][0]["over_budget"]


def test_the_gpu_limits_refuse_a_cap_outside_them(demo):
    with pytest.raises(ParamError, match="power_cap"):
        run(demo, power_cap=100)
    with pytest.raises(ParamError, match="rack_budget_kw"):
        run(demo, rack_budget_kw=1, cap_from="rack")


@pytest.mark.parametrize("argv, message", [
    (["--power-cap", "100"], "power_cap: 100 W is outside the GPU's power limits"),
    (["--power-cap", "500", "--power-floor", "600"], "power_floor: 600 W is above the cap"),
    (["--power-cap", "500", "--cap-from", "rack"], "cap_from:"),
    (["--cap-from", "building"], "building_budget_mw: is required"),
    (["--resolution-ms", "0"], "resolution_ms: must be at least"),
    (["--failures"], "days: is required with failures"),
    (["--days", "2"], "failures: the timeline over days"),
    (["--power-cap", "lots"], "power_cap: "),
    (["--resolution-ms", "0.01", "--power-cap", "300"], "resolution_ms: the step"),
    (["--days", "3000", "--failures", "--timeline-step-s", "0.01"], "timeline_step_s: 3000 days at 0.01 s"),
])
def test_bad_input_exits_2_naming_the_field(capsys, argv, message):
    code = main(["power", "--preset", "demo-256", "--model", "llama3-8b", "--gpus", "64", "--tp", "1", "--pp",
                 "1", "-q", *argv])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert message in err


def test_over_days_each_state_draws_its_power_and_energy_adds_up(demo):
    r = run(demo, days=3, failures=True, timeline_step_s=10)
    t = r.timeline
    sm = t["state_mw"]
    # training draws the step's mean; a checkpoint's dip and a restart have every GPU waiting; down has them idle
    assert sm["training"] == pytest.approx(r.case.draw.cluster @ r.case.draw.sp.widths / r.case.draw.sp.step_s / 1e6)
    assert sm["down"] < sm["checkpointing"] < sm["training"]
    gpu = r.places.gpu
    jp, load = r.jplaces, r.case.draw.load
    hosts_at_load = jp.job_const + (load - 1) * jp.job_follow         # their fans at the step's load
    assert 0 < load < 1
    assert (sm["checkpointing"] - sm["down"]) * 1e6 == pytest.approx(
        64 * (gpu.wait - gpu.idle) + hosts_at_load - r.places.host_idle_w[
            np.unique(demo.layout.gpu_host[r.case.job.gpus])].sum())
    # the timeline's energy is the integral of its states' power over their time
    e = sum(sm[s] * 1e6 * t["time_in_state_s"][s] for s in sm)
    assert t["energy_mwh"] * 3.6e9 == pytest.approx(e, rel=1e-9)
    assert t["mean_mw"] * 3 * 86400 * 1e6 == pytest.approx(e, rel=1e-9)
    assert sum(t["time_in_state_s"].values()) == pytest.approx(3 * 86400, rel=1e-9)
    assert t["min_mw"] >= sm["down"] - 1e-9 and t["peak_mw"] <= sm["training"] + 1e-9


def test_the_json_document_has_the_documented_keys(capsys):
    code = main(["power", "--preset", "demo-256", "--model", "llama3-8b", "--gpus", "64", "--tp", "1", "--pp", "1",
                 "--power-cap", "500", "--cap-sweep", "400,700", "--json", "--series", "-q"])
    out, _ = capsys.readouterr()
    import json
    d = json.loads(out)
    assert code == 0 and d["cluster"] == "demo-256" and d["cap_w"] == 500 and d["cap_source"] == "given"
    for key in ("cluster_peak_mw", "cluster_mean_mw", "cluster_swing_mw", "cluster_ramp_mw_per_s",
                "energy_per_token_j", "uncapped", "step_time_cost", "racks", "zones", "buildings", "sweep",
                "published", "series", "stages"):
        assert key in d
    assert [s["cap_w"] for s in d["sweep"]] == [400, 700]
    assert d["sweep"][1]["step_s"] == pytest.approx(d["uncapped"]["step_s"])
    assert len(d["series"]["cluster_mw"]) == len(d["series"]["edges_s"]) - 1
    assert {r["key"] for r in d["published"]} == {"llama3-power-swing", "torchtitan-cap"}
    assert d["cluster_peak_mw"] >= d["cluster_mean_mw"] >= d["cluster_peak_mw"] - d["cluster_swing_mw"]


def test_exposed_dp_falls_before_the_pipeline_and_after_each_stages_last_operation():
    lv = Levels(compute=700.0, comm=300.0, wait=110.0)
    tl = np.array([[0, 0, 0, 0, 0.0, 0.5], [1, 0, 0, 0, 0.2, 0.4]])
    comp = np.array([[[0.5], [0.2]]] * 3)                        # pure compute
    sp = waveforms(tl, comp, 1.0, 2, lv, 0.05, front=0.1, dp_end=[0.7, 0.4])
    # stage 0: DP gather 0..0.1, compute 0.1..0.6, its gradients' collectives 0.6..0.8, waits to the step's end
    assert sp.phase_s[0] == pytest.approx([0.5, 0.3, 0.2])
    assert sp.energy[0] == pytest.approx(0.3 * 300 + 0.5 * 700 + 0.2 * 110)
    # stage 1: gather, waits for its operation, computes, nothing of DP past its operation, waits
    assert sp.phase_s[1] == pytest.approx([0.2, 0.1, 0.7])
    assert sp.watts[1, 0] == pytest.approx(300.0) and sp.watts[1, 7] == pytest.approx(700.0)


def test_hosts_and_racks_add_up_to_the_cluster(demo):
    r = run(demo, tp=4, pp=4, dp=4)
    d, pl, jp = r.case.draw, r.places, r.jplaces
    sp = d.sp
    # each rack's mean is its hosts' means plus its fixed devices; every level's energy adds up to the cluster's
    per_rack = np.bincount(pl.host_rack, weights=d.host_mean, minlength=pl.n_racks) + pl.rack_fixed_w
    assert d.rack_mean == pytest.approx(per_rack, rel=1e-9)
    cluster_mean = float(d.cluster @ sp.widths / sp.step_s)
    assert d.rack_mean.sum() + pl.zone_fixed_w.sum() + pl.cluster_fixed_w == pytest.approx(cluster_mean, rel=1e-9)
    assert float(d.zone.sum(axis=0) @ sp.widths / sp.step_s) + pl.cluster_fixed_w == pytest.approx(cluster_mean)
    assert np.all(d.host_peak <= np.bincount(pl.host_rack, weights=d.host_peak)[pl.host_rack] + 1e-9)
    assert r.to_dict()["hosts"]["with_job"] == 8


def test_a_nodes_peak_and_mean_are_its_gpus_stage_plus_its_host_and_the_peak_follows_the_grid(demo):
    # Given a data-parallel job (one stage: every GPU of a host in phase), a node meter's figures (hosts(): what the
    # validation's node_mean_kw and node_peak_kw read): the host's non-GPU draw is constant over the step, so a
    # node's peak exceeds its mean by its GPUs' peak over their mean, exactly
    r = run(demo)
    h, st = r.hosts(), r.to_dict()["stages"][0]
    per_host = r.places.layout.spec.layout.gpus_per_host
    assert h["with_job"] == 64 // per_host and h == r.to_dict()["hosts"]
    assert (h["peak_kw"] - h["mean_kw"]) * 1e3 == pytest.approx(per_host * (st["peak_w"] - st["mean_w"]), rel=1e-9)
    assert h["mean_kw"] * 1e3 > per_host * st["mean_w"]                        # plus the CPUs, memory, NICs, fans
    # a meter reporting means over 10 s sees less of the peak; the mean is the same at any grid
    coarse = run(demo, resolution_ms=10_000.0).hosts()
    assert coarse["mean_kw"] == pytest.approx(h["mean_kw"], rel=1e-9)
    assert h["mean_kw"] <= coarse["peak_kw"] < h["peak_kw"]


def test_a_schedules_draw_is_the_idle_cluster_plus_each_running_jobs(demo):
    from sim.power.params import POWER_SCHEDULE
    from sim.power.schedule import job_mean_gpu_w, power_schedule
    jobs = ('[{"name": "a", "model": "llama3-8b", "gpus": 64, "tp": 1, "dp": 64, "arrival_hours": 0.5, "hours": 2},'
            ' {"name": "b", "model": "llama3-8b", "gpus": 128, "tp": 8, "dp": 16, "arrival_hours": 1, "hours": 1}]')
    r = power_schedule(demo, POWER_SCHEDULE.validate({"jobs": jobs, "timeline_step_s": 7}))
    d = r.to_dict()
    assert d["jobs_run"] == 2 and d["min_mw"] == pytest.approx(d["idle_mw"])
    # energy above idle is each job's draw above idle over its run
    above = sum(j["draw_mw"] * (j["end"] - j["start"]) for j in d["jobs"]) * 1e6
    assert d["energy_mwh"] * 3.6e9 - d["idle_mw"] * 1e6 * d["makespan_s"] == pytest.approx(above, rel=1e-9)
    both = [j["draw_mw"] for j in d["jobs"]]
    assert d["peak_mw"] == pytest.approx(d["idle_mw"] + sum(both), rel=1e-9)      # both run together for an hour
    # a DP-only job's mean GPU draw is its step view's: compute at the cap, the exposed DP communicating
    step = run(demo)
    sp = step.case.draw.sp
    gpu = step.places.gpu
    assert job_mean_gpu_w(step.case.job.params, sp.step_s, gpu) == pytest.approx(sp.energy[0] / sp.step_s,
                                                                                 rel=1e-9)


def test_a_schedules_bad_input_exits_2_naming_the_field(capsys, tmp_path):
    code = main(["power-schedule", "--preset", "demo-256", "--timeline-step-s", "0", "-q"])
    assert code == 2 and "timeline_step_s: must be at least" in capsys.readouterr().err
    bad = tmp_path / "jobs.json"
    bad.write_text('[{"name": "a", "model": "llama3-8b", "gpus": 64, "tp": 3}]')
    code = main(["power-schedule", "--preset", "demo-256", "--jobs", str(bad), "-q"])
    assert code == 2 and "jobs[0].gpus: 64 GPUs are not divisible" in capsys.readouterr().err


def test_per_gpu_power_and_rack_headroom(demo):
    r = run(demo, tp=4, pp=4, dp=4)
    w = r.gpu_mean_w()
    pl = r.places
    assert w.size == len(demo.layout.gpu_host)
    outside = np.ones(w.size, bool)
    outside[r.case.job.gpus] = False
    assert np.all(w[outside] == pl.gpu.idle)
    sp = r.case.draw.sp
    # the job's GPUs' energy over the step is its stages'
    assert w[r.case.job.gpus].sum() * sp.step_s == pytest.approx(float(r.jplaces.stage_n @ sp.energy))
    h = r.gpu_rack_headroom_kw()
    assert h == pytest.approx((r.budgets.rack_w - r.case.draw.rack_peak[pl.gpu_rack]) / 1e3)
    assert len(r.to_dict(gpus=True)["gpu_mean_w"]) == w.size
