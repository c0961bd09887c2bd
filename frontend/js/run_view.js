// /experiments/<id>/ : one run. Its state comes from GET /api/runs/<id>/, its progress live from /ws/runs/<id>/
// (#run-progress keeps data-progress and data-status current; each frame is applied inside timeFrame()); when the
// final frame arrives (or the run had already ended) the results are fetched and drawn by the result view the server
// names (`run.view`, registered by name in registry.js: run_results.js the generic ones, each capability's
// browser module its own; an unknown name draws the generic summary). A sweep also follows its children on the cluster's stream (one socket
// for all of them); its bar is their mean progress. A deleted run says so. While the run is not finished its state
// is read again every STALL_POLL_MS, so a run whose worker went silent shows "stalled" (the server derives it from
// the heartbeat), with no frame to say so.
import { api, esc, fmt, live, liveIdle, markReady, timeFrame, toast } from "./twin.js";
import { pageData } from "./run_form.js";
import { applyRowFrame, followSweep, QUIET_MS, sweepChildren, sweepProgress } from "./run_live.js";
import {
  figureText, paramsText, paramValue, pct, stalledBadge, sweepBars, sweepLines, sweepTable,
} from "./run_results.js";
import { loadCapabilities, view } from "./registry.js";

const page = pageData("run-page");
const published = pageData("published-claims");
const FINISHED = new Set(pageData("finished-statuses"));
const KINDS = pageData("run-kinds");        // per kind: label, view, headline declarations, best
const bar = document.getElementById("run-progress");
const results = document.getElementById("results");
let children = new Map();              // a sweep's children: id -> run (progress and status kept live)
let run = null, runLive = null, childLive = null, finishing = null;

const STALL_POLL_MS = 10000;
const isSweep = () => run.view === "sweep";
const duration = (a, b) => (a && b ? fmt.duration((new Date(b) - new Date(a)) / 1000) : "–");

let shown = { progress: null, status: null };   // what the bar shows: never lowered while the run keeps its status

/** The bar's progress and the run's status. Frames, the socket's meta (on each (re)connect: the database's
 *  progress, written less often than frames) and REST reads arrive in any order: a lower value of the same status
 *  is an older one, not the run going back (a requeued run changes status, and may start over). */
function setProgress(progress, status) {
  const same = !status || status === "unknown" || status === shown.status;
  if (progress != null && same && shown.progress != null && progress < shown.progress) progress = null;
  if (progress != null) shown.progress = progress;
  if (status && status !== "unknown" && status !== shown.status) shown = { progress: shown.progress, status };
  if (progress != null) {
    bar.dataset.progress = String(Math.round(progress * 10) / 10);
    bar.querySelector("span").style.width = `${progress}%`;
    document.getElementById("progress-text").textContent = `${progress.toFixed(0)} %`;
  }
  if (status && status !== "unknown") {
    bar.dataset.status = status;
    const badge = document.getElementById("run-status");
    badge.className = `badge ${status}`;
    badge.textContent = status;
    // offered only where the server says the visitor may (page.can_cancel, then each read's can_change)
    document.getElementById("cancel-run").hidden = !page.can_cancel || run?.can_change === false || FINISHED.has(status);
  }
}

/** What the latest link utilization says (one pass over a Float32Array: 56k links in well under a ms). */
function showLinks(util) {
  let busy = 0, hot = 0, max = 0;
  for (let i = 0; i < util.length; i++) {
    const u = util[i];
    if (u > 0) busy += 1;
    if (u >= 0.9) hot += 1;
    if (u > max) max = u;
  }
  const el = document.getElementById("live-links");
  el.hidden = false;
  el.textContent = `backend links now: ${fmt.int(busy)} of ${fmt.int(util.length)} carry traffic, ${fmt.int(hot)} `
    + `at 90 % or more, busiest ${pct(max, 0)}`;
}

/** What inventory the run read: the items that were not active, and the hash of every status array. */
function inventoryHtml(r) {
  if (r.view === "sweep") return "each combination records its own";
  const state = r.inventory_state;
  if (!state) return "–";
  const off = Object.entries(state.counts).filter(([, c]) => c.non_active)
    .map(([k, c]) => `${fmt.int(c.non_active)} of ${fmt.int(c.total)} ${k}`).join(", ");
  const hash = esc(state.status_hash.slice(0, 12));
  return `${off ? `<span class="warn">not active: ${esc(off)}</span>` : "every item active"}
    <span class="muted mono" title="sha256 of the status arrays the run read">${hash}</span>`;
}

/** The calibration profile the run named (its parameters keep the record the server made of it: profile, id, the
 *  values it applied, the names the kind does not declare), or "" when it named none. */
