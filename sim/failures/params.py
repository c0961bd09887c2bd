"""The parameters of a job's timeline under failures."""
from __future__ import annotations

from dataclasses import replace

from sim.core.params import MAX_GPUS, Param, ParamSet
from sim.fabric.spec import STORAGE_KINDS
from sim.failures.checks import check_failures
from sim.failures.costs import BACKGROUND_SPEED, NO_STORE
from sim.jobs.params import JOB_PARAMS
from sim.storage.params import MAX_CHECKPOINT_BYTES


# ------------------------------------------------------------------------------------------ failures over time
MAX_DAYS = 3650.0                 # ten years of a job's wall clock
MAX_FAILURE_SEEDS = 1000          # seeds of one Monte Carlo (the twin fans them out over its workers)
MAX_INJECT_TEXT = 64 << 10        # chosen failures: at most 64 KiB of text


def _failure_job_param(p: Param) -> Param:
    """JOB's parameter, with the defaults of the job Meta's interruption table counts (Llama 3 405B on 16,384 GPUs,
    TP 8, PP 16, DP 128 [S3]); its GPUs fit a smaller cluster (on demo-256: 256, DP 2)."""
    return replace(p, default={"model": "llama3-405b", "gpus": 16384, "pp": 16}.get(p.name, p.default),
                   fits=p.name == "gpus")


