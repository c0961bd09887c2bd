"""Failures over time (sim/failures/timeline.py, sim/failures/rates.py): exact cases without and with one failure, Poisson
rates recovered, the checkpoint interval against Young/Daly, re-routing around a failed fabric switch, refusals."""
import math

import numpy as np
import pytest

from sim.failures import rates as fr
from sim.cli import main
from sim.core.errors import ParamError
from sim.failures.prepare import NET_CABLE, NET_SWITCH, prepare
from sim.failures.summary import summarize
from sim.failures.sweep import sweep
from sim.failures.timeline import PHASES, STATES, Timeline, simulate
from sim.failures.params import FAILURES
from sim.fabric.topology import load_topology

# A small job on demo-256 (Llama 3 8B, TP 8, DP 16 over 16 hosts of 8 racks); stores and rates set per test. The
# background write slows no training unless a test says so (checkpoint_background_speed: the host CPU's charge).
JOB = {"model": "llama3-8b", "gpus": 128, "pp": 1, "store": "off", "checkpoint_background_speed": 1.0}
QUIET = {"rates": "planned=0", "rate_scale": 0.0}          # no failure at all unless injected


@pytest.fixture(scope="module")
def topo():
    return load_topology("demo-256")[1]


def _check_accounting(r):
    """Wall time splits exactly into productive training and the losses; segments tile [0, wall]."""
    assert r["productive_s"] + sum(r["lost"]["by_phase"].values()) == pytest.approx(r["wall_s"], rel=1e-12)
    assert sum(r["lost"]["by_cause"].values()) == pytest.approx(sum(r["lost"]["by_phase"].values()), rel=1e-9)
    tl = r["timeline"]
    start, end = np.array(tl["start"]), np.array(tl["end"])
    assert start[0] == 0.0 and end[-1] == pytest.approx(r["wall_s"])
    np.testing.assert_allclose(start[1:], end[:-1], rtol=0, atol=1e-6)


def test_calibration_is_the_table_count_over_units_and_hours():
    gpu = fr.CATEGORIES["gpu"]
    assert fr.rate_per_unit_hour(gpu) == 148 / (16384 * 54 * 24)
    assert fr.rate_per_unit_hour(fr.CATEGORIES["ssd"]) == 3 / (2048 * 54 * 24)
    assert fr.rate_per_unit_hour(fr.CATEGORIES["software"]) == 54 / (54 * 24)
    # Over the table's job and span the expected counts are the table's counts
    expected = {n: fr.rate_per_unit_hour(c) * fr.reference_units(c.unit) * fr.TABLE_HOURS
                for n, c in fr.CATEGORIES.items()}
    assert sum(v for n, v in expected.items() if n != "planned") == pytest.approx(419)
    assert expected["planned"] == pytest.approx(47)


def test_no_failures_effective_time_is_training_minus_checkpoint_overhead(topo):
    # Given no failures, checkpoints every 30 min of training that block it 10 s
    days, interval, blocked = 2.0, 1800.0, 10.0
    r = simulate(topo, {**JOB, **QUIET, "days": days, "checkpoint_interval": "30m", "checkpoint_blocked_s": blocked,
                        "checkpoint_durable_s": 25.0}, seed=3)
    wall = days * 86400
    # checkpoint k starts after (k+1) intervals of training and k blocks: I + k (I + b) < wall
    n = math.floor((wall - interval) / (interval + blocked)) + 1
    last_end = min(interval + (n - 1) * (interval + blocked) + blocked, wall)
    overhead = (n - 1) * blocked + (last_end - (interval + (n - 1) * (interval + blocked)))
    assert r["checkpoint"]["count"] == n
    assert r["interruptions"] == 0 and r["events"] == []
    assert r["effective_ratio"] == pytest.approx((wall - overhead) / wall, rel=1e-12)
    assert r["lost"]["by_phase"]["checkpoint"] == pytest.approx(overhead, rel=1e-12)
    _check_accounting(r)
    assert set(r["timeline"]["state"]) == {STATES.index("training"), STATES.index("checkpointing")}