function calibrationHtml(r) {
  const c = r.params?.calibration;
  if (!c || typeof c !== "object") return "";
  const applied = Object.entries(c.applied ?? {}).map(([k, v]) => `${k} ${paramValue(v)}`).join(", ");
  const ignored = c.ignored?.length
    ? ` <span class="muted">(not parameters of this kind: ${esc(c.ignored.join(", "))})</span>` : "";
  const link = `<a href="/api/calibrations/${Number(c.id)}/">${esc(c.profile)}</a>`;
  return `<dt>calibration</dt><dd id="run-calibration">${link}:
    <span class="mono">${esc(applied || "no value applied")}</span>${ignored}</dd>`;
}

function drawHead(r) {
  const attempt = r.attempts > 1 ? ` <span class="warn">(attempt ${r.attempts})</span>` : "";
  document.getElementById("run-facts").innerHTML = `
    <dt>kind</dt><dd>${esc(KINDS[r.kind]?.label ?? r.kind)}</dd>
    <dt>cluster</dt><dd>${esc(page.cluster)}</dd>
    <dt>parameters</dt><dd>${esc(paramsText(r))}</dd>
    ${calibrationHtml(r)}
    <dt>worker</dt><dd>${esc(r.worker || "–")}${attempt}</dd>
    <dt>created</dt><dd>${fmt.time(r.created_at)}${r.created_by ? ` by ${esc(r.created_by)}` : ""}</dd>
    <dt>started</dt><dd>${fmt.time(r.started_at)}
      <span class="muted">(queued ${duration(r.created_at, r.started_at)})</span></dd>
    <dt>finished</dt><dd>${fmt.time(r.finished_at)}
      <span class="muted">(ran ${duration(r.started_at, r.finished_at)})</span></dd>
    <dt>inventory state</dt><dd>${inventoryHtml(r)}</dd>
    ${r.error ? `<dt>error</dt><dd class="bad mono">${esc(r.error)}</dd>` : ""}
    ${r.notes ? `<dt>notes</dt><dd class="mono pre">${esc(r.notes)}</dd>` : ""}`;
  document.getElementById("run-stalled")?.remove();
  document.getElementById("run-status").insertAdjacentHTML("afterend",
    stalledBadge(r).replace("<span ", '<span id="run-stalled" '));
  // nested parameters (a sweep's base parameters and axes) one per row: "sweep.qps"; the calibration record is
  // in the facts above
  const params = Object.entries(r.params).filter(([k]) => k !== "calibration").flatMap(([k, v]) => (v !== null && typeof v === "object" && !Array.isArray(v)
    ? Object.entries(v).map(([sub, x]) => [`${k}.${sub}`, x]) : [[k, v]]));
  const inBytes = new Set(KINDS[r.kind]?.bytes ?? []);          // sizes in bytes: 4294967296 -> "4 GiB"
  document.getElementById("run-params").innerHTML = params.map(([k, v]) =>
    `<tr><th>${esc(k)}</th><td class="mono">${esc(inBytes.has(k) && typeof v === "number" ? fmt.bytes(v)
      : paramValue(v))}</td></tr>`).join("");
  setProgress(r.progress, r.status);
}

// ------------------------------------------------------------------------------------------------- results
async function drawResults() {
  const { summary } = await api(`/api/runs/${page.id}/results/?arrays=none`);
  if (isSweep()) return drawSweep(summary);
  if (!summary) {
    const error = run.error ? `: <span class="mono">${esc(run.error)}</span>` : "";
    results.innerHTML = `<p class="${run.status === "failed" ? "bad" : "muted"}">No results: the run
      ${esc(run.status)}${error}.</p>`;
  } else {
    await loadCapabilities();
    view(run.view)(results, summary, { cluster: page.cluster, run, published });
  }
}

// --------------------------------------------------------------------------------------------------- sweeps
const swept = () => KINDS[run.params.kind] ?? { headline: [], best: null };

function childRow(c) {
  const s = c.summary ?? {};
  const row = { run: c.id, status: c.status, progress: c.progress, worker: c.worker, error: c.error };
  for (const h of swept().headline) row[h.key] = s[h.key];
  for (const k of Object.keys(run.params.sweep)) row[k] = c.params[k];
  return row;
}

/** The sweep's results: from its merged summary once it ended, else from its children as they are now; figures
 *  are the swept kind's headline ones, the best child ranked by its `best` figure's median. */
