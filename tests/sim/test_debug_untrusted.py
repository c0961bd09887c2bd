"""Dumps from elsewhere are untrusted (issue 24): the analyzer runs nothing in them (a payload in a plain pickle, in our
own header, hidden among good dumps), reads no file over MAX_DUMP_BYTES, refuses rank numbers out of range, and the
command line says so in one line naming the file, exit 2. Also: ``--dump`` checked before simulating, dumps of
another cluster refused, the dumps' size bounded (sim/debug/safeload.py, reader.py, dumpsize.py, cluster.py)."""
import os
import pickle
import subprocess
import sys

import pytest

from sim.core.errors import ParamError, UsageError
from sim.debug.analyze import analyze
from sim.debug.dumpformat import MAX_DUMP_BYTES, MAX_RANK, DumpError
from sim.debug.dumpsize import MAX_DUMPS_BYTES, check_room, dump_bytes
from sim.debug.params import DEBUG
from sim.debug.recorder import rehearse
from tests.sim.test_fr_analyze import entry, write

SMALL = dict(gpus=16, tp=8, dp=2, model="llama3-8b", batch_tokens=8192 * 2 * 2, entries=50)


class Payload:
    """Unpickled by pickle.loads, it runs ``touch <sentinel>``."""

    def __init__(self, sentinel):
        self.sentinel = str(sentinel)

    def __reduce__(self):
        return os.system, (f"touch {self.sentinel}",)


def cli(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "sim", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))


def refused(folder, name, says, sentinel=None):
    """analyze() and the command line both refuse ``folder`` naming file ``name``; nothing ran."""
    with pytest.raises(DumpError, match=f"{name}.*{says}"):
        analyze(folder)
    r = cli("debug", "analyze", folder, "-q")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and name in lines[0], r.stderr
    if sentinel is not None:
        assert not sentinel.exists()


@pytest.fixture
def ours(tmp_path):
    """16 ranks' dumps of our own format (a clean rehearsal on demo-256)."""
    folder = tmp_path / "dumps"
    rehearse("demo-256", DEBUG.validate(SMALL)).write_dumps(folder)
    return folder


def test_a_payload_in_a_plain_pickle_is_refused_and_not_run(tmp_path):
    sentinel = tmp_path / "ran"
    folder = tmp_path / "dumps"
    folder.mkdir()
    for r in range(4):
        write(folder, r, [entry(i, i + 1) for i in range(3)])
    (folder / "nccl_trace_rank_2").write_bytes(pickle.dumps({"version": "2.10", "entries": [], "x": Payload(sentinel)}))
    refused(folder, "nccl_trace_rank_2", "refused: the pickle asks for the global", sentinel)


def test_a_payload_in_our_header_is_refused_and_not_run(ours, tmp_path):
    # our layout's header (the memo's strings, put and popped) with a GLOBAL os.system + REDUCE slipped in after
    # its first string
    sentinel = tmp_path / "ran"
    p = ours / "nccl_trace_rank_3"
    data = p.read_bytes()
    at = data.index(b"q\x000") + 3
    cmd = f"touch {sentinel}".encode()
    evil = b"cos\nsystem\n(X" + len(cmd).to_bytes(4, "little") + cmd + b"tR0"
    p.write_bytes(data[:at] + evil + data[at:])
    pickle.loads(p.read_bytes())                                # what the old reader did with the header: it runs
    assert sentinel.exists()
    sentinel.unlink()
    refused(ours, "nccl_trace_rank_3", "refused", sentinel)


def test_one_bad_dump_among_15_good_ones_refuses_the_analysis(ours, tmp_path):
    sentinel = tmp_path / "ran"
    assert analyze(ours)["dumps"] == 16                         # the good ones alone read
    (ours / "nccl_trace_rank_7").write_bytes(pickle.dumps({"version": "2.10", "pg_config": Payload(sentinel),
                                                           "entries": []}))
    refused(ours, "nccl_trace_rank_7", "refused", sentinel)


