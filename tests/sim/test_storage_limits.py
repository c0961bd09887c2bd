"""The storage path's real limit (issue 39): a store's servers in use serve at most ``storage_efficiency`` x their share
of the store's published peak (sim/storage/topology.py, ``store-service``), so no checkpoint or restore is done
sooner than its bytes at the published aggregate. Expected figures come from the published constants and the
resources' capacities, never typed in."""
import numpy as np
import pytest

import sim.storage.checkpoint as ck
from sim.core import fitted
from sim.core.errors import ParamError
from sim.core.maxmin import link_loads
from sim.fabric.layout import STATUS_FAILED, expand
from sim.fabric.spec import load_spec
from sim.storage.checkpoint import run_checkpoint
from sim.storage.params import CHECKPOINT
from sim.storage.published import PEAK_BPS, PEAK_PER_SERVER_BPS, STORE_SERVERS
from sim.storage.stores import amplification
from sim.storage.topology import RES_SERVICE, RES_SSD_WRITE, build_storage, service_capacity

FAST_META = {"metadata_kops": 1e6, "metadata_latency_us": 0.0, "data_loading_gbps": 0.0}


@pytest.fixture(scope="module")
def demo():
    return expand(load_spec("demo-256"))


@pytest.fixture(scope="module")
def roce():
    return expand(load_spec("meta-roce-24k"))


def _window(r):
    name = "reading" if r.restore else "uploading"
    ph = next(p for p in r.phases if p["name"] == name)
    return ph["end"] - ph["start"]


def test_the_presets_hold_no_more_tectonic_servers_than_the_published_store():
    # The bound below (servers x the per-server share <= the published peak) needs it.
    for name in ("demo-256", "meta-roce-24k", "meta-ib-24k"):
        spec = load_spec(name)
        assert sum(s.servers for s in spec.storage if s.kind == "tectonic") <= STORE_SERVERS


@pytest.mark.parametrize("gpus, size, extra", [
    (1, 1 << 30, {}),
    (8, 256 << 20, {"redundancy": "replicate-3"}),
    (64, 1 << 30, {"mode": "sync"}),
    (128, 4 << 30, {"redundancy": "none", "data_loading_gbps": 50.0}),
    (256, 64 << 20, {"restore": True}),
    (256, 2 << 30, {"servers": 3, "storage_efficiency": 0.4}),
    (32, 8 << 30, {"restore": True, "storage_efficiency": 0.7}),
])
def test_no_run_on_demo_beats_the_published_aggregate(demo, gpus, size, extra):
    v = CHECKPOINT.validate({"gpus": gpus, "bytes_per_gpu": size, **extra})
    r = run_checkpoint(demo, v)
    eff = v["storage_efficiency"] if v["storage_efficiency"] is not None else fitted.value("storage_efficiency")
    assert r.durable_seconds >= r.bytes / PEAK_BPS                               # the whole store's peak
    # and the tighter bound: the servers in use at their share of it
    assert _window(r) >= r.bytes / (eff * PEAK_PER_SERVER_BPS * len(r.servers)) * (1 - 1e-9)


@pytest.mark.parametrize("gpus, size", [(16384, 4 << 30), (2048, 1 << 30), (24576, 64 << 20)])
def test_no_checkpoint_on_the_24k_cluster_beats_the_published_aggregate(roce, gpus, size):
    r = run_checkpoint(roce, CHECKPOINT.validate({"gpus": gpus, "bytes_per_gpu": size}))
    assert r.durable_seconds >= r.bytes / PEAK_BPS
    share = len(r.servers) / STORE_SERVERS                                      # the preset's half of the store
    assert _window(r) >= r.bytes / (PEAK_BPS * share) * (1 - 1e-9)
    # file bytes over the upload, data loading included, never pass the published rate of the servers in use
    assert r.mean_rate / r.amplification <= PEAK_BPS * share * (1 + 1e-9)


