"""Pipeline schedules as their definitions: per stage the ordered list of operations, simulated with per-stage
durations (docs/jobs.md "Pipeline schedules").

An operation is one pass of one micro-batch through one model chunk on one stage: forward ``F``, backward ``B``
and, for the zero-bubble schedule, the weight-gradient pass ``W`` split from ``B`` (Qi et al. [S45]). With
``pp`` stages and ``v`` chunks per stage, chunk ``c`` of stage ``s`` is chunk-stage ``k = c pp + s`` of the model
(Megatron's interleaving [S21]). Dependencies: ``F`` of chunk-stage ``k`` needs ``F`` of ``k - 1`` (the activation
sent from the previous stage); ``B`` of ``k`` needs ``B`` of ``k + 1`` (the gradient sent back), and the last
chunk-stage's ``B`` needs its own ``F``; ``W`` needs its ``B``. A stage runs its list in order, one operation at a
time; a send between stages is a delay on the dependency that never blocks the sender (asynchronous P2P, as
Llama 3 [S3] and Megatron do).

Schedules (the ``schedule`` parameter, :data:`SCHEDULES`):

* ``1f1b``: PipeDream-flush (Narayanan et al. [S21]): stage ``s`` runs ``min(pp - s - 1, m)`` forwards, then one
  forward and one backward alternately, then the remaining backwards.
* ``interleaved``: Megatron's interleaved 1F1B with ``v`` chunks per stage: micro-batches are taken in rounds of
  ``group`` (the ``micro_batches_per_round`` parameter; Megatron's ``microbatch_group_size_per_vp_stage``, default
  ``pp``; Llama 3 made it tunable [S3]): each round runs its micro-batches through chunk 0, then chunk 1, ...; the
  last round takes what is left (none, or at least ``pp``: a shorter last round makes Megatron's order wait on
  itself for some shapes, so it is refused). Stage ``s`` warms up with ``2 (pp - s - 1) + (v - 1) group``
  forwards (all of them when that reaches ``m v``), then alternates one forward and one backward, backwards taking
  the chunks in reverse.
* ``zb-h1``: zero bubble H1 (Qi et al. [S45]): ``B`` split into ``B`` (input gradient, on the critical path) and
  ``W`` (weight gradient); stage ``s`` warms up as 1F1B, then runs ``s`` forward-backward pairs deferring their
  ``W``, then ``F B W`` triples, then ``B W`` pairs, then the ``s`` deferred ``W``: the deferred weight passes
  fill the drain, and a stage never holds more micro-batches than 1F1B's first stage (``pp``).

:func:`simulate` returns the makespan, each stage's busy and idle time, the bubble (makespan minus the busiest
stage's work) and each stage's peak count of micro-batch-chunks whose activations are held (forward done, backward
not: with ``W`` split, until its ``W``, which needs the layer inputs). Everything is in Python over at most
``3 m v pp`` operations (a few thousand for the largest jobs: milliseconds).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim.core.errors import ParamError

SCHEDULES = ("1f1b", "interleaved", "zb-h1")
F, B, W = 0, 1, 2
KINDS = "FBW"


@dataclass(frozen=True)
class Schedule:
    """A pipeline schedule's definition: ``ops[s]`` the (n, 3) int array of stage ``s``'s operations in order,
    each ``(kind, micro-batch, chunk)`` with kind ``F``, ``B`` or ``W``."""

    name: str
    pp: int
    m: int
    v: int
    group: int
    split_w: bool
    ops: tuple

    def table(self) -> list[str]:
        """Each stage's operations as text (``F1.0 B1.0 W1.0 ...``: kind, micro-batch, chunk), for tests and docs."""
        return [" ".join(f"{KINDS[k]}{mb}.{c}" for k, mb, c in s.tolist()) for s in self.ops]


