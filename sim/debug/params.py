"""The parameters of a fault rehearsal and of the process-group start-up model."""
from __future__ import annotations

from sim.core.params import Param, ParamSet
from sim.debug.recorder import check_debug
from sim.debug.startup import check_startup
from sim.jobs.params import JOB, JOB_PARAMS, MAX_DIM


# ------------------------------------------------------------------------------- debugging a job (issue 16)
FR_BUFFER_ENTRIES = 2000          # PyTorch's default flight recorder ring size (TORCH_FR_BUFFER_SIZE) [S32]
FR_TIMEOUT_S = 600.0              # ProcessGroupNCCL's default collective timeout, 10 minutes [S32]
MAX_FR_ENTRIES = 100_000          # ring entries per rank the rehearsal writes
MAX_FAULT_TEXT = 200              # a rehearsal's fault: one short spec


DEBUG = ParamSet("debug", tuple(p for p in JOB_PARAMS if p.name != "hottest") + (
    Param("inject", "text", None, "the fault, KIND:KEY=VALUE[,KEY=VALUE], a rank R from 0 to the job's ranks - 1 "
                                  "(e.g. hang:rank=5 on 8 GPUs): hang:rank=R[,op=K] (rank R never enters its K-th "
                                  "collective of the last step), desync:rank=R[,op=K][,what=size|op], "
                                  "slow:rank=R[,factor=X] (its GPU X times slower), link:id=L[,factor=X] (a backend "
                                  "link X times slower; factor=inf: failed), host:rank=R[,op=K] (R's host dies); "
                                  "gpu=<GPU name> or host=<Host name> may stand for rank=R, link:id=<Link name> for "
                                  "L; null: a clean job",
          max=MAX_FAULT_TEXT, nullable=True),
    Param("entries", "int", FR_BUFFER_ENTRIES, "flight recorder ring entries per rank (TORCH_FR_BUFFER_SIZE)",
          min=1, max=MAX_FR_ENTRIES),
    Param("timeout_s", "float", FR_TIMEOUT_S, "collective timeout of the watchdog in seconds (init_process_group's "
                                              "timeout)", min=0.001, max=86_400.0),
    Param("steps_before", "int", 10, "training steps the job completed before the rehearsed ones (they set the "
                                     "record and sequence ids' offsets)", min=0, max=1_000_000),
    Param("steps", "int", None, "training steps the rehearsal runs after steps_before, the fault in the last (with "
                                "steps_before 0 and entries at least a step's, steps 1 is a hang in the job's first "
                                "step: no ring wraps); null: enough to fill the ring (entries over the shortest "
                                "stage's step, plus one)", min=1, max=MAX_FR_ENTRIES + 1, nullable=True),
), check=check_debug, doc="A fault rehearsal: a training job's collectives, a fault, the flight recorder dumps.")


STARTUP = ParamSet("startup", (
    Param("gpus", "text", "1024:32768", "job sizes in ranks: A:B (doubling from A to B) or A,B,C", max=200),
    JOB.by_name["tp"],
    JOB.by_name["cp"],
    Param("pp", "int", 16, JOB.by_name["pp"].help, min=1, max=MAX_DIM),
    Param("gpus_per_host", "int", 8, "ranks per host (one per GPU)", min=1, max=64),
    Param("store_ops_per_s", "float", None, "requests per second the TCPStore server's single thread serves; null: "
                                            "the backend's (docs/debugging.md)", min=1.0, max=1e9, nullable=True),
    Param("store_backend", "choice", "libuv", "TCPStore server: libuv (event loop, PyTorch >= 2.4 default) or "
                                              "legacy (one thread polling every socket)",
          choices=("libuv", "legacy")),
    Param("creation", "choice", "lazy", "communicator creation: eager (every group's NCCL communicator at "
                                        "new_group) or lazy (at its first collective)", choices=("eager", "lazy")),
    Param("split", "bool", True, "create sub-communicators with ncclCommSplit from the world communicator "
                                 "(no store round for their unique ids)"),
    Param("local_sync", "bool", True, "new_group(use_local_synchronization=True): only the group's members take "
                                      "part in its store barrier"),
), check=check_startup, doc="Process-group start-up of a 4D job: store, NCCL bootstrap, groups, over scale.")
