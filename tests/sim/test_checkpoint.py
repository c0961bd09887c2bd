"""Checkpoints and restores (sim/storage/checkpoint.py) on demo-256's frontend fabric and storage: analytic cases,
conservation, write amplification, async vs sync, failed servers and SSDs. Expected times are computed from the
resources' capacities (sim/storage/topology.py), never typed in."""
import copy

import numpy as np
import pytest

import sim.storage.checkpoint as ck
from sim.storage.checkpoint import run_checkpoint
from sim.core.errors import ParamError
from sim.fabric.layout import STATUS_FAILED, expand
from sim.storage.params import CHECKPOINT
from sim.fabric.spec import load_spec, parse_spec
from sim.storage.topology import build_storage

# Metadata and the default training-data reads out of the way for analytic cases.
FAST_META = {"metadata_kops": 1e6, "metadata_latency_us": 0.0, "data_loading_gbps": 0.0}


@pytest.fixture
def lay():
    return expand(load_spec("demo-256"))


@pytest.fixture(autouse=True)
def exact(monkeypatch):
    monkeypatch.setattr(ck, "EVENT_MERGE", 0.0)                     # exact events (merging tested separately)


@pytest.fixture
def hardware(monkeypatch):
    """The hardware path alone: a store without a published aggregate, whose service rate per server is its
    frontend line rate (sim/storage/topology.py), so the NICs, CPUs and SSDs decide the analytic cases."""
    import sim.storage.published as pub
    monkeypatch.delitem(pub.SERVICE_RATES, "tectonic")


def _upload(r):
    p = {ph["name"]: ph for ph in r.phases}
    name = "reading" if r.restore else "uploading"
    return p[name]["end"] - p[name]["start"]


def _tectonic(lay):
    return np.flatnonzero(lay.server_storage == 0)


def test_one_client_one_server_runs_at_the_slowest_of_nic_server_nic_and_ssd(lay, hardware):
    st = build_storage(lay)
    srv = _tectonic(lay)[0]
    B = 1 << 30
    r = run_checkpoint(lay, CHECKPOINT.validate(dict(gpus=1, bytes_per_gpu=B, servers=1, spread=1, redundancy="none",
                                                  **FAST_META)))
    host = int(r.hosts[0])
    client_nic = st.capacity[st.topo.gpu_uplink[st.host_ep[host, 0]]]
    server_nic = st.capacity[st.topo.gpu_downlink[st.server_ep[srv, 0]]]
    ssd = st.capacity[st.server_ssd_write[srv]] / r.costs["ssd_write_amp"]   # the chunk store writes a bit more
    assert _upload(r) == pytest.approx(B / min(client_nic, server_nic, ssd), rel=1e-9)
    # Three of its four SSDs failed: the SSDs bind.
    lay.ssd_status[lay.ssd_server == srv] = [STATUS_FAILED, STATUS_FAILED, STATUS_FAILED, 0]
    ssd1 = build_storage(lay).capacity[st.server_ssd_write[srv]] / r.costs["ssd_write_amp"]
    assert ssd1 == pytest.approx(ssd / 4)
    r = run_checkpoint(lay, CHECKPOINT.validate(dict(gpus=1, bytes_per_gpu=B, servers=1, spread=1, redundancy="none",
                                                  **FAST_META)))
    assert _upload(r) == pytest.approx(B / min(client_nic, server_nic, ssd1), rel=1e-9)
    assert r.bottlenecks[0].tier == "ssd-write"


def test_restore_of_one_client_reads_at_the_slowest_of_ssd_read_and_nics(lay, hardware):
    st = build_storage(lay)
    srv = _tectonic(lay)[0]
    B = 1 << 30
    r = run_checkpoint(lay, CHECKPOINT.validate(dict(gpus=1, bytes_per_gpu=B, servers=1, spread=1, restore=True,
                                                  **FAST_META)))
    host = int(r.hosts[0])
    rate = min(st.capacity[st.topo.gpu_downlink[st.host_ep[host, 0]]],
               st.capacity[st.topo.gpu_uplink[st.server_ep[srv, 0]]], st.capacity[st.server_ssd_read[srv]])
    assert r.amplification == 1.0 and r.stored_bytes == B                # RS reads the data chunks only
    assert _upload(r) == pytest.approx(B / rate, rel=1e-9)
    assert r.blocked_seconds == r.durable_seconds > _upload(r)           # then host -> GPU over PCIe