def check_schedule(name: str, pp: int, m: int, v: int, group: int | None) -> int:
    """The rules each schedule's definition imposes; returns the round size (``group``). Raises
    :class:`ParamError` naming the field that fixes a bad combination."""
    if name not in SCHEDULES:
        raise ParamError("schedule", f"unknown pipeline schedule {name!r}: one of {', '.join(SCHEDULES)}")
    if name != "interleaved":
        if v != 1:
            raise ParamError("virtual_stages", f"{name} has one model chunk per stage: use schedule interleaved")
        if group is not None:
            raise ParamError("micro_batches_per_round", f"only the interleaved schedule takes micro-batches in "
                                                        f"rounds; leave it empty for {name}")
        return 1
    if v < 2 or pp < 2:
        raise ParamError("virtual_stages", "interleaved needs pp of at least 2 and at least 2 virtual stages")
    g = pp if group is None else group
    if g < pp:
        raise ParamError("micro_batches_per_round", f"{g} micro-batches per round is fewer than the {pp} "
                                                    f"pipeline stages: a round must fill the pipeline")
    if m < g:
        raise ParamError("batch_tokens", f"the interleaved schedule needs at least one round of {g} micro-batches "
                                         f"(micro_batches_per_round, default pp); the batch makes {m}")
    if 0 < m % g < pp:
        raise ParamError("batch_tokens", f"{m} micro-batches in rounds of {g} (micro_batches_per_round) leave a last "
                                         f"round of {m % g}, fewer than the {pp} stages: the schedule would stall; "
                                         f"make the micro-batches a multiple of {g}, or leave at least {pp} over")
    return g


def build(name: str, pp: int, m: int, v: int = 1, group: int | None = None) -> Schedule:
    """The schedule ``name`` for ``pp`` stages, ``m`` micro-batches, ``v`` chunks per stage, rounds of ``group``
    micro-batches (interleaved; ``None``: ``pp``)."""
    g = check_schedule(name, pp, m, v, group)
    if name == "1f1b":
        ops = [_one_f_one_b(pp, m, s) for s in range(pp)]
    elif name == "zb-h1":
        ops = [_zb_h1(pp, m, s) for s in range(pp)]
    else:
        ops = [_interleaved(pp, m, v, g, s) for s in range(pp)]
    return Schedule(name, pp, m, v, g, name == "zb-h1", tuple(np.asarray(o, dtype=np.int64).reshape(-1, 3)
                                                                   for o in ops))


def _one_f_one_b(pp: int, m: int, s: int) -> list:
    warm = min(pp - s - 1, m)
    ops = [(F, i, 0) for i in range(warm)]
    for i in range(m - warm):
        ops += [(F, warm + i, 0), (B, i, 0)]
    ops += [(B, i, 0) for i in range(m - warm, m)]
    return ops


def _zb_h1(pp: int, m: int, s: int) -> list:
    warm = min(pp - s - 1, m)
    ops = [(F, i, 0) for i in range(warm)]
    f, b, w = warm, 0, 0
    for _ in range(s):                      # forward-backward pairs, their weight passes deferred
        if f == m:
            break
        ops += [(F, f, 0), (B, b, 0)]
        f, b = f + 1, b + 1
    while f < m:
        ops += [(F, f, 0), (B, b, 0), (W, w, 0)]
        f, b, w = f + 1, b + 1, w + 1
    while b < m:
        ops += [(B, b, 0), (W, w, 0)]
        b, w = b + 1, w + 1
    ops += [(W, i, 0) for i in range(w, m)]
    return ops


def _interleaved(pp: int, m: int, v: int, g: int, s: int) -> list:
    table = []                              # Megatron's schedule table: rounds of g micro-batches, chunk by chunk
    for start in range(0, m, g):
        last = start + g >= m
        mbs = range(start, m if last else start + g)
        table += [(mb, c) for c in range(v) for mb in mbs]
        if last:
            break
    total = m * v
    warm = min(2 * (pp - s - 1) + (v - 1) * g, total)
    fwd = [(F, mb, c) for mb, c in table]
    bwd = [(B, mb, v - 1 - c) for mb, c in table]
    ops = fwd[:warm]
    for i in range(total - warm):
        ops += [fwd[warm + i], bwd[i]]
    ops += bwd[total - warm:]
    return ops


@dataclass
class PipelineResult:
    """A simulated schedule: ``makespan`` (s), per stage ``busy`` and ``idle`` (s), ``bubble`` = makespan - the
    busiest stage's work, ``peak_in_flight`` per stage (micro-batch-chunks whose activations are held at once),
    ``start`` and ``end`` per stage (arrays in the stage's operation order)."""

    makespan: float
    busy: np.ndarray
    idle: np.ndarray
    bubble: float
    peak_in_flight: np.ndarray
    start: list
    end: list


