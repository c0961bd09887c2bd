// A pipeline schedule's slot table as simulated (sim/jobs/step.py `timeline`, stored with a job run as its `pipeline`
// array: one row per operation, columns stage, kind (0 forward, 1 backward, 2 weight gradient), micro-batch, chunk,
// start and end in seconds from the step's start). One lane per stage on a canvas, each operation a box in its kind's
// colour (a later model chunk a lighter shade), the gaps left empty: the bubble as the schedule makes it, not a
// closed form. The caption says how much of each stage is idle.
import { api, fmt } from "./twin.js";
import { exportable } from "./exports.js";

export const KINDS = [{ name: "forward", color: "#4c9aff" }, { name: "backward", color: "#f5a524" },
                      { name: "weight gradient", color: "#46a758" }];
const LABEL_W = 56;                 // px of stage labels at the left

/** Rows [stage, kind, micro_batch, chunk, start, end] from /api/runs/<id>/results/'s `pipeline` array (JSON lists). */
function timelineRows(array) {
  return (array?.data ?? []).filter((r) => Array.isArray(r) && r.length >= 6);
}

/** A run's slot table: {status, rows} from /api/runs/<id>/results/ (its `pipeline` array only). */
export async function runPipeline(runId) {
  const r = await api(`/api/runs/${runId}/results/?names=pipeline`);
  return { status: r.status, rows: timelineRows(r.arrays?.pipeline) };
}

/** Draw `rows` into `box` (cleared first); returns the canvas, or null when there is nothing to draw. */
export function drawPipeline(box, rows) {
  box.innerHTML = "";
  if (!rows.length) {
    box.innerHTML = '<p class="muted">no pipeline schedule stored with this run</p>';
    return null;
  }
  const stages = 1 + Math.max(...rows.map((r) => r[0]));
  const chunks = 1 + Math.max(...rows.map((r) => r[3]));
  const makespan = Math.max(...rows.map((r) => r[5]));
  const busy = new Array(stages).fill(0);
  rows.forEach((r) => { busy[r[0]] += r[5] - r[4]; });
  const lane = Math.max(4, Math.min(18, Math.floor(240 / stages)));
  const width = Math.max(320, Math.floor(box.clientWidth || 640));
  const c = Object.assign(document.createElement("canvas"), { width, height: lane * stages + 18 });
  c.className = "pipeline-table";
  c.setAttribute("role", "img");
  c.setAttribute("aria-label", `pipeline schedule: ${stages} stages, ${rows.length} operations`);
  c.dataset.stages = String(stages);
  c.dataset.ops = String(rows.length);
  const ctx = c.getContext("2d");
  const x = (t) => LABEL_W + (t / makespan) * (width - LABEL_W - 4);
  ctx.font = "11px sans-serif";
  ctx.textBaseline = "middle";
  for (let s = 0; s < stages; s++) {
    ctx.fillStyle = "#1b202a";
    ctx.fillRect(LABEL_W, s * lane, width - LABEL_W - 4, lane - 1);
    if (lane >= 10 || s % Math.ceil(10 / lane) === 0) {
      ctx.fillStyle = "#9aa4b2";
      ctx.fillText(`stage ${s}`, 2, s * lane + lane / 2);
    }
  }
  for (const [s, kind, , chunk, t0, t1] of rows) {
    ctx.globalAlpha = 1 - 0.45 * (chunks > 1 ? chunk / (chunks - 1) : 0);
    ctx.fillStyle = KINDS[kind]?.color ?? "#888";
    ctx.fillRect(x(t0), s * lane, Math.max(1, x(t1) - x(t0) - 0.5), lane - 1);
  }
  ctx.globalAlpha = 1;
  ctx.fillStyle = "#9aa4b2";
  ctx.textBaseline = "top";
  ctx.fillText("0", LABEL_W, lane * stages + 4);
  const end = fmt.s(makespan);
  ctx.fillText(end, width - 4 - ctx.measureText(end).width, lane * stages + 4);
  const idle = busy.map((b) => 1 - b / makespan);
  const kinds = new Set(rows.map((r) => r[1]));
  const legend = document.createElement("p");
  legend.className = "hint pipeline-legend";
  legend.innerHTML = [...kinds].sort().map((k) => `<span class="swatch" style="background:${KINDS[k].color}"></span>`
    + `${KINDS[k].name}`).join(" ") + (chunks > 1 ? ` · ${chunks} chunks per stage (later chunks lighter)` : "")
    + ` · ${stages} stages, ${fmt.int(rows.length)} operations over ${end}; idle ${fmt.pct(Math.min(...idle), 0)}`
    + `–${fmt.pct(Math.max(...idle), 0)} of each stage's time`;
  box.append(c, legend);
  exportable(c, { name: "pipeline-schedule" });
  return c;
}