def test_one_failure_loses_the_work_since_the_last_durable_checkpoint_plus_detection_restart_restore(topo):
    # Given one GPU failure at 10 h, checkpoints every 30 min blocking 10 s and durable 20 s after their start
    ctx = prepare(topo, {**JOB, **QUIET, "days": 1, "checkpoint_interval": "30m", "checkpoint_blocked_s": 10,
                         "checkpoint_durable_s": 20, "restore_s": 45, "detection_s": 120, "restart_s": 240})
    gpu = ctx.names()["gpu"][int(ctx.gpus[5])]
    r = simulate(topo, {**JOB, **QUIET, "days": 1, "checkpoint_interval": "30m", "checkpoint_blocked_s": 10,
                        "checkpoint_durable_s": 20, "restore_s": 45, "detection_s": 120, "restart_s": 240,
                        "inject": f"gpu:{gpu}@10h"})
    I, b, d, tf = 1800.0, 10.0, 20.0, 36000.0
    # checkpoint k starts at I + k (I + b) with the progress (k + 1) I; the newest durable at tf: start + d <= tf
    k = math.floor((tf - d - I) / (I + b))
    started = math.floor((tf - I) / (I + b)) + 1                  # checkpoints begun before the failure
    progress_at_failure = tf - started * b
    lost = progress_at_failure - (k + 1) * I
    (e,) = r["events"]
    assert (e["category"], e["item"], e["consequence"], e["injected"]) == ("gpu", gpu, "crash", True)
    assert e["lost_work"] == pytest.approx(lost, rel=1e-12)
    assert e["restored_from"] == pytest.approx(I + k * (I + b))
    assert (e["detection"], e["wait"], e["restart"], e["restore"]) == (120, 0.0, 240, 45)   # a spare host at once
    ph = r["lost"]["by_phase"]
    assert ph["recompute"] == pytest.approx(lost) and ph["detection"] == 120 and ph["restart"] == 240
    assert ph["restore"] == 45
    assert r["lost"]["by_cause"]["gpu"] == pytest.approx(lost + 120 + 240 + 45)
    assert r["interruptions"] == 1
    _check_accounting(r)


def test_without_spares_the_job_waits_for_the_repair(topo):
    ctx = prepare(topo, {**JOB, **QUIET, "days": 1, "spares": 0, "repair_h": "gpu=3"})
    gpu = ctx.names()["gpu"][int(ctx.gpus[0])]
    r = simulate(topo, {**JOB, **QUIET, "days": 1, "spares": 0, "repair_h": "gpu=3", "inject": f"gpu:{gpu}@2h"})
    (e,) = r["events"]
    assert e["wait"] == pytest.approx(3 * 3600 - e["detection"])
    assert r["lost"]["by_phase"]["wait"] == pytest.approx(3 * 3600 - e["detection"])


def test_poisson_rates_are_recovered_from_a_long_run(topo):
    # Given GPU failures at 1e-3 per GPU-hour and host ones at 2e-3 per host-hour over four years of 128 GPUs
    days = 1500.0
    r = simulate(topo, {**JOB, "days": days, "rates": "gpu=1e-3,host_maintenance=2e-3,planned=0",
                        "rate_scale": 1.0, "checkpoint_interval": "1h"}, seed=11)
    counts = r["failures_by_category"]
    hours = days * 24
    for name, rate, units in (("gpu", 1e-3, 128), ("host_maintenance", 2e-3, 16)):
        expected = rate * units * hours
        # Poisson: within 4 standard deviations
        assert abs(counts[name] - expected) < 4 * math.sqrt(expected), (name, counts[name], expected)
    # the other categories keep the table's rates: the software bug's is per job, 54 / 1,296 h
    soft = fr.rate_per_unit_hour(fr.CATEGORIES["software"]) * hours
    assert abs(counts["software"] - soft) < 4 * math.sqrt(soft)
    _check_accounting(r)


def test_simulated_optimal_interval_is_near_young_daly(topo):
    # Given Young's assumptions: exponential crashes (one job-level category, MTBF 2 h), a checkpoint that blocks
    # training C = 60 s and is durable when it ends, no detection, restart or restore time
    values = {**JOB, "days": 10, "rates": "software=0.5", "rate_scale": 1.0, "checkpoint_mode": "sync",
              "checkpoint_blocked_s": 60, "checkpoint_durable_s": 60, "restore_s": 0, "detection_s": 0,
              "restart_s": 0, "planned_down_s": 0}
    values["rates"] = ",".join(["software=0.5"] + [f"{n}=0" for n in fr.NAMES if n != "software"])
    ctx = prepare(topo, values)
    yd = math.sqrt(2 * 60 * 7200)                                 # 929 s
    assert ctx.young_daly_s() == pytest.approx(yd)
    s = sweep(ctx, values, [yd * f for f in (0.25, 0.4, 0.6, 0.8, 1.0, 1.25, 1.6, 2.5, 4.0)], seeds=24)
    assert s["young_daly_s"] == pytest.approx(yd)
    assert yd / 1.6 <= s["best_interval_s"] <= yd * 1.6
    means = [row["effective_ratio"]["mean"] for row in s["rows"]]
    assert means[0] < s["best_effective_ratio"] and means[-1] < s["best_effective_ratio"]


