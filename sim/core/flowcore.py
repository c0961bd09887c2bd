"""The event-driven flow core: resources with capacities, flows that cross resources, one exact max-min solve.

Model
-----
A *resource* is anything with a capacity in units per second: a directed fabric link or NIC port (bytes/s), a GPU's
PCIe link, a host's memory copy, a storage server's CPU, an SSD's write or read bandwidth (bytes/s), a metadata
service (operations/s). A *flow* crosses a list of resources (CSR ``flow_ptr``, ``flow_links``) and has a size (in
the unit of its resources: a flow never mixes bytes and operations), an optional release time, an optional rate
cap, and optionally waits for a group of other flows to finish. Between two events (a flow finishes, a flow is
released) the active flows run at their max-min fair rates (:func:`sim.core.maxmin.max_min_rates`, exact); at every
event the rates are solved again: a fluid model, exact for piecewise-constant rates. The network engine
(:mod:`sim.fabric.netsim`: AllToAll, background jobs) and the storage engine (:mod:`sim.storage.checkpoint`,
:mod:`sim.storage.fanout`) share this one solver, as SimGrid's single solver serves network, disk and CPU.

Additions for storage (all optional; without them the core behaves exactly as it always did):

- ``group`` / ``after``: flow ``f`` with ``after[f] = k >= 0`` is released only once every flow of group ``k``
  (``group == k``) has finished, and not before ``start[f]``: "the upload of a host starts when its GPUs' copies to
  host memory are done", "data moves once the metadata operations are done".
- ``persistent``: background flows that never finish (training-data loading at its demand). They take their
  max-min share while they run; the simulation ends when every other flow has finished, and they are recorded as
  finishing then, having delivered what they moved.
- ``usage``: a flow may cost a resource more or less than one unit per unit of its rate (CPU-seconds per byte on
  a CPU, SSD bytes per byte stored on an SSD whose file system writes more than the data).
- ``on_interval(t, dt, active, rates)``: called for every interval between two events with the active flows' ids
  and rates, so a caller can accumulate time series (per-server rates, per-host progress) without storing every
  flow's rate at every event.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim.core.maxmin import max_min_rates
from sim.core.units import IDX



@dataclass
class FlowSimResult:
    """Result of :func:`simulate_flows`. Times in seconds, rates in units/s (bytes/s for bytes), sizes in units.

    ``finish`` (F,): completion time of each flow (``inf`` if it can never finish: a zero-capacity link or a group
    that never finishes); ``first_rate`` (F,): its rate when it started; ``delivered`` (F,): what it carried (its
    size when finished); ``start`` (F,): its release time (for a waiting flow: when its group finished; ``inf`` if
    never); ``events``: how many times the rates were solved.
    """

    start: np.ndarray
    finish: np.ndarray
    first_rate: np.ndarray
    delivered: np.ndarray
    events: int

    @property
    def makespan(self) -> float:
        return float(self.finish.max() - self.start.min()) if len(self.finish) else 0.0

    @property
    def mean_rate(self) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return self.delivered / (self.finish - self.start)


def _sub_csr(ptr: np.ndarray, links: np.ndarray, flows: np.ndarray, usage=None):
    deg = np.diff(ptr)
    mask = np.zeros(len(deg), dtype=bool)
    mask[flows] = True
    entries = np.repeat(mask, deg)
    sub_links = links[entries]
    sub_ptr = np.zeros(flows.size + 1, dtype=IDX)
    np.cumsum(deg[flows], out=sub_ptr[1:])
    return sub_ptr, sub_links, (None if usage is None else usage[entries])


def simulate_flows(flow_ptr, flow_links, capacity, size, rate_cap=None, start=None, *, rtol: float = 1e-9,
                   merge: float = 0.0, max_events: int = 1_000_000, progress=None, group=None, after=None,
                   persistent=None, on_interval=None, usage=None) -> FlowSimResult:
    """Event-driven completion of flows of uneven sizes sharing resources, with max-min fair rates between events.

    Flow ``f`` (resources ``flow_links[flow_ptr[f]:flow_ptr[f+1]]``, size ``size[f]``, optional rate cap
    ``rate_cap[f]`` per second, optional release time ``start[f]`` seconds) is active from its release until its
    size is delivered. Between two events (a flow finishes, a flow starts) the active flows run at their max-min
    fair rates (:func:`sim.core.maxmin.max_min_rates`); at each event the rates are solved again. Exact for
    piecewise-constant rates (fluid model). Cost: one solve per event; events are at most the number of distinct
    finishing and starting times.

    Flows finishing within ``rtol`` (relative) of the earliest finish, or within ``merge`` seconds of it, leave
    together at the last of their finish times. Merging keeps the physics: every byte is delivered, no link carries
    more than its capacity (merged flows just leave their bandwidth unused a little longer) and no flow is recorded
    as finished before its bytes could arrive at its rate; an event ends at most ``merge`` seconds late. The
    defaults are exact up to rounding; a ``merge`` of 1 % of the expected makespan cuts the events of a congested
    AllToAll (hundreds of distinct rates) by an order of magnitude (tests/sim/test_netsim.py compares the two).

    ``group`` (F,) int, ``after`` (F,) int (``-1``: none): flow ``f`` is released at the later of ``start[f]``
    and the finish of the last flow of group ``after[f]``. ``persistent`` (F,) bool: flows that never finish (their
    size is ignored); the run ends when all other flows are done. ``on_interval(t, dt, active, rates)``: told every
    interval between events. ``usage`` (one per entry of ``flow_links``): what a unit of a flow's rate costs
    that resource (:func:`sim.core.maxmin.solve_max_min`; default 1: bytes on a link). See the module docstring.

    Two flows of 1 and 3 bytes on one link of 1 byte/s: each gets 0.5; the small one ends at 2 s, the big one then
    runs at 1 byte/s and ends at 2 + 2 = 4 s.

    ``progress``: optional :mod:`sim.core.progress` callback, told after every event the share of the flows finished.

    >>> r = simulate_flows([0, 1, 2], [0, 0], [1.0], [1.0, 3.0])
    >>> r.finish.tolist(), r.first_rate.tolist(), r.events
    ([2.0, 4.0], [0.5, 0.5], 2)
    """
    ptr, links, capacity, size, caps, start = _flow_inputs(flow_ptr, flow_links, capacity, size, rate_cap, start,
                                                           persistent)
    F = len(size)
    if usage is not None:
        usage = np.asarray(usage, dtype=np.float64)
        if usage.shape != links.shape:
            raise ValueError(f"usage must have one value per entry of flow_links ({links.size})")
    deps = _Dependencies(F, group, after, start)
    forever = np.zeros(F, dtype=bool) if persistent is None else np.asarray(persistent, dtype=bool).copy()
    remaining = np.where(forever, np.inf, size)
    delivered = np.zeros(F)
    finish = np.full(F, np.nan)
    first_rate = np.full(F, np.nan)
    done = (remaining <= 0) & ~deps.waits
    finish[done] = start[done]
    deps.finished(np.flatnonzero(done), finish)
    n_fore = int((~forever).sum())
    n_done = int(done.sum())
    release = deps.release(start)
    t = float(release[np.isfinite(release)].min()) if F and np.isfinite(release).any() else 0.0
    events = 0
    while (~done & ~forever).any():
        live = ~done
        act = np.flatnonzero(live & (release <= t))
        pending = np.flatnonzero(live & (release > t) & np.isfinite(release))
        next_start = float(release[pending].min()) - t if pending.size else np.inf
        if not pending.size and not (~forever[act]).any():
            stuck = np.flatnonzero(live & ~forever)              # waiting for groups that can never finish
            finish[stuck] = np.inf
            done[stuck] = True
            break
        if act.size == 0:
            t += next_start
            continue
        if events >= max_events:
            raise RuntimeError(f"simulate_flows: more than {max_events} events")
        sub_ptr, sub_links, sub_usage = _sub_csr(ptr, links, act, usage)
        rates = max_min_rates(sub_ptr, sub_links, capacity, None if caps is None else caps[act], usage=sub_usage)
        events += 1
        fresh = np.isnan(first_rate[act])
        first_rate[act[fresh]] = rates[fresh]
        step = _next_event(rates, remaining[act], next_start, rtol, merge)
        if step is None:
            finish[act] = np.inf                                # stuck on zero-capacity links forever
            done[act] = True
            break
        dt, ending = step
        moved = np.where(np.isfinite(rates), rates * dt, remaining[act])
        moved = np.minimum(moved, remaining[act])
        moved[ending] = remaining[act][ending]
        if on_interval is not None:
            on_interval(t, dt, act, rates)
        remaining[act] -= moved
        delivered[act] += moved
        t += dt
        finish[act[ending]] = t
        done[act[ending]] = True
        if deps.active:
            deps.finished(act[ending], finish)
            release = deps.release(start)
        n_done += int(ending.sum())
        if progress is not None:
            progress(min(n_done / max(n_fore, 1), 1.0))
    finish[~done & ~forever] = np.inf                           # waiting for flows that never finish
    if forever.any():
        finish[forever] = t
    if deps.active:
        start = np.where(np.isfinite(release), release, np.inf)
    return FlowSimResult(start=start, finish=finish, first_rate=first_rate, delivered=delivered, events=events)


class _Dependencies:
    """Group waits of :func:`simulate_flows`: how many flows of each group are unfinished, and when the last of
    each group finished."""

    def __init__(self, F: int, group, after, start):
        self.active = after is not None and group is not None
        self.waits = np.zeros(F, dtype=bool)
        if not self.active:
            return
        self.group = np.broadcast_to(np.asarray(group, dtype=IDX), (F,))
        self.after = np.broadcast_to(np.asarray(after, dtype=IDX), (F,))
        n = int(max(self.group.max(initial=-1), self.after.max(initial=-1))) + 1
        member = self.group >= 0
        self.left = np.bincount(self.group[member], minlength=n).astype(IDX)
        self.end = np.zeros(n)
        self.waits = self.after >= 0
        if (self.waits & (self.after == self.group)).any():
            raise ValueError("a flow cannot wait for its own group")

    def finished(self, flows: np.ndarray, finish: np.ndarray) -> None:
        if not self.active or not flows.size:
            return
        g = self.group[flows]
        keep = g >= 0
        if keep.any():
            np.subtract.at(self.left, g[keep], 1)
            np.maximum.at(self.end, g[keep], finish[flows[keep]])

    def release(self, start: np.ndarray) -> np.ndarray:
        if not self.active:
            return start
        a = np.maximum(self.after, 0)
        ready = self.left[a] <= 0
        return np.where(self.waits, np.where(ready, np.maximum(start, self.end[a]), np.inf), start)

    def any_waiting(self, live, forever) -> bool:
        return bool(self.active and (live & ~forever & self.waits).any())


def _flow_inputs(flow_ptr, flow_links, capacity, size, rate_cap, start, persistent=None):
    """The inputs of :func:`simulate_flows` as arrays, refusing sizes and release times it cannot simulate."""
    ptr = np.asarray(flow_ptr, dtype=IDX)
    links = np.asarray(flow_links, dtype=IDX)
    capacity = np.asarray(capacity, dtype=np.float64)
    size = np.asarray(size, dtype=np.float64)
    F = len(ptr) - 1
    check = size if persistent is None else size[~np.broadcast_to(np.asarray(persistent, dtype=bool), size.shape)]
    if size.shape != (F,) or (check < 0).any() or not np.isfinite(check).all():
        raise ValueError(f"size must be {F} finite non-negative byte counts")
    caps = None if rate_cap is None else np.broadcast_to(np.asarray(rate_cap, dtype=np.float64), (F,))
    start = np.zeros(F) if start is None else np.asarray(start, dtype=np.float64).copy()
    if start.shape != (F,) or not np.isfinite(start).all():
        raise ValueError(f"start must be {F} finite release times")
    return ptr, links, capacity, size, caps, start


def _next_event(rates, remaining, next_start: float, rtol: float, merge: float):
    """``(dt, ending)``: the time to the next event and which active flows (bool mask) finish at it; ``None`` when
    no active flow can ever finish and none is waiting to start (zero-capacity links).

    Flows finishing within ``rtol`` (relative) or ``merge`` seconds of the first leave together, at the last of
    their finish times: each sends its remaining bytes at (at most) its rate, the others advance at theirs. A
    release (``next_start`` seconds away) before the first finish is the event, and one inside the window ends it.
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        ttf = np.where(rates > 0, remaining / rates, np.inf)
    dt_finish = float(ttf.min())
    if not np.isfinite(dt_finish) and not np.isfinite(next_start):
        return None
    if next_start < dt_finish:
        return next_start, np.zeros(rates.size, dtype=bool)
    ending = ttf <= max(dt_finish * (1 + rtol), dt_finish + merge)
    if ttf[ending].max() > next_start:
        ending &= ttf <= next_start
    return float(ttf[ending].max()), ending