def test_an_oversized_sparse_dump_is_refused_unread(ours):
    p = ours / "nccl_trace_rank_5"
    os.truncate(p, 8 * 10**9)                                   # 8 GB, sparse: nothing written
    refused(ours, "nccl_trace_rank_5", f"over the {MAX_DUMP_BYTES:,} a dump may have")


@pytest.mark.parametrize("rank", [4_000_000_000, 2**70, MAX_RANK])
def test_a_rank_number_out_of_range_is_refused(tmp_path, rank):
    for r in (0, 1, rank):
        write(tmp_path, r, [entry(i, i + 1) for i in range(3)])
    refused(tmp_path, f"nccl_trace_rank_{rank}", "out of range")


def test_numbers_out_of_range_inside_a_dump_are_refused(tmp_path):
    for r in range(2):
        write(tmp_path, r, [entry(i, i + 1) for i in range(3)])
    write(tmp_path, 2, [entry(i, i + 1) for i in range(3)], ranks=(0, 1, 2, 2**70))       # pg_config members
    refused(tmp_path, "nccl_trace_rank_2", "out of range")
    write(tmp_path, 2, [entry(2**70, 1)])                                                 # a record id
    refused(tmp_path, "nccl_trace_rank_2", "out of range")


def test_dump_to_a_folder_that_cannot_take_it_fails_before_simulating(tmp_path):
    # a 16,384-rank rehearsal simulates for tens of seconds before writing: refused at once instead
    (tmp_path / "file").write_text("x")
    big = ["--preset", "meta-roce-24k", "--gpus", "16384", "--tp", "8", "--pp", "16", "--model", "llama3-405b"]
    for dest in ("/dev/null", tmp_path / "file", "/proc/no-such/dumps"):
        r = cli("debug", *big, "--dump", dest, "-q")
        assert r.returncode == 2 and r.stderr.strip().splitlines() == [r.stderr.strip()], r.stderr
        assert f"--dump {dest}" in r.stderr and "Traceback" not in r.stderr


def test_dumps_of_another_cluster_are_refused_naming_both(ours):
    with pytest.raises(DumpError, match="written on demo-256 .256 GPUs., not on the cluster given, meta-roce-24k"):
        analyze(ours, "meta-roce-24k")
    r = cli("debug", "analyze", ours, "--preset", "meta-roce-24k", "-q")
    assert r.returncode == 2 and "demo-256" in r.stderr and "meta-roce-24k" in r.stderr, r.stderr
    assert analyze(ours, "demo-256")["verdict"] == "clean"


def test_the_dumps_bytes_are_bounded_and_estimated_as_written(ours):
    with pytest.raises(ParamError, match="entries: 16,384 ranks x 100,000 entries would write about 237.7 GB") as e:
        DEBUG.validate(dict(gpus=16384, tp=8, pp=16, dp=128, model="llama3-405b", entries=100_000))
    assert list(e.value.errors) == ["entries"]
    r = cli("debug", "--preset", "meta-roce-24k", "--gpus", "16384", "--tp", "8", "--pp", "16", "--model",
            "llama3-405b", "--entries", "100000", "--dump", ours / "x", "-q")
    assert r.returncode == 2 and "entries" in r.stderr and "MAX_DUMPS_BYTES" in r.stderr, r.stderr
    assert dump_bytes(DEBUG.validate(dict(gpus=16384, tp=8, pp=16, dp=128, model="llama3-405b"))) < MAX_DUMPS_BYTES
    # the estimate bounds what the writer wrote (every rank recorded its 50 entries)
    written = sum(p.stat().st_size for p in ours.glob("nccl_trace_rank_*"))
    assert written <= dump_bytes(DEBUG.validate(SMALL)) < 2 * written


def test_a_folder_without_room_is_refused(tmp_path):
    free = __import__("shutil").disk_usage(tmp_path).free
    with pytest.raises(UsageError, match=f"{tmp_path}: .* GB free, the dumps need"):
        check_room(tmp_path, free)
    check_room(tmp_path, 1000)