def test_a_failed_fabric_switch_slows_the_job_and_does_not_kill_it(topo):
    # Given the job's spines (CTSWs) above its racks: three of a zone's four fail at 1 h for 2 h
    values = {**JOB, **QUIET, "days": 0.25, "repair_h": "network=2", "fabric_states": "exact"}
    ctx = prepare(topo, values)
    spines = [ctx.names()["switch"][int(i)]
              for i in ctx.net_id[(ctx.net_kind == NET_SWITCH) & ~ctx.net_crash]]
    zone0 = [n for n in spines if ".z00." in n][:3]
    assert len(zone0) == 3
    r = simulate(topo, {**values, "inject": ",".join(f"switch:{n}@1h" for n in zone0)})
    assert [e["consequence"] for e in r["events"]] == ["degrade"] * 3
    assert r["interruptions"] == 0
    assert max(e["slowdown"] for e in r["events"]) > 1.0           # routed around, on fewer uplinks
    assert r["lost"]["by_phase"]["degradation"] > 0
    assert r["lost"]["by_cause"]["network"] == pytest.approx(r["lost"]["by_phase"]["degradation"])
    assert STATES.index("degraded") in r["timeline"]["state"]
    _check_accounting(r)
    # while a NIC's only cable has no other path: the same kind of failure crashes the job
    nic_cable = ctx.names()["link"][int(ctx.net_id[(ctx.net_kind == NET_CABLE) & ctx.net_crash][0])]
    r = simulate(topo, {**values, "inject": f"link:{nic_cable}@1h"})
    assert [e["consequence"] for e in r["events"]] == ["crash"] and r["interruptions"] == 1
    # and with reroute off the fabric switch crashes it too
    r = simulate(topo, {**values, "reroute": False, "inject": f"switch:{zone0[0]}@1h"})
    assert [e["consequence"] for e in r["events"]] == ["crash"]


def test_a_thermally_throttled_gpu_slows_the_job_until_its_straggler_is_found_then_its_host_is_swapped(topo):
    # Given one GPU throttled at 2 h, its straggler found 30 min later, no checkpoint before them
    values = {**JOB, **QUIET, "days": 0.5, "checkpoint_interval": "11h", "checkpoint_blocked_s": 10,
              "checkpoint_durable_s": 20, "restore_s": 45, "restart_s": 240, "straggler_detect_s": 1800,
              "thermal_speed": 0.5}
    ctx = prepare(topo, values)
    gpu = ctx.names()["gpu"][int(ctx.gpus[3])]
    r = simulate(topo, {**values, "inject": f"thermal:{gpu}@2h"})
    throttle, swap = r["events"]
    # the throttle: a degradation, the step's compute part at half speed
    assert (throttle["category"], throttle["consequence"]) == ("thermal", "degrade")
    assert throttle["slowdown"] == pytest.approx((ctx.step_s + ctx.compute_s) / ctx.step_s)
    # the swap: a stop 30 min later, counted as an interruption, detected at once, a spare host at once
    assert (swap["category"], swap["consequence"], swap["time"]) == ("thermal", "crash", 2 * 3600 + 1800)
    assert (swap["detection"], swap["wait"], swap["restart"], swap["restore"]) == (0.0, 0.0, 240, 45)
    assert r["interruptions"] == 1 and r["failures_by_category"]["thermal"] == 1
    assert swap["restored_from"] == 0.0                  # no durable checkpoint yet: from the start
    assert "thermal" not in r["detection"]["by_class"]   # the straggler's search is not a crash's detection
    # the job ran throttled for those 30 min only (its step's compute part twice as long), then healthy again
    slow = 1800 * (1 - ctx.step_s / (ctx.step_s + ctx.compute_s))
    assert r["lost"]["by_phase"]["degradation"] == pytest.approx(slow, rel=1e-6)
    _check_accounting(r)
    # a restart for another cause before the straggler is found leaves the host behind: no stop of its own
    other = ctx.names()["gpu"][int(ctx.gpus[40])]
    r = simulate(topo, {**values, "inject": f"thermal:{gpu}@2h,gpu:{other}@2.2h"})
    assert [e["consequence"] for e in r["events"]] == ["degrade", "crash"] and r["interruptions"] == 1


