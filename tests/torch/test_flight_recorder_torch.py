"""Our dumps against PyTorch's own flight recorder analyzer (fr_trace), and a real gloo dump against ours.
Optional: skipped when torch is absent (pip install -r requirements-torch.txt)."""
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (requirements-torch.txt): optional check")

from sim.debug.analyze import analyze  # noqa: E402
from sim.debug.params import DEBUG  # noqa: E402
from sim.debug.recorder import rehearse  # noqa: E402


def test_pytorch_fr_trace_reads_our_dumps_and_names_the_missing_rank(tmp_path):
    from torch.distributed.flight_recorder.components.builder import build_db
    from torch.distributed.flight_recorder.components.config_manager import JobConfig
    from torch.distributed.flight_recorder.components.loader import read_dir
    r = rehearse("demo-256", DEBUG.validate(dict(gpus=32, tp=8, pp=2, dp=2, model="llama3-8b",
                                                 batch_tokens=8192 * 2 * 4, inject="hang:rank=5,op=3", entries=100)))
    r.write_dumps(tmp_path)
    args = JobConfig().parse_args([str(tmp_path), "--prefix", "nccl_trace_rank_"])
    details, version = read_dir(args)
    assert version == "2.10" and len(details) == 32
    db = build_db(details, args, version)
    # fr_trace accepts the format and flags the stalled collectives; this version logs their missing ranks
    # ("missing ranks: {5}") without storing them on the Collective rows, so we check the flag only
    assert db.collectives and any(not c.pass_check for c in db.collectives)
    assert analyze(tmp_path)["culprit"]["ranks"] == [5]


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


def test_real_gloo_dump_names_the_rank_that_skipped(tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    dumps = tmp_path / "dumps"
    dumps.mkdir()
    port = str(29600 + os.getpid() % 300)
    procs = [subprocess.Popen([sys.executable, str(script), str(r), str(dumps), port]) for r in range(4)]
    for p in procs:
        p.wait(timeout=50)
    assert len(os.listdir(dumps)) == 4
    a = analyze(dumps)
    assert a["backend"] == "gloo" and a["culprit"]["ranks"] == [3] and a["culprit"]["collective_seq_id"] == 4
