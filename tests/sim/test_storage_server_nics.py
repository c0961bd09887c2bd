"""A storage server with several frontend NICs serves through all of them (sim/storage/flows.py ``turns``), and the
MLPerf Storage presets hold the storage systems their sources describe (docs/sources.md [S125-S128]). Expected
figures come from the spec's NIC counts and the catalog's rates, never typed in."""
import numpy as np
import pytest

from sim.fabric.layout import expand
from sim.fabric.spec import load_spec
from sim.storage.checkpoint import run_checkpoint
from sim.storage.flows import turns
from sim.storage.params import CHECKPOINT

DDN = "mlperf-storage-ddn-ai400x2t"
HAMMERSPACE = "mlperf-storage-hammerspace-aws"
AISTORE = "mlperf-storage-aistore-oci"
UBIX = "mlperf-storage-ubix-ubipower"
FAST_META = {"metadata_kops": 1e6, "metadata_latency_us": 0.0, "data_loading_gbps": 0.0}


def test_turns_count_each_owners_flows_in_flow_order():
    owner = np.array([3, 1, 3, 3, 1, 0])
    assert turns(owner).tolist() == [0, 0, 1, 2, 1, 0]
    assert turns(np.zeros(0, int)).size == 0


def test_an_even_number_of_flows_per_host_still_uses_both_nics_of_every_server():
    # 4 servers per host: flow j of host w goes to server j % 4, so counting flows globally sent every flow of a
    # server through the NIC of its index's parity. Counting each server's own flows alternates its NICs.
    w, s = np.repeat(np.arange(18), 4), np.tile(np.arange(4), 18)
    nic = turns(s) % 2
    for server in range(4):
        assert set(nic[s == server].tolist()) == {0, 1}


@pytest.mark.parametrize("name", [DDN, HAMMERSPACE, AISTORE, UBIX])
def test_the_mlperf_storage_presets_hold_their_sources_storage(name):
    spec = load_spec(name)
    (store,) = spec.storage
    # servers, NICs each, SSDs each, SSDs
    want = {DDN: (4, 2, 6, 24), HAMMERSPACE: (22, 1, 12, 264), AISTORE: (12, 1, 12, 144),
            UBIX: (3, 4, 16, 48)}[name]
    assert (store.servers, store.nics_per_server, store.ssds_per_server,
            store.servers * store.ssds_per_server) == want
    assert store.kind == "hammerspace"


def test_a_restore_from_two_nic_servers_is_faster_than_one_nic_each_allows():
    # 18 clients of 100G read from 4 servers of 2 x 200G: the servers' NICs, not one NIC each, bound the rate.
    lay = expand(load_spec(DDN))
    v = CHECKPOINT.validate({"gpus": 144, "bytes_per_gpu": "16G", "store": "hammerspace", "restore": True,
                             **FAST_META})
    r = run_checkpoint(lay, v)
    spec = load_spec(DDN).storage[0]
    nic_bps = spec.nic_speed_gbps * 1e9 / 8
    one_each = spec.servers * nic_bps
    window = next(p for p in r.phases if p["name"] == "reading")
    rate = r.bytes / (window["end"] - window["start"])
    assert rate > 1.2 * one_each
    assert rate <= spec.servers * spec.nics_per_server * nic_bps * (1 + 1e-9)