def test_network_failures_are_counted_per_item_as_the_table_counts_interruptions():
    # The table's 35 are interruptions: the failures of the items with no other path (NIC cables, rack switches)
    assert fr.reference_units("network_item") == 16384 + 16384 // 16
    assert fr.rate_per_unit_hour(fr.CATEGORIES["network"]) == 35 / (17408 * 54 * 24)
    # Given the table's job on its cluster: its items with no other path are the 17,408, so its expected network
    # crashes over the table's span are the table's 35, and the items above the racks (routed around) come on top
    ctx = prepare("meta-roce-24k", {"model": "llama3-8b", "gpus": 16384, "tp": 8, "pp": 1, "days": 54,
                                    "store": "off"})
    assert int(ctx.net_crash.sum()) == fr.TABLE_NETWORK_ITEMS
    lam = ctx.rates["network"] * ctx.units("network_item")
    assert lam * float(ctx.net_crash.mean()) * fr.TABLE_HOURS == pytest.approx(35)
    assert ctx.units("network_item") > fr.TABLE_NETWORK_ITEMS


def test_summary_over_seeds(topo):
    ctx = prepare(topo, {**JOB, "days": 5, "rate_scale": 20.0})
    results = [Timeline(ctx, s, ctx.checkpoint["interval_s"]).run().to_dict() for s in range(8)]
    s = summarize(results)
    eff = [r["effective_ratio"] for r in results]
    assert s["count"] == 8 and s["effective_ratio"]["mean"] == pytest.approx(np.mean(eff))
    assert s["effective_ratio"]["p5"] <= s["effective_ratio"]["p50"] <= s["effective_ratio"]["p95"]
    assert set(s["lost_mean"]["by_phase"]) == set(PHASES)
    for r in results:
        _check_accounting(r)


def test_the_live_view_follows_each_failure_as_it_is_simulated(topo):
    # given a 5-day job with many failures, watched failure by failure
    seen = []
    r = simulate(topo, {**JOB, "days": 5, "rate_scale": 20.0}, 3, on_failure=lambda now, e: seen.append((now, e)))
    # then each failure is seen once, in time order, with its event
    assert len(seen) == sum(r["failures_by_category"].values()) == len(r["events"]) > 10
    times = [now["time"] for now, _ in seen]
    assert times == sorted(times) and [e for _, e in seen] == r["events"]
    # and the state then is one of the timeline's, the figures so far bounded by what the end reports
    for now, e in seen:
        assert now["state"] in STATES and 0.0 <= now["effective_ratio"] <= 1.0
        assert now["productive_s"] <= now["time"] and now["interruptions"] <= r["interruptions"]
        if e["consequence"] == "crash":
            assert now["state"] == "down"
    assert seen[-1][0]["interruptions"] == r["interruptions"]


@pytest.mark.parametrize("values, field", [
    ({"days": -1}, "days"),
    ({"days": 1, "checkpoint_interval": "2d"}, "checkpoint_interval"),
    ({"checkpoint_interval": "soon"}, "checkpoint_interval"),
    ({"rates": "gpu=1e-6,warp_drive=1"}, "rates"),
    ({"rates": "gpu=-1"}, "rates"),
    ({"repair_h": "nic"}, "repair_h"),
    ({"inject": "flux:capacitor@1h"}, "inject"),
    ({"days": 1, "inject": "software@30h"}, "inject"),
    ({"sweep_interval": "4h:5m"}, "sweep_interval"),
])
def test_refused_inputs_name_the_field(values, field):
    with pytest.raises(ParamError) as e:
        FAILURES.validate({**JOB, **values})
    assert field in e.value.errors


def test_unknown_or_foreign_items_are_refused(topo):
    with pytest.raises(ParamError) as e:
        prepare(topo, {**JOB, "inject": "gpu:demo-256.z09.r000.h0.gpu0@1h"})
    assert "unknown GPU" in e.value.errors["inject"][0]
    unused = load_topology("demo-256")[1]
    from sim.fabric.names import host_names
    last_host = host_names(unused.layout)[-1]                      # the job (topology placement) uses the first
    with pytest.raises(ParamError) as e:
        prepare(topo, {**JOB, "inject": f"host:{last_host}@1h"})
    assert "not one of the job's hosts" in e.value.errors["inject"][0]


