"""User placements (sim/fabric/hostlist.py): host lists and GPU lists read against the cluster's names, the order given
kept (across hosts always, inside a host with intra_order rank), and everything refused with source, line, reason."""
import json

import numpy as np
import pytest

from sim.cli import main
from sim.fabric.collectives import channel_sequences, host_groups, plan_collective
from sim.core.errors import ParamError
from sim.fabric.hostlist import HostIndex, ListError, order_note, parse_gpu_list, parse_hostfile
from sim.fabric.layout import STATUS_FAILED, expand
from sim.fabric.names import host_names, item_names
from sim.fabric.params import COLLECTIVE
from sim.fabric.seeds import run_collective_seeds
from sim.fabric.spec import load_spec
from sim.fabric.topology import load_topology, topology_from_layout


@pytest.fixture(scope="module")
def demo():
    return load_topology("demo-256")[1]


@pytest.fixture(scope="module")
def idx(demo):
    return HostIndex.of_topology(demo)


def gpu(idx, host: str, slot: int) -> int:
    """The GPU at ``slot`` of ``host`` found by scanning the arrays (independent of HostIndex's own tables)."""
    h = idx.names.index(host)
    return int(np.flatnonzero((idx.gpu_host == h) & (idx.gpu_slot == slot))[0])


def test_host_names_are_the_inventory_builders_names(demo):
    lay = demo.layout
    assert host_names(lay) == item_names(lay)["host"]
    assert host_names(lay)[:3] == ["demo-256.z00.r000.h0", "demo-256.z00.r000.h1", "demo-256.z00.r001.h0"]
    lay_named = expand(load_spec("demo-256"))
    lay_named.host_names = [f"node{i:03d}" for i in range(len(lay_named.host_rack))]   # the inventory's own names
    assert HostIndex.of_topology(topology_from_layout(lay_named)).host("node031") == 31


def test_a_host_list_keeps_its_host_order_and_each_host_gives_its_gpus_in_slot_order(idx):
    text = ("# job 7\n"
            "demo-256.z01.r007.h1\n"
            "\n"
            "z00.r000.h0 slots=2     # Open MPI form\n"
            "demo-256.z00.r003.h1:3  # MPICH form\n")
    ranks = parse_hostfile(text, idx)
    expect = ([gpu(idx, "demo-256.z01.r007.h1", s) for s in range(8)] + [gpu(idx, "demo-256.z00.r000.h0", s)
              for s in range(2)] + [gpu(idx, "demo-256.z00.r003.h1", s) for s in range(3)])
    assert ranks.tolist() == expect
    assert ranks[0] > ranks[8]                          # not re-sorted: the first host listed is the last by id


def test_a_gpu_list_keeps_its_order_exactly_in_every_form(idx):
    text = "z00.r001.h0:5\n3\ndemo-256.z00.r001.h0.gpu1\ndemo-256.z00.r000.h0:0\n"
    assert parse_gpu_list(text, idx).tolist() == [gpu(idx, "demo-256.z00.r001.h0", 5), 3,
                                                  gpu(idx, "demo-256.z00.r001.h0", 1), 0]


def test_intra_order_rank_keeps_the_lists_order_inside_a_host_and_gpu_takes_ncclls_gpu_order(idx, demo):
    # Two hosts, each listed in a scrambled slot order.
    a, b = "z00.r000.h1", "z01.r002.h0"
    slots = [3, 0, 2, 1]
    ranks = parse_gpu_list("".join(f"{h}:{s}\n" for h in (a, b) for s in slots), idx)
    kept = host_groups(ranks, demo.gpu_host, "rank")
    assert kept.ordered.tolist() == ranks.tolist()
    nccl = host_groups(ranks, demo.gpu_host, "gpu")
    assert nccl.ordered.tolist() == sorted(ranks[:4].tolist()) + sorted(ranks[4:].tolist())
    # Channel 0 of the ring visits the ranks in the list's order; its successor of each rank is the next line.
    ring = plan_collective("allgather", ranks, demo.gpu_host, intra_order="rank").phases[0]
    first = ring.channel == 0
    assert ring.src[first].tolist() == ranks.tolist()
    assert ring.dst[first].tolist() == np.roll(ranks, -1).tolist()
    assert channel_sequences(kept, 4)[1].tolist() == ranks[[1, 2, 3, 0, 5, 6, 7, 4]].tolist()
    assert order_note(idx, ranks, "gpu") and "2 host(s)" in order_note(idx, ranks, "gpu")
    assert order_note(idx, ranks, "rank") is None
    assert order_note(idx, np.sort(ranks), "gpu") is None


