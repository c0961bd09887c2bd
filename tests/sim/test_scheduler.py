"""The job scheduler (sim/jobs/scheduler.py): no GPU double-booked, failed hosts avoided, jobs files, policies."""
import json
import math
from copy import copy

import numpy as np
import pytest

from sim.core.errors import ParamError
from sim.jobs.params import SCHEDULE
from sim.jobs.scheduler import host_ok, parse_jobs, run_schedule, zone_cut_bytes
from sim.jobs.layout import resolve_job
from sim.jobs.params import JOB
from sim.fabric.topology import load_topology


@pytest.fixture(scope="module")
def demo():
    return load_topology("demo-256")[1]


def overlapping_pairs(jobs):
    run = [j for j in jobs if math.isfinite(j.start)]
    for a in range(len(run)):
        for b in range(a + 1, len(run)):
            x, y = run[a], run[b]
            if x.start < y.end and y.start < x.end:
                yield x, y


@pytest.mark.parametrize("policy", ["topology", "first-fit", "random"])
def test_no_gpu_is_booked_twice_and_every_job_gets_its_gpus(demo, policy):
    p = SCHEDULE.validate({"policy": policy, "arrivals": 60, "days": 3, "max_gpus": 128, "seed": 4})
    r = run_schedule(demo, p)
    assert all(math.isfinite(j.start) and j.start >= j.arrival and j.end > j.start for j in r.jobs)
    assert all(j.gpus.size == j.gpus_asked == np.unique(j.gpus).size for j in r.jobs)
    pairs = list(overlapping_pairs(r.jobs))
    assert pairs                                                    # jobs did run at the same time
    for x, y in pairs:
        assert not set(x.gpus.tolist()) & set(y.gpus.tolist())
    assert 0 < r.utilization <= 1 and 0 <= r.fragmentation <= 1


def test_jobs_never_land_on_an_unusable_gpu_or_its_host(demo):
    topo = copy(demo)
    usable = np.asarray(demo.gpu_usable).copy()
    usable[[3 * 8 + 2, 17 * 8 + 5]] = False                          # a failed GPU in hosts 3 and 17
    topo.gpu_usable = usable
    bad_hosts = {3, 17}
    jobs = [{"model": "llama3-8b", "gpus": 8 * k, "steps": 100, "arrival_hours": 0} for k in (1, 2, 4, 8, 16)]
    jobs += [{"model": "llama3-8b", "gpus": 240, "steps": 10, "arrival_hours": 1, "batch_tokens": 8192 * 30}]   # every healthy host
    for policy in ("topology", "first-fit", "random"):
        r = run_schedule(topo, SCHEDULE.validate({"policy": policy, "jobs": json.dumps(jobs)}))
        for j in r.jobs:
            assert not bad_hosts & set(np.asarray(demo.gpu_host)[j.gpus].tolist())
    assert int(host_ok(topo).sum()) == 256 - 16


def test_a_job_waits_until_gpus_free_up(demo):
    jobs = [{"name": "big", "model": "llama3-8b", "gpus": 256, "hours": 2.0},
            {"name": "next", "model": "llama3-8b", "gpus": 8, "hours": 1.0, "arrival_hours": 0.5}]
    r = run_schedule(demo, SCHEDULE.validate({"jobs": json.dumps(jobs)}))
    big, nxt = r.jobs
    assert big.start == 0 and big.end == pytest.approx(7200)
    assert nxt.start == pytest.approx(7200) and nxt.wait == pytest.approx(5400)


def test_toml_jobs_file_and_refusals_name_the_job_and_field():
    jobs = parse_jobs('[[job]]\nname = "a"\nmodel = "llama3-8b"\ngpus = 16\nsteps = 5\n'
                      '[[job]]\nmodel = "llama3-70b"\ngpus = 64\npp = 4\nhours = 1.5\narrival_hours = 2\n')
    assert [j.name for j in jobs] == ["a", "job1"] and jobs[1].arrival == 7200 and jobs[1].params["dp"] == 2
    with pytest.raises(ParamError, match=r"jobs\[0\].gpus"):
        parse_jobs(json.dumps([{"model": "llama3-8b", "gpus": 0, "steps": 1}]))
    with pytest.raises(ParamError, match=r"jobs\[0\].hours"):
        parse_jobs(json.dumps([{"gpus": 8, "model": "llama3-8b", "hours": -1}]))
    with pytest.raises(ParamError, match="jobs"):
        parse_jobs("not = [toml")


def test_topology_policy_takes_the_rank_order_with_the_smaller_zone_cut():
    # A 70B job over two zones: DP outermost, a ring crosses the zone layer at 2 of its hops per channel; DP inside
    # PP, every pipeline crosses it. The policy computes both cuts and takes the smaller.
    _, topo = load_topology("meta-roce-24k")
    p = resolve_job(JOB.validate({"model": "llama3-70b", "gpus": 6144, "tp": 8, "pp": 4, "dp": 192,
                                  "batch_tokens": 8192 * 192 * 4}))
    gpus = np.flatnonzero(topo.gpu_usable)[:6144]                    # two zones
    outer = zone_cut_bytes(topo, gpus, {**p, "order": "tp,cp,pp,dp"})
    inner = zone_cut_bytes(topo, gpus, {**p, "order": "tp,cp,dp,pp"})
    assert outer < inner
    r = run_schedule(topo, SCHEDULE.validate({"jobs": json.dumps([{**{k: p[k] for k in (
        "model", "gpus", "tp", "pp", "dp", "batch_tokens")}, "steps": 1}])}))
    assert r.jobs[0].order == "tp,cp,pp,dp" and r.jobs[0].zones == 2