FAILURES = ParamSet("failures", tuple(_failure_job_param(p) for p in JOB_PARAMS if p.name != "hottest") + (
    Param("days", "float", 54.0, "wall-clock days the job runs (Meta's table spans 54)", min=0.001, max=MAX_DAYS),
    Param("checkpoint_interval", "text", "30m", "training time between checkpoints (s, m, h, d: 30m, 2h)", max=40),
    Param("seeds", "int", 1, "failure seeds (timelines) to simulate: seed, seed+1, ...", min=1,
          max=MAX_FAILURE_SEEDS),
    Param("spares", "int", None, "hot spare hosts a crashed job may restart on (a used spare comes back when the "
                                 "failed host is repaired); null: every usable host the job does not use", min=0,
          max=MAX_GPUS, nullable=True),
    Param("store", "choice", None, "storage cluster whose simulated checkpoint and restore times the timeline uses "
                                   "(sim.storage.checkpoint, run once each); off: no storage simulation, the "
                                   "checkpoint_* and restore_s parameters; null: tectonic if the cluster has it, "
                                   "else off",
          choices=STORAGE_KINDS + (NO_STORE,), nullable=True),
    Param("checkpoint_mode", "choice", "async", "sync: training waits until the checkpoint is durable; async: it "
                                                "waits for the copy to host memory", choices=("sync", "async")),
    Param("bytes_per_gpu", "size", None, "checkpoint bytes per GPU; null: the model's state (BF16 weights + FP32 "
                                         "master weights and Adam moments, 14 bytes per parameter) over the GPUs",
          min=1, max=MAX_CHECKPOINT_BYTES, nullable=True),
    Param("overlapping", "choice", "wait", "a checkpoint due while the previous one is not yet durable: wait "
                                           "(training blocks until it is, as PyTorch's async_save recipe waits on "
                                           "the previous save's future) or skip (this checkpoint is not taken)",
          choices=("wait", "skip")),
    Param("data_loading_gbps", "float", None, "training-data reads per job host in Gb/s while a checkpoint drains "
                                              "(its upload shares the host's NIC, memory and the store with them); "
                                              "null: the job's tokens (batch_tokens x 4 bytes per token id per "
                                              "step)", min=0.0, max=10_000.0, nullable=True),
    Param("checkpoint_background_speed", "float", BACKGROUND_SPEED,
          "share of its throughput training keeps while an async checkpoint writes in the background (its writer "
          "takes host CPU from the trainer): 0.45, the dip measured under DCP's default thread-based async_save "
          "(315 of 700 tokens/s; 372/700 = 0.53 with its process-based writer); 1: no slowdown",
          min=0.0, max=1.0),
    Param("checkpoint_blocked_s", "float", None, "seconds training waits per checkpoint; null: the storage "
                                                 "model's (store off: the bytes at 2 TB/s)", min=0.0, max=1e6,
          nullable=True),
    Param("checkpoint_durable_s", "float", None, "seconds from a checkpoint's start until it is durable; null: the "
                                                 "storage model's (store off: as blocked)", min=0.0, max=1e6,
          nullable=True),
    Param("restore_s", "float", None, "seconds to load the last checkpoint on restart; null: the storage model's "
                                      "restore (store off: the bytes at 2 TB/s)", min=0.0, max=1e6, nullable=True),
    Param("detection_s", "float", None, "seconds from a crash until it is detected, for every failure class; null: "
                                        "each class's own mechanism (process exit seen by the torchrun agent, RDMA "
                                        "retries exhausted, the NCCL watchdog timeout, each with the flight "
                                        "recorder's dump wait: docs/reliability.md)", min=0.0, max=1e6,
          nullable=True),
    Param("watchdog_timeout_s", "float", 600.0, "NCCL watchdog timeout: a hung collective is reported after this "
                                                "long (PyTorch's default 10 min)", min=1.0, max=1e6),
    Param("restart_s", "float", 300.0, "seconds to relaunch the job and start its process groups (assumption: "
                                       "Meta cut this from hours to minutes)", min=0.0, max=1e6),
    Param("planned_down_s", "float", 900.0, "seconds a planned maintenance keeps the job stopped, before its "
                                            "restart (assumption)", min=0.0, max=1e7),
    Param("thermal_speed", "float", 0.7, "share of its compute speed a thermally throttled GPU keeps (assumption); "
                                         "the slowest rank paces the synchronous job", min=0.01, max=1.0),
    Param("straggler_detect_s", "float", 3600.0, "seconds from a GPU's thermal throttling until the job's straggler "
                                                 "is found and the job is stopped to swap its host for a spare "
                                                 "(assumption: docs/reliability.md)", min=0.0, max=1e7),
    Param("reroute", "bool", True, "a failed fabric cable or switch with other paths is routed around (the job "
                                   "slows for the repair time); off: every network failure crashes the job"),
    Param("fabric_states", "choice", "by_class", "the step under failed fabric items: exact (re-solved for each "
                                                 "set of failed cables and switches), or by_class (for as many "
                                                 "failed items of each class: leaf-spine cable, spine-core cable, "
                                                 "spine, core; a few solves shared by every seed)",
          choices=("by_class", "exact")),
    Param("rates", "text", None, "failure rates per unit-hour replacing the table's, e.g. gpu=2e-6,hbm=1e-6 "
                                 "(categories: docs/reliability.md; 0 switches one off); null: Meta's table, its node "
                                 "categories scaled to the cluster's fleet rate where its preset gives one",
          max=4096, nullable=True),
    Param("rate_scale", "float", 1.0, "factor on every unexpected failure rate (planned maintenance stays)",
          min=0.0, max=1e4),
    Param("repair_h", "text", None, "repair hours per category replacing the defaults, e.g. gpu=48,network=2",
          max=4096, nullable=True),
    Param("inject", "text", None, "chosen failures, comma-separated KIND:NAME@TIME: gpu:<GPU name>@10h, "
                                  "link:<link name>@20h, switch:<switch name>@20h, host:<host name>@5h, or any "
                                  "category (thermal:<GPU name>@3h, software@2h)", max=MAX_INJECT_TEXT,
          nullable=True),
    Param("sweep_interval", "text", None, "checkpoint intervals to sweep for the optimum: MIN:MAX (12 points, log "
                                          "spaced), MIN:MAX:N or a list; null: no sweep", max=1000, nullable=True),
), check=check_failures, doc="A training job's wall clock over days: failures, restarts, re-routing, checkpoints, "
                             "and the share of time it trains.")
