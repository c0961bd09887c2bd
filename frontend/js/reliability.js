// The Reliability page (twin/capabilities/failures/page.py): a cluster's `failures` runs (twin/capabilities/failures/kinds.py over
// sim/failures/timeline.py), one run's timeline drawn as state bands with its failures as marks and the lost work shaded, its
// time lost by cause and by phase, the effective time over its seeds, the checkpoint-interval sweep (the simulated
// optimum beside Young/Daly), its failures as a table, and the form that starts a run (fields from the kind's
// declaration, sim/failures/params.py FAILURES, passed in #reliability-info). A running run is followed on the cluster's live
// stream (failure_state and failure_events sections: frames.js sectionRow / sectionRows); a finished one is
// replayed from its summary, a cursor moving over its timeline, and the GPU page marks its failed parts
// (/clusters/<name>/gpus/?color=failures&run=<id>).
import { api, ApiError, coalesced, errorText, esc, fmt, live, markReady, timeFrame, toast, twin } from "./twin.js";
import { fieldErrors, lockForm, pageData, paramFieldsHtml, readFields, showErrors } from "./run_form.js";
import { sectionRow, sectionRows } from "./frames.js";
import { barChart, lineChart, PALETTE } from "./chart.js";
import { exportable } from "./exports.js";
import { publishedHtml } from "./published.js";

const info = pageData("reliability-info");
const cluster = info.cluster, CATS = info.tables.categories;
const el = Object.fromEntries(["rel-runs", "rel-none", "failures-form", "rel-detail", "rel-title", "rel-status",
  "rel-figures", "rel-live", "rel-state", "rel-clock", "rel-effective", "rel-seed", "rel-timeline", "timeline-note",
  "rel-replay", "replay-play", "replay-time", "replay-at", "replay-gpus", "rel-legend", "rel-causes", "rel-phases",
  "rel-seeds", "seeds-note", "rel-published-panel", "rel-published", "rel-sweep-panel", "rel-sweep", "sweep-note",
  "rel-events", "events-note"]
  .map((id) => [id.replace(/-(\w)/g, (_, c) => c.toUpperCase()), document.getElementById(id)]));

// Colours of the timeline's states (the engine's segment states: info.tables.states) and of failure consequences.
const STATE_COLORS = { training: "#2f6b4b", checkpointing: "#4aa3ff", degraded: "#f5a524", down: "#e5484d",
                       restarting: "#bc8cff" };
const CONSEQUENCE_COLORS = { crash: "#e5484d", degrade: "#f5a524", planned: "#8b94a7" };
const LOST_COLOR = "rgba(229, 72, 77, 0.28)";
const stateColor = (s) => STATE_COLORS[s] ?? PALETTE[info.tables.states.indexOf(s) % PALETTE.length];

const runs = new Map();         // run id -> the API's record
const liveRows = new Map();     // run id -> {state, events} from the live frames
let selected = null, charts = [], replayTimer = null;

// ------------------------------------------------------------------------------------------------- figures
const hours = (h) => fmt.duration(h == null ? null : h * 3600);
const secs = fmt.duration;
const mean = (v) => (v != null && typeof v === "object" ? v.mean ?? v.median ?? v.p50 : v);
const catLabel = (c) => CATS[c]?.label ?? c;
// an event's item: its inventory name (a finished run), or its kind and position (a live frame: GPU.index...)
const itemText = (e) => (typeof e.item === "string" ? e.item : e.item_kind === "job" || e.item == null ? "job"
  : `${e.item_kind} #${e.item}`);

// ---------------------------------------------------------------------------------------------- runs list
function rowHtml(run) {
  const s = run.summary ?? {}, lv = liveRows.get(run.id)?.state;
  const eff = mean(s.effective_ratio) ?? lv?.effective_ratio;
  const status = run.status === "running" ? `running ${Math.round(run.progress ?? 0)} %` : run.status;
  return `<td><a href="/experiments/${run.id}/">#${run.id}</a></td><td>${esc(run.params_text ?? "")}</td>
    <td><span class="badge ${esc(run.status)}">${esc(status)}</span></td><td class="num">${fmt.pct(eff, 1)}</td>
    <td class="num">${mean(s.interruptions_per_day)?.toFixed?.(2) ?? "–"}</td>
    <td class="num">${fmt.int(run.params?.seeds)}</td>`;
}

