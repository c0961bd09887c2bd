// The Storage page: every storage server on one canvas coloured by its data rate against its NICs, the frontend
// fabric's heatmaps (the Fabric page's TierHeatmap on the frontend fabric), the checkpoint timeline of a run
// (aggregate rate against the storage's rated bandwidth, blocked vs durable), and the form that starts a checkpoint
// or a restore. Live: the cluster stream's storage sections (frames.js; twin/live/frames.py is the reference).
// Data: storage.json (twin/capabilities/storage/data.py), the frontend fabric.json (twin/web/fabric_data.py), the runs API.
import { applyStatus, buildModel, rowBlocks } from "./fabric-model.js";
import { fetchSnapshot, sectionCodeName } from "./frames.js";
import { TierHeatmap } from "./heatmap.js";
import { exportable } from "./exports.js";
import { mountKindForm, pageData } from "./run_form.js";
import { checkpointChart, phaseBar } from "./capabilities/storage.js";
import { publishedHtml } from "./published.js";
import { api, COLORS, cssPixel, esc, fmt, live, markReady, timeFrame, toast, twin, UTIL_GRADIENT, UTIL_PIXEL }
  from "./twin.js";

const root = document.getElementById("storage");
const $ = (id) => document.getElementById(id);
const CELL = 6, GAP = 1, RACK_GAP = 3, STORE_GAP = 18, LABEL_H = 14, HEATMAP_MAX_HEIGHT = 300, RUNS_SHOWN = 8;
const DOWN = cssPixel(COLORS.failed), NONE = cssPixel(COLORS.none);

const state = {
  doc: null, rate: null, direction: "write", phase: null, runId: null, cells: null, model: null, heatmaps: [],
  util: null, arrays: null, summary: null,
};

/** Server names as the inventory writes them (its rack's name, then `.s` and the two-digit slot): storage.json
 *  sends the racks' names only. */
function serverNames(doc) {
  const s = doc.servers;
  return Array.from(s.rack, (r, i) => `${doc.racks.name[r]}.s${String(s.slot[i]).padStart(2, "0")}`);
}

// --- server grid ------------------------------------------------------------------------------------------------

/** Cell positions: stores one under the other, each rack a column of its servers by slot, racks wrapping to the
 *  width. Returns {x, y (per server), width, height, labels}. */
function gridLayout(doc, width) {
  const S = doc.servers.count, x = new Int32Array(S), y = new Int32Array(S), labels = [];
  const byStore = doc.stores.map(() => new Map());      // store -> rack -> [servers]
  for (let i = 0; i < S; i++) {
    const racks = byStore[doc.servers.store[i]], r = doc.servers.rack[i];
    if (!racks.has(r)) racks.set(r, []);
    racks.get(r).push(i);
  }
  let top = 0;
  doc.stores.forEach((store, k) => {
    const racks = [...byStore[k].entries()].sort((a, b) => a[0] - b[0]);
    const tall = Math.max(1, ...racks.map(([, s]) => s.length));
    const perRow = Math.max(1, Math.floor((width + RACK_GAP) / (CELL + RACK_GAP)));
    labels.push({ text: `${store.name} · ${store.kind} · ${racks.length} racks`, y: top + 10 });
    top += LABEL_H;
    racks.forEach(([, servers], j) => {
      const col = j % perRow, row = Math.floor(j / perRow);
      servers.sort((a, b) => doc.servers.slot[a] - doc.servers.slot[b]).forEach((s, n) => {
        x[s] = col * (CELL + RACK_GAP);
        y[s] = top + row * (tall * (CELL + GAP) + RACK_GAP) + n * (CELL + GAP);
      });
    });
    top += Math.ceil(racks.length / perRow) * (tall * (CELL + GAP) + RACK_GAP) + STORE_GAP;
  });
  return { x, y, width, height: top, labels };
}

