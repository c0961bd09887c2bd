"""The twin's way with a rehearsal's dumps (issue 25, item 3): analyzed as the writer makes them, in memory, and kept
as a compact ``.npz`` from which the archive is built when downloaded. Both must be what the files are: the
analysis the same as of the folder ``python -m sim debug`` writes, the archive unpacking (tar) to the very bytes of
those files. Given / when / then, on demo-256 with faults of each kind that changes the records (hang, desync of size and
of op, a dead host, a slow rank)."""
import filecmp
import io
import os
import tarfile

import pytest

from sim.debug import archive, dumpstate
from sim.debug.analyze import analyze, analyze_dumpset
from sim.debug.dumpformat import PLACEMENT_FILE, DumpError
from sim.debug.params import DEBUG
from sim.debug.recorder import rehearse
from sim.debug.writer import DumpSet
from sim.fabric.topology import load_topology

CASES = [({"model": "llama3-8b", "gpus": 64, "tp": 8, "pp": 2}, "hang:rank=37"),
         ({"model": "llama3-8b", "gpus": 128, "tp": 4, "pp": 4, "entries": 300}, "desync:rank=5,what=op"),
         ({"model": "llama3-8b", "gpus": 128, "tp": 4, "pp": 4, "entries": 300}, "desync:rank=70"),
         ({"model": "llama3-8b", "gpus": 64, "tp": 8, "pp": 2}, "host:rank=9"),
         ({"model": "llama3-8b", "gpus": 64, "tp": 8, "pp": 2}, "slow:rank=3")]


@pytest.fixture(scope="module")
def topo():
    return load_topology("demo-256")[1]


@pytest.mark.parametrize("job, inject", CASES, ids=[c[1] for c in CASES])
def test_the_kept_dumps_are_the_files_and_analyze_the_same(topo, tmp_path, job, inject):
    # given a rehearsal and the folder the command line writes of it
    reh = rehearse(topo, DEBUG.validate({**job, "inject": inject}))
    folder = tmp_path / "written"
    reh.write_dumps(folder)
    dumps = DumpSet.of(reh)
    # when its dumps are analyzed as made, then the result is the folder's (but the folder's name)
    for cluster in (None, topo):
        from_files = analyze(folder, cluster)
        in_memory = analyze_dumpset(dumps, cluster)
        for d in (from_files, in_memory):
            d.pop("seconds")
        from_files.pop("folder")
        assert in_memory == from_files
    # when they are kept as the twin keeps them and the archive is built from that, as a download does
    kept = io.BytesIO()
    dumpstate.save(dumps, kept)
    (tmp_path / "kept.npz").write_bytes(kept.getvalue())
    body = b"".join(archive.stream(dumpstate.load(tmp_path / "kept.npz", keep=1), "run-dumps", 0,
                                   chunk_bytes=1 << 16))
    with tarfile.open(fileobj=io.BytesIO(body), mode="r:gz") as tar:
        tar.extractall(tmp_path / "unpacked", filter="data")
    out = tmp_path / "unpacked" / "run-dumps"
    # then it unpacks to the very files the command line wrote (the placement beside the folder), and what is
    # kept is far smaller than they are
    names = sorted(os.listdir(folder))
    assert sorted(os.listdir(out)) + [PLACEMENT_FILE] == names
    assert all(filecmp.cmp(folder / n, out / n, shallow=False) for n in names if n != PLACEMENT_FILE)
    assert filecmp.cmp(folder / PLACEMENT_FILE, tmp_path / "unpacked" / "run-dumps.placement.json", shallow=False)
    written = sum((folder / n).stat().st_size for n in names if n.startswith("nccl_trace_rank_"))
    assert dumps.nbytes() == written and len(kept.getvalue()) * 5 < written
    # and what is kept, read back, analyzes as the dumps do
    again = analyze_dumpset(dumpstate.load(tmp_path / "kept.npz"), topo)
    again.pop("seconds")
    assert again == in_memory


def test_a_file_that_is_not_a_kept_dumpset_is_refused_naming_it(tmp_path):
    bad = tmp_path / "dumps-state.npz"
    bad.write_bytes(b"PK\x03\x04 not a zip")
    with pytest.raises(DumpError, match="dumps-state.npz: not a rehearsal's dumps kept by the twin"):
        dumpstate.load(bad)
    with pytest.raises(DumpError, match="no such file"):
        dumpstate.load(tmp_path / "missing.npz")
