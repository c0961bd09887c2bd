"""Our dumps against PyTorch's own flight recorder analyzer (fr_trace): as the command line writes them and as the twin's
download unpacks; and a real gloo dump against ours.
Optional: skipped when torch is absent (pip install -r requirements-torch.txt)."""
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (requirements-torch.txt): optional check")

from sim.debug.analyze import analyze  # noqa: E402
from sim.debug.params import DEBUG  # noqa: E402
from sim.debug.recorder import rehearse  # noqa: E402


def fr_trace(folder):
    """PyTorch's fr_trace (build_db over read_dir) on a folder of dumps, with its default options (mismatch cap
    10); the database and its log lines."""
    import logging
    from torch.distributed.flight_recorder.components.builder import build_db
    from torch.distributed.flight_recorder.components.config_manager import JobConfig
    from torch.distributed.flight_recorder.components.loader import read_dir
    lines = []
    handler = logging.Handler()
    handler.emit = lambda rec: lines.append(rec.getMessage())
    log = logging.getLogger("Flight Recorder")
    log.addHandler(handler)
    try:
        args = JobConfig().parse_args([str(folder), "--prefix", "nccl_trace_rank_"])
        details, version = read_dir(args)
        return build_db(details, args, version), version, len(details), lines
    finally:
        log.removeHandler(handler)


def test_pytorch_fr_trace_reads_our_dumps_and_names_the_missing_rank(tmp_path):
    r = rehearse("demo-256", DEBUG.validate(dict(gpus=32, tp=8, pp=2, dp=2, model="llama3-8b",
                                                 batch_tokens=8192 * 2 * 4, inject="hang:rank=5,op=3", entries=100)))
    r.write_dumps(tmp_path)
    db, version, n, _ = fr_trace(tmp_path)
    assert version == "2.10" and n == 32
    # fr_trace accepts the format and reports the stalled collective with the rank that never joined it
    assert any(c.missing_ranks == {5} for c in db.collectives)
    assert all(c.pass_check for c in db.collectives)
    assert analyze(tmp_path)["culprit"]["ranks"] == [5]


def test_pytorch_fr_trace_matches_every_healthy_p2p_pair(tmp_path):
    """A hang in a 4-stage pipeline of equal stages (8 layers each: balance_stages off), steps_before 0: fr_trace,
    with its default mismatch cap, matches every send with its receive (no P2P mismatch: every Collective row passes),
    does not abort, and names the injected rank as missing from the collective it never entered. (With Llama 3's
    balanced stages, 7/9/9/7 layers, or more steps before the ring, fr_trace's alignment of every rank's trace by
    record id cuts the pairs at different points: the next test, docs/debugging.md "Why fr_trace aborts".)"""
    r = rehearse("demo-256", DEBUG.validate(dict(gpus=32, tp=4, pp=4, dp=2, model="llama3-8b",
                                                 batch_tokens=8192 * 2 * 8, inject="hang:rank=13", entries=2000,
                                                 steps_before=0, balance_stages=False)))
    r.write_dumps(tmp_path)
    db, _, n, lines = fr_trace(tmp_path)
    assert n == 32 and not any("Too many mismatches" in x for x in lines)
    p2p = [c for c in db.collectives if c.collective_name.split(" ")[0] in ("nccl:send", "nccl:recv")]
    assert len(p2p) > 1000 and all(c.pass_check for c in db.collectives)
    assert not any("SIZE_OR_SYNTAX_MISMATCH" in x for x in lines)
    culprit = analyze(tmp_path)["culprit"]
    assert culprit["ranks"] == [13]
    assert any(c.missing_ranks == {13} and c.collective_seq_id == culprit["collective_seq_id"]
               and c.collective_name == culprit["op"] for c in db.collectives)
    # the other rows naming a missing rank are the stall's spread: members waiting on a rank itself waiting
    stalled = {c.collective_state for c in p2p if c.missing_ranks}
    assert stalled <= {"started", "completed"}