def test_one_server_serves_its_share_of_the_published_peak(demo):
    """Analytic case: one GPU, one server, metadata out of the way. The server's service rate counts file bytes, so
    the upload takes B / (efficiency x peak / servers) whatever the redundancy, and half the efficiency doubles it."""
    B = 1 << 30
    st = build_storage(demo)
    srv = np.flatnonzero(demo.server_storage == 0)
    assert st.server_rate[srv] == pytest.approx(np.full(srv.size, PEAK_PER_SERVER_BPS))
    assert st.capacity[st.service[0]] == pytest.approx(srv.size * PEAK_PER_SERVER_BPS)     # the store: its servers
    assert service_capacity(st, 0, srv[:1], 0.25)[st.service[0]] == pytest.approx(0.25 * PEAK_PER_SERVER_BPS)
    for redundancy in ("rs-9-6", "replicate-3", "none"):
        for eff in (1.0, 0.5):
            r = run_checkpoint(demo, CHECKPOINT.validate(dict(gpus=1, bytes_per_gpu=B, servers=1, spread=1,
                                                              redundancy=redundancy, storage_efficiency=eff,
                                                              **FAST_META)))
            assert _window(r) == pytest.approx(B / (eff * PEAK_PER_SERVER_BPS), rel=1e-9)
            assert r.bottlenecks[0].tier == "store-service"
            assert r.stored_bytes == pytest.approx(B * amplification(redundancy))
    # a restore reads the file bytes back at the same rate (then host -> GPU over PCIe)
    r = run_checkpoint(demo, CHECKPOINT.validate(dict(gpus=1, bytes_per_gpu=B, servers=1, spread=1, restore=True,
                                                      storage_efficiency=1.0, **FAST_META)))
    assert _window(r) == pytest.approx(B / PEAK_PER_SERVER_BPS, rel=1e-9)
    assert r.durable_seconds > _window(r)


def test_a_failed_server_adds_nothing_to_the_store_service():
    lay = expand(load_spec("demo-256"))
    srv = np.flatnonzero(lay.server_storage == 0)
    full = build_storage(lay)
    lay.server_status[srv[0]] = STATUS_FAILED
    st = build_storage(lay)
    assert st.server_rate[srv[0]] == 0.0 and (st.server_rate[srv[1:]] > 0).all()
    assert st.capacity[st.service[0]] == pytest.approx(full.capacity[full.service[0]] * (srv.size - 1) / srv.size)
    assert (st.kind[st.service] == RES_SERVICE).all()
    assert st.resource_names(st.service) == ["store-service tectonic", "store-service hammerspace"]


@pytest.mark.parametrize("redundancy", ["rs-9-6", "replicate-3", "replicate-2", "none"])
def test_write_amplification_is_conserved_down_to_the_ssds(demo, monkeypatch, redundancy):
    """What the SSD-write resources carried in the simulation = bytes written x the redundancy's amplification x the
    chunk store's SSD factor; what the service resources carried = the file bytes (+ data loading's reads)."""
    got = {}
    real = ck.simulate_flows

    def spy(ptr, links, capacity, size, **kw):
        out = real(ptr, links, capacity, size, **kw)
        got.update(ptr=ptr, links=links, usage=kw["usage"], delivered=out.delivered, n=len(capacity))
        return out

    monkeypatch.setattr(ck, "simulate_flows", spy)
    r = run_checkpoint(demo, CHECKPOINT.validate(dict(gpus=48, bytes_per_gpu=300 << 20, writers=40,
                                                      redundancy=redundancy, data_loading_gbps=0.0)))
    st = build_storage(demo)
    load = link_loads(got["ptr"], got["links"], got["delivered"], got["n"], usage=got["usage"])
    amp = amplification(redundancy)
    assert r.bytes == 40 * (300 << 20)
    assert load[st.kind == RES_SSD_WRITE].sum() == pytest.approx(r.bytes * amp * r.costs["ssd_write_amp"], rel=1e-9)
    assert r.ssd_bytes == pytest.approx(r.bytes * amp * r.costs["ssd_write_amp"], rel=1e-9)
    assert load[st.kind == RES_SERVICE].sum() == pytest.approx(r.bytes, rel=1e-9)


def test_storage_efficiency_is_a_fitted_factor_and_a_checked_parameter():
    f = fitted.factor("storage_efficiency")
    assert f.low <= f.prior <= f.high <= 1.0 and "checkpoint" in f.kinds and "restore" in f.kinds
    assert CHECKPOINT.validate({})["storage_efficiency"] is None                 # null: the fitted value
    for bad in (0.0, 1.5, -1):
        with pytest.raises(ParamError) as e:
            CHECKPOINT.validate({"storage_efficiency": bad})
        assert "storage_efficiency" in str(e.value)
