// Live progress of runs on a page: one /ws/runs/<id>/ stream per unfinished run (without the link tables:
// index=0), closed as soon as the run ends. A sweep's own stream only says that it started and ended: its progress
// is its children's, followed on the cluster's stream (one socket for all of them). Each frame is applied inside
// timeFrame().
import { api, live, timeFrame, toast } from "./twin.js";

/** A run's stream silent this long reads its snapshot: a final frame lost on the way still ends the run here. */
export const QUIET_MS = 5000;

/** How many child runs a sweep fans out to: one per combination of its axes. */
const combinations = (sweep) => Object.values(sweep.params.sweep).reduce((n, values) => n * values.length, 1);

/** A sweep's children as the API lists them (GET /api/runs/?parent=<id>), as a Map id -> run. */
export async function sweepChildren(sweep) {
  const { results } = await api(`/api/runs/?parent=${sweep.id}&ordering=id&limit=${combinations(sweep)}`);
  return new Map(results.map((c) => [c.id, c]));
}

/** A sweep's progress (0..100): the mean over its combinations, a finished child counting 100, one not yet
 *  created 0. */
export function sweepProgress(sweep, children, finished) {
  let sum = 0;
  for (const c of children.values()) sum += finished.has(c.status) ? 100 : c.progress ?? 0;
  return sum / combinations(sweep);
}

/**
 * Keep a running sweep's `children` (sweepChildren()) current from its cluster's stream: a child's frame updates
 * its progress and status, then onFrame(child, frame) runs. The children are created when a worker takes the
 * sweep: while some are missing, a frame of a run not in the map lists them again, and onAdded() runs when that
 * found new ones. Returns the stream's controller ({close()}).
 */
export function followSweep(sweep, cluster, children, { onFrame = () => {}, onAdded = () => {} }) {
  let listing = null;
  const listAgain = () => {
    listing ??= sweepChildren(sweep).then((found) => {
      const added = [...found].filter(([id]) => !children.has(id));
      for (const [id, c] of added) children.set(id, c);
      if (added.length) onAdded();
    }).catch((e) => toast(`sweep #${sweep.id}: ${e.message}`)).finally(() => { listing = null; });
  };
  return live(`/ws/clusters/${encodeURIComponent(cluster)}/`, {
    query: { index: "0" },
    onFrame(frame) {
      const child = children.get(frame.runId);
      if (!child) {
        if (children.size < combinations(sweep)) listAgain();
        return;
      }
      timeFrame(() => {
        if (frame.progress != null) child.progress = frame.progress;
        if (frame.status && frame.status !== "unknown") child.status = frame.status;
        onFrame(child, frame);
      });
    },
  });
}

/** Follow runs by id. sync(runs) opens streams for the unfinished ones and closes those no longer listed;
 *  onFrame(id, frame) applies a frame (for a sweep: {progress} from its children), onEnd(id) runs once when a run
 *  is seen finished (final frame, or a run that ended while connecting), onDeleted(id) when its stream says it was
 *  deleted ({type: "run_deleted"}). */
export function runStreams(finished, { onFrame, onEnd, onDeleted = () => {} }) {
  const streams = new Map(), sweeps = new Map();
  const close = (id) => {
    streams.get(id)?.close();
    sweeps.get(id)?.close();
    streams.delete(id);
    sweeps.delete(id);
  };
  const end = (id) => { if (streams.has(id)) { close(id); onEnd(id); } };

  async function followChildren(sweep, cluster) {
    sweeps.set(sweep.id, null);                              // once per sweep, however often its stream reconnects
    try {
      const children = await sweepChildren(sweep);
      if (!sweeps.has(sweep.id)) return;                     // it ended or left the page meanwhile
      const progress = () => onFrame(sweep.id, { progress: sweepProgress(sweep, children, finished) });
      sweeps.set(sweep.id, followSweep(sweep, cluster, children,
                                       { onFrame: progress, onAdded: () => timeFrame(progress) }));
      timeFrame(progress);
    } catch (e) { toast(`sweep #${sweep.id}: ${e.message}`); }
  }

  return {
    sync(runs) {
      for (const id of [...streams.keys()]) if (!runs.some((r) => r.id === id)) close(id);
      for (const r of runs) {
        if (finished.has(r.status) || streams.has(r.id)) continue;
        const sweep = r.view === "sweep";
        streams.set(r.id, live(`/ws/runs/${r.id}/`, {
          query: { index: "0" },
          quietMs: QUIET_MS,
          onMeta(meta) {
            if (!meta.run) return;
            if (finished.has(meta.run.status)) end(r.id);
            else if (sweep && !sweeps.has(r.id)) followChildren(r, meta.cluster.name);
          },
          onEvent(message) {
            if (message.type === "run_deleted") { close(r.id); onDeleted(r.id); }
          },
          onFrame(frame) {
            timeFrame(() => onFrame(r.id, sweep ? { ...frame, progress: null } : frame));
            if (frame.final) end(r.id);
          },
        }));
      }
    },
  };
}

/**
 * A table body of runs kept live: show(runs, empty) draws one row per run (<tr data-run>, its cells from
 * cells(run)), or the `empty` row when there is none, and follows the unfinished ones; when a run ends it is
 * fetched again, its row redrawn, then onEnd(run) runs; when one is deleted its row goes.
 */
export function liveRunRows(tbody, finished, cells, { rowClass = "", onEnd = () => {} } = {}) {
  const rowOf = (id) => tbody.querySelector(`tr[data-run="${id}"]`);
  const streams = runStreams(finished, {
    onFrame: (id, frame) => applyRowFrame(rowOf(id), frame),
    onDeleted: (id) => rowOf(id)?.remove(),
    async onEnd(id) {
      try {
        const r = await api(`/api/runs/${id}/`);
        const tr = rowOf(id);
        if (tr) tr.innerHTML = cells(r);
        await onEnd(r);
      } catch (e) { toast(`run #${id}: ${e.message}`); }
    },
  });
  const cls = rowClass ? ` class="${rowClass}"` : "";
  return function show(runs, empty) {
    tbody.innerHTML = runs.length ? runs.map((r) => `<tr data-run="${r.id}"${cls}>${cells(r)}</tr>`).join("") : empty;
    streams.sync(runs);
  };
}

/** Update a table row's progress bar (.progress, data-progress) and status badge from a frame (or any object
 *  with progress and status). */
export function applyRowFrame(tr, frame) {
  if (!tr) return;
  const bar = tr.querySelector(".progress");
  if (frame.progress != null && bar) {
    bar.dataset.progress = String(frame.progress);
    bar.querySelector("span").style.width = `${frame.progress}%`;
  }
  tr.querySelector(".badge.stalled")?.remove();          // a frame came: its worker is alive
  const badge = tr.querySelector(".badge");
  if (frame.status && frame.status !== "unknown" && badge) {
    badge.className = `badge ${frame.status}`;
    badge.textContent = frame.status;
  }
}