function layoutGrid() {
  const canvas = $("server-grid"), width = Math.max(200, $("server-grid-wrap").clientWidth);
  state.cells = gridLayout(state.doc, width);
  canvas.width = width;
  canvas.height = state.cells.height;
  canvas.dataset.cells = String(state.doc.servers.count);
}

/** Each server's load, 0..1 of its NICs' speed (null: no data). */
function loads() {
  const d = state.doc, out = new Float32Array(d.servers.count);
  if (!state.rate) return null;
  for (let i = 0; i < out.length; i++) {
    const nic = d.stores[d.servers.store[i]].nic_gbps / 8;         // GB/s
    out[i] = nic ? state.rate[i] / nic : 0;
  }
  return out;
}

function drawGrid() {
  const canvas = $("server-grid"), ctx = canvas.getContext("2d"), d = state.doc, c = state.cells;
  const img = ctx.createImageData(canvas.width, canvas.height), px = new Uint32Array(img.data.buffer);
  const load = loads();
  let busy = 0, down = 0, sum = 0;
  for (let i = 0; i < d.servers.count; i++) {
    let color = NONE;
    if (d.servers.status[i] !== 0) { color = DOWN; down++; } else if (load) {
      const u = Math.min(1, Math.max(0, load[i]));
      color = UTIL_PIXEL[Math.round(u * 255)];
      if (load[i] > 0) { busy++; sum += state.rate[i]; }
    }
    for (let dy = 0; dy < CELL; dy++) {
      const row = (c.y[i] + dy) * canvas.width + c.x[i];
      px.fill(color, row, row + CELL);
    }
  }
  ctx.putImageData(img, 0, 0);
  exportable(canvas, { name: "storage servers" });
  ctx.fillStyle = "#8b94a7";
  ctx.font = "11px system-ui, sans-serif";
  for (const l of c.labels) ctx.fillText(l.text, 0, l.y);
  $("server-summary").textContent = `${fmt.int(d.servers.count)} servers` + (down ? ` · ${fmt.int(down)} not active` : "")
    + (load ? ` · ${fmt.int(busy)} ${state.direction === "read" ? "reading" : "writing"}, ${fmt.GBps(sum)} in all` : "");
}

function serverAt(ev) {
  const canvas = $("server-grid"), r = canvas.getBoundingClientRect(), c = state.cells;
  const px = (ev.clientX - r.left) * (canvas.width / r.width), py = (ev.clientY - r.top) * (canvas.height / r.height);
  for (let i = 0; i < state.doc.servers.count; i++) {
    if (px >= c.x[i] && px < c.x[i] + CELL && py >= c.y[i] && py < c.y[i] + CELL) return i;
  }
  return -1;
}

function wireGrid() {
  const canvas = $("server-grid"), tip = $("server-tooltip"), d = state.doc;
  canvas.addEventListener("mousemove", (ev) => {
    const i = serverAt(ev);
    if (i < 0) { tip.hidden = true; return; }
    const store = d.stores[d.servers.store[i]], status = d.status_names[d.servers.status[i]];
    tip.innerHTML = `<b>${esc(d.servers.name[i])}</b><br>${esc(store.name)} · ${esc(status)} · SSDs
      ${d.servers.ssds_active[i]} of ${d.servers.ssds[i]} active` + (state.rate ? `<br>${state.direction}
      ${fmt.GBps(state.rate[i])} of ${fmt.GBps(store.nic_gbps / 8)} NIC` : "");
    tip.hidden = false;
    tip.style.left = `${ev.clientX + 12}px`;
    tip.style.top = `${ev.clientY + 12}px`;
  });
  canvas.addEventListener("mouseleave", () => { tip.hidden = true; });
  canvas.addEventListener("click", (ev) => {
    const i = serverAt(ev);
    if (i >= 0) location.href = `/inventory/storageserver/${d.servers.id[i]}/`;
  });
  $("server-legend").innerHTML = `<span>0 %</span><span class="ramp" style="background:${UTIL_GRADIENT}"></span>
    <span>100 % of its NICs</span><span><i class="swatch" style="background:${COLORS.failed}"></i>not active
    (server or rack)</span><span><i class="swatch" style="background:${COLORS.none}"></i>no data</span>`;
}