def test_many_clients_over_few_servers_are_network_bound_then_ssd_bound(lay, hardware):
    st = build_storage(lay)
    srv = _tectonic(lay)[:2]
    B = 1 << 30
    kw = dict(gpus=32, bytes_per_gpu=B, servers=2, redundancy="none", **FAST_META)
    nic = st.capacity[st.topo.gpu_downlink[st.server_ep[srv, 0]]]
    assert (st.capacity[st.server_ssd_write[srv]] > nic).all()         # enough SSDs
    r = run_checkpoint(lay, CHECKPOINT.validate(kw))
    assert _upload(r) == pytest.approx(32 * B / nic.sum(), rel=1e-6)
    assert r.bottlenecks[0].tier == "storage-nic down"
    lay.ssd_status[np.isin(lay.ssd_server, srv) & (lay.ssd_slot > 0)] = STATUS_FAILED
    ssd = build_storage(lay).capacity[st.server_ssd_write[srv]]
    assert (ssd < nic).all()                                             # few SSDs
    r = run_checkpoint(lay, CHECKPOINT.validate(kw))
    assert _upload(r) == pytest.approx(32 * B * r.costs["ssd_write_amp"] / ssd.sum(), rel=1e-6)
    assert r.bottlenecks[0].tier == "ssd-write"


@pytest.mark.parametrize("redundancy, amp", [("rs-9-6", 1.5), ("replicate-3", 3.0), ("none", 1.0)])
def test_write_amplification_multiplies_server_side_bytes_and_every_byte_arrives(lay, redundancy, amp):
    r = run_checkpoint(lay, CHECKPOINT.validate(dict(gpus=64, bytes_per_gpu=64 << 20, writers=40,
                                                      redundancy=redundancy)))
    assert r.bytes == 40 * (64 << 20)
    assert r.stored_bytes == pytest.approx(amp * r.bytes)
    assert r.server_bytes.sum() == pytest.approx(amp * r.bytes)        # conservation at the servers
    assert np.ptp(r.server_bytes) <= 1e-9 * r.server_bytes.max()       # placement spreads evenly
    assert r.host_progress[-1] == pytest.approx(np.ones(len(r.hosts)))  # every host's bytes arrived
    assert r.host_bytes.sum() == r.bytes
    assert r.goodput.sum() == pytest.approx(r.rate.sum() / amp)


def test_async_blocked_time_ignores_storage_bandwidth_but_durable_time_does_not(lay):
    kw = dict(gpus=64, bytes_per_gpu=256 << 20, mode="async", data_loading_gbps=0.0)
    many = run_checkpoint(lay, CHECKPOINT.validate(kw))
    few = run_checkpoint(lay, CHECKPOINT.validate({**kw, "servers": 1}))
    assert few.blocked_seconds == pytest.approx(many.blocked_seconds, rel=1e-12)
    assert few.durable_seconds > 2 * many.durable_seconds
    sync = run_checkpoint(lay, CHECKPOINT.validate({**kw, "mode": "sync", "servers": 1}))
    assert sync.blocked_seconds == sync.durable_seconds == pytest.approx(few.durable_seconds)
    # Blocked in async mode = staging: each host's GPUs copy over PCIe into the host's memory copy bandwidth.
    st = build_storage(lay)
    per_host = max(kw["bytes_per_gpu"] / st.capacity[st.gpu_pcie[0]],
                   8 * kw["bytes_per_gpu"] / st.capacity[st.host_mem[0]])
    assert many.blocked_seconds == pytest.approx(per_host, rel=1e-9)


def test_a_failed_server_gets_nothing_and_lowers_capacity(lay):
    kw = dict(gpus=64, bytes_per_gpu=1 << 30, redundancy="none", **FAST_META)
    full = run_checkpoint(lay, CHECKPOINT.validate(kw))
    srv = _tectonic(lay)
    lay.server_status[srv[:4]] = STATUS_FAILED
    half = run_checkpoint(lay, CHECKPOINT.validate(kw))
    assert set(half.servers.tolist()) == set(srv[4:].tolist())
    assert _upload(half) > 1.5 * _upload(full)
    lay.server_status[srv] = STATUS_FAILED
    with pytest.raises(ParamError, match="store"):
        run_checkpoint(lay, CHECKPOINT.validate(kw))


def test_data_loading_competes_with_a_restore(lay):
    kw = dict(gpus=32, bytes_per_gpu=1 << 30, restore=True, servers=2, data_loading_gbps=0.0)
    alone = run_checkpoint(lay, CHECKPOINT.validate(kw))
    busy = run_checkpoint(lay, CHECKPOINT.validate({**kw, "data_loading_gbps": 400}))
    assert busy.durable_seconds > alone.durable_seconds
    assert 0 < busy.data_loading["kept"] < 1
    assert busy.loading_rate.max() > 0 and alone.loading_rate.max() == 0