def test_a_run_with_a_host_list_is_placed_as_listed_and_reports_given(capsys, tmp_path, idx):
    hosts = tmp_path / "hosts"
    hosts.write_text("z01.r005.h0\nz00.r002.h1 slots=4\n")
    code = main(["collective", "--preset", "demo-256", "--hostfile", str(hosts), "--sizes", "1M", "-q", "--json",
                 "--flows"])
    out, err = capsys.readouterr()
    assert code == 0, err
    doc = json.loads(out)
    assert doc["placement"] == "given" and doc["ranks"] == 12 and doc["hosts"] == 2 and doc["channels"] == 16  # NCCL: 2 per NIC
    assert doc["ranks_from"] == str(hosts) and doc["order_note"] is None
    # Ranks 0-7 are the first listed host's 8 GPUs in slot order, ranks 8-11 the second's first 4.
    gpu_of = {f[f"{end}_rank"]: f[f"{end}_gpu"] for f in doc["flows"] for end in ("src", "dst")}
    assert [gpu_of[r] for r in range(12)] == ([gpu(idx, "demo-256.z01.r005.h0", s) for s in range(8)]
                                              + [gpu(idx, "demo-256.z00.r002.h1", s) for s in range(4)])
    ring0 = {(f["src_rank"], f["dst_rank"]) for f in doc["flows"] if f["channel"] == 0}
    assert {(7, 8), (11, 0)} <= ring0


def test_params_a_list_makes_the_placement_given_and_gpus_waits_for_the_list():
    v = COLLECTIVE.validate({"hosts": "a\nb\n"})
    assert v["placement"] == "given" and v["gpus"] is None
    assert COLLECTIVE.validate({})["gpus"] == 64
    with pytest.raises(ParamError, match="not both"):
        COLLECTIVE.validate({"hosts": "a", "gpu_list": "1"})
    with pytest.raises(ParamError, match="hosts: must be at most"):
        COLLECTIVE.validate({"hosts": "x" * (COLLECTIVE.by_name["hosts"].max + 1)})


def test_seeds_of_a_given_placement_keep_the_ranks_and_vary_the_hash(demo):
    params = COLLECTIVE.validate({"gpu_list": "0\n8\n16\n24\n", "sizes": "1M", "seeds": 2})
    res = run_collective_seeds(demo, params)
    assert [r.gpus.tolist() for r in res.runs] == [[0, 8, 16, 24]] * 2


@pytest.fixture(scope="module")
def broken():
    """demo-256 with GPU slot 2 of host 1 failed (GPU 10)."""
    lay = expand(load_spec("demo-256"))
    lay.gpu_status[10] = STATUS_FAILED
    return HostIndex.of_topology(topology_from_layout(lay))


@pytest.mark.parametrize("parse, text, line, reason", [
    (parse_hostfile, "z00.r000.h0\nz00.r000.h1\n", 2,
     "GPU slot 2 of host 'z00.r000.h1' is not usable (the GPU, its NIC, its NIC cable or its leaf switch is not "
     "active)"),
    (parse_gpu_list, "0\n\n10\n", 3, "GPU '10' is not usable"),
    (parse_gpu_list, "0\nz00.r000.h1.gpu2\n", 2, "GPU 'z00.r000.h1.gpu2' is not usable"),
])
def test_unusable_gpus_are_refused_naming_the_line(broken, parse, text, line, reason):
    with pytest.raises(ListError) as e:
        parse(text, broken, "jobs.txt")
    assert e.value.line == line and reason in str(e.value) and str(e.value).startswith(f"jobs.txt, line {line}: ")


def test_a_host_list_may_leave_an_unusable_slot_out(broken):
    assert parse_hostfile("z00.r000.h1 slots=2\n", broken).tolist() == [8, 9]


def test_size_limits_are_named_settings(idx, monkeypatch):
    import sim.fabric.hostlist
    monkeypatch.setattr(sim.fabric.hostlist, "MAX_LIST_LINES", 3)
    with pytest.raises(ListError, match=r"hosts: has 4 lines, more than the limit of 3 \(sim.fabric.hostlist.MAX_LIST_LINES"):
        parse_hostfile("a\nb\nc\nd\n", idx, "hosts")
    monkeypatch.setattr(sim.fabric.hostlist, "MAX_LIST_BYTES", 5)
    with pytest.raises(ListError, match=r"more than the limit of 5 \(sim.fabric.hostlist.MAX_LIST_BYTES\)"):
        parse_gpu_list("0\n1\n2\n", idx, "gpus")