// --- frontend heatmaps -------------------------------------------------------------------------------------------

function buildHeatmaps(doc) {
  const m = state.model = buildModel(doc), tip = $("fabric-tooltip");
  $("fabric-legend").innerHTML = `<span>0 %</span><span class="ramp" style="background:${UTIL_GRADIENT}"></span>
    <span>100 %</span><span><i class="swatch" style="background:${COLORS.failed}"></i>not active</span>`;
  state.heatmaps = m.tiers.map((t) => {
    const panel = document.createElement("div");
    panel.className = "tier";
    panel.innerHTML = `<h3>${esc(t.name)} <span class="muted">${fmt.int(t.links)} links</span></h3><div></div>`;
    $("heatmaps").append(panel);
    const links = new Int32Array(t.links);
    for (let i = 0, k = 0; i < m.L; i++) if (m.tier[i] === t.code) links[k++] = i;
    return new TierHeatmap(panel.lastElementChild, {
      tier: t, blocks: rowBlocks(m, t.row_tier), cols: t.cols, links, rowOf: m.row, colOf: m.col,
      onHover: (i, ev) => {
        if (i < 0) { tip.hidden = true; return; }
        const u = state.util ? fmt.pct(state.util[i], 1) : "no data";
        tip.textContent = `${m.short(m.sw.name[m.b[i]])} link ${m.linkId[i]}: ${u}`;
        tip.hidden = false;
        tip.style.left = `${ev.clientX + 12}px`;
        tip.style.top = `${ev.clientY + 12}px`;
      },
      onClick: () => {},
    });
  });
  const width = $("heatmaps").clientWidth;
  for (const hm of state.heatmaps) { hm.layout(width, HEATMAP_MAX_HEIGHT); hm.mark(m.status, -1); }
}

function drawHeatmaps() {
  for (const hm of state.heatmaps) hm.draw(state.util, state.model.status, state.util != null);
}

// --- timeline ----------------------------------------------------------------------------------------------------

function drawTimeline(run, s) {
  $("timeline-run").textContent = `run #${run.id} · ${run.params_text ?? ""}`;
  $("phase-bar").innerHTML = phaseBar(s);
  $("timeline-note").textContent = checkpointChart($("timeline"), { ...s, rated: s.rated ?? state.doc.rated });
  $("published").innerHTML = publishedHtml(s.published);   // the published figures beside this run's, with the why
}

/** The stored arrays of a finished checkpoint: the grid replays its per-server rates at the chosen sample. */
async function loadArrays(run) {
  try {
    const res = await api(`/api/runs/${run.id}/results/?arrays=base64&names=server_rate`);
    const a = res.arrays.server_rate;
    if (!a) return;
    const raw = Uint8Array.from(atob(a.data), (c) => c.charCodeAt(0));
    const [T, V] = a.shape, view = new DataView(raw.buffer), halves = new Float32Array(T * V);
    for (let k = 0; k < T * V; k++) halves[k] = half(view.getUint16(2 * k, true));
    state.arrays = { T, V, rate: halves, times: res.summary.series.times };
    const scrub = $("timeline-scrub");
    const rate = res.summary.series.rate, peak = rate.indexOf(Math.max(...rate));   // the busiest sample first
    scrub.max = String(T - 1);
    scrub.value = String(Math.max(0, peak));
    $("scrub-label").hidden = false;
    showSample(Math.max(0, peak));
  } catch (e) { toast(`Checkpoint arrays: ${e.message}`); }
}