def test_merging_events_stays_within_the_merge_window_of_the_exact_run(lay, monkeypatch):
    kw = dict(gpus=128, bytes_per_gpu=512 << 20, writers=100)
    exact = run_checkpoint(lay, CHECKPOINT.validate(kw))
    monkeypatch.setattr(ck, "EVENT_MERGE", 3e-2)
    merged = run_checkpoint(lay, CHECKPOINT.validate(kw))
    assert merged.events <= exact.events
    assert merged.durable_seconds == pytest.approx(exact.durable_seconds, rel=3e-2)
    assert merged.durable_seconds >= exact.durable_seconds * (1 - 1e-9)


def test_result_is_json_able_with_bounded_series(lay):
    import json
    r = run_checkpoint(lay, CHECKPOINT.validate({"gpus": 64, "bytes_per_gpu": "64M", "samples": 20}))
    doc = json.loads(json.dumps(r.to_dict()))
    assert len(doc["series"]["rate"]) == 20 and len(doc["series"]["server_rate"][0]) == len(r.servers)
    assert len(doc["link_utilization"]) == build_storage(lay).n_links
    assert doc["per_server"]["name"][0].startswith("tectonic-z0.r000.s00")
    assert [p["name"] for p in doc["phases"]] == ["staging", "metadata", "uploading", "durable"]
    assert r.peak_rate >= r.mean_rate * (1 - 1e-12) > 0


@pytest.mark.parametrize("values, field", [
    ({"gpus": 257}, "gpus"), ({"servers": 9, "gpus": 8}, "servers"), ({"store": "lustre"}, "store"),
    ({"bytes_per_gpu": "-1"}, "bytes_per_gpu"), ({"bytes_per_gpu": 0}, "bytes_per_gpu"), ({"servers": 0}, "servers"),
])
def test_bad_input_names_the_field(lay, values, field):
    with pytest.raises(ParamError) as e:
        run_checkpoint(lay, CHECKPOINT.validate(values))
    assert field in e.value.errors


def test_no_redundancy_is_a_choice_not_the_stores_default():
    # "none" is one of redundancy's choices: it must not read as null (the store's default erasure code)
    assert CHECKPOINT.validate({"redundancy": "none"})["redundancy"] == "none"
    assert CHECKPOINT.validate({"redundancy": "null"})["redundancy"] is None
    assert CHECKPOINT.validate({"redundancy": ""})["redundancy"] is None


# ------------------------------------------------------------------ the costs of a real store (docs/storage.md)
def test_one_writer_bound_by_its_fuse_client_cpu_gets_exactly_that_rate(lay):
    B = 1 << 30
    cores = 0.05          # a twentieth of a core for the client: far below every link and SSD
    r = run_checkpoint(lay, CHECKPOINT.validate(dict(gpus=1, bytes_per_gpu=B, servers=1, spread=1, redundancy="none",
                                                     client_cores=cores, **FAST_META)))
    per_byte = r.costs["client_write_s_per_byte"]
    assert _upload(r) == pytest.approx(B * per_byte / cores, rel=1e-9)
    assert r.bottlenecks[0].tier == "client-cpu"
    assert r.bottlenecks[0].utilization == pytest.approx(1.0, rel=1e-6)


def test_client_cpu_per_byte_follows_its_parts(lay):
    # (copy + encode) see the data once, the checksum every stored chunk: per stored byte of RS(9,6).
    r = run_checkpoint(lay, CHECKPOINT.validate(dict(gpus=8, bytes_per_gpu="64M", client_core_gbs=4,
                                                     encode_core_gbs=2, checksum_core_gbs=8, server_core_gbs=4)))
    assert r.costs["client_write_s_per_byte"] == pytest.approx((1 / 4e9 + 1 / 2e9) / 1.5 + 1 / 8e9)
    assert r.costs["client_read_s_per_byte"] == pytest.approx(1 / 4e9 + 1 / 8e9)
    assert r.costs["server_s_per_byte"] == pytest.approx(1 / 4e9 + 1 / 8e9)
    free = run_checkpoint(lay, CHECKPOINT.validate(dict(gpus=8, bytes_per_gpu="64M", redundancy="replicate-3",
                                                        client_core_gbs=4, encode_core_gbs=2, checksum_core_gbs=0)))
    assert free.costs["client_write_s_per_byte"] == pytest.approx(1 / 4e9 / 3)   # replicas are not encoded


def test_ssd_amplification_multiplies_ssd_bytes_and_binds_by_its_factor(lay, hardware):
    st = build_storage(lay)
    srv = _tectonic(lay)[:2]
    B = 1 << 30
    lay.ssd_status[np.isin(lay.ssd_server, srv) & (lay.ssd_slot > 0)] = STATUS_FAILED   # one SSD each: SSDs bind
    ssd = build_storage(lay).capacity[st.server_ssd_write[srv]]
    for factor in (1.0, 2.0):
        r = run_checkpoint(lay, CHECKPOINT.validate(dict(gpus=32, bytes_per_gpu=B, servers=2, redundancy="none",
                                                         ssd_write_amp=factor, **FAST_META)))
        assert r.ssd_bytes == pytest.approx(factor * r.stored_bytes)
        assert _upload(r) == pytest.approx(32 * B * factor / ssd.sum(), rel=1e-6)
        assert r.bottlenecks[0].tier == "ssd-write"


