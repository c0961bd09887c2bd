"""A training job's wall clock over days: failures, detection, restarts, re-routing and checkpoints, as a
discrete-event simulation (docs/reliability.md has the model, its parameters and sources).

* **Failures** arrive per category of :mod:`sim.failures.rates` as Poisson processes over the job's units (its GPUs,
  its hosts, the job itself): all arrival times of one timeline are drawn up front with numpy, then merged in time
  order with the chosen failures (``inject``) and the repairs they cause.
* **Crash** (a GPU, a host part, software...): detected after its class's time (:mod:`sim.failures.detection`: a
  process exit, RDMA retries exhausted, the NCCL watchdog timeout, each with the flight recorder's dump wait), or
  ``detection_s`` for all; the job then waits for a healthy host in place of the failed one (a free hot spare at
  once, else the first spare to come back or the failed host's repair, whichever comes first), relaunches and
  starts its process
  groups (``restart_s``), loads the last **durable** checkpoint (``restore_s``) and recomputes the work done since
  that checkpoint's snapshot.
* **Degradation**: a failed fabric cable or switch the routing can go around (``reroute``) slows the job for its
  repair time: the step is re-solved by :func:`sim.jobs.job.run_job` on the fabric with every failed item removed (cached
  by the set of failed items, or by how many items of each class failed: ``fabric_states``); a thermally throttled
  GPU keeps ``thermal_speed`` of its compute speed, and the slowest rank paces the synchronous job (the step's
  compute part divided by it) until the straggler is found (``straggler_detect_s``) and the job is stopped to leave
  its host for a spare (Meta's table counts it as an interruption), or an earlier restart leaves it behind. A NIC
  cable or the job's rack switch has no other path: its failure crashes the job.
* **Planned maintenance** stops the job cleanly: a last durable checkpoint, ``planned_down_s``, restart, restore.
* **Checkpoints** due every ``checkpoint_interval`` of training progress, each started once the previous one is
  durable and the store has absorbed its bytes at its sustained rate (``store_gap_s``; ``overlapping``: training
  waits for it, or the checkpoint is skipped); each costs training ``cost_s`` (its wait for the staging, its
  drain's share of data loading, the host CPU its background writer takes) and is durable ``durable`` seconds
  after its start (:mod:`sim.failures.costs` over :func:`sim.storage.checkpoint.run_checkpoint` when a store is
  given, else parameters).

Between two events training runs in closed form (cycles of ``interval / rate`` training, the cadence's wait, then
``cost_s``), so a timeline costs one Python step per event (hundreds), not per checkpoint. Wall time splits exactly
into productive training, recomputed work, checkpoint overhead (its wait, the cadence's wait, its drain),
degradation, detection, waiting, restart, restore and planned downtime (``lost.by_phase``); ``effective_ratio`` =
productive / wall.

Public calls (the twin's ``failures`` run kind uses them): :func:`sim.failures.prepare.prepare`, :func:`simulate` (one
timeline), :func:`sim.failures.summary.summarize` (the distribution over seeds), :func:`sim.failures.sweep.sweep`
(checkpoint intervals against Young/Daly).
"""
from __future__ import annotations

import heapq
import math

import numpy as np

from sim.core.progress import silent, span
from sim.failures import rates as fr
from sim.failures.detection import detection_table
from sim.failures.prepare import Prepared, prepare
from sim.failures.spares import SparePool

STATES = ("training", "checkpointing", "down", "restarting", "degraded")
TRAINING, CHECKPOINTING, DOWN, RESTARTING, DEGRADED = range(len(STATES))
PHASES = ("recompute", "checkpoint", "checkpoint_wait", "checkpoint_drain", "checkpoint_host", "degradation",
          "detection", "wait", "restart", "restore", "planned")
EPS = 1e-9                        # relative slack on a count of due points (float rounding)
WHILE_DOWN = "while_down"         # a failure that arrived while the job was already stopped