function renderRuns() {
  const list = [...runs.values()].sort((a, b) => b.id - a.id);
  el.relRuns.tBodies[0].replaceChildren(...list.map((run) => {
    const tr = document.createElement("tr");
    tr.dataset.run = run.id;
    tr.dataset.status = run.status;
    tr.innerHTML = rowHtml(run);
    if (run.id === selected) tr.classList.add("selected");
    tr.addEventListener("click", () => select(run.id));
    return tr;
  }));
  el.relNone.hidden = list.length > 0;
}

/** (Re)read the cluster's failures runs (parents only: a fanned-out run's children are its own). */
const load = coalesced(async () => {
  try {
    const page = await api(`/api/runs/?kind=failures&cluster__name=${encodeURIComponent(cluster.name)}`
                           + "&parent__isnull=true&limit=50&ordering=-id");
    for (const run of page.results) runs.set(run.id, run);
    renderRuns();
    if (selected != null && runs.has(selected)) renderDetail();
  } catch (e) { toast(`runs not loaded: ${e.message}`); }
});

// ---------------------------------------------------------------------------------------------- one run
function select(id) {
  selected = id;
  stopReplay();
  history.replaceState(null, "", `${location.pathname}?run=${id}`);
  renderRuns();
  renderDetail();
}

/** A finished timeline of the engine (sim/failures/timeline.py simulate: seconds; timeline as parallel arrays of start,
 *  end and state index) in the page's terms: hours, segments [{state, start_h, end_h}], events in hours. */
function replayed(r) {
  const tl = r.timeline ?? { states: [], start: [], end: [], state: [] };
  const segments = tl.start.map((s, k) => ({ state: tl.states[tl.state[k]], start_h: s / 3600,
                                              end_h: tl.end[k] / 3600 }));
  const events = (r.events ?? []).map((e) => ({ ...e, t_hours: e.time / 3600, lost_hours: e.lost_work / 3600 }));
  return { hours: r.wall_s / 3600, segments, events, seed: r.seed, done: true };
}

/** The replayed timeline of a run: its summary's (finished), else what the live frames said so far. */
function timelineOf(run) {
  const r = run.summary?.replay;
  if (r) return replayed(r);
  const lv = liveRows.get(run.id);
  if (!lv?.state) return null;
  return { hours: lv.state.hours, segments: lv.segments, events: lv.events ?? [], seed: lv.state.seed, done: false,
           t: lv.state.t_hours };
}

function renderDetail() {
  const run = runs.get(selected);
  el.relDetail.hidden = !run;
  if (!run) return;
  charts.forEach((c) => c.destroy());
  charts = [];
  el.relDetail.dataset.run = run.id;
  el.relDetail.dataset.status = run.status;
  el.relTitle.textContent = `#${run.id} · ${run.params_text ?? ""}`;
  el.relStatus.textContent = run.status;
  el.relStatus.className = `badge ${run.status}`;
  const s = run.summary ?? {};
  el.relFigures.textContent = run.error ? run.error : run.summary
    ? `effective ${fmt.pct(mean(s.effective_ratio), 1)} · ${mean(s.interruptions_per_day)?.toFixed(2) ?? "–"} `
      + `interruptions/day · ${fmt.int(s.seeds)} seeds${s.workers?.length ? ` on ${s.workers.length} workers` : ""}`
    : `${Math.round(run.progress ?? 0)} %`;
  renderLive(run);
  const tl = timelineOf(run);
  drawTimeline(tl);
  renderEvents(tl);
  el.relReplay.hidden = !tl?.done;
  el.replayGpus.href = `/clusters/${encodeURIComponent(cluster.name)}/gpus/?color=failures&run=${run.id}`;
  renderLosses(s);
  renderSeeds(s);
  renderPublished(s);
  renderSweep(s);
}

/** The run's published comparisons (summary.published: sim/failures/published.py), drawn as every page draws them. */
function renderPublished(s) {
  const html = publishedHtml(s.published);
  el.relPublishedPanel.hidden = !html;
  el.relPublished.innerHTML = html;
}

function renderLive(run) {
  const lv = liveRows.get(run.id)?.state;
  el.relLive.hidden = !lv || run.summary != null;
  if (!lv) return;
  el.relState.textContent = lv.state;
  el.relState.dataset.state = lv.state;
  el.relClock.textContent = `hour ${lv.t_hours?.toFixed(1)} of ${lv.hours?.toFixed(0)}`;
  el.relEffective.textContent = `effective so far ${fmt.pct(lv.effective_ratio, 1)} · ${fmt.int(lv.interruptions)} `
    + `interruptions · ${hours(lv.lost_hours)} lost`;
  el.relSeed.textContent = `seed ${lv.seed} (${lv.seeds_done} of ${lv.seeds} done in this run)`;
}

