"""The rehearsal's ``steps``: a hang in the job's first step, whose ring reaches the job's start on every rank
(docs/debugging.md "A hang in the job's first steps"), and the default that fills the ring as mid-run."""
import pickle

import pytest

from sim.core.errors import ParamError
from sim.debug.params import DEBUG
from sim.debug.recorder import rehearse

JOB = dict(gpus=32, tp=4, pp=4, dp=2, model="llama3-8b", batch_tokens=8192 * 2 * 8, inject="hang:rank=13",
           entries=2000, steps_before=0)          # Llama 3's balanced stages (7/9/9/7 layers): unequal steps


def dumps(tmp_path, **kw):
    r = rehearse("demo-256", DEBUG.validate({**JOB, **kw}))
    r.write_dumps(tmp_path)
    return r, {rank: pickle.loads((tmp_path / f"nccl_trace_rank_{rank}").read_bytes())["entries"] for rank in range(32)}


def test_a_first_step_hang_records_every_rank_from_the_job_start(tmp_path):
    r, ent = dumps(tmp_path, steps=1)
    lengths = {len(st.ops) for st in r.stages}
    assert len(lengths) > 1 and max(lengths) <= JOB["entries"]          # stages of unequal steps, one step each
    for rank, es in ent.items():
        assert es[0]["record_id"] == 0                                  # nothing wrapped
        assert [e["record_id"] for e in es] == list(range(len(es)))
        seen = {}
        for e in es:                                                    # every group counted from its first op
            g = e["process_group"][0]
            key = "p2p_seq_id" if e["is_p2p"] else "collective_seq_id"
            assert e[key] == seen.get(g, 0) + 1
            seen[g] = e[key]
    # the hung rank recorded exactly the ops before the one it never entered
    assert len(ent[13]) == r.fault_op["op"]


def test_steps_count_from_the_first_and_the_default_fills_the_ring(tmp_path):
    r, ent = dumps(tmp_path / "two", steps=2)
    per_step = {st.stage: len(st.ops) // 2 for st in r.stages}
    assert len(ent[13]) == per_step[r.fault_op["stage"]] + r.fault_op["op"]   # the fault in the second step
    _, full = dumps(tmp_path / "default")
    assert min(len(es) for es in full.values()) == JOB["entries"]               # every ring full, so wrapped
    assert max(es[0]["record_id"] for es in full.values()) > 0


def test_more_steps_than_fill_the_ring_are_refused():
    fill = int(rehearse("demo-256", DEBUG.validate(JOB)).stages[0].step_of.max()) + 1     # the default's steps
    assert DEBUG.validate({**JOB, "steps": fill})["steps"] == fill
    with pytest.raises(ParamError) as e:
        DEBUG.validate({**JOB, "steps": fill + 1})
    assert list(e.value.errors) == ["steps"] and f"at most {fill:,}" in e.value.errors["steps"][0]