# ------------------------------------------------------------------------------------------------ one timeline
class Timeline:
    """One timeline of the job: the state machine of the module docstring, advanced event by event."""

    def __init__(self, ctx: Prepared, seed: int, interval: float, record: bool = True):
        self.ctx, self.seed, self.record = ctx, int(seed), record
        ck = ctx.checkpoint
        self.interval_s = float(interval)     # training time between checkpoints
        self.blocked_s = ck["blocked_s"]      # training waits this long per checkpoint for the staging
        self.cost_s = ck["cost_s"]            # training time a checkpoint costs (the wait, its drain, host CPU)
        self.drain_s = ck.get("data_loading_s", 0.0)     # of which the drain's share of data loading
        self.overlapping = ctx.params["overlapping"]     # a checkpoint due before the previous one is durable
        self.durable_s = ck["durable_s"]      # a checkpoint is durable this long after its start
        # the next checkpoint starts no sooner than this after the previous one: durable, and its bytes absorbed at
        # the store's sustained rate (store_gap_s)
        self.gate_s = max(self.durable_s, ck.get("store_gap_s", 0.0))
        self.wall_s = ctx.wall_s              # the run's wall clock
        self.t = 0.0                  # wall clock
        self.trained = 0.0            # training progress, in seconds of healthy training
        self.since_checkpoint = 0.0   # progress since the last checkpoint's snapshot
        self.cur: list | None = None  # checkpoint under way past self.t: [due, start, snapshot, started]
        self.last_start = -math.inf   # start of the newest checkpoint taken
        self.pending: list[tuple[float, float]] = []     # (start, snapshot) not yet durable
        self.durable = (0.0, 0.0)     # (wall start, snapshot) of the newest durable checkpoint (the start: 0)
        self.rate = 1.0
        self.up = True
        self.stalled: float | None = None     # down since then: the fabric left the job no path
        self.failed_net: dict[int, float] = {}           # network item -> repair time (degrading)
        self.throttled: dict[int, float] = {}            # GPU index -> repair time
        self.spares = SparePool(ctx.spares)
        self.phase = dict.fromkeys(PHASES, 0.0)
        self.cause: dict[str, float] = {}
        self.counts: dict[str, int] = {}
        self.events: list[dict] = []
        self.seg_start: list[np.ndarray] = []
        self.seg_end: list[np.ndarray] = []
        self.seg_state: list[np.ndarray] = []
        self.checkpoints = 0
        self.skipped = 0              # checkpoints due while the previous one was not durable (overlapping skip)
        self.detected: dict[str, float] = {}     # seconds of detection per category
        self.interruptions = 0
        self.planned = 0              # of which planned stops
        self.degradations = 0

    # --------------------------------------------------------------------------------------- bookkeeping
    def _seg(self, start, end, state) -> None:
        if not self.record:
            return
        start, end = np.atleast_1d(np.asarray(start, float)), np.atleast_1d(np.asarray(end, float))
        keep = end > start
        if keep.any():
            self.seg_start.append(start[keep])
            self.seg_end.append(end[keep])
            self.seg_state.append(np.full(int(keep.sum()), state, np.int8))

    def _lose(self, phase: str, seconds: float, causes) -> None:
        if seconds <= 0:
            return
        self.phase[phase] += seconds
        share = seconds / len(causes)
        for c in causes:
            self.cause[c] = self.cause.get(c, 0.0) + share

    def _degrade_causes(self) -> list[str]:
        return (["network"] if self.failed_net else []) + (["thermal"] if self.throttled else [])

    def _train(self, t0: float, t1: float) -> None:
        if t1 <= t0:
            return
        gained = self.rate * (t1 - t0)
        self.trained += gained
        self.since_checkpoint += gained
        self._lose("degradation", (t1 - t0) - gained, self._degrade_causes())
        self._seg(t0, t1, TRAINING if self.rate >= 1.0 else DEGRADED)

    # --------------------------------------------------------------------------------------- training
    def _advance(self, T: float) -> None:
        """Train (with checkpoints) from ``self.t`` to ``T`` at the current rate.

        Checkpoint ``k`` is due after ``interval`` of training progress; it starts when due, or (``overlapping``
        ``wait``) once the previous one is durable, training blocked meanwhile (``checkpoint_wait``), or (``skip``)
        at the first due point after it, the ones before not taken. From its start training loses ``cost_s``: its
        wait for the staging (``checkpoint``) and what its drain takes from data loading (``checkpoint_drain``).
        Between two events the rate is constant, so the cycle is periodic: closed form, one array per call."""
        t = self.t
        if T <= t:
            return
        if self.cur is not None:
            t = self._finish_current(t, T)
            if t >= T:
                self.t = T
                return
        r, interval, c, D = self.rate, self.interval_s, self.cost_s, self.gate_s
        step = interval / r                                   # wall time of one interval's progress
        due0 = t + (interval - self.since_checkpoint) / r
        if due0 >= T:
            self._train(t, T)
            self.t = T
            return
        ready = self.last_start + D                           # the previous checkpoint durable and absorbed
        snap0 = self.trained + (interval - self.since_checkpoint)
        if self.overlapping == "wait":
            start0, skipped0, m = max(due0, ready), 0, 1
            cycle, wait_rest = max(c + step, D), max(0.0, D - c - step)
        else:
            skipped0 = max(0, math.ceil((ready - due0) / step - EPS)) if ready > due0 else 0
            m = max(1, math.ceil((D - c) / step - EPS))       # due points per taken checkpoint
            start0, cycle, wait_rest = due0 + skipped0 * step, c + m * step, 0.0
            snap0 += skipped0 * interval
            if start0 >= T:                                   # every due point before T comes too early
                self._train(t, T)
                done = (T - due0) * r
                self.skipped += int(done // interval) + 1
                self.since_checkpoint = done % interval
                self.t = T
                return
        k = np.arange(int((T - start0) // cycle) + 2 if start0 < T else 1)
        starts = start0 + cycle * k
        stops = np.where(k == 0, due0 if self.overlapping == "wait" else start0, starts - wait_rest)
        keep = stops < T
        starts, stops, k = starts[keep], stops[keep], k[keep]
        snaps = snap0 + m * interval * k
        n = starts.size
        self.skipped += skipped0 + (m - 1) * (n - 1)
        train_from = np.concatenate([[t], starts[:-1] + c])
        trained = float(np.sum(stops - train_from))
        if r < 1.0:
            self._lose("degradation", trained * (1.0 - r), self._degrade_causes())
        self._seg(train_from, stops, TRAINING if r >= 1.0 else DEGRADED)
        self._lose_checkpoints(stops, starts, t, T)
        self._seg(stops, np.minimum(starts + c, T), CHECKPOINTING)
        taken = starts < T
        if taken.any():
            self._checkpointed(starts[taken], snaps[taken], T)
        self.trained, self.since_checkpoint = float(snaps[-1]), 0.0
        last_end = float(starts[-1] + c)
        if last_end > T:                                      # the last one's wait or cost runs past T
            self.cur = [float(stops[-1]), float(starts[-1]), float(snaps[-1]), bool(taken[-1])]
        elif last_end < T:
            self._train(last_end, T)
        self.t = T

    def _lose_checkpoints(self, stops, starts, a: float, b: float) -> None:
        """Time lost in ``[a, b)`` to checkpoints due at ``stops`` and started at ``starts``: the wait between
        (``checkpoint_wait``), then ``blocked_s`` (``checkpoint``), then the drain's share of data loading
        (``checkpoint_drain``), then the rest of ``cost_s``, the host CPU the writer takes (``checkpoint_host``)."""
        stops, starts = np.atleast_1d(stops), np.atleast_1d(starts)
        blocked_end = starts + min(self.blocked_s, self.cost_s)
        drain_end = starts + min(self.blocked_s + self.drain_s, self.cost_s)

        def overlap(x, y):
            return float(np.clip(np.minimum(y, b) - np.maximum(x, a), 0.0, None).sum())
        self._lose("checkpoint_wait", overlap(stops, starts), ["checkpoint"])
        self._lose("checkpoint", overlap(starts, blocked_end), ["checkpoint"])
        self._lose("checkpoint_drain", overlap(blocked_end, drain_end), ["checkpoint"])
        self._lose("checkpoint_host", overlap(drain_end, starts + self.cost_s), ["checkpoint"])

    def _finish_current(self, t: float, T: float) -> float:
        """Advance through the checkpoint under way (waiting to start, or costing); the time it ends, or ``T``."""
        due, start, snap, taken = self.cur
        end = start + self.cost_s
        self._lose_checkpoints(due, start, t, T)
        self._seg(t, min(end, T), CHECKPOINTING)
        if not taken and start < T:
            self._checkpointed(np.array([start]), np.array([snap]), T)
            self.cur[3] = True
        if end > T:
            return T
        self.cur = None
        return end

    def _checkpointed(self, starts: np.ndarray, snaps: np.ndarray, now: float) -> None:
        """Note new checkpoints (started); those durable by ``now`` replace the newest durable one, the rest wait."""
        self.checkpoints += int(starts.size)
        self.last_start = float(starts[-1])
        if self.pending:
            starts = np.concatenate([[s for s, _ in self.pending], starts])
            snaps = np.concatenate([[x for _, x in self.pending], snaps])
        done = starts + self.durable_s <= now
        if done.any():
            i = int(np.flatnonzero(done)[-1])
            self.durable = (float(starts[i]), float(snaps[i]))
        self.pending = list(zip(starts[~done].tolist(), snaps[~done].tolist()))

    def _last_durable(self, now: float) -> tuple[float, float]:
        best = self.durable
        for s, x in self.pending:
            if s + self.durable_s <= now:
                best = (s, x)
        return best

    def _set_rate(self) -> bool:
        """The rate for the current failed items; False when the fabric leaves no path (the job cannot run)."""
        step = self.ctx.step_of(self.failed_net)
        if step is None:
            return False
        if self.throttled:
            step += self.ctx.compute_s * (1.0 / self.ctx.params["thermal_speed"] - 1.0)
        self.rate = min(1.0, self.ctx.step_s / step)
        return True

    # --------------------------------------------------------------------------------------- the run
    def run(self, progress=None, on_failure=None) -> "Timeline":
        """Advance the timeline to its end. ``on_failure(now, event)``, if given, is called after each failure with
        :meth:`now` and the failure's event (None when events are not recorded): a live view of the timeline as it
        is simulated."""
        say = progress or silent
        ctx = self.ctx
        rng = np.random.default_rng(self.seed)
        heap: list = []
        seq = 0
        for name in fr.NAMES:                     # every category's arrivals at once, in a fixed order (seeded)
            k = ctx.n_items(name)
            lam = ctx.rates[name] * (ctx.units(fr.CATEGORIES[name].unit)) / 3600.0
            n = rng.poisson(lam * self.wall_s) if lam > 0 and k > 0 else 0
            times = rng.uniform(0.0, self.wall_s, n)
            items = rng.integers(0, k, n) if n else np.zeros(0, np.int64)
            for t, i in zip(times.tolist(), items.tolist()):
                heap.append((t, seq, "fail", (name, i, False)))
                seq += 1
        for t, name, i in ctx.injections:
            heap.append((t, seq, "fail", (name, i, True)))
            seq += 1
        heapq.heapify(heap)
        total = max(1, len(heap))
        done = 0
        while heap and heap[0][0] < self.wall_s:
            t, _, what, data = heapq.heappop(heap)
            if what == "fail":
                done += 1
                if done % 32 == 0:
                    say(min(0.99, done / total), f"{done} of {total} failures, day {t / 86400:.1f}")
                seq = self._fail(t, *data, heap, seq)
                if on_failure is not None:
                    on_failure(self.now(t), self.events[-1] if self.record and self.events else None)
            elif what == "heal":
                self._heal(t, data)
            elif what == "resume":
                self._resume(t, data)
            elif what == "swap":
                seq = self._swap(t, data, heap, seq)
        if self.up:
            self._advance(self.wall_s)
        elif self.stalled is not None:
            self._unstall(self.wall_s)
        say(1.0, f"{self.interruptions} interruptions, effective {100 * self.effective_ratio:.1f} %")
        return self

    def _fail(self, t: float, name: str, item: int, injected: bool, heap, seq: int) -> int:
        c = fr.CATEGORIES[name]
        ctx = self.ctx
        self.counts[name] = self.counts.get(name, 0) + 1
        event = {"time": t, "category": name, "item": ctx.item_name(name, item) if self.record else "",
                 "injected": injected, "consequence": c.consequence, "lost_work": 0.0, "restored_from": None}
        repair = ctx.repair_s[name]
        degrade = (name == "thermal" or (name == "network" and ctx.params["reroute"] and not ctx.net_crash[item]))
        if degrade:
            if self.up:
                self._advance(t)
            table = self.throttled if name == "thermal" else self.failed_net
            table[item] = max(table.get(item, 0.0), t + repair)
            heapq.heappush(heap, (t + repair, seq, "heal", (name, item)))
            seq += 1
            if name == "thermal":                  # the straggler is found, then its host is swapped out: a stop
                heapq.heappush(heap, (t + ctx.params["straggler_detect_s"], seq, "swap", item))
                seq += 1
            if self._set_rate():
                self.degradations += 1
                event.update(consequence="degrade", slowdown=1.0 / self.rate, until=t + repair)
                self._event(event)
                return seq
            event["consequence"] = "crash"        # no path left: the job stops until the repair
        if not self.up:
            event["consequence"] = WHILE_DOWN
            self._event(event)
            return seq
        if c.consequence == "planned":
            return self._stop(t, name, item, event, heap, seq)
        return self._stop(t, name, item, event, heap, seq, detect=ctx.detection_s[name],
                          until_repair=degrade)

    def _swap(self, t: float, item: int, heap, seq: int) -> int:
        """A thermally throttled GPU found as the job's straggler (``straggler_detect_s`` after its failure): the job
        is stopped to leave its host for a spare, an interruption as Meta's table counts it [S3]. Nothing to do when
        a restart has already left the host behind, or the GPU was repaired meanwhile; while the job is down its
        restart does it."""
        if item not in self.throttled or not self.up:
            return seq
        self._advance(t)                          # at the throttled pace until the stop
        failed_at = self.throttled.pop(item) - self.ctx.repair_s["thermal"]   # its host leaves: no longer throttled
        event = {"time": t, "category": "thermal", "item": self.ctx.item_name("thermal", item) if self.record else "",
                 "injected": False, "consequence": "crash", "lost_work": 0.0, "restored_from": None}
        return self._stop(t, "thermal", item, event, heap, seq, detect=0.0, failed_at=failed_at)

    def _stop(self, t: float, name: str, item: int, event: dict, heap, seq: int, detect: float | None = None,
              until_repair: bool = False, failed_at: float | None = None) -> int:
        """The job stops at ``t``: a planned stop (``detect`` None: a last durable checkpoint first, nothing lost),
        or a crash detected ``detect`` seconds later (the work since the last durable snapshot is lost; the job
        waits for a healthy host where the cause needs one, or for the repair when ``until_repair``: the fabric
        left it no path; ``failed_at``: when the item failed, ``t`` unless given). Then restart and restore."""
        c, ctx = fr.CATEGORIES[name], self.ctx
        self._advance(t)
        self.up = False
        self.interruptions += 1
        if detect is None:
            self.planned += 1
            # a last checkpoint, taken once the previous one is durable (and absorbed), and durable before the stop
            save = max(0.0, self.last_start + self.gate_s - t) + self.durable_s
            spans = [("planned", save + ctx.params["planned_down_s"]), ("restart", ctx.params["restart_s"]),
                     ("restore", ctx.checkpoint["restore_s"])]
            snap = self.trained
            event["restored_from"] = t
        else:
            start, snap = self._last_durable(t)
            lost = self.trained - snap
            self._lose("recompute", min(lost, self.wall_s), [name])
            event.update(lost_work=lost, restored_from=start)
            if name in ctx.detection_s:            # a crash's detection (the straggler's search is not one)
                self.detected[name] = self.detected.get(name, 0.0) + min(detect, self.wall_s - t)
            need = int(ctx.net_hosts[item]) if name == "network" else 1
            repaired = (t if failed_at is None else failed_at) + ctx.repair_s[name]
            wait = self.spares.wait(t + detect, need, repaired) if c.replaces_host else 0.0
            if until_repair:                       # the fabric has no path left: wait for the item's repair
                wait = max(wait, t + ctx.repair_s[name] - (t + detect))
            spans = [("detection", detect), ("wait", wait), ("restart", ctx.params["restart_s"]),
                     ("restore", ctx.checkpoint["restore_s"])]
        self._swap_throttled(t + spans[0][1] + spans[1][1] if len(spans) == 4 else t)
        at = t
        for ph, dur in spans:
            end = min(at + dur, self.wall_s)
            self._lose(ph, end - at, [name])
            self._seg(at, end, DOWN if ph in ("planned", "detection", "wait") else RESTARTING)
            event[ph] = dur
            at = end
        self.trained, self.since_checkpoint = snap, 0.0
        self.pending, self.cur, self.last_start = [], None, -math.inf
        self.durable = (event["restored_from"] or 0.0, snap)
        heapq.heappush(heap, (t + sum(d for _, d in spans), seq, "resume", None))
        self._event(event)
        return seq + 1

    def _swap_throttled(self, at: float) -> None:
        """A restart leaves throttled GPUs behind: each host with one moves to a free spare (back when repaired)."""
        self.spares.release(at)
        for item, repaired in list(self.throttled.items()):
            if not self.spares.lend(repaired):
                break
            del self.throttled[item]

    def _heal(self, t: float, data) -> None:
        name, item = data
        table = self.throttled if name == "thermal" else self.failed_net
        if table.get(item, math.inf) > t:        # failed again since: a later repair heals it
            return
        if self.up:
            self._advance(t)
        del table[item]
        if self._set_rate() and self.stalled is not None:
            self._unstall(t)

    def _resume(self, t: float, _data) -> None:
        self.t = min(t, self.wall_s)
        if self._set_rate():
            self.up = True
        else:                                     # still no path: down until a repair gives one back
            self.stalled = self.t

    def _unstall(self, t: float) -> None:
        end = min(t, self.wall_s)
        self._lose("wait", end - self.stalled, ["network"])
        self._seg(self.stalled, end, DOWN)
        self.t, self.stalled, self.up = end, None, True

    def _event(self, e: dict) -> None:
        if self.record:
            self.events.append(e)

    # --------------------------------------------------------------------------------------- results
    @property
    def productive(self) -> float:
        return self.trained

    @property
    def effective_ratio(self) -> float:
        return self.trained / self.wall_s

    def now(self, t: float) -> dict:
        """The timeline at wall time ``t`` (s), just after the events there: its state (a name of STATES), the
        productive time and effective ratio so far, the interruptions so far."""
        state = DOWN if not self.up or self.stalled is not None else TRAINING if self.rate >= 1.0 else DEGRADED
        return {"state": STATES[state], "time": t, "productive_s": self.trained,
                "effective_ratio": self.trained / t if t > 0 else 1.0, "interruptions": self.interruptions}

    def to_dict(self) -> dict:
        ctx, p = self.ctx, self.ctx.params
        days = p["days"]
        out = {
            "kind": "failures", "cluster": ctx.cluster, "seed": self.seed, "gpus": int(ctx.gpus.size),
            "hosts": int(ctx.hosts.size), "days": days, "wall_s": self.wall_s, "model": p["model"],
            "step_s": ctx.step_s, "spares": ctx.spares,
            "checkpoint": {**ctx.checkpoint, "interval_s": self.interval_s, "count": self.checkpoints,
                           "skipped": self.skipped, "overlapping": self.overlapping},
            "detection": {"table": detection_table(p, ctx.step_s),
                          "by_class": dict(sorted(self.detected.items(), key=lambda kv: -kv[1]))},
            "effective_ratio": self.effective_ratio, "productive_s": self.productive,
            "lost": {"by_phase": dict(self.phase), "by_cause": dict(sorted(self.cause.items(), key=lambda kv: -kv[1]))},
            "interruptions": self.interruptions, "interruptions_per_day": self.interruptions / days,
            "planned_interruptions": self.planned,
            "degradations": self.degradations, "failures_by_category": dict(self.counts),
            "mtbf_s": ctx.mtbf_s(), "young_daly_s": ctx.young_daly_s(),
            "solves": {"fabric_states": len(ctx.steps) - 1, "seconds": ctx.solve_seconds},
        }
        if self.record:
            cat = (lambda xs: np.concatenate(xs) if xs else np.zeros(0))
            start = cat(self.seg_start)
            order = np.argsort(start, kind="stable")
            out["timeline"] = {"states": list(STATES), "start": start[order].tolist(),
                               "end": cat(self.seg_end)[order].tolist(),
                               "state": cat(self.seg_state)[order].astype(int).tolist()}
            out["events"] = self.events
        return out


# ------------------------------------------------------------------------------------------------ public calls
def simulate(cluster_or_spec, values: dict, seed: int | None = None, progress=None, on_failure=None) -> dict:
    """One timeline (JSON-able, schema in docs/reliability.md) of the job ``values`` (:data:`sim.failures.params.FAILURES`)
    on a preset name, spec, ClusterLayout, Topology or :class:`Prepared`; ``seed``: the failure seed (default the
    parameters' ``seed``); ``on_failure(now, event)``: called after each failure as it is simulated
    (:meth:`Timeline.run`)."""
    ctx = prepare(cluster_or_spec, values, span(progress, 0.0, 0.3))
    seed = ctx.params["seed"] if seed is None else seed
    timeline = Timeline(ctx, seed, ctx.checkpoint["interval_s"])
    return timeline.run(span(progress, 0.3, 1.0), on_failure).to_dict()


def simulate_seeds(cluster_or_spec, values: dict, seeds, progress=None, timelines: int = 1) -> list[dict]:
    """Timelines of several seeds on one preparation; the first ``timelines`` keep their timeline and events."""
    ctx = prepare(cluster_or_spec, values, span(progress, 0.0, 0.2))
    seeds = seeds_of(ctx, seeds)
    out = []
    for k, s in enumerate(seeds):
        tl = Timeline(ctx, s, ctx.checkpoint["interval_s"], record=k < timelines)
        out.append(tl.run().to_dict())
        if progress:
            progress(0.2 + 0.8 * (k + 1) / len(seeds), f"seed {s}: effective {100 * tl.effective_ratio:.1f} %")
    return out


def seeds_of(ctx: Prepared, seeds) -> list[int]:
    if isinstance(seeds, int):
        return list(range(ctx.params["seed"], ctx.params["seed"] + seeds))
    return [int(s) for s in seeds]
