"""A rehearsal's dumps as the twin's download packs them (sim.debug.archive): a tar.gz or a zip of one folder holding
every rank's dump as the command line writes it and nothing else (PyTorch's fr_trace reads it: tests/torch), the
placement beside it; one rank's dump alone; the dumps themselves holding PyTorch's keys only; archives made before
this still unpacked by ``python -m sim debug unpack``. Given / when / then."""
import io
import json
import os
import pickle
import stat
import tarfile
import zipfile

import numpy as np
import pytest

from sim.debug import archive, reader
from sim.debug.analyze import analyze
from sim.debug.dumpformat import DUMP_PREFIX, ENTRY_KEYS, PLACEMENT_FILE, DumpError
from sim.debug.params import DEBUG
from sim.debug.recorder import rehearse
from sim.debug.writer import DumpSet, rank_dump

# the keys FlightRecorder::dump_dict pickles (PyTorch 2.13, version 2.10) and nothing else
TOP_KEYS = {"version", "comm_lib_version", "pg_config", "pg_status", "entries"}


@pytest.fixture(scope="module")
def rehearsal():
    """A 32-rank job on demo-256 whose host holding rank 5 dies (ranks 0-7 leave no dump), its dumps written as the
    command line writes them (``python -m sim debug --dump DIR``)."""
    return rehearse("demo-256", DEBUG.validate(dict(gpus=32, tp=8, pp=2, dp=2, model="llama3-8b",
                                                    batch_tokens=8192 * 2 * 4, inject="host:rank=5", entries=300)))


@pytest.fixture(scope="module")
def cli_dumps(rehearsal, tmp_path_factory):
    folder = tmp_path_factory.mktemp("cli")
    rehearsal.write_dumps(folder)
    return folder


def unpacked(body: bytes, fmt: str, out):
    """``body`` unpacked as tar / unzip would (tarfile's "data" filter: no path outside, no link, no device)."""
    if fmt == "zip":
        with zipfile.ZipFile(io.BytesIO(body)) as z:
            z.extractall(out)
            return z.infolist()
    with tarfile.open(fileobj=io.BytesIO(body), mode="r:gz") as t:
        t.extractall(out, filter="data")
        return t.getmembers()


def test_a_dump_unpickles_to_pytorchs_keys_only_and_the_reader_still_views_it_as_records(cli_dumps):
    data = (cli_dumps / f"{DUMP_PREFIX}9").read_bytes()
    top = pickle.loads(data)
    assert set(top) == TOP_KEYS                                        # no key of ours (no twin_memo)
    assert top["version"] == "2.10" and len(top["entries"]) == 300
    assert all(list(e) == list(ENTRY_KEYS) for e in top["entries"])
    # and the twin's reader reads it without unpickling: its records viewed as numpy, the memo parsed from the header
    assert reader._fast(memoryview(np.frombuffer(data, np.uint8)), reader.Buffers()) is not None


@pytest.mark.parametrize("fmt", list(archive.FORMATS))
def test_the_download_is_one_folder_of_the_dumps_as_written_with_the_placement_beside_it(rehearsal, cli_dumps,
                                                                                         tmp_path, fmt):
    # when the dumps are streamed as the twin's download streams them (small pieces: many yields)
    pieces = list(archive.stream(DumpSet.of(rehearsal), "run-7-dumps", 1.7e9, fmt, chunk_bytes=1 << 16))
    assert len(pieces) > 1
    members = unpacked(b"".join(pieces), fmt, tmp_path)
    # then it unpacks to one folder holding every rank's dump and nothing else, named and made as the command line
    # wrote them (the same bytes), user-only, and the placement file beside the folder, named after it
    dumps = sorted(n for n in os.listdir(cli_dumps) if n.startswith(DUMP_PREFIX))
    assert len(dumps) == 24                                           # ranks 0-7 died with their host
    assert sorted(os.listdir(tmp_path)) == ["run-7-dumps", "run-7-dumps.placement.json"]
    assert sorted(os.listdir(tmp_path / "run-7-dumps")) == dumps
    assert all((tmp_path / "run-7-dumps" / n).read_bytes() == (cli_dumps / n).read_bytes() for n in dumps)
    assert (tmp_path / "run-7-dumps.placement.json").read_bytes() == (cli_dumps / PLACEMENT_FILE).read_bytes()
    modes = {m.name: m.mode for m in members} if fmt == "tar.gz" else \
        {m.filename.rstrip("/"): m.external_attr >> 16 for m in members}
    assert {stat.S_IMODE(v) for k, v in modes.items() if k != "run-7-dumps"} == {0o600}
    assert stat.S_IMODE(modes["run-7-dumps"]) == 0o700
    # and the twin's analyzer reads the unpacked folder as the command line's, the placement found beside it
    got, want = analyze(tmp_path / "run-7-dumps", "demo-256"), analyze(cli_dumps, "demo-256")
    for d in (got, want):
        d.pop("seconds"), d.pop("folder")
    assert got == want and got["culprit"]["hosts"]