function drawSweep(summary) {
  const axes = run.params.sweep, best = summary?.best ?? null, { headline, best: key } = swept();
  const ranking = headline.find((h) => h.key === key) ?? headline[0] ?? { key: null, label: "", format: "pct" };
  const rows = summary ? summary.children.map((r) => ({ ...r, progress: children.get(r.run)?.progress }))
    : [...children.values()].map(childRow);
  const done = rows.filter((r) => FINISHED.has(r.status)).length;
  const succeeded = rows.filter((r) => r.status === "succeeded").slice(0, 8).map((r) => r.run);
  const bestText = best && Object.keys(axes).map((k) => `${k}=${best[k] ?? "default"}`).join(", ");
  results.innerHTML = `<div class="figures-row">
      <div class="figure"><span class="value">${done} / ${rows.length}</span>
        <span class="label">combinations finished</span></div>
      ${best ? `<div class="figure"><span class="value ok">${esc(figureText(best[ranking.key], ranking.format))}</span>
        <span class="label">best ${esc(ranking.label)}: ${esc(bestText)}
        (<a href="/experiments/${best.run}/">#${best.run}</a>)</span></div>` : ""}
      ${summary ? `<div class="figure"><span class="value">${summary.workers.length}</span>
        <span class="label">workers: ${esc(summary.workers.join(", "))}</span></div>` : ""}</div>
    <div class="grid-2 results-grid">
      <section class="panel"><h3>Combinations</h3>${sweepTable(axes, rows, best, headline)}
        ${succeeded.length > 1 ? `<p class="hint"><a href="/experiments/compare/?runs=${succeeded.join(",")}">compare
          them</a></p>` : ""}</section>
      <section class="panel"><h3>${esc(ranking.label)} per combination</h3><div class="sweep-bars"></div>
        <div class="sweep-lines"></div></section></div>`;
  if (!ranking.key) return;
  sweepBars(results.querySelector(".sweep-bars"), axes, rows, best, ranking.key);
  sweepLines(results.querySelector(".sweep-lines"), axes, rows, ranking.key, ranking.label);
}

/** A running sweep: its children drawn as they are, then kept live; its bar is their mean progress. */
function followChildren() {
  const redraw = () => { if (!FINISHED.has(run.status)) drawSweep(null); };
  const showProgress = () => setProgress(sweepProgress(run, children, FINISHED), null);
  redraw();
  showProgress();
  childLive = followSweep(run, page.cluster, children, {
    onFrame(child, frame) {
      applyRowFrame(results.querySelector(`tr[data-run="${child.id}"]`), child);
      showProgress();
      if (frame.final) {                     // its figures: the row is drawn again from the finished run
        api(`/api/runs/${child.id}/`).then((c) => { children.set(c.id, c); redraw(); })
          .catch((e) => toast(`run #${child.id}: ${e.message}`));
      }
    },
    onAdded: () => timeFrame(() => { redraw(); showProgress(); }),
  });
}

// ----------------------------------------------------------------------------------------------------- live
function finish() {
  finishing ??= loadFinished();          // the final frame and a late connection's metadata may both say so
  return finishing;
}

async function loadFinished() {
  runLive?.close();
  childLive?.close();
  liveIdle(`run #${page.id} has ended: nothing more to follow`);
  try {
    run = await api(`/api/runs/${page.id}/`);
    drawHead(run);
    if (isSweep()) children = await sweepChildren(run);
    await drawResults();
  } catch (e) { toast(`results of run #${page.id}: ${e.message}`); }
}

function follow() {
  runLive = live(`/ws/runs/${page.id}/`, {
    query: { index: "0" },
    quietMs: QUIET_MS,
    onMeta(meta) {
      if (!meta.run) return;
      timeFrame(() => setProgress(isSweep() ? null : meta.run.progress, meta.run.status));
      if (FINISHED.has(meta.run.status)) finish();                  // it ended while we were connecting
    },
    onEvent(message) {
      if (message.type !== "run_deleted") return;
      runLive?.close();
      childLive?.close();
      results.innerHTML = `<p class="bad">Run #${page.id} was deleted.</p>`;
    },
    onFrame(frame, merged) {
      timeFrame(() => {
        setProgress(isSweep() ? null : frame.progress, frame.status);
        if (frame.sections.link_util) showLinks(merged.link_util);
      });
      if (frame.final) finish();
    },
  });
}

document.getElementById("cancel-run").addEventListener("click", async (ev) => {
  ev.target.disabled = true;
  try {
    const r = await api(`/api/runs/${page.id}/cancel/`, { method: "POST" });
    toast(r.status === "cancelled" ? "run cancelled" : "cancel requested: the run stops at its next progress report",
          { kind: "info", ms: 4000 });
  } catch (e) {
    toast(`cancel: ${e.message}`);
    ev.target.disabled = false;
  }
});

/** Read the run again every STALL_POLL_MS while it has not ended: "stalled" comes and goes with its heartbeat. */
function watchStall() {
  const timer = setInterval(async () => {
    if (finishing || FINISHED.has(run.status)) { clearInterval(timer); return; }
    try {
      const r = await api(`/api/runs/${page.id}/`);
      if (!finishing) { run = r; drawHead(r); }
    } catch { /* the next poll tries again */ }
  }, STALL_POLL_MS);
}

async function main() {
  try {
    run = await api(`/api/runs/${page.id}/`);
    drawHead(run);
    if (isSweep()) children = await sweepChildren(run);
    if (FINISHED.has(run.status)) await drawResults();
    else {
      if (isSweep()) followChildren();
      else results.innerHTML = '<p class="muted">Results appear here when the run ends.</p>';
      follow();
      watchStall();
    }
  } catch (e) {
    toast(`run #${page.id}: ${e.message}`);
  }
  markReady({ runId: page.id });
}
main();