def peak_in_flight(sched: Schedule, weights=None) -> np.ndarray:
    """(pp,) each stage's peak held activations along its own operation order: micro-batch-chunks whose forward is
    done and whose backward (``W`` when split) is not; with ``weights`` ((pp, v): e.g. the chunk's layers) the peak
    of their weighted sum. Depends on the order only, not on the durations."""
    out = np.zeros(sched.pp)
    release = W if sched.split_w else B
    for s, ops in enumerate(sched.ops):
        wt = np.ones(len(ops)) if weights is None else np.asarray(weights, float)[s][ops[:, 2]]
        delta = np.where(ops[:, 0] == F, wt, np.where(ops[:, 0] == release, -wt, 0.0))
        out[s] = np.cumsum(delta).max() if delta.size else 0.0
    return out


def simulate(sched: Schedule, f, b, w=None, send: float = 0.0) -> PipelineResult:
    """Run ``sched`` with per-(stage, chunk) durations ``f``, ``b`` (and ``w`` when the schedule splits ``W`` off
    ``B``; (pp, v) arrays or scalars) and ``send`` seconds per P2P transfer between stages (a delay on the
    dependency; the sender goes on). Each operation starts when its stage's previous one ended and its dependency
    (plus the send) is done."""
    pp, m, v = sched.pp, sched.m, sched.v
    dur = np.zeros((3, pp, v))
    dur[F] = np.broadcast_to(np.asarray(f, float), (pp, v))
    dur[B] = np.broadcast_to(np.asarray(b, float), (pp, v))
    if sched.split_w:
        if w is None:
            raise ValueError(f"{sched.name} needs the weight-gradient durations w")
        dur[W] = np.broadcast_to(np.asarray(w, float), (pp, v))
    done = np.full((3, pp, m, v), np.nan)          # end time of each operation once simulated
    last_k = pp * v - 1
    ptr = [0] * pp
    clock = [0.0] * pp
    ends = [np.zeros(len(o)) for o in sched.ops]
    starts = [np.zeros(len(o)) for o in sched.ops]
    lists = [o.tolist() for o in sched.ops]
    remaining = sum(len(o) for o in lists)
    while remaining:
        moved = False
        for s in range(pp):
            ops, i = lists[s], ptr[s]
            while i < len(ops):
                kind, mb, c = ops[i]
                k = c * pp + s
                if kind == F:
                    ready = 0.0 if k == 0 else done[F, (k - 1) % pp, mb, (k - 1) // pp]
                    delay = send if k > 0 and pp > 1 else 0.0
                elif kind == B:
                    if k == last_k:
                        ready, delay = done[F, s, mb, c], 0.0
                    else:
                        ready, delay = done[B, (k + 1) % pp, mb, (k + 1) // pp], send
                else:
                    ready, delay = done[B, s, mb, c], 0.0
                if ready != ready:                  # NaN: its dependency has not run yet
                    break
                t0 = max(clock[s], ready + delay)
                t1 = t0 + dur[kind, s, c]
                done[kind, s, mb, c] = t1
                starts[s][i], ends[s][i] = t0, t1
                clock[s] = t1
                i += 1
                remaining -= 1
                moved = True
            ptr[s] = i
        if not moved:
            stuck = [f"stage {s} at {KINDS[lists[s][ptr[s]][0]]}{lists[s][ptr[s]][1]}.{lists[s][ptr[s]][2]}"
                     for s in range(pp) if ptr[s] < len(lists[s])]
            raise RuntimeError(f"pipeline schedule {sched.name} deadlocks: {', '.join(stuck)}")
    busy = np.array([float(dur[o[:, 0], s, o[:, 2]].sum()) for s, o in enumerate(sched.ops)])
    makespan = float(max(clock))
    return PipelineResult(makespan=makespan, busy=busy, idle=makespan - busy, bubble=makespan - float(busy.max()),
                          peak_in_flight=peak_in_flight(sched), start=starts, end=ends)