def test_fr_trace_alignment_cuts_the_pairs_of_unequal_stages_apart(tmp_path):
    """Why fr_trace 2.13 aborts on a pipeline whose stages record different numbers of entries per step (Llama 3's
    balanced stages, 7/9/9/7 layers, the default; docs/debugging.md "P2P entries", "Why fr_trace aborts"): our
    entries agree pair by pair (every P2P's counterpart has its p2p_seq_id on the other rank of the pair group), but
    fr_trace first drops every entry below the largest first record_id of any rank (align_trace_from_beginning), and
    record_id counts a rank's own entries (FlightRecorder's id_, one per process), so the two ranks of a pair keep
    their P2P from different p2p_seq_ids and are paired entries apart: the cap is reached on a pair group."""
    from torch.distributed.flight_recorder.components.utils import align_trace_from_beginning
    r = rehearse("demo-256", DEBUG.validate(dict(gpus=32, tp=4, pp=4, dp=2, model="llama3-8b",
                                                 batch_tokens=8192 * 2 * 8, inject="hang:rank=13", entries=2000)))
    r.write_dumps(tmp_path)
    import pickle
    entries = {rank: pickle.loads((tmp_path / f"nccl_trace_rank_{rank}").read_bytes())["entries"] for rank in range(32)}
    names = {"nccl:send 0->1": "nccl:recv 1<-0", "nccl:recv 0<-1": "nccl:send 1->0"}

    def pairs(ent):                                  # pair group -> {rank: its P2P entries, in order}
        out = {}
        for rank, es in ent.items():
            for e in es:
                if e["is_p2p"]:
                    out.setdefault(e["process_group"][0], {}).setdefault(rank, []).append(e)
        return out

    for by_rank in pairs(entries).values():          # as dumped: counterparts share their p2p_seq_id
        (_, a), (_, b) = sorted(by_rank.items())
        seq_b = {e["p2p_seq_id"]: e for e in b}
        common = [e for e in a if e["p2p_seq_id"] in seq_b]
        assert len(common) > 20 and all(names[e["profiling_name"]] == seq_b[e["p2p_seq_id"]]["profiling_name"]
                                        for e in common)
    firsts = {e[0]["record_id"] for e in entries.values()}
    assert len(firsts) > 1                           # ranks of different stages: different record ids
    cut = pairs(align_trace_from_beginning({k: list(v) for k, v in entries.items()}))
    apart = [g for g, by_rank in cut.items() if len({x[0]["p2p_seq_id"] for x in by_rank.values()}) > 1]
    assert apart                                     # fr_trace's alignment starts a pair's ranks at different ops
    _, _, _, lines = fr_trace(tmp_path)
    aborted = [x for x in lines if "Too many mismatches" in x]
    assert aborted and aborted[0].endswith(": pp aborting")



def test_fr_trace_on_a_hang_in_the_jobs_first_step_names_the_rank_and_no_pair_mismatch(tmp_path):
    """A hang in the job's first step (steps_before 0, steps 1) with a ring of 2,000 entries, more than any stage's
    step (Llama 3's balanced stages, 7/9/9/7 layers, whose default ring start cuts the pairs apart: the test above):
    every rank's first record_id is 0, so fr_trace's alignment cuts nothing. With its default mismatch cap it does
    not abort, every row passes its checks (no P2P type or size mismatch on any pair group), and the rows it flags
    are "Not all ranks joining": the injected rank missing from the receive of its pair partner (the send it never
    entered) and from its TP and DP groups' next collectives, and the stall's spread (docs/debugging.md "A hang in
    the job's first steps")."""
    r = rehearse("demo-256", DEBUG.validate(dict(gpus=32, tp=4, pp=4, dp=2, model="llama3-8b",
                                                 batch_tokens=8192 * 2 * 8, inject="hang:rank=13", entries=2000,
                                                 steps_before=0, steps=1)))
    r.write_dumps(tmp_path)
    import pickle
    firsts = {pickle.loads((tmp_path / f"nccl_trace_rank_{rank}").read_bytes())["entries"][0]["record_id"]
              for rank in range(32)}
    assert firsts == {0}
    db, _, n, lines = fr_trace(tmp_path)
    assert n == 32 and not any("Too many mismatches" in x or "has errors" in x for x in lines)
    assert all(c.pass_check and c.type_of_mismatch is None for c in db.collectives)
    p2p = [c for c in db.collectives if c.collective_name.split(" ")[0] in ("nccl:send", "nccl:recv")]
    assert sum(not c.missing_ranks for c in p2p) > 200              # the healthy sends and receives, matched
    flagged = [c for c in db.collectives if c.missing_ranks]
    assert flagged and all(len(c.missing_ranks) == 1 for c in flagged)
    assert sum("Not all ranks joining" in x for x in lines) == len(flagged)
    dp = r.group_ranks["dp"]                                        # the stall stays in 13's data-parallel
    replica = set(dp[:, list(dp[r.rank_group["dp"][13]]).index(13)].tolist())   # replica: only its ranks stop
    assert set().union(*(c.missing_ranks for c in flagged)) <= replica
    # the injected op: rank 13 never entered its send to its partner, which waits in the receive
    fault = r.fault_op
    assert fault["entry"] == "send"
    partner = [c for c in p2p if c.missing_ranks == {13}]
    assert len(partner) == 1 and partner[0].collective_name.startswith("nccl:recv")
    assert partner[0].collective_state == "started" and 13 in partner[0].expected_ranks
    culprit = analyze(tmp_path)["culprit"]
    assert culprit["ranks"] == [13]                                 # ours: 13 missing from its TP group's next
    assert any(c.missing_ranks == {13} and c.group_id == culprit["process_group"]["name"]   # collective: flagged
               and c.collective_seq_id == culprit["collective_seq_id"] and c.collective_name == culprit["op"]
               for c in flagged)