@pytest.mark.parametrize("fmt", list(archive.FORMATS))
def test_one_ranks_download_holds_its_dump_alone(rehearsal, cli_dumps, tmp_path, fmt):
    ds = DumpSet.of(rehearsal)
    unpacked(b"".join(archive.stream(ds, "run-7-rank-17", 0, fmt, rank=17)), fmt, tmp_path)
    assert os.listdir(tmp_path) == ["run-7-rank-17"]
    assert os.listdir(tmp_path / "run-7-rank-17") == [f"{DUMP_PREFIX}17"]
    assert (tmp_path / "run-7-rank-17" / f"{DUMP_PREFIX}17").read_bytes() == \
        (cli_dumps / f"{DUMP_PREFIX}17").read_bytes()


def test_a_rank_without_a_dump_or_outside_the_job_is_refused_before_a_byte_is_sent(rehearsal):
    ds = DumpSet.of(rehearsal)
    with pytest.raises(DumpError, match="rank 5: left no dump"):
        archive.stream(ds, "x", 0, rank=5)
    with pytest.raises(DumpError, match=r"rank 32: not a rank of the job \(0..31\)"):
        rank_dump(ds, 32)


def test_a_folder_packs_to_the_same_members_as_the_stream(rehearsal, cli_dumps, tmp_path):
    out = io.BytesIO()
    archive.pack(cli_dumps, out, "run-7-dumps", "zip")
    with zipfile.ZipFile(io.BytesIO(out.getvalue())) as packed, zipfile.ZipFile(io.BytesIO(b"".join(
            archive.stream(DumpSet.of(rehearsal), "run-7-dumps", 0, "zip")))) as streamed:
        assert sorted(packed.namelist()) == sorted(streamed.namelist())
        assert all(packed.read(n) == streamed.read(n) for n in packed.namelist())
        assert json.loads(packed.read("run-7-dumps.placement.json"))["cluster"] == "demo-256"


def test_a_legacy_archive_in_byte_columns_still_unpacks_to_its_dumps(cli_dumps, tmp_path):
    # given an archive as the twin made them before (each dump as <name>.cols145, the placement file beside)
    legacy = tmp_path / "run-3-dumps.tar.gz"
    with tarfile.open(legacy, "w:gz") as tar:
        for name in sorted(os.listdir(cli_dumps)):
            data = (cli_dumps / name).read_bytes()
            body = archive.to_columns(data) if name.startswith(DUMP_PREFIX) else data
            info = tarfile.TarInfo(name + archive.SUFFIX if name.startswith(DUMP_PREFIX) else name)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    # when it is unpacked, then every file comes back byte for byte
    archive.unpack(legacy, tmp_path / "out")
    assert sorted(os.listdir(tmp_path / "out")) == sorted(os.listdir(cli_dumps))
    assert all((tmp_path / "out" / n).read_bytes() == (cli_dumps / n).read_bytes() for n in os.listdir(cli_dumps))
    # and a download of the new kind handed to it is refused, saying how it unpacks
    new = tmp_path / "run-7-dumps.tar.gz"
    new.write_bytes(b"".join(archive.stream(DumpSet.of(rehearse("demo-256", DEBUG.validate(dict(
        gpus=8, tp=8, model="llama3-8b", batch_tokens=8192 * 8, entries=10)))), "run-7-dumps", 0)))
    with pytest.raises(DumpError, match="unpacks with tar xzf or unzip"):
        archive.unpack(new, tmp_path / "other")