// ------------------------------------------------------------------------------------------------ timeline
const NS = "http://www.w3.org/2000/svg";
const svgEl = (tag, attrs = {}, text) => {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) if (v != null) e.setAttribute(k, v);
  if (text != null) e.textContent = text;
  return e;
};

/** The timeline as SVG: one band of state segments over simulated days, failures as marks above it (colour by
 *  consequence, hover: category and item), each crash's lost work shaded back to its last durable checkpoint,
 *  and the replay cursor. */
function drawTimeline(tl) {
  const box = el.relTimeline;
  if (!tl || !tl.hours) { box.innerHTML = '<p class="muted">no timeline yet</p>'; box.dataset.segments = "0"; return; }
  const W = Math.max(480, box.clientWidth || 900), H = 150, L = 50, R = 12, top = 34, band = 60;
  const fx = (h) => L + (Math.min(h, tl.hours) / tl.hours) * (W - L - R);
  const svg = svgEl("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img",
                             "aria-label": "the job's timeline" });
  const segs = svgEl("g", { class: "segments" });
  for (const s of tl.segments) {
    const x0 = fx(s.start_h), x1 = fx(s.end_h);
    const r = svgEl("rect", { x: x0, y: top, width: Math.max(0.5, x1 - x0), height: band, fill: stateColor(s.state),
                              "data-state": s.state });
    r.append(svgEl("title", {}, `${s.state}: hour ${s.start_h.toFixed(2)} to ${s.end_h.toFixed(2)}`));
    segs.append(r);
  }
  const lost = svgEl("g", { class: "lost" }), marks = svgEl("g", { class: "marks" });
  for (const e of tl.events) {
    if (e.lost_hours > 0 && e.consequence === "crash") {       // from the checkpoint it restarts from
      const from = e.restored_from != null ? e.restored_from / 3600 : e.t_hours - e.lost_hours;
      lost.append(svgEl("rect", { x: fx(from), y: top, height: band, fill: LOST_COLOR,
                                  width: Math.max(1, fx(e.t_hours) - fx(from)) }));
    }
    const x = fx(e.t_hours), m = svgEl("line", { x1: x, x2: x, y1: 8, y2: top - 2, class: "mark", "stroke-width": 2,
                                                 stroke: CONSEQUENCE_COLORS[e.consequence] ?? "#ccc" });
    m.append(svgEl("title", {}, `hour ${e.t_hours.toFixed(2)}: ${catLabel(e.category)} (${e.consequence}) `
                              + `${itemText(e)}${e.lost_hours ? `, ${e.lost_hours.toFixed(2)} h of work lost` : ""}`));
    marks.append(m);
  }
  const axis = svgEl("g", { class: "axis" });
  const days = tl.hours / 24, step = days > 30 ? 7 : days > 7 ? 2 : days > 2 ? 1 : 0.25;
  for (let d = 0; d <= days + 1e-9; d += step) {
    axis.append(svgEl("line", { x1: fx(d * 24), x2: fx(d * 24), y1: top + band, y2: top + band + 4,
                                stroke: "#8b94a7" }),
                svgEl("text", { x: fx(d * 24), y: top + band + 16, "text-anchor": "middle" }, `${+d.toFixed(2)} d`));
  }
  axis.append(svgEl("text", { x: 4, y: top + band / 2 + 4 }, "state"), svgEl("text", { x: 4, y: 22 }, "failures"));
  const cursor = svgEl("line", { class: "cursor", x1: fx(tl.t ?? tl.hours), x2: fx(tl.t ?? tl.hours), y1: 4,
                                 y2: top + band + 2 });
  svg.append(segs, lost, marks, axis, cursor);
  box.replaceChildren(svg);
  exportable(box, { name: "timeline" });
  box.dataset.segments = String(tl.segments.length);
  box.dataset.marks = String(tl.events.length);
  drawTimeline.at = (h) => { const x = fx(h); cursor.setAttribute("x1", x); cursor.setAttribute("x2", x); };
  el.timelineNote.textContent = `seed ${tl.seed ?? "–"}, ${hours(tl.hours)} of wall clock${tl.done ? "" : " (live)"}`;
  const states = [...new Set(tl.segments.map((s) => s.state))];
  el.relLegend.innerHTML = states.map((s) => `<span class="item"><span class="swatch" style="background:${
    stateColor(s)}"></span> ${esc(s)}</span>`).join("") + `<span class="item"><span class="swatch" style="background:${
    LOST_COLOR}"></span> lost work (recomputed)</span>` + Object.entries(CONSEQUENCE_COLORS).map(([c, col]) =>
    `<span class="item"><span class="swatch" style="background:${col}"></span> ${c}</span>`).join("");
}