def test_cli_refuses_with_the_field_and_exit_2(capsys):
    assert main(["failures", "--preset", "demo-256", "--days", "-3", "-q"]) == 2
    assert "days:" in capsys.readouterr().err
    assert main(["failures", "--preset", "demo-256", "--model", "llama3-8b", "--gpus", "128", "--pp", "1",
                 "--days", "1", "--checkpoint-interval", "30h", "-q"]) == 2
    assert "checkpoint_interval:" in capsys.readouterr().err
    assert main(["failures", "--preset", "demo-256", "--model", "llama3-8b", "--gpus", "128", "--pp", "1",
                 "--days", "1", "--inject", "switch:nope@1h", "-q"]) == 2
    assert "inject:" in capsys.readouterr().err


def test_cli_prints_the_timeline_summary_and_sweep(capsys):
    import json
    assert main(["failures", "--preset", "demo-256", "--model", "llama3-8b", "--gpus", "128", "--pp", "1",
                 "--days", "3", "--seeds", "3", "--rate-scale", "10", "--sweep-interval", "10m:2h:3", "--json",
                 "-q"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"]["count"] == 3 and len(doc["sweep"]["rows"]) == 3
    assert doc["result"]["timeline"]["states"] == list(STATES)


# --------------------------------------------------------------------------- cadence, full cost, detection
def _wait_reference(wall, interval, cost, durable):
    """Hand-worked cadence with overlapping wait, no failure: each checkpoint due after ``interval`` of training,
    started once the previous one is durable; returns the starts and the seconds training waited."""
    t, last, starts, waited = 0.0, -math.inf, [], 0.0
    while True:
        due = t + interval
        if due >= wall:
            return starts, waited
        start = max(due, last + durable)
        waited += min(start, wall) - due
        if start >= wall:
            return starts, waited
        starts.append(start)
        last, t = start, start + cost


def _skip_reference(wall, interval, cost, durable):
    """The same with overlapping skip: a due point before the previous checkpoint is durable is not taken."""
    due, last, starts, skipped = interval, -math.inf, [], 0
    while due < wall:
        if due >= last + durable:
            starts.append(due)
            last, due = due, due + cost + interval
        else:
            skipped, due = skipped + 1, due + interval
    return starts, skipped


CADENCE = {**JOB, **QUIET, "days": 0.25, "checkpoint_interval": "10s", "checkpoint_blocked_s": 1.0,
           "checkpoint_durable_s": 100.0}


def test_wait_cadence_charges_the_time_until_the_previous_checkpoint_is_durable(topo):
    # Given checkpoints due every 10 s of training that take 100 s to become durable (store off: cost = blocked)
    r = simulate(topo, {**CADENCE, "overlapping": "wait"}, seed=1)
    starts, waited = _wait_reference(r["wall_s"], 10.0, 1.0, 100.0)
    # then training waits D - C - I = 89 s before each checkpoint after the first, one checkpoint per durable time
    assert r["checkpoint"]["count"] == len(starts) and r["checkpoint"]["skipped"] == 0
    assert r["lost"]["by_phase"]["checkpoint_wait"] == pytest.approx(waited, rel=1e-9)
    assert np.diff(starts) == pytest.approx(100.0)
    assert r["productive_s"] == pytest.approx(10.0 * len(starts) + 10.0 * (r["wall_s"] > starts[-1] + 11.0), rel=0.02)
    _check_accounting(r)


def test_skip_cadence_keeps_one_checkpoint_per_durable_time_and_trains_meanwhile(topo):
    r = simulate(topo, {**CADENCE, "overlapping": "skip"}, seed=1)
    starts, skipped = _skip_reference(r["wall_s"], 10.0, 1.0, 100.0)
    assert r["checkpoint"]["count"] == len(starts) and r["checkpoint"]["skipped"] == pytest.approx(skipped, abs=10)
    assert r["lost"]["by_phase"]["checkpoint_wait"] == 0.0
    assert r["lost"]["by_phase"]["checkpoint"] == pytest.approx(1.0 * len(starts), rel=1e-9)
    assert np.diff(starts).min() >= 100.0
    _check_accounting(r)


@pytest.mark.parametrize("overlapping", ["wait", "skip"])
def test_a_crash_restarts_from_the_newest_durable_checkpoint_not_the_newest_started(topo, overlapping):
    # Given the cadence above and a software crash 50 s after a checkpoint started (durable 100 s after its start)
    reference = _wait_reference if overlapping == "wait" else _skip_reference
    starts = reference(CADENCE["days"] * 86400, 10.0, 1.0, 100.0)[0]
    at = starts[5] + 50.0
    r = simulate(topo, {**CADENCE, "overlapping": overlapping, "inject": f"software@{at}s"}, seed=1)
    (e,) = r["events"]
    # then the checkpoint started at starts[5] is not durable yet: the restart is from the one before it
    assert e["restored_from"] == pytest.approx(starts[4])
    # and the work lost is the progress since that one's snapshot: wait: the 10 s between the two snapshots and
    # 10 s trained after the last one's 1 s cost (then training waits for it to be durable); skip: the 100 s (ten
    # due points per checkpoint) between them and the 49 s trained since
    assert e["lost_work"] == pytest.approx(10.0 + 10.0 if overlapping == "wait" else 100.0 + 49.0)
    _check_accounting(r)


def test_the_checkpoint_s_full_cost_charges_its_drain_s_share_of_data_loading():
    from sim.failures.costs import drain_loss_s
    # the loader keeps 75 % of its demand during a 2 s drain, all of it without the checkpoint: 0.5 s of training
    assert drain_loss_s(0.75, 1.0, 2.0) == pytest.approx(0.5)
    # a store that keeps 80 % without the checkpoint: only the checkpoint's share is charged
    assert drain_loss_s(0.6, 0.8, 2.0) == pytest.approx(0.5)
    assert drain_loss_s(1.0, 1.0, 2.0) == 0.0


def test_each_failure_class_is_detected_by_its_own_mechanism(topo):
    from sim.failures import detection as fd
    ctx = prepare(topo, {**JOB, **QUIET, "days": 1})
    host = ctx.names()["host"][int(ctx.hosts[0])]
    link = ctx.item_name("network", 0)                  # a NIC cable: no other path, a crash
    r = simulate(topo, {**JOB, **QUIET, "days": 1, "inject": f"software@1h,nccl_watchdog@4h,host:{host}@8h,"
                                                             f"link:{link}@12h"})
    per = fd.mechanism_seconds(600.0, r["step_s"])
    got = {e["category"]: e["detection"] for e in r["events"]}
    assert got == pytest.approx({"software": per["process_exit"], "nccl_watchdog": per["watchdog"],
                                 "host_maintenance": per["host_lost"], "network": per["transport"]})
    # the watchdog's 10 min and the dump wait; RDMA retries 4.096 us x 2^20 x 8 and the dump wait; the agent's poll
    assert per["watchdog"] == pytest.approx(600 + 60 + 0.1)
    assert per["transport"] == pytest.approx(4.096e-6 * 2 ** 20 * 8 + 60 + 0.1)
    assert r["detection"]["by_class"] == pytest.approx(got)
    assert r["lost"]["by_phase"]["detection"] == pytest.approx(sum(got.values()))
    # every crash category has one mechanism; detection_s replaces them all
    assert {row["category"] for row in r["detection"]["table"]} == set(fd.MECHANISM_OF)
    one = simulate(topo, {**JOB, **QUIET, "days": 1, "detection_s": 42, "inject": "software@1h,nccl_watchdog@4h"})
    assert [e["detection"] for e in one["events"]] == [42, 42]


def test_the_sweep_optimum_is_not_below_the_durable_time(topo):
    # Given a checkpoint that blocks 0.01 s but is durable only after 20 min, and frequent crashes
    values = {**JOB, "days": 4, "rate_scale": 20.0, "checkpoint_blocked_s": 0.01, "checkpoint_durable_s": 1200.0,
              "restore_s": 0.0}
    ctx = prepare(topo, values)
    w = sweep(ctx, values, [60, 300, 1200, 2400, 4800], seeds=3)
    # then checkpointing more often than it becomes durable does not pay: the optimum is at least the durable time
    assert w["best_interval_s"] >= w["checkpoint_durable_s"] == 1200.0
    assert w["checkpoint_cost_s"] == pytest.approx(0.01)
    assert w["young_daly_s"] == pytest.approx(math.sqrt(2 * 0.01 * w["mtbf_s"]))


def test_cli_json_carries_the_published_record_beside_the_simulated(capsys):
    import json
    assert main(["failures", "--preset", "demo-256", "--model", "llama3-8b", "--gpus", "128", "--pp", "1",
                 "--days", "2", "--json", "-q"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rows = {p["key"]: p for p in doc["published"]}
    assert set(rows) == {"llama3-interruptions", "llama3-unexpected", "llama3-effective-time"}
    assert rows["llama3-interruptions"]["low"] == 466 and rows["llama3-unexpected"]["low"] == 419
    assert rows["llama3-effective-time"]["simulated"] == pytest.approx(doc["summary"]["effective_ratio"]["mean"])
    assert not rows["llama3-effective-time"]["same_case"] and "128 GPUs" in rows["llama3-effective-time"]["differs"]
    assert all(p["source"] == "S3" and p["why"] for p in doc["published"])


def test_doctests():
    import doctest
    assert doctest.testmod(fr).failed == 0


def test_data_loading_that_needs_all_the_bandwidth_slows_by_exactly_the_share_the_write_takes():
    from sim.failures.costs import background_loss_s
    # Given a loader that needs all its bandwidth and keeps 60 % of it while a 2 s background write runs: training,
    # paced by its input, runs at 60 % for those 2 s and loses 0.8 s; a host with no CPU contention adds nothing
    assert background_loss_s(0.6, 1.0, 1.0, 2.0) == pytest.approx((0.8, 0.0))
    # the host CPU's pace (45 % of the throughput left) is slower than the input's (60 %): it charges the rest of
    # (1 - 0.45) x 2 s beyond the data loading's 0.8 s
    assert background_loss_s(0.6, 1.0, 0.45, 2.0) == pytest.approx((0.8, 0.3))
    # the input slower than the host: the host adds nothing
    assert background_loss_s(0.3, 1.0, 0.45, 2.0) == pytest.approx((1.4, 0.0))
    # a loader fed whole: only the host's share, (1 - 0.45) x 2 s
    assert background_loss_s(1.0, 1.0, 0.45, 2.0) == pytest.approx((0.0, 1.1))
    assert background_loss_s(1.0, 1.0, 0.45, 0.0) == (0.0, 0.0)


def test_the_timeline_charges_each_part_of_the_full_cost_per_checkpoint(topo):
    # Given checkpoints every 30 min blocking 1 s, durable 21 s after their start, training kept at 45 % meanwhile
    r = simulate(topo, {**JOB, **QUIET, "days": 1, "checkpoint_blocked_s": 1.0, "checkpoint_durable_s": 21.0,
                        "checkpoint_background_speed": 0.45})
    ck = r["checkpoint"]
    # then each costs its 1 s wait and (1 - 0.45) x 20 s of the background write's host CPU, and no data loading
    assert (ck["host_cpu_s"], ck["data_loading_s"]) == pytest.approx((11.0, 0.0))
    assert ck["cost_s"] == pytest.approx(12.0)
    n = ck["count"]
    tail = r["wall_s"] - (n * 1800.0 + (n - 1) * 12.0)        # the last checkpoint's cost may run past the end
    assert r["lost"]["by_phase"]["checkpoint"] == pytest.approx(n * 1.0 - max(0.0, 1.0 - tail), rel=1e-9)
    assert r["lost"]["by_phase"]["checkpoint_host"] == pytest.approx((n - 1) * 11.0 + min(11.0, max(0.0, tail - 1.0)),
                                                                      rel=1e-9)
    assert r["young_daly_s"] == pytest.approx(math.sqrt(2 * 12.0 * r["mtbf_s"]))
    _check_accounting(r)
    # sync mode: training is stopped for the whole write, the background costs nothing more
    s = simulate(topo, {**JOB, **QUIET, "days": 1, "checkpoint_mode": "sync", "checkpoint_durable_s": 21.0,
                        "checkpoint_background_speed": 0.45})
    assert s["checkpoint"]["host_cpu_s"] == 0.0 and s["checkpoint"]["cost_s"] == s["checkpoint"]["blocked_s"]


@pytest.mark.parametrize("overlapping", ["wait", "skip"])
def test_a_cadence_above_the_store_s_sustained_rate_cannot_keep_up(topo, overlapping):
    from sim.failures.costs import store_gap_s
    from sim.storage.published import CLUSTER_SHARE, SUSTAINED_BPS
    # The store absorbs a cluster's share of its sustained rate, less the job's own reads
    assert store_gap_s("tectonic", 8e12, 0.0) == pytest.approx(8e12 / (SUSTAINED_BPS * CLUSTER_SHARE))
    assert store_gap_s("tectonic", 8e12, 0.5e12) == pytest.approx(8e12 / (SUSTAINED_BPS * CLUSTER_SHARE - 0.5e12))
    assert store_gap_s("hammerspace", 8e12, 0.0) == 0.0            # no published sustained rate
    with pytest.raises(ParamError) as e:
        store_gap_s("tectonic", 8e12, SUSTAINED_BPS * CLUSTER_SHARE)
    assert set(e.value.errors) == {"data_loading_gbps"}
    # Given checkpoints due every 10 s of training, durable after 2 s, whose bytes the store absorbs in 100 s
    values = {**CADENCE, "checkpoint_durable_s": 2.0, "overlapping": overlapping}
    ctx = prepare(topo, values)
    ctx.checkpoint["store_gap_s"] = 100.0
    r = Timeline(ctx, 1, 10.0).run().to_dict()
    # then they go as if each were durable after 100 s: one per 100 s, as the cadence tests' references say
    reference = _wait_reference if overlapping == "wait" else _skip_reference
    starts = reference(r["wall_s"], 10.0, 1.0, 100.0)[0]
    assert r["checkpoint"]["count"] == len(starts)
    if overlapping == "wait":
        assert r["lost"]["by_phase"]["checkpoint_wait"] == pytest.approx(reference(r["wall_s"], 10.0, 1.0, 100.0)[1],
                                                                         rel=1e-9)
    _check_accounting(r)
    # and a crash still restarts from the newest checkpoint durable at 2 s after its start
    at = starts[5] + 50.0
    ctx.checkpoint["store_gap_s"] = 100.0
    ctx.injections = [(at, "software", 0)]
    (e,) = Timeline(ctx, 1, 10.0).run().to_dict()["events"]
    assert e["restored_from"] == pytest.approx(starts[5])


def test_zero_metadata_cost_and_no_contention_give_the_storage_model_s_figures(topo, monkeypatch):
    from dataclasses import replace
    from sim.failures import costs
    from sim.storage.checkpoint import run_checkpoint
    values = {**JOB, **QUIET, "store": "tectonic", "days": 1}
    ctx = prepare(topo, values)
    ck = ctx.checkpoint
    # DCP's .metadata file: the store's operations per file one after the other, after every rank's files
    m = costs.STORES["tectonic"]
    assert ck["dcp_finish_s"] == pytest.approx(m.write_ops_per_file * m.metadata_latency_us * 1e-6)
    # Given no metadata latency (the .metadata file costs nothing) and a host the writer does not slow
    monkeypatch.setitem(costs.STORES, "tectonic", replace(m, metadata_latency_us=0.0))
    zero = prepare(topo, values).checkpoint
    # then the checkpoint is the storage model's, and its cost its wait alone, as before the full cost
    w = run_checkpoint(topo.layout, {**costs.CHECKPOINT.validate({}), "gpus": 128, "bytes_per_gpu": ck["bytes_per_gpu"],
                                     "store": "tectonic", "placement": ctx.params["placement"], "seed": 0,
                                     "samples": 2, "hottest": 0, "data_loading_gbps": ck["data_loading_gbps"]},
                       backend=topo)
    assert zero["dcp_finish_s"] == 0.0
    assert zero["durable_s"] == pytest.approx(w.durable_seconds)
    assert zero["cost_s"] == pytest.approx(zero["blocked_s"] + zero["data_loading_s"])
    assert zero["host_cpu_s"] == 0.0


def test_a_fleet_s_node_failure_rate_scales_the_node_categories_only():
    # Meta's table: 321 node failures (GPU- and host-counted causes but the fabric's) over 2,048 hosts x 54 days
    assert fr.table_node_rate() == pytest.approx(1000 * 321 / (2048 * 54))
    assert fr.fleet_scale(None) == 1.0
    base, fleet = fr.rates(), fr.rates(node_scale=fr.fleet_scale(6.5))
    per_node_day = sum(fleet[n] * fr.reference_units(fr.CATEGORIES[n].unit) for n in fr.NODE_CATEGORIES) \
        * 24 / fr.reference_units("host")
    assert per_node_day * 1000 == pytest.approx(6.5)                  # the fleet's rate, Meta's mix of causes
    assert fleet["gpu"] / base["gpu"] == pytest.approx(6.5 / fr.table_node_rate())
    for n in ("network", "software", "nccl_watchdog", "dependency", "planned"):
        assert fleet[n] == base[n]                                    # not a node's: as counted
    assert fr.rates({"gpu": 1e-6}, node_scale=3.0)["gpu"] == 1e-6     # an override stays what it says


def test_a_preset_s_fleet_rate_reaches_the_timeline_and_the_published_comparison():
    ctx = prepare("dgx-a100-superpod", {"gpus": 64, "model": "llama3-8b", "pp": 1, "days": 1.0})
    assert ctx.rates["hbm"] == pytest.approx(fr.rates()["hbm"] * 6.5 / fr.table_node_rate())
    assert ctx.rates["software"] == fr.rates()["software"]