function half(bits) {
  const s = bits & 0x8000 ? -1 : 1, e = (bits >> 10) & 0x1f, m = bits & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  return e === 31 ? (m ? NaN : s * Infinity) : s * (1 + m / 1024) * 2 ** (e - 15);
}

function showSample(i) {
  const a = state.arrays;
  if (!a) return;
  state.rate = a.rate.subarray(i * a.V, (i + 1) * a.V);
  $("scrub-time").textContent = `${fmt.s(a.times[i])} – ${fmt.s(a.times[i + 1])}`;
  drawGrid();
}

// --- runs ----------------------------------------------------------------------------------------------------------

async function loadRuns(select = true) {
  let runs;
  try {
    runs = (await api(`/api/runs/?kind=checkpoint&cluster__name=${encodeURIComponent(root.dataset.cluster)}&limit=${RUNS_SHOWN}`)).results ?? [];
  } catch (e) { toast(`Checkpoint runs: ${e.message}`); return; }
  const h = (run, key) => run.headline?.find((x) => x.key === key)?.value;
  $("checkpoint-runs").innerHTML = runs.slice(0, RUNS_SHOWN).map((r) => `<tr data-run="${r.id}">
    <td><a href="/experiments/${r.id}/">#${r.id}</a></td><td>${esc(r.params_text ?? "")}</td>
    <td><span class="badge ${esc(r.status)}">${esc(r.status)}</span>${r.status === "running"
      ? ` ${Math.round(r.progress)} %` : ""}</td><td>${fmt.s(h(r, "blocked_seconds"))}</td>
    <td>${fmt.s(h(r, "durable_seconds"))}</td><td>${fmt.TBps(h(r, "peak_rate"))}</td></tr>`).join("")
    || `<tr><td colspan="6" class="muted">no checkpoint run on this cluster yet: start one below</td></tr>`;
  for (const tr of $("checkpoint-runs").querySelectorAll("tr[data-run]")) {
    tr.addEventListener("click", (ev) => {
      if (ev.target.closest("a")) return;
      const run = runs.find((r) => String(r.id) === tr.dataset.run);
      if (run?.status === "succeeded") showRun(run);
    });
  }
  const done = runs.find((r) => r.status === "succeeded");
  const running = runs.find((r) => r.status === "running" || r.status === "queued");
  if (running) renderIndicator(running.id, running.status, running.progress, state.phase);
  if (select && done) await showRun(done, !running);
}

async function showRun(run, takeArrays = true) {
  let full;
  try { full = await api(`/api/runs/${run.id}/`); } catch (e) { toast(`Run #${run.id}: ${e.message}`); return; }
  const s = full.summary;
  if (!s?.series) return;
  state.summary = s;
  state.direction = s.direction ?? "write";
  drawTimeline(full, s);
  for (const tr of $("checkpoint-runs").querySelectorAll("tr")) tr.classList.toggle("selected", tr.dataset.run === String(run.id));
  if (takeArrays) await loadArrays(full);
}

function renderIndicator(runId, status, progress, phase) {
  const el = $("storage-run");
  el.dataset.run = String(runId ?? "");
  el.dataset.phase = phase ?? "";
  el.innerHTML = runId ? `<a href="/experiments/${runId}/">run #${runId}</a> · <span class="badge ${esc(status)}">${
    esc(status)}</span> ${progress != null ? `${Math.round(progress)} %` : ""}${phase
    ? ` · checkpoint <b class="phase-name">${esc(phase)}</b>` : ""}` : "no checkpoint yet";
}

// --- live ----------------------------------------------------------------------------------------------------------

/** A frame of the cluster stream: the storage sections (when present) replace the grid's rates, the heatmaps'
 *  utilization and the phase. Returns whether it carried any. */
