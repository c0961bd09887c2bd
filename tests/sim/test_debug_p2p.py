"""The pipeline's P2P entries in our dumps have the shape PyTorch's NCCL flight recorder gives them (docs/debugging.md
"P2P entries"), pinned without torch: each pair of neighbouring stages on a two-rank group, names with the pair's
local ranks, p2p_seq_id counted per pair group, collective_seq_id that group's (0), and the two ranks of a pair
issuing their sends and receives in the same order (what PyTorch's fr_trace needs to match them); op_id counted per
process group, record_id per process."""
import pickle

from sim.debug.params import DEBUG
from sim.debug.recorder import rehearse

NAMES = {"nccl:send 0->1", "nccl:recv 0<-1", "nccl:send 1->0", "nccl:recv 1<-0"}
COUNTERPART = {"nccl:send 0->1": "nccl:recv 1<-0", "nccl:recv 0<-1": "nccl:send 1->0"}


def test_p2p_entries_pair_up_on_two_rank_groups(tmp_path):
    r = rehearse("demo-256", DEBUG.validate(dict(gpus=24, tp=2, pp=3, dp=4, model="llama3-8b",
                                                 batch_tokens=8192 * 4 * 6, entries=1000)))
    r.write_dumps(tmp_path)
    dumps = {rank: pickle.loads((tmp_path / f"nccl_trace_rank_{rank}").read_bytes()) for rank in range(24)}
    pairs = {}                                                   # pp group name -> {rank: its P2P entries}
    for rank, d in dumps.items():
        by_group = {}                                            # op_id: one counter per process group, +1 per
        for e in d["entries"]:                                   # op (ProcessGroupNCCL's op_id_), not record_id
            by_group.setdefault(e["process_group"][0], []).append(e["op_id"])
        for ids in by_group.values():
            assert ids == list(range(ids[0], ids[0] + len(ids)))
        assert sum(len(x) for x in by_group.values()) == len(d["entries"]) and len(by_group) > 1
        rids = [e["record_id"] for e in d["entries"]]               # record_id: FlightRecorder::id_, one per
        assert rids == list(range(rids[0], rids[0] + len(rids)))  # process over all its groups
        pp_groups = {k: v for k, v in d["pg_config"].items() if v["desc"] == "pp"}
        assert all(len(eval(v["ranks"])) == 2 and rank in eval(v["ranks"]) for v in pp_groups.values())
        assert len(pp_groups) in (1, 2)                          # first / last stage: one pair; middle: two
        for e in d["entries"]:
            if not e["is_p2p"]:
                assert e["p2p_seq_id"] == 0                      # a collective's group does no P2P
                continue
            name = e["process_group"][0]
            assert name in pp_groups and e["profiling_name"] in NAMES and e["collective_seq_id"] == 0
            assert e["input_sizes"] == e["output_sizes"] and e["input_dtypes"] == e["output_dtypes"]
            pairs.setdefault(name, {}).setdefault(rank, []).append(e)
    assert len(pairs) == 2 * 8                                   # 8 pipelines of 3 stages: 2 pairs each
    for name, by_rank in pairs.items():
        (lo, a), (hi, b) = sorted(by_rank.items())
        for x in (a, b):                                         # one seqP2P_ per pair group, +1 per op
            ids = [e["p2p_seq_id"] for e in x]
            assert ids == list(range(ids[0], ids[0] + len(ids)))
        by_seq = {e["p2p_seq_id"]: e for e in b}
        common = [x for x in a if x["p2p_seq_id"] in by_seq]     # the windows' common part
        assert len(common) > 20
        for x in common:                                         # the same order on both: counterparts match
            y = by_seq[x["p2p_seq_id"]]
            assert x["profiling_name"] in COUNTERPART and COUNTERPART[x["profiling_name"]] == y["profiling_name"]
            assert x["input_sizes"] == y["output_sizes"]
