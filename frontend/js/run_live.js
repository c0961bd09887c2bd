// Live progress of the runs listed on a page: one /ws/runs/<id>/ stream per unfinished run (without the link
// tables: index=0), closed as soon as the run ends. Each frame is applied inside timeFrame().
import { live, timeFrame } from "./twin.js";

/** Follow runs by id. sync(runs) opens streams for the unfinished ones and closes those no longer listed;
 *  onFrame(id, frame) applies a frame, onEnd(id) runs once when a run is seen finished (final frame, or a run
 *  that ended while connecting). */
export function runStreams(finished, { onFrame, onEnd }) {
  const streams = new Map();
  const close = (id) => { streams.get(id)?.close(); streams.delete(id); };
  const end = (id) => { if (streams.has(id)) { close(id); onEnd(id); } };
  return {
    sync(runs) {
      for (const id of [...streams.keys()]) if (!runs.some((r) => r.id === id)) close(id);
      for (const r of runs) {
        if (finished.has(r.status) || streams.has(r.id)) continue;
        streams.set(r.id, live(`/ws/runs/${r.id}/`, {
          query: { index: "0" },
          onMeta(meta) { if (meta.run && finished.has(meta.run.status)) end(r.id); },
          onFrame(frame) {
            timeFrame(() => onFrame(r.id, frame));
            if (frame.final) end(r.id);
          },
        }));
      }
    },
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
  const badge = tr.querySelector(".badge");
  if (frame.status && frame.status !== "unknown" && badge) {
    badge.className = `badge ${frame.status}`;
    badge.textContent = frame.status;
  }
}