function takeFrame(frame, merged) {
  const rate = merged.server_write ?? merged.server_read ?? null;
  const phaseCode = merged.checkpoint_phase?.[0];
  if (rate == null && phaseCode == null && merged.frontend_util == null) return false;
  state.direction = merged.server_read && !merged.server_write ? "read" : "write";
  if (rate && rate.length === state.doc.servers.count) { state.rate = rate; state.arrays = null; $("scrub-label").hidden = true; }
  if (merged.frontend_util && state.model && merged.frontend_util.length === state.model.L) state.util = merged.frontend_util;
  state.phase = phaseCode != null ? sectionCodeName("checkpoint_phase", merged.checkpoint_phase) : state.phase;
  renderIndicator(frame.runId, frame.status ?? "running", frame.progress, state.phase);
  drawGrid();
  if (state.model) drawHeatmaps();
  return true;
}

// --- form ------------------------------------------------------------------------------------------------------------

function mountForm() {
  const f = pageData("checkpoint-form-data");
  mountKindForm($("checkpoint-form"), f, {
    cluster: root.dataset.cluster, canStart: f.can_start, authenticated: f.authenticated,
    onStarted: (run) => { renderIndicator(run.id, run.status, 0, null); loadRuns(false); },
  });
}

// --- start -----------------------------------------------------------------------------------------------------------

async function start() {
  let doc, fabric, snap;
  try {
    [doc, fabric, snap] = await Promise.all([
      api(root.dataset.dataUrl),
      root.dataset.fabricUrl ? api(root.dataset.fabricUrl) : null,
      fetchSnapshot(root.dataset.snapshotUrl).catch(() => null)]);
  } catch (e) {
    toast(`Storage data: ${e.message}`);
    $("storage-stores").textContent = `Could not load the storage: ${e.message}`;
    return;
  }
  const tData = performance.now();
  state.doc = doc;
  doc.servers.name = serverNames(doc);
  $("storage-stores").textContent = doc.stores.map((s) => `${s.name} (${s.kind}, ${s.status})`).join(" · ")
    || "this cluster has no storage";
  layoutGrid();
  wireGrid();
  const tGrid = performance.now();
  if (fabric) buildHeatmaps(fabric);
  const tHeat = performance.now();
  if (snap) takeFrame(snap, snap.sections);
  drawGrid();
  if (state.model) drawHeatmaps();
  const tDraw = performance.now();
  // where the first paint goes (bench/bench_ui.py prints it): data in, grid laid out, heatmaps built, all drawn
  markReady({ servers: doc.servers.count, links: state.model?.L ?? 0,
              storageTimings: { data: tData, grid: tGrid - tData, heatmaps: tHeat - tGrid, draw: tDraw - tHeat } });
  twin.storageGrid = {   // for the end-to-end tests: where a server's cell is (canvas pixels), the busiest server
    cell: (i) => ({ x: state.cells.x[i], y: state.cells.y[i] }),
    hot: () => (state.rate ? state.rate.indexOf(Math.max(...state.rate)) : -1),
  };
  mountForm();
  $("timeline-scrub").addEventListener("input", (ev) => showSample(Number(ev.target.value)));
  loadRuns(true);
  let resizeTimer = null;
  window.addEventListener("resize", () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => {
      layoutGrid(); drawGrid();
      if (state.model) {
        for (const hm of state.heatmaps) { hm.layout($("heatmaps").clientWidth, HEATMAP_MAX_HEIGHT); hm.mark(state.model.status, -1); }
        drawHeatmaps();
      }
    }, 150);
  });
  live(`/ws/clusters/${encodeURIComponent(root.dataset.cluster)}/`, {
    query: { index: "0" }, seq: snap?.seq ?? 0,
    onFrame(frame, merged) {
      timeFrame(() => takeFrame(frame, merged));
      if (frame.final) loadRuns(true);
    },
    onEvent(msg) {
      if (msg.type === "inventory") {
        api(root.dataset.dataUrl).then((d) => { state.doc = d; layoutGrid(); drawGrid(); }).catch(() => {});
      }
    },
  });
  if (state.model) applyStatus(state.model, fabric);
}

start();