function renderEvents(tl, upTo = Infinity) {
  const events = tl?.events ?? [];
  el.relEvents.tBodies[0].innerHTML = fmt.rows(events.map((e) => `<tr class="${e.t_hours > upTo ? "future" : ""}"
    data-category="${esc(e.category)}"><td class="num">${e.t_hours.toFixed(2)}</td><td>${esc(catLabel(e.category))}</td>
    <td><code>${esc(itemText(e))}</code></td><td>${esc(e.consequence)}</td>
    <td class="num">${e.lost_hours == null ? "–" : e.lost_hours.toFixed(2)}</td></tr>`));
  el.eventsNote.textContent = `${fmt.int(events.length)} in the replayed timeline`;
}

// --------------------------------------------------------------------------------------------------- replay
function stopReplay() {
  clearInterval(replayTimer);
  replayTimer = null;
  el.replayPlay.textContent = "▶ replay";
}

function replayAt(fraction) {
  const run = runs.get(selected), tl = run && timelineOf(run);
  if (!tl?.done) return;
  const h = fraction * tl.hours;
  drawTimeline.at?.(h);
  renderEvents(tl, h);
  const seg = tl.segments.find((s) => s.start_h <= h && h < s.end_h) ?? tl.segments.at(-1);
  const done = tl.events.filter((e) => e.t_hours <= h).length;
  el.replayAt.textContent = `hour ${h.toFixed(1)}: ${seg?.state ?? "–"}, ${done} failures so far`;
  el.replayAt.dataset.state = seg?.state ?? "";
  el.replayGpus.href = `/clusters/${encodeURIComponent(cluster.name)}/gpus/?color=failures&run=${run.id}`
    + `&t=${h.toFixed(2)}`;
}

el.replayTime.addEventListener("input", () => { stopReplay(); replayAt(el.replayTime.value / 1000); });
el.replayPlay.addEventListener("click", () => {
  if (replayTimer) { stopReplay(); return; }
  if (Number(el.replayTime.value) >= 1000) el.replayTime.value = 0;
  el.replayPlay.textContent = "❚❚ pause";
  replayTimer = setInterval(() => {
    const v = Math.min(1000, Number(el.replayTime.value) + 5);
    el.replayTime.value = v;
    replayAt(v / 1000);
    if (v >= 1000) stopReplay();
  }, 50);
});

// ------------------------------------------------------------------------------------------------- losses
function lossBars(byKey, label = (k) => k) {
  return Object.entries(byKey ?? {}).map(([k, v]) => ({ key: k, label: label(k), value: mean(v) }))
    .filter((b) => b.value > 0).sort((a, b) => b.value - a.value)
    .map((b, i) => ({ ...b, color: PALETTE[i % PALETTE.length] }));
}

/** Mean hours lost per cause and per phase over the run's seeds (summarize's lost_mean, seconds). */
function lossesOf(s) {
  const lost = s.distribution?.lost_mean ?? s.replay?.lost ?? {};
  const h = (by) => Object.fromEntries(Object.entries(by ?? {}).map(([k, v]) => [k, v / 3600]));
  return { cause: h(lost.by_cause), phase: h(lost.by_phase) };
}

function renderLosses(s) {
  const { cause, phase } = lossesOf(s);
  for (const [box, by, lab] of [[el.relCauses, cause, catLabel], [el.relPhases, phase, (k) => k]]) {
    const bars = lossBars(by, lab);
    box.dataset.bars = String(bars.length);
    const axis = (maxH) => { const f = fmt.durationAxis(maxH * 3600); return (h) => f(h * 3600); };   // one unit
    if (bars.length) charts.push(barChart(box, { bars, format: (h) => hours(h), tickFormat: axis, unit: "time lost" }));
    else box.innerHTML = '<p class="muted">no time lost yet</p>';
  }
}