WORKER = r'''
import os, sys, torch, torch.distributed as dist
rank, out = int(sys.argv[1]), sys.argv[2]
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=sys.argv[3], TORCH_FR_BUFFER_SIZE="100")
dist.init_process_group("gloo", rank=rank, world_size=4)
t = torch.ones(4)
for _ in range(3):
    dist.all_reduce(t)
if rank != 3:                      # rank 3 skips the fourth all-reduce: the others wait in it
    dist.all_reduce(t, async_op=True)
import time; time.sleep(1.0)
open(f"{out}/nccl_trace_rank_{rank}", "wb").write(torch._C._distributed_c10d._dump_fr_trace())
os._exit(0)
'''


def run_gloo(tmp_path, worker: str, base_port: int, ranks: int = 4):
    """Run ``worker`` as a real ``ranks``-process gloo job; return the folder its flight recorder dumps are in."""
    script = tmp_path / "worker.py"
    script.write_text(worker)
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    port = str(base_port + os.getpid() % 300)
    procs = [subprocess.Popen([sys.executable, str(script), str(r), str(dumps), port]) for r in range(ranks)]
    for p in procs:
        p.wait(timeout=50)
    return dumps


def test_real_gloo_dump_names_the_rank_that_skipped(tmp_path):
    dumps = run_gloo(tmp_path, WORKER, 29600)
    assert len(os.listdir(dumps)) == 4
    a = analyze(dumps)
    assert a["backend"] == "gloo" and a["culprit"]["ranks"] == [3] and a["culprit"]["collective_seq_id"] == 4


P2P_WORKER = r'''
import os, sys, time, torch, torch.distributed as dist
rank, out = int(sys.argv[1]), sys.argv[2]
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=sys.argv[3], TORCH_FR_BUFFER_SIZE="100")
dist.init_process_group("gloo", rank=rank, world_size=4)
pp = dist.new_group([0, 1, 2, 3], group_desc="pp")
t, u = torch.ones(3, 5, dtype=torch.bfloat16), torch.zeros(3, 5, dtype=torch.bfloat16)
dist.all_reduce(t, group=pp)
if rank > 0: dist.recv(t, src=rank - 1, group=pp)                 # send / recv along the chain
if rank < 3: dist.send(t, dst=rank + 1, group=pp)
ws = ([dist.irecv(u, src=rank + 1, group=pp)] if rank < 3 else []) + \
     ([dist.isend(t, dst=rank - 1, group=pp)] if rank > 0 else [])
for w in ws: w.wait()
ops = ([dist.P2POp(dist.isend, t, rank + 1, pp), dist.P2POp(dist.irecv, u, rank + 1, pp)] if rank < 3 else []) + \
      ([dist.P2POp(dist.irecv, u, rank - 1, pp), dist.P2POp(dist.isend, t, rank - 1, pp)] if rank > 0 else [])
for w in dist.batch_isend_irecv(ops): w.wait()
dist.all_reduce(t, group=pp)
time.sleep(0.5)
open(f"{out}/nccl_trace_rank_{rank}", "wb").write(torch._C._distributed_c10d._dump_fr_trace())
os._exit(0)
'''