def test_no_resource_ever_carries_more_than_its_capacity_and_every_byte_arrives(lay, monkeypatch):
    worst = []
    real = ck.simulate_flows

    def checked(ptr, links, capacity, size, **kw):
        usage, inner = kw["usage"], kw["on_interval"]
        ptr, links = np.asarray(ptr), np.asarray(links)

        def on_interval(t, dt, act, rates):
            # every entry's flow id, then the load of the active flows at their rates, entry by entry
            owner = np.repeat(np.arange(ptr.size - 1), np.diff(ptr))
            rate_of = np.zeros(ptr.size - 1)
            rate_of[act] = np.where(np.isfinite(rates), rates, 0.0)
            load = np.bincount(links, weights=rate_of[owner] * usage, minlength=len(capacity))
            with np.errstate(divide="ignore", invalid="ignore"):
                worst.append(np.nanmax(np.where(capacity > 0, load / capacity, 0.0)))
            inner(t, dt, act, rates)
        return real(ptr, links, capacity, size, **{**kw, "on_interval": on_interval})

    monkeypatch.setattr(ck, "simulate_flows", checked)
    r = run_checkpoint(lay, CHECKPOINT.validate(dict(gpus=128, bytes_per_gpu="256M", client_cores=0.5,
                                                     server_cores=0.5, data_loading_gbps=20)))
    assert worst and max(worst) <= 1 + 1e-6
    assert max(worst) >= 1 - 1e-6                                     # something binds
    assert r.server_bytes.sum() == pytest.approx(r.stored_bytes)      # conservation at the servers
    assert r.stored_bytes == pytest.approx(1.5 * r.bytes)
    assert r.host_progress[-1] == pytest.approx(np.ones(len(r.hosts)))


def test_published_figures_ride_with_the_result_and_only_for_tectonic(lay):
    import json
    doc = json.loads(json.dumps(run_checkpoint(lay, CHECKPOINT.validate({"gpus": 16})).to_dict(series=False)))
    keys = {p["key"]: p for p in doc["published"]}
    assert set(keys) == {"tectonic-peak", "tectonic-sustained"}
    assert keys["tectonic-peak"]["simulated"] == pytest.approx(doc["peak_rate"] / 1e12)
    assert keys["tectonic-peak"]["why"] and not keys["tectonic-peak"]["same_case"]
    ham = run_checkpoint(lay, CHECKPOINT.validate({"gpus": 16, "store": "hammerspace"}))
    assert ham.published == []


def test_a_storage_cluster_s_own_redundancy_amplifies_its_writes_unless_the_run_names_one():
    lay = expand(load_spec("mlperf-storage-ubix-ubipower"))     # 2/3 of its raw capacity usable: rs-3-2 [S128]
    base = {"gpus": 16, "bytes_per_gpu": 1 << 30, "store": "hammerspace", "mode": "sync", **FAST_META}
    r = run_checkpoint(lay, CHECKPOINT.validate(base))
    assert (r.redundancy, r.amplification) == ("rs-3-2", 1.5)
    assert r.stored_bytes == pytest.approx(1.5 * r.bytes)
    r = run_checkpoint(lay, CHECKPOINT.validate({**base, "redundancy": "none"}))
    assert (r.redundancy, r.stored_bytes) == ("none", r.bytes)


def test_a_storage_cluster_s_unknown_redundancy_is_refused_naming_where_it_comes_from():
    # the spec checks only that [[storage]] redundancy is a string (the schemes are the storage engine's): the
    # checkpoint refuses an unknown one, saying it is the cluster's and that a run's value replaces it
    data = copy.deepcopy(load_spec("mlperf-storage-ubix-ubipower").source)
    data["storage"][0]["redundancy"] = "rs-4-2"
    lay = expand(parse_spec(data))
    base = {"gpus": 16, "bytes_per_gpu": 1 << 30, "store": "hammerspace", "mode": "sync", **FAST_META}
    with pytest.raises(ParamError) as e:
        run_checkpoint(lay, CHECKPOINT.validate(base))
    assert list(e.value.errors) == ["redundancy"]
    assert "storage[0].redundancy" in str(e.value) and "rs-4-2" in str(e.value)
    r = run_checkpoint(lay, CHECKPOINT.validate({**base, "redundancy": "none"}))
    assert r.redundancy == "none"
