"""The analyzer (sim/debug/analyze.py, reading with sim/debug/reader.py) on hand-made PyTorch-format dumps: generic pickle path, errors naming the file."""
import pickle

import pytest

from sim.debug.analyze import analyze
from sim.debug.dumpformat import DumpError
from sim.debug.params import DEBUG
from sim.debug.recorder import rehearse


def entry(rid, seq, name="nccl:all_reduce", state="completed", t=0, pg=("1", "dp")):
    return {"record_id": rid, "pg_id": 1, "process_group": pg, "collective_seq_id": seq, "p2p_seq_id": 0,
            "op_id": rid + 1, "profiling_name": name, "time_created_ns": 10**18 + t, "input_sizes": [[4]],
            "input_dtypes": ["Float"], "output_sizes": [[4]], "output_dtypes": ["Float"], "state": state,
            "time_discovered_started_ns": None, "time_discovered_completed_ns": None, "retired": state == "completed",
            "timeout_ms": 600000, "is_p2p": False, "frames": []}


def write(folder, rank, entries, ranks=(0, 1, 2, 3)):
    d = {"version": "2.10", "pg_config": {"1": {"name": "1", "desc": "dp", "ranks": str(list(ranks))}},
         "pg_status": {}, "entries": entries}
    (folder / f"nccl_trace_rank_{rank}").write_bytes(pickle.dumps(d))


def test_rank_that_skips_a_collective_is_the_culprit(tmp_path):
    for r in range(4):
        es = [entry(i, i + 1) for i in range(3)]
        if r != 2:
            es.append(entry(3, 4, state="started"))
        write(tmp_path, r, es)
    a = analyze(tmp_path)
    assert a["verdict"] == "hang" and a["culprit"]["ranks"] == [2] and a["culprit"]["collective_seq_id"] == 4


def test_clean_dumps_give_no_culprit(tmp_path):
    for r in range(4):
        write(tmp_path, r, [entry(i, i + 1) for i in range(3)])
    a = analyze(tmp_path)
    assert a["culprit"] is None and a["verdict"] == "clean"
    assert a["heatmap"]["level"] == "rank" and a["heatmap"]["state"][0] == [3, 3, 3]


def test_truncated_and_corrupt_files_are_named(tmp_path):
    for r in range(4):
        write(tmp_path, r, [entry(i, i + 1) for i in range(3)])
    p = tmp_path / "nccl_trace_rank_1"
    p.write_bytes(p.read_bytes()[:-40])
    with pytest.raises(DumpError, match="nccl_trace_rank_1.*truncated"):
        analyze(tmp_path)
    p.write_bytes(b"this is not a pickle")
    with pytest.raises(DumpError, match="nccl_trace_rank_1"):
        analyze(tmp_path)


def test_our_fixed_layout_truncated_is_named(tmp_path):
    r = rehearse("demo-256", DEBUG.validate(dict(gpus=16, tp=8, dp=2, model="llama3-8b", batch_tokens=8192 * 2 * 2,
                                                    entries=50)))
    r.write_dumps(tmp_path)
    p = tmp_path / "nccl_trace_rank_3"
    p.write_bytes(p.read_bytes()[:-100])
    with pytest.raises(DumpError, match="nccl_trace_rank_3"):
        analyze(tmp_path)


def test_fixed_layout_reads_as_pickle_does(tmp_path, monkeypatch):
    """Our dumps are pickles with every entry in one fixed layout: the analyzer's numpy read of each file gives the
    columns pickle gives, and the whole analysis is the same either way (a desync: the desynced entries differ)."""
    import numpy as np

    from sim.debug import reader
    r = rehearse("demo-256", DEBUG.validate(dict(gpus=32, tp=8, pp=2, dp=2, model="llama3-8b",
                                                 batch_tokens=8192 * 2 * 4, entries=120, inject="desync:rank=9")))
    r.write_dumps(tmp_path)
    for rank in (0, 9, 31):
        path = str(tmp_path / f"nccl_trace_rank_{rank}")
        d = pickle.load(open(path, "rb"))
        assert pickle.loads(pickle.dumps(d)) == d and len(d["entries"]) == 120
        assert all(type(e["time_discovered_completed_ns"]) in (int, type(None)) for e in d["entries"])
        t_fast, t_slow = reader.Tables(), reader.Tables()
        fast = reader.read_dump(path, rank, t_fast)
        with monkeypatch.context() as m:
            m.setattr(reader, "_fast", lambda data, bufs: None)
            slow = reader.read_dump(path, rank, t_slow)
        coll = ~slow["p2p"]
        for k in ("record_id", "p2p", "numel_in", "numel_out", "dtype", "state", "created", "done"):
            assert np.array_equal(np.asarray(fast[k]), slow[k]), k
        for k, names in (("pg", "pg_name"), ("op", "ops")):         # table indexes: compare the names
            assert [getattr(t_fast, names)[i] for i in fast[k]] == [getattr(t_slow, names)[i] for i in slow[k]]
        assert np.array_equal(np.asarray(fast["seq"])[coll], slow["seq"][coll])
    a = analyze(tmp_path, "demo-256")
    with monkeypatch.context() as m:
        m.setattr(reader, "_fast", lambda data, bufs: None)
        b = analyze(tmp_path, "demo-256")
    a.pop("seconds"), b.pop("seconds")
    assert a == b and a["verdict"] == "desync" and a["culprit"]["ranks"] == [9]


def test_a_wrong_constant_byte_is_not_read_as_our_layout(tmp_path):
    r = rehearse("demo-256", DEBUG.validate(dict(gpus=16, tp=8, dp=2, model="llama3-8b", batch_tokens=8192 * 2 * 2,
                                                    entries=50)))
    r.write_dumps(tmp_path)
    p = tmp_path / "nccl_trace_rank_5"
    data = bytearray(p.read_bytes())
    at = data.rfind(b"u}(")                        # the last entry's EMPTY_DICT MARK: make it a bad opcode
    data[at + 1] = 0xFF
    p.write_bytes(bytes(data))
    with pytest.raises(DumpError, match="nccl_trace_rank_5.*corrupt"):
        analyze(tmp_path)
