"""How long a crash takes to be detected, per failure class: each category of :mod:`sim.failures.rates` names the
mechanism that sees it (:data:`MECHANISM_OF`, declared once), each mechanism's time is built from the defaults of the
software that implements it (:func:`mechanism_seconds`); docs/reliability.md "Detection" has the table and its
sources (docs/sources.md).

* ``process_exit``: the failing rank's process ends (a Python exception, or a CUDA error the driver raises on a GPU
  fault: an uncorrectable ECC error in HBM or SRAM is contained by terminating the processes using that memory, XID
  94/95 [S51]); its torchrun agent polls its workers every ``--monitor-interval`` (0.1 s by default [S52]) and tears
  the worker group down for a new rendezvous round, which the other nodes' agents join (the round itself is part of
  ``restart_s``).
* ``transport``: a NIC, a cable or a switch port is gone: the peers' RDMA queue pairs retransmit until their retry
  count is exhausted, ``4.096 us x 2^NCCL_IB_TIMEOUT x (NCCL_IB_RETRY_CNT + 1)`` = 4.096 us x 2^20 x 8 = 34.4 s at
  NCCL's defaults [S6]; NCCL reports the error, PyTorch's watchdog broadcasts the flight-recorder dump signal and
  sleeps 4 x TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC (4 x 15 s) so that every rank can dump [S53, S32] before it tears
  the process down; then the agent sees the exit.
* ``host_lost``: the whole host stops (power, chassis, CPU, memory, IO board, its SSD, an unplanned maintenance
  take-down): its processes and agent vanish with it. Argued: torchelastic's rendezvous keep-alive (5 s, 3 attempts
  [S52]) only drops the dead node from the rendezvous state; the surviving agents restart when their own workers
  fail, which happens when their transport to the lost host gives up, so the ``transport`` time.
* ``watchdog``: a hang (the NCCL watchdog timeouts of Meta's table; a GPU system processor (GSP) fault that leaves
  the GPU unresponsive, argued): nothing fails, a collective never completes; the watchdog times it out after
  ``watchdog_timeout_s`` (PyTorch's NCCL default 10 min [S25]), then the same dump wait and exit.
* ``job_check``: silent data corruption is by definition not reported by the hardware; assumption: the job's own
  numeric checks (a NaN or loss-spike check at each step's end) raise, one step after the corruption.

``detection_s`` (a parameter) replaces every class's time with one figure when given.
"""
from __future__ import annotations

from sim.failures import rates as fr

# The software's defaults each mechanism's time is built from (sources: docs/sources.md).
AGENT_MONITOR_S = 0.1             # torchrun --monitor-interval default [S52]
IB_ACK_TIMEOUT_UNIT_S = 4.096e-6  # InfiniBand local ACK timeout unit: 4.096 us x 2^NCCL_IB_TIMEOUT [S6]
NCCL_IB_TIMEOUT = 20              # NCCL's default exponent [S6]
NCCL_IB_RETRY_CNT = 7             # NCCL's default retransmissions [S6]
FR_DUMP_WAIT_S = 4 * 15.0         # watchdog's sleep before tearing down: 4 x TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC [S53]

MECHANISMS = ("process_exit", "transport", "host_lost", "watchdog", "job_check")

# Each crash category of Meta's table [S3] and the mechanism that detects it (docs/reliability.md "Detection").
MECHANISM_OF: dict[str, str] = {
    "gpu": "process_exit",                  # XID errors surface as CUDA errors in the rank's process [S51]
    "hbm": "process_exit",                  # uncorrectable ECC: error containment ends the process (XID 94/95) [S51]
    "software": "process_exit",             # an exception ends the process
    "network": "transport",                 # a switch or cable: the peers' RDMA retries run out [S6]
    "host_maintenance": "host_lost",
    "gpu_sram": "process_exit",             # SRAM ECC: as HBM [S51]
    "gpu_system_processor": "watchdog",     # GSP unresponsive: the GPU hangs (argued)
    "nic": "transport",
    "nccl_watchdog": "watchdog",            # the table's own class: a collective timed out [S3, S25]
    "sdc": "job_check",                     # assumption: the job's per-step numeric check
    "ssd": "host_lost",
    "power_supply": "host_lost",
    "chassis": "host_lost",
    "io_board": "host_lost",
    "dependency": "process_exit",           # an external service failing raises in the job
    "cpu": "host_lost",
    "memory": "host_lost",
}
NOT_DETECTED = ("thermal", "planned")       # a degradation keeps running; a planned stop is announced

assert set(MECHANISM_OF) | set(NOT_DETECTED) == set(fr.NAMES), "every category needs its detection mechanism"


def transport_timeout_s() -> float:
    """RDMA retries exhausted at NCCL's defaults: 4.096 us x 2^20 x (7 + 1) = 34.4 s [S6]."""
    return IB_ACK_TIMEOUT_UNIT_S * 2 ** NCCL_IB_TIMEOUT * (NCCL_IB_RETRY_CNT + 1)


def mechanism_seconds(watchdog_timeout_s: float, step_s: float) -> dict[str, float]:
    """Seconds from a failure to its detection (the job's processes stopped, ready to restart) per mechanism."""
    transport = transport_timeout_s() + FR_DUMP_WAIT_S + AGENT_MONITOR_S
    return {"process_exit": AGENT_MONITOR_S, "transport": transport, "host_lost": transport,
            "watchdog": watchdog_timeout_s + FR_DUMP_WAIT_S + AGENT_MONITOR_S,
            "job_check": step_s + AGENT_MONITOR_S}


def detection_seconds(params: dict, step_s: float) -> dict[str, float]:
    """Detection seconds of every crash category: its mechanism's (:func:`mechanism_seconds`), or ``detection_s``
    for all when the parameters give it."""
    if params.get("detection_s") is not None:
        return dict.fromkeys(MECHANISM_OF, float(params["detection_s"]))
    per = mechanism_seconds(params["watchdog_timeout_s"], step_s)
    return {name: per[m] for name, m in MECHANISM_OF.items()}


def detection_table(params: dict, step_s: float) -> list[dict]:
    """Each crash category with its mechanism and seconds (for the result and the docs)."""
    secs = detection_seconds(params, step_s)
    override = params.get("detection_s") is not None
    return [{"category": n, "mechanism": "detection_s" if override else m, "seconds": secs[n]}
            for n, m in MECHANISM_OF.items()]
