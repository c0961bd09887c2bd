"""The frontend fabric and storage as resources (sim/storage/topology.py), the placement aggregation and the
metadata model (sim/storage/stores.py), and the fan-out of N clients reading the same files (sim/storage/fanout.py)."""
import doctest

import numpy as np
import pytest

import sim.storage.stores
from sim.core.errors import ParamError
from sim.fabric.layout import STATUS_FAILED, expand
from sim.storage.params import STORAGE_FANOUT
from sim.fabric.routing import route
from sim.fabric.spec import load_spec
from sim.storage.stores import REDUNDANCY, STORES, amplification, metadata_ops, spread_segments
from sim.storage.fanout import run_fanout
from sim.core.units import GBPS
from sim.storage.topology import RES_SSD_WRITE, build_storage


@pytest.fixture
def lay():
    return expand(load_spec("demo-256"))


def test_doctests():
    assert doctest.testmod(sim.storage.stores).failed == 0


@pytest.mark.parametrize("writers, servers, spread", [(5, 7, 3), (100, 8, 16), (3, 40, 2), (1, 1, 1)])
def test_placement_gives_every_server_the_same_bytes_and_keeps_each_writers_bytes(writers, servers, spread):
    wb = np.random.default_rng(writers).uniform(1, 10, writers)
    w, s, b = spread_segments(wb, servers, spread, seed=4)
    assert np.bincount(w, b, minlength=writers) == pytest.approx(wb)
    assert np.bincount(s, b, minlength=servers) == pytest.approx(np.full(servers, wb.sum() / servers))
    assert len(np.unique(w * servers + s)) == w.size                    # one flow per (writer, server)
    # Writers of equal bytes each reach at least `spread` servers (all of them if fewer), and few more.
    w, s, b = spread_segments(np.full(writers, 3.0), servers, spread, seed=4)
    per_writer = np.bincount(w, minlength=writers)
    n_seg = max(1, -(-spread * writers // servers)) * servers
    assert per_writer.min() >= min(servers, spread)
    assert per_writer.max() <= min(servers, n_seg // writers + 2)


def test_redundancy_and_metadata_counts():
    assert {k: amplification(k) for k in REDUNDANCY} == {"rs-9-6": 1.5, "rs-3-2": 1.5, "replicate-3": 3.0,
                                                          "replicate-2": 2.0, "none": 1.0}
    t = STORES["tectonic"]
    files, blocks = metadata_ops(t, np.array([0, 1, t.block_size, t.block_size + 1]), read=False)
    assert files.tolist() == [0, t.write_ops_per_file] + [t.write_ops_per_file] * 2
    assert blocks.tolist() == [0, 1 * t.write_ops_per_block, 1 * t.write_ops_per_block, 2 * t.write_ops_per_block]


def test_frontend_routes_go_from_a_host_nic_to_a_storage_server_nic(lay):
    st = build_storage(lay)
    topo = st.topo
    srv = np.flatnonzero(lay.server_storage == 0)
    src = st.host_ep[np.arange(0, 32, 3), 0]
    dst = st.server_ep[srv[np.arange(src.size) % srv.size], 0]
    ptr, links = route(topo, src, dst, None, "ecmp", 0)
    for f in range(src.size):
        path = links[ptr[f]:ptr[f + 1]]
        assert path[0] == topo.gpu_uplink[src[f]] and path[-1] == topo.gpu_downlink[dst[f]]
        assert (topo.link_head[path[:-1]] == topo.link_tail[path[1:]]).all()         # a connected path
        tiers = st.resource_tier(path)
        assert tiers[0] == "host-nic up" and tiers[-1] == "storage-nic down"
    # Capacities: cable speeds, and each server's SSDs summed.
    assert st.capacity[topo.gpu_uplink[src[0]]] == lay.spec.frontend.nic_speed_gbps * GBPS
    ssd = st.capacity[st.server_ssd_write[srv[0]]]
    assert ssd == pytest.approx(lay.spec.storage[0].ssds_per_server * 28 * GBPS)   # catalog write_gbps
    assert (st.kind[st.server_ssd_write] == RES_SSD_WRITE).all()
    assert st.resource_names(st.server_ssd_write[srv[:1]]) == ["ssd-write tectonic-z0.r000.s00"]


def test_failed_items_lower_capacity_or_leave_the_server_out(lay):
    srv = np.flatnonzero(lay.server_storage == 0)
    lay.ssd_status[lay.ssd_server == srv[1]] = STATUS_FAILED            # all SSDs of server 1
    lay.ssd_status[(lay.ssd_server == srv[2]) & (lay.ssd_slot == 0)] = STATUS_FAILED
    lay.server_status[srv[3]] = STATUS_FAILED
    lay.nic_status[lay.nic_server == srv[4]] = STATUS_FAILED
    st = build_storage(lay)
    assert st.server_usable[srv].tolist() == [True, False, True, False, False, True, True, True]
    cap = st.capacity[st.server_ssd_write[srv]]
    assert cap[2] == pytest.approx(cap[0] * 3 / 4) and cap[1] == 0 and cap[3] == 0
    assert st.capacity[st.server_cpu[srv[3]]] == 0
    assert st.server_ssds[srv[:3]].tolist() == [4, 0, 3]


def test_fanout_is_latency_bound_for_few_clients_and_metadata_bound_for_many(lay):
    m = STORES["hammerspace"]
    r = run_fanout(lay, STORAGE_FANOUT.validate(dict(clients=8, files=10, file_size=1024, sweep=False)))
    serial = 10 * m.read_ops_per_file * m.metadata_latency_us * 1e-6
    assert r.run.limit == "metadata-latency"
    assert r.run.metadata_seconds == pytest.approx(serial, rel=1e-9)
    # Many clients: the service's capacity; time grows linearly with the clients.
    r = run_fanout(lay, STORAGE_FANOUT.validate(dict(clients=256, files=10, file_size=1024,
                                                metadata_kops=1.0)))
    big = r.sweep[-1]
    assert big.limit == "metadata-service"
    assert big.metadata_seconds == pytest.approx(256 * 10 * m.read_ops_per_file / 1e3, rel=1e-9)
    assert r.bottlenecks[0]["tier"] == "metadata"
    assert [x.clients for x in r.sweep] == [256]                        # 1,024.. are above 256


def test_fanout_of_big_files_is_bound_by_the_data_servers(lay):
    st = build_storage(lay)
    srv = np.flatnonzero(lay.server_storage == 1)
    r = run_fanout(lay, STORAGE_FANOUT.validate(dict(clients=64, clients_per_host=8, files=2, file_size=1 << 30,
                                                sweep=False, metadata_latency_us=0, metadata_kops=1e6)))
    nic = st.capacity[st.topo.gpu_uplink[st.server_ep[srv, 0]]]
    # 8 hosts each fetch both files once (page cache); each file on its own server.
    assert r.run.limit == "data"
    assert r.run.data_seconds == pytest.approx(8 * (1 << 30) / nic[0], rel=1e-6)
    assert r.run.bytes == 8 * 2 * (1 << 30)


@pytest.mark.parametrize("values, field", [({"clients": 0}, "clients"), ({"store": "nfs"}, "store"),
                                           ({"file_size": "0"}, "file_size"), ({"clients": 100_000}, "clients"),
                                           ({"servers": 3}, "servers")])
def test_fanout_bad_input_names_the_field(lay, values, field):
    with pytest.raises(ParamError) as e:
        run_fanout(lay, STORAGE_FANOUT.validate(values))
    assert field in e.value.errors


def test_each_24k_preset_holds_its_share_of_the_published_store():
    # One store of 7,500 SSD servers and 240 PB serves both 24k clusters [S1, S3]; each preset holds its half
    # (docs/storage.md, "The store's size and who shares it").
    from sim.storage import published
    for name in ("meta-roce-24k", "meta-ib-24k"):
        tectonic = next(s for s in load_spec(name).storage if s.kind == "tectonic")
        assert tectonic.servers == published.STORE_SERVERS * published.CLUSTER_SHARE
        raw = tectonic.servers * tectonic.ssds_per_server * 7.68e12
        assert raw == pytest.approx(published.STORE_BYTES * published.CLUSTER_SHARE, rel=0.05)
    assert published.DATA_LOADING_GBPS == pytest.approx(
        published.SUSTAINED_BPS / published.GPU_HOSTS * 8 / 1e9, rel=1e-3)