/** The effective time of every seed as a histogram (bins of the range), with the mean and p5/p95 in the note. */
function renderSeeds(s) {
  const per = (s.per_seed ?? []).map((r) => r.effective_ratio).filter((x) => x != null);
  const box = el.relSeeds;
  box.dataset.seeds = String(per.length);
  if (per.length < 2) {
    box.innerHTML = `<p class="muted">${per.length ? "one seed: start a run with more seeds for a distribution"
      : "no seed finished yet"}</p>`;
    el.seedsNote.textContent = "";
    return;
  }
  const lo = Math.min(...per), hi = Math.max(...per), n = Math.min(12, Math.max(4, Math.ceil(Math.sqrt(per.length))));
  const width = (hi - lo) / n || 0.001, counts = new Array(n).fill(0);
  for (const x of per) counts[Math.min(n - 1, Math.floor((x - lo) / width))] += 1;
  const bars = counts.map((c, i) => ({ label: `${fmt.pct(lo + i * width, 1)}–${fmt.pct(lo + (i + 1) * width, 1)}`,
                                       value: c }));
  charts.push(barChart(box, { bars, format: (v) => fmt.int(v), label: "seeds by effective time", unit: "seeds" }));
  const d = s.distribution?.effective_ratio ?? {};
  el.seedsNote.textContent = `${per.length} seeds · mean ${fmt.pct(d.mean, 1)} · p5 ${fmt.pct(d.p5, 1)} · `
    + `p95 ${fmt.pct(d.p95, 1)}`;
}

/** The sweep: effective time against the checkpoint interval (mean, p5-p95 band), the simulated optimum and the
 *  Young/Daly interval as vertical lines. */
function renderSweep(s) {
  const sw = s.sweep;
  el.relSweepPanel.hidden = !sw;
  if (!sw) return;
  const pts = sw.rows.map((p) => ({ x: p.interval_s / 60, y: 100 * mean(p.effective_ratio),
                                      lo: 100 * (p.effective_ratio.p5 ?? mean(p.effective_ratio)),
                                      hi: 100 * (p.effective_ratio.p95 ?? mean(p.effective_ratio)) }));
  const ys = pts.flatMap((p) => [p.lo, p.hi]), y0 = Math.min(...ys), y1 = Math.max(...ys);
  const vline = (name, minutes, color, dash) => ({ name, color, dash, markers: false, ref: true,
                                                   points: [{ x: minutes, y: y0 }, { x: minutes, y: y1 }] });
  charts.push(lineChart(el.relSweep, {
    label: "effective time against the checkpoint interval", height: 260,
    series: [{ name: "simulated (mean, p5–p95)", points: pts, band: true },
             vline(`simulated optimum ${secs(sw.best_interval_s)}`, sw.best_interval_s / 60, "#3fb950", "-"),
             vline(`Young/Daly √(2·C·MTBF) ${secs(sw.young_daly_s)}`, sw.young_daly_s / 60, "#f5a524", "--")],
    x: { scale: "log", label: "checkpoint interval (minutes)", name: "interval",
         format: (v) => `${+v.toPrecision(3)}` },
    y: { scale: "linear", label: "effective training time (%)", format: fmt.num } }));
  el.relSweep.dataset.optimum = String(sw.best_interval_s);
  el.relSweep.dataset.youngDaly = String(sw.young_daly_s);
  el.sweepNote.textContent = `optimum ${secs(sw.best_interval_s)} simulated, ${secs(sw.young_daly_s)} by Young/Daly`
    + ` (checkpoint cost ${secs(sw.checkpoint_cost_s)}, durable after ${secs(sw.checkpoint_durable_s)}`
    + (sw.store_gap_s ? `, the store absorbs one every ${secs(sw.store_gap_s)}` : "")
    + `, MTBF ${secs(sw.mtbf_s)})`;
}

// ------------------------------------------------------------------------------------------------------ live
const parentOf = new Map();      // run id seen in a frame -> the failures run the page lists it under (null: none)
const unlisted = new Set();       // runs not listed yet that a frame named: the list was read again for them

/** The listed run a frame's run belongs to: itself, or the parent a fanned-out child was made by (asked once). */
async function ownerOf(id) {
  if (runs.has(id)) return id;
  if (!parentOf.has(id)) {
    parentOf.set(id, api(`/api/runs/?id__in=${id}`).then((page) => {
      const r = page.results?.[0];
      if (!r || r.kind !== "failures") return null;
      const p = r.parent?.id ?? r.parent ?? null;
      return p ?? r.id;
    }).catch(() => null));
  }
  return parentOf.get(id);
}