def test_real_gloo_run_records_no_p2p_entry(tmp_path):
    """The reference our P2P entries follow is PyTorch's NCCL recorder (its source, docs/debugging.md "P2P
    entries"): gloo's send / recv, isend / irecv and batch_isend_irecv leave no flight recorder entry (they advance
    the group's op_id only), so a real gloo run shows the entry's keys, not a P2P entry."""
    dumps = run_gloo(tmp_path, P2P_WORKER, 29300)
    import pickle
    theirs = [pickle.loads((dumps / f"nccl_trace_rank_{r}").read_bytes()) for r in range(4)]
    for d in theirs:
        assert [e["profiling_name"] for e in d["entries"]] == ["gloo:all_reduce"] * 2
        assert not any(e["is_p2p"] for e in d["entries"]) and {e["p2p_seq_id"] for e in d["entries"]} == {0}
    # rank 1 issued 8 P2P ops between its two all-reduces, rank 0 four: op_id counts them, nothing else does
    assert [d["entries"][1]["op_id"] - d["entries"][0]["op_id"] for d in theirs] == [5, 9, 9, 5]
    r = rehearse("demo-256", DEBUG.validate(dict(gpus=16, tp=2, pp=4, dp=2, model="llama3-8b",
                                                 batch_tokens=8192 * 2 * 8, entries=50)))
    r.write_dumps(tmp_path / "ours")
    ours = pickle.loads((tmp_path / "ours" / "nccl_trace_rank_2").read_bytes())
    p2p = [e for e in ours["entries"] if e["is_p2p"]]
    assert p2p and set(p2p[0]) == set(theirs[0]["entries"][0])         # the same keys as PyTorch's entries


@pytest.mark.parametrize("fmt", ["tar.gz", "zip"])
def test_pytorch_fr_trace_reads_the_twins_download_as_unpacked(tmp_path, fmt):
    """The download of a debug run (sim.debug.archive.stream, what GET /api/runs/<id>/dumps/ sends), unpacked with
    the standard library as tar / unzip would: PyTorch's fr_trace reads the folder as it is, with no option (its
    prefix inferred from the file names), and its entries are the command line's; one rank's download is that
    rank's file alone, which PyTorch's reader loads as the command line's."""
    import io
    import pickle
    import tarfile
    import zipfile
    from sim.debug import archive
    from sim.debug.writer import DumpSet
    from torch.distributed.flight_recorder.components.loader import read_dump
    r = rehearse("demo-256", DEBUG.validate(dict(gpus=32, tp=8, pp=2, dp=2, model="llama3-8b",
                                                 batch_tokens=8192 * 2 * 4, inject="hang:rank=5,op=3", entries=100)))
    cli = tmp_path / "cli"
    r.write_dumps(cli)
    ds = DumpSet.of(r)

    def unpack(body, out):
        if fmt == "zip":
            zipfile.ZipFile(io.BytesIO(body)).extractall(out)
        else:
            tarfile.open(fileobj=io.BytesIO(body), mode="r:gz").extractall(out, filter="data")

    unpack(b"".join(archive.stream(ds, "run-7-dumps", 0, fmt)), tmp_path / "got")
    folder = tmp_path / "got" / "run-7-dumps"
    # PyTorch's own command line on the folder, no option: it names the rank that never joined
    done = subprocess.run([sys.executable, "-m", "torch.distributed.flight_recorder.fr_trace", str(folder)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "missing ranks: {5}" in done.stdout + done.stderr                 # its log lines
    # and its analyzer, as in the tests above, on the folder with no --prefix
    from torch.distributed.flight_recorder.components.builder import build_db
    from torch.distributed.flight_recorder.components.config_manager import JobConfig
    from torch.distributed.flight_recorder.components.loader import read_dir
    args = JobConfig().parse_args([str(folder)])
    details, version = read_dir(args)
    db = build_db(details, args, version)
    assert version == "2.10" and len(details) == 32
    assert any(c.missing_ranks == {5} for c in db.collectives)
    for rank in (0, 31):                                     # the same entries as the command line's dumps
        name = f"nccl_trace_rank_{rank}"
        assert read_dump("nccl_trace_rank_", str(folder / name)) == read_dump("nccl_trace_rank_", str(cli / name))
    # one rank's download: its file alone, which PyTorch's reader loads as the command line's
    unpack(b"".join(archive.stream(ds, "run-7-rank-12", 0, fmt, rank=12)), tmp_path / "one")
    one = tmp_path / "one" / "run-7-rank-12"
    assert os.listdir(one) == ["nccl_trace_rank_12"]
    got = read_dump("nccl_trace_rank_", str(one / "nccl_trace_rank_12"))
    assert got == read_dump("nccl_trace_rank_", str(cli / "nccl_trace_rank_12")) and got["rank"] == 12
    assert set(pickle.loads((one / "nccl_trace_rank_12").read_bytes())) == {
        "version", "comm_lib_version", "pg_config", "pg_status", "entries"}
    details, _ = read_dir(JobConfig().parse_args([str(one)]))
    assert list(details) == ["nccl_trace_rank_12"]