/** A frame of a failures run (or of a child of one): its timeline's state and failures so far, under the run the
 *  page lists; the run's segments are built from the successive states (each frame ends a seed or a stretch). */
function onFrame(frame) {
  const st = frame.sections.failure_state, ev = frame.sections.failure_events;
  if (!frame.runId || (!st && !ev)) {
    if (frame.final && frame.runId && runs.has(frame.runId)) load();
    return;
  }
  twin.reliabilityFrames = (twin.reliabilityFrames ?? 0) + 1;
  ownerOf(frame.runId).then((owner) => timeFrame(() => {
    if (owner == null) return;
    if (!runs.has(owner)) {                 // a run started elsewhere: read the list once for it
      if (!unlisted.has(owner)) { unlisted.add(owner); load(); }
      return;
    }
    const row = liveRows.get(owner) ?? { state: null, events: [], segments: [] };
    if (st) {
      const s = sectionRow("failure_state", st);
      if (!row.state || s.seed !== row.state.seed) row.segments = [];
      const last = row.segments.at(-1);
      if (last && last.state === s.state) last.end_h = s.t_hours;
      else row.segments.push({ state: s.state, start_h: last?.end_h ?? 0, end_h: s.t_hours });
      row.state = s;
    }
    if (ev) row.events = sectionRows("failure_events", ev);
    liveRows.set(owner, row);
    if (selected === owner) renderDetail();
    renderRuns();
  }));
}

// ------------------------------------------------------------------------------------------------------ form
function mountForm() {
  const form = info.form, box = el.failuresForm;
  if (!form) { box.innerHTML = '<p class="muted">No failures kind is registered on this server.</p>'; return; }
  const ex = info.examples ?? {};
  box.innerHTML = `${paramFieldsHtml(form.fields, form.main)}
    <p class="hint">inject: e.g. <code>gpu:${esc(ex.gpu ?? "<GPU name>")}@10h</code>${ex.switch
      ? `, <code>switch:${esc(ex.switch)}@20h</code>` : ""}${ex.link ? `, <code>link:${esc(ex.link)}@30h</code>` : ""}
      (the inventory is not changed)</p>
    <div class="form-foot"><button type="submit" class="primary">Start run</button>
      <span class="field-error" data-error-for="general"></span></div>`;
  if (box.elements.gpus) box.elements.gpus.max = cluster.gpus;
  for (const f of form.fields) {            // long text parameters (a list of failures, of rates): their own syntax
    const input = box.elements[f.name];
    if (input?.tagName === "TEXTAREA") input.placeholder = f.help;
  }
  if (!info.user.can_start) {
    lockForm(box, { authenticated: info.user.authenticated, next: location.pathname });
    return;
  }
  box.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const { params, errors } = readFields(box, form.fields);
    showErrors(box, errors);
    if (Object.keys(errors).length) { toast(errorText(errors)); return; }
    const submit = box.querySelector('button[type="submit"]');
    submit.disabled = true;
    try {
      const run = await api("/api/runs/", { method: "POST", body: { kind: form.kind, cluster: cluster.name, params } });
      showErrors(box, {});
      toast(`run #${run.id} started`, { kind: "info", ms: 2000 });
      runs.set(run.id, run);
      select(run.id);
    } catch (e) {
      if (e instanceof ApiError && e.status === 400) showErrors(box, fieldErrors(e.body));
      toast(`not started: ${e.message}`);
    } finally { submit.disabled = false; }
  });
}

// ------------------------------------------------------------------------------------------------------ start
mountForm();
live(`/ws/clusters/${encodeURIComponent(cluster.name)}/`, { query: { index: "0" }, onFrame });
await load();
const asked = Number(new URLSearchParams(location.search).get("run"));
if (asked && !runs.has(asked)) {
  const r = await api(`/api/runs/?id__in=${asked}`).catch(() => null);
  if (r?.results?.[0]) runs.set(asked, r.results[0]);
}
if (asked && runs.has(asked)) select(asked);
else if (runs.size) select(Math.max(...runs.keys()));
setInterval(() => { if ([...runs.values()].some((r) => ["queued", "running"].includes(r.status))) load(); }, 3000);
markReady();
window.twin.reliability = { runs, select, replayAt, liveRows };
