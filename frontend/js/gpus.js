// The GPU grid (/clusters/<name>/gpus/): every GPU of a cluster as one cell of a canvas, zones as labelled blocks,
// racks as small squares inside them (their hosts stacked top to bottom, each host's GPUs in rows), coloured by job,
// health or utilization. Drawn into one ImageData through a Uint32Array; hover and click find the GPU by arithmetic
// on the layout. State comes from the page data (twin/web/gpu_data.py), the cluster's live snapshot, then the
// cluster's live stream (docs/live.md), whose frames carry every run on the cluster.
import {
  COLORS, UTIL_GRADIENT, UTIL_PIXEL, api, cssPixel, esc, fmt, live, markReady, timeFrame, toast, twin, utilCss,
} from "./twin.js";
import { fetchSnapshot } from "./frames.js";

const GPU_IN_JOB = 1, GPU_UNUSABLE = 2;          // live gpu_state values (twin/runs/kinds.py); 0 is idle
const STATUS_POLL_MS = 15000;                    // how often the inventory statuses are re-read
const MODES = ["job", "health", "utilization"];
const LEGEND_RUNS = 4;                           // runs named in the legend, the largest first

// Jobs get distinct colours, none of them red (unusable) or grey (idle); a run keeps its colour while it runs.
const JOB_COLORS = ["#4aa3ff", "#3fb950", "#f5a524", "#bc8cff", "#39c5cf", "#ff7eb6", "#a3e635", "#ffd33d",
                    "#7c9cff", "#fb923c", "#2dd4bf", "#e879f9"];
const HEALTH = [  // categories of the health mode: the four inventory statuses, then usable-but-for-a-part
  { key: "active", color: "#2f6b4b" }, { key: "failed", color: COLORS.failed },
  { key: "drained", color: COLORS.drained }, { key: "maintenance", color: "#4aa3ff" },
  { key: "unusable", color: "#d55fde", label: "unusable (NIC, cable or leaf down)" },
];
const HEALTH_PX = Uint32Array.from(HEALTH, (h) => cssPixel(h.color));
const css = getComputedStyle(document.documentElement);
const THEME = Object.fromEntries(Object.entries({ bg: "--bg", zone: "--panel", text: "--text", muted: "--muted" })
  .map(([key, name]) => [key, css.getPropertyValue(name).trim()]));
const PX = { idle: cssPixel(COLORS.idle), unusable: cssPixel(COLORS.unusable), none: cssPixel(COLORS.none),
             bg: cssPixel(THEME.bg), zone: cssPixel(THEME.zone) };
const UTIL_BUCKETS = [[0, "< 1 %"], [0.01, "1–50 %"], [0.5, "50–90 %"], [0.9, "≥ 90 %"]];   // [from, label]

const canvas = document.getElementById("gpu-grid");
const ctx = canvas.getContext("2d");
const wrap = document.getElementById("gpu-grid-wrap");
const tooltip = document.getElementById("gpu-tooltip");
const hoverBox = document.getElementById("gpu-hover");
const modeSelect = document.getElementById("gpu-color-mode");
const legend = document.getElementById("gpu-legend");
const clusterName = canvas.dataset.cluster;

// ------------------------------------------------------------------------------------------------------ state
let D = null;                      // the page data (twin/web/gpu_data.py), plus dims and zoneGpus (see init)
let n = 0, nLinks = 0;             // GPUs, backend links
// inventory, from the page data and status.json
let status, reasons, hostStatus;   // per GPU: status code, unusable-reason bits; per host: status code
let blocked = null;                // per GPU: not usable by the inventory (status not active, or a part down)
// live, from the cluster stream
let runOf, liveUnusable;           // per GPU: the run it is in (0: none); a run's gpu_state said unusable
let util = new Float32Array(0);    // per backend link: the max over the runs that published one
const runs = new Map();            // run id -> {seen (by the cluster stream), final, status, progress, util, color,
                                   //             info (the run from the API)}
let clusterSeq = 0;                // the last cluster-stream frame applied (initial snapshot included)
let mismatchShown = false;
// drawing
let G = null;                      // geometry of the current layout (device pixels)
let gpuZone = null;                // per GPU: its zone (per-zone figures and redraw rectangles)
let img = null, buf = null;        // the canvas pixels, as ImageData and as packed 32-bit pixels
let cellOff = null;                // per GPU: the pixel offset of its cell's top-left corner (-1: not drawn)
let colors = null, drawn = null;   // per GPU: its colour now and as last written to the pixels
let counts = null;                 // the legend's and the zone labels' figures, from colorize()
let dirty = null;                  // per zone: the rectangle of the cells a draw changed
let labels = [], legendHtml = "";  // zone label texts and legend as last drawn
let hostAt = null, gpuAtHost = null;   // hit-testing tables (see init)
let hovered = -1;
const urlMode = new URLSearchParams(location.search).get("color");
let mode = MODES.includes(urlMode) ? urlMode : "job";

const short = (name) => (name.startsWith(`${clusterName}.`) ? name.slice(clusterName.length + 1) : name);
const gpuIndex = (i) => (D.gpus.index ? D.gpus.index[i] : i);
const gpuName = (i) => D.gpus.names[i] ?? `${D.hosts.name[D.gpus.host[i]]}.gpu${D.gpus.slot[i]}`;
const hostUrl = (h) => `/inventory/host/${D.hosts.id[h]}/`;

/** The inventory's statuses (page data or status.json): they replace the unusable marks of earlier frames. */
function setStatuses(s) {
  status = Uint8Array.from(s.status);
  liveUnusable?.fill(0);
  reasons = new Uint8Array(n);
  s.unusable.gpu.forEach((g, k) => { reasons[g] = s.unusable.reasons[k]; });
  blocked = Uint8Array.from(status, (v, i) => (v !== 0 || reasons[i] !== 0 ? 1 : 0));
  hostStatus = new Uint8Array(D.hosts.id.length);
  s.hosts_not_active.host.forEach((h, k) => { hostStatus[h] = s.hosts_not_active.status[k]; });
}

function init(data) {
  D = data;
  n = D.gpus.count;
  nLinks = D.links.count;
  runOf = new Uint32Array(n);
  liveUnusable = new Uint8Array(n);
  util = new Float32Array(nLinks);
  colors = new Uint32Array(n);
  setStatuses(D);
  const max = (a) => a.reduce((m, v) => (v > m ? v : m), -1);
  D.dims = { zones: D.zones.name.length, racks: max(D.racks.pos) + 1, hosts: max(D.hosts.pos) + 1,
             gpus: max(D.gpus.slot) + 1 };
  const { zones, racks, hosts, gpus } = D.dims;
  dirty = new Int32Array(4 * zones);
  gpuZone = new Uint16Array(n);
  D.zoneGpus = new Uint32Array(zones);
  for (let i = 0; i < n; i++) {
    const h = D.gpus.host[i];
    gpuZone[i] = h < 0 ? 0 : D.racks.zone[D.hosts.rack[h]];
    D.zoneGpus[gpuZone[i]] += 1;
  }
  // Lookup tables for hit-testing: (zone, rack position, host position) -> host; (host, slot) -> GPU.
  hostAt = new Int32Array(zones * racks * hosts).fill(-1);
  D.hosts.rack.forEach((r, h) => {
    if (r >= 0) hostAt[(D.racks.zone[r] * racks + D.racks.pos[r]) * hosts + D.hosts.pos[h]] = h;
  });
  gpuAtHost = new Int32Array(D.hosts.id.length * gpus).fill(-1);
  for (let i = 0; i < n; i++) if (D.gpus.host[i] >= 0) gpuAtHost[D.gpus.host[i] * gpus + D.gpus.slot[i]] = i;
  document.getElementById("gpu-summary").textContent = `${fmt.int(n)} GPUs · ${fmt.int(D.hosts.id.length)} hosts · `
    + `${fmt.int(D.racks.name.length)} racks · ${fmt.int(zones)} zones`;
}

// ----------------------------------------------------------------------------------------------------- layout
/** Choose the largest cell that shows the whole cluster in the space available (device pixels): a host is its
 *  GPUs in two rows (slot 0 top left), a rack its hosts stacked, a zone a grid of racks, the cluster a grid of
 *  zones. */
function computeLayout(availW, availH, dpr) {
  const { zones, racks, hosts, gpus } = D.dims;
  const u = Math.max(1, Math.round(dpr));
  const hostCols = gpus > 4 ? Math.ceil(gpus / 2) : gpus, hostRows = Math.ceil(gpus / hostCols);
  const g = { dpr, u, hostCols, hostRows, pad: 6 * u, zoneGap: 10 * u, label: Math.round(18 * dpr) };
  let best = null;
  for (let c = Math.round(16 * dpr); c >= Math.max(2, Math.round(2 * dpr)); c--) {
    // gaps grow with the level they separate: GPUs (a seam, once cells are big enough), hosts, racks, zones
    const seam = c >= 6 * u ? u : 0, fill = c - seam, hostGap = u + 2 * seam, rackGap = 3 * u + 2 * seam;
    const hostH = hostRows * c + hostGap, rackW = hostCols * c + rackGap, rackH = hosts * hostH - hostGap + rackGap;
    best = null;                                        // the lowest arrangement with this cell size
    for (let zc = 1; zc <= zones; zc++) {
      const room = Math.floor((availW - (zc - 1) * g.zoneGap) / zc) - 2 * g.pad + rackGap;
      let rc = Math.min(racks, Math.floor(room / rackW));
      if (rc < 1) break;
      const rr = Math.ceil(racks / rc);
      rc = Math.ceil(racks / rr);                       // balance the rows: no near-empty last row
      const zr = Math.ceil(zones / zc);
      const zoneW = rc * rackW - rackGap + 2 * g.pad, zoneH = g.label + rr * rackH - rackGap + 2 * g.pad;
      const height = zr * zoneH + (zr - 1) * g.zoneGap;
      if (!best || height < best.height) {
        best = { ...g, c, fill, hostGap, rackGap, hostH, rackW, rackH, rc, rr, zc, zr, zoneW, zoneH, height,
                 width: zc * zoneW + (zc - 1) * g.zoneGap };
      }
    }
    if (best && best.height <= availH) return best;
  }
  return best;                                          // the smallest cell: the page scrolls
}

/** Lay the grid out for the current size: canvas size, the zone blocks, each GPU's cell offset. */
function layout() {
  const dpr = window.devicePixelRatio || 1;
  const top = wrap.getBoundingClientRect().top + window.scrollY;
  const availW = Math.max(300, wrap.clientWidth) * dpr;
  const availH = Math.max(320, window.innerHeight - top - 16) * dpr;
  G = computeLayout(availW, availH, dpr);
  canvas.width = G.width;
  canvas.height = G.height;
  canvas.style.width = `${G.width / dpr}px`;
  canvas.style.height = `${G.height / dpr}px`;
  img = ctx.createImageData(G.width, G.height);
  buf = new Uint32Array(img.data.buffer);
  buf.fill(PX.bg);
  for (let z = 0; z < D.dims.zones; z++) {
    const [x0, y0] = zoneOrigin(z);
    for (let y = y0; y < y0 + G.zoneH; y++) buf.fill(PX.zone, y * G.width + x0, y * G.width + x0 + G.zoneW);
  }
  ctx.putImageData(img, 0, 0);
  drawn = new Uint32Array(n);                           // 0 is no colour (every pixel is opaque): all redrawn
  labels = [];
  cellOff = new Int32Array(n).fill(-1);
  let cells = 0;
  for (let i = 0; i < n; i++) {
    const h = D.gpus.host[i];
    if (h < 0) continue;
    const [x, y] = hostOrigin(h), s = D.gpus.slot[i];
    cellOff[i] = (y + Math.floor(s / G.hostCols) * G.c) * G.width + x + (s % G.hostCols) * G.c;
    cells += 1;
  }
  canvas.dataset.cells = String(cells);
}

const zoneOrigin = (z) => [(z % G.zc) * (G.zoneW + G.zoneGap), Math.floor(z / G.zc) * (G.zoneH + G.zoneGap)];

/** Top-left device pixel of a host's first GPU cell. */
function hostOrigin(h) {
  const r = D.hosts.rack[h], p = D.racks.pos[r];
  const [zx, zy] = zoneOrigin(D.racks.zone[r]);
  return [zx + G.pad + (p % G.rc) * G.rackW,
          zy + G.pad + G.label + Math.floor(p / G.rc) * G.rackH + D.hosts.pos[h] * G.hostH];
}

/** The GPU under device pixel (x, y), or -1: arithmetic on the layout, then two table lookups. */
function gpuAtPixel(x, y) {
  const zx = Math.floor(x / (G.zoneW + G.zoneGap)), zy = Math.floor(y / (G.zoneH + G.zoneGap));
  const lx = x - zx * (G.zoneW + G.zoneGap) - G.pad, ly = y - zy * (G.zoneH + G.zoneGap) - G.pad - G.label;
  const z = zy * G.zc + zx;
  if (zx >= G.zc || z >= D.dims.zones || lx < 0 || ly < 0) return -1;
  const col = Math.floor(lx / G.rackW), row = Math.floor(ly / G.rackH);
  const rx = lx - col * G.rackW, ry = ly - row * G.rackH, p = row * G.rc + col;
  if (col >= G.rc || p >= D.dims.racks || rx >= G.hostCols * G.c) return -1;
  const hp = Math.floor(ry / G.hostH), hy = ry - hp * G.hostH;
  if (hp >= D.dims.hosts || hy >= G.hostRows * G.c) return -1;
  const h = hostAt[(z * D.dims.racks + p) * D.dims.hosts + hp];
  return h < 0 ? -1 : gpuAtHost[h * D.dims.gpus + Math.floor(hy / G.c) * G.hostCols + Math.floor(rx / G.c)];
}

// ---------------------------------------------------------------------------------------------------- colours
/** Colour every GPU for the current mode into `colors`, counting each legend entry and a figure per zone. */
function colorize() {
  const perZone = new Float64Array(D.dims.zones);
  if (mode === "job") {
    const byRun = new Map();
    let idle = 0, unusable = 0, lastRun = 0, lastColor = 0, lastCount = null;
    for (let i = 0; i < n; i++) {
      const r = runOf[i];
      if (blocked[i] | liveUnusable[i]) { colors[i] = PX.unusable; unusable += 1; continue; }
      if (r === 0) { colors[i] = PX.idle; idle += 1; continue; }
      if (r !== lastRun) {
        lastRun = r; lastColor = cssPixel(runColor(r));
        lastCount = byRun.get(r) ?? byRun.set(r, { n: 0 }).get(r);
      }
      colors[i] = lastColor; lastCount.n += 1; perZone[gpuZone[i]] += 1;
    }
    counts = { byRun, idle, unusable, perZone };
  } else if (mode === "health") {
    const cat = new Uint32Array(HEALTH.length);
    for (let i = 0; i < n; i++) {
      const k = status[i] !== 0 ? status[i] : (reasons[i] | liveUnusable[i]) !== 0 ? 4 : 0;
      colors[i] = HEALTH_PX[k]; cat[k] += 1;
      if (k !== 0) perZone[gpuZone[i]] += 1;
    }
    counts = { cat, perZone };
  } else {
    const buckets = new Uint32Array(UTIL_BUCKETS.length), link = D.gpus.link;
    const [, from1, from2, from3] = UTIL_BUCKETS.map(([from]) => from);
    let none = 0, sum = 0;
    for (let i = 0; i < n; i++) {
      const l = link[i];
      if (l < 0) { colors[i] = PX.none; none += 1; continue; }
      const u = util[l];
      colors[i] = UTIL_PIXEL[Math.min(255, Math.max(0, Math.round(u * 255)))];
      buckets[u < from1 ? 0 : u < from2 ? 1 : u < from3 ? 2 : 3] += 1;
      sum += u; perZone[gpuZone[i]] += u;
    }
    counts = { buckets, none, mean: sum / Math.max(1, n - none), perZone };
  }
}

function runColor(r) {
  const run = runs.get(r);
  if (run.color == null) {
    const used = new Set([...runs.values()].filter((x) => !x.final && x.color != null).map((x) => x.color));
    run.color = JOB_COLORS.findIndex((_, k) => !used.has(k));
    if (run.color < 0) run.color = r % JOB_COLORS.length;
  }
  return JOB_COLORS[run.color];
}

function zoneFigure(z) {
  const v = counts.perZone[z], total = D.zoneGpus[z];
  if (mode === "job") return `${fmt.int(v)} in jobs`;
  if (mode === "health") return v ? `${fmt.int(v)} not usable` : "all usable";
  return `mean ${fmt.pct(v / Math.max(1, total))}`;
}

// ------------------------------------------------------------------------------------------------------- draw
/** Colour the GPUs, then write only the cells whose colour changed since the last draw and put back, per zone,
 *  only the rectangle around them (never over the zone's label): a frame that moves a few GPUs costs little more
 *  than the colouring loop. */
function draw() {
  colorize();
  const c = G.fill, W = G.width, box = dirty.fill(-1);   // per zone: x0, y0, x1, y1 of the changed cells
  for (let i = 0; i < n; i++) {
    const col = colors[i], o = cellOff[i];
    if (col === drawn[i] || o < 0) continue;
    drawn[i] = col;
    for (let r = 0, row = o; r < c; r++, row += W) for (let k = 0; k < c; k++) buf[row + k] = col;
    const x = o % W, y = (o - x) / W, b = 4 * gpuZone[i];
    if (box[b] < 0) { box[b] = box[b + 2] = x; box[b + 1] = box[b + 3] = y; continue; }
    if (x < box[b]) box[b] = x; else if (x > box[b + 2]) box[b + 2] = x;
    if (y < box[b + 1]) box[b + 1] = y; else if (y > box[b + 3]) box[b + 3] = y;
  }
  for (let b = 0; b < box.length; b += 4) {
    if (box[b] < 0) continue;
    ctx.putImageData(img, 0, 0, box[b], box[b + 1], box[b + 2] + c - box[b], box[b + 3] + c - box[b + 1]);
  }
  drawLabels();
  canvas.dataset.mode = mode;
  renderLegend();
  if (hovered >= 0) showTooltip(hovered);
}

/** Each zone's label: its name and figures, redrawn when the text changed. */
function drawLabels() {
  ctx.font = `${Math.round(12 * G.dpr)}px system-ui, sans-serif`;
  ctx.textBaseline = "middle";
  for (let z = 0; z < D.dims.zones; z++) {
    const name = short(D.zones.name[z]), figure = `${fmt.int(D.zoneGpus[z])} GPUs · ${zoneFigure(z)}`;
    if (labels[z] === figure) continue;
    labels[z] = figure;
    const [x, y] = zoneOrigin(z), top = y + G.pad, mid = top + G.label / 2 - G.dpr;
    ctx.fillStyle = THEME.zone;
    ctx.fillRect(x, top, G.zoneW, G.label);
    ctx.fillStyle = THEME.text;
    ctx.fillText(name, x + G.pad, mid);
    ctx.fillStyle = THEME.muted;
    ctx.fillText(figure, x + G.pad + ctx.measureText(`${name}  `).width, mid,
                 G.zoneW - 3 * G.pad - ctx.measureText(name).width);
  }
}

function item(color, label, count, extra = "") {
  return `<span class="item${count === 0 ? " zero" : ""}"${extra}><span class="swatch" style="background:${color}">`
    + `</span> ${esc(label)} <b>${fmt.int(count)}</b></span>`;
}

function runLabel(r) {
  const run = runs.get(r), info = run?.info;
  const what = info ? `${info.kind}${info.params?.gpus ? ` · ${fmt.int(info.params.gpus)} GPUs` : ""}` : "";
  const state = run?.final ? run.status : run?.status === "running" ? `running ${Math.round(run.progress ?? 0)} %`
    : run?.status ?? "";
  return `run #${r}${what ? ` ${what}` : ""}${state ? ` (${state})` : ""}`;
}

function renderLegend() {
  let html = "";
  if (mode === "job") {
    // the legend stays one line (the grid must not move under the pointer): the largest jobs, then the rest
    const byRun = [...counts.byRun].sort((a, b) => b[1].n - a[1].n);
    const named = byRun.slice(0, LEGEND_RUNS).sort((a, b) => a[0] - b[0]);   // in run order, so items do not swap
    for (const [r, c] of named) html += item(runColor(r), runLabel(r), c.n, ` data-run="${r}"`);
    if (byRun.length > LEGEND_RUNS) {
      const rest = byRun.slice(LEGEND_RUNS), gpus = rest.reduce((m, [, c]) => m + c.n, 0);
      html += `<span class="item">${rest.length} more runs <b>${fmt.int(gpus)}</b></span>`;
    }
    if (!byRun.length) html += `<span class="muted">no job on the cluster</span>`;
    html += item(COLORS.idle, "idle", counts.idle) + item(COLORS.unusable, "unusable", counts.unusable);
  } else if (mode === "health") {
    HEALTH.forEach((h, k) => { html += item(h.color, h.label ?? h.key, counts.cat[k], ` data-health="${h.key}"`); });
  } else {
    html += `<span class="item"><span class="util-scale" style="background:${UTIL_GRADIENT}">`
      + `</span> NIC link utilization 0–100 %</span>`;
    UTIL_BUCKETS.forEach(([from, label], k) => { html += item(utilCss(from), label, counts.buckets[k]); });
    if (counts.none) html += item(COLORS.none, "no NIC cable", counts.none);
    html += `<span class="item">mean <b>${fmt.pct(counts.mean, 1)}</b></span>`;
    const src = [...runs].filter(([, run]) => run.util).map(([id]) => runLabel(id));
    const from = src.length ? `from ${src.join(", ")}` : "no run has published yet";
    html += `<span class="item muted source" title="${esc(from)}">${esc(from)}</span>`;
  }
  if (html !== legendHtml) legend.innerHTML = legendHtml = html;
}

// ------------------------------------------------------------------------------------------------------- live
function runEntry(r) {
  let run = runs.get(r);
  if (!run) {
    run = { seen: false, final: false, status: null, progress: null, util: null, color: null, info: null };
    runs.set(r, run);
    // a list query, not /api/runs/<id>/: a run deleted since it published is an empty list, not a failed request
    api(`/api/runs/?id__in=${r}`).then((page) => {
      run.info = page.results?.[0] ?? null;
      if (run.info && mode !== "health") renderLegend();
    }).catch(() => { /* the label stays "run #<id>" */ });
  }
  return run;
}

/** Apply one frame of run f.runId to the GPU and link state; false when it is stale or of no run. A GPU whose
 *  state is "in job" goes to the run; a GPU the run had and no longer has is freed; the final frame frees them all.
 *  "Unusable" states mark GPUs only from frames that arrive after the last inventory read (`markUnusable`): a
 *  run's GPU states are the inventory as it was when the run started, and the inventory read is fresher than a
 *  snapshot. A frame of the run's own stream (`runStream`: its snapshot at load) counts only while the cluster
 *  stream has not spoken for that run (its sequence numbers are another stream's). */
function applyFrame(f, { runStream = false, markUnusable = !runStream } = {}) {
  const r = f.runId;
  if (!r) return false;
  if (!runStream) {
    if (f.seq <= clusterSeq) return false;              // already applied (a resync of the same snapshot) or stale
    clusterSeq = f.seq;
  }
  const run = runEntry(r);
  if (runStream ? run.seen : run.final && !f.final) return false;
  if (!runStream) run.seen = true;
  if (f.status) run.status = f.status;
  if (f.progress != null) run.progress = f.progress;
  const st = f.sections.gpu_state, lu = f.sections.link_util;
  if ((st && st.length !== n) || (lu && lu.length !== nLinks)) {
    if (!mismatchShown) toast(`live frames do not match this page (${fmt.int(n)} GPUs, ${fmt.int(nLinks)} links): `
                              + "the cluster was rebuilt, reload the page");
    mismatchShown = true;
    return false;
  }
  if (st) {
    for (let i = 0; i < n; i++) {
      const s = st[i];
      if (s === GPU_IN_JOB) runOf[i] = r;
      else if (runOf[i] === r) runOf[i] = 0;
      if (markUnusable) liveUnusable[i] = s === GPU_UNUSABLE ? 1 : 0;
    }
  }
  if (lu) {
    // a new run's utilization replaces the last values of finished runs; running runs combine (max per link)
    if (!run.final) for (const other of runs.values()) if (other.final) other.util = null;
    run.util = lu;
  }
  if (f.final) {
    run.final = true;
    for (let i = 0; i < n; i++) if (runOf[i] === r) runOf[i] = 0;
  }
  if (lu || f.final) combineUtil();
  return true;
}

const hasUtil = () => [...runs.values()].some((run) => run.util);

function combineUtil() {
  util.fill(0);
  for (const run of runs.values()) {
    const u = run.util;
    if (u) for (let l = 0; l < nLinks; l++) if (u[l] > util[l]) util[l] = u[l];
  }
}

/** Runs that were already running when the page opened: their own last frames (the cluster snapshot holds only
 *  the last run's). Applied only where the cluster stream has not spoken for that run yet. */
async function loadRunningRuns() {
  const list = await api(`/api/runs/?cluster__name=${encodeURIComponent(clusterName)}&status=running&limit=100`);
  for (const info of list.results ?? []) {
    runEntry(info.id).info = info;
    const f = await fetchSnapshot(`/api/live/runs/${info.id}/snapshot/`).catch(() => null);
    if (f && applyFrame(f, { runStream: true })) draw();
  }
}

async function pollStatuses() {
  if (document.hidden) return;
  try {
    setStatuses(await api(canvas.dataset.statusUrl));
    draw();
    pollStatuses.failed = false;
  } catch (e) {
    if (!pollStatuses.failed) toast(`GPU statuses: ${e.message}`);
    pollStatuses.failed = true;
  }
}

// ------------------------------------------------------------------------------------------------ interaction
function showTooltip(i) {
  const h = D.gpus.host[i], r = D.hosts.rack[h], z = D.racks.zone[r];
  const st = D.status_names[status[i]];
  const down = D.reason_names.filter((name, k) => reasons[i] & (1 << k) && name !== "no cable");
  const why = [down.length ? `${down.join(", ")} down` : "",
               reasons[i] & (1 << D.reason_names.indexOf("no cable")) ? "no NIC cable" : "",
               liveUnusable[i] && !reasons[i] && st === "active" ? "so says the last run" : ""].filter(Boolean);
  const hostSt = D.status_names[hostStatus[h]];
  const hs = hostStatus[h] ? ` <span class="badge ${hostSt}">host ${hostSt}</span>` : "";
  const l = D.gpus.link[i];
  tooltip.innerHTML = `<div class="tt-title">GPU ${fmt.int(gpuIndex(i))} `
    + `<span class="muted">slot ${D.gpus.slot[i]}</span></div>`
    + `<code>${esc(gpuName(i))}</code><table>`
    + `<tr><th>host</th><td>${esc(short(D.hosts.name[h]))}${hs}</td></tr>`
    + `<tr><th>rack</th><td>${esc(short(D.racks.name[r]))}</td></tr>`
    + `<tr><th>zone</th><td>${esc(short(D.zones.name[z]))}</td></tr>`
    + `<tr><th>status</th><td><span class="badge ${st}">${st}</span>`
    + `${why.length ? ` <span class="bad">unusable: ${esc(why.join("; "))}</span>` : ""}</td></tr>`
    + `<tr><th>job</th><td>${runOf[i] ? esc(runLabel(runOf[i])) : '<span class="muted">idle</span>'}</td></tr>`
    + `<tr><th>NIC link</th><td>${l < 0 ? '<span class="muted">no cable</span>'
      : hasUtil() ? `${fmt.pct(util[l], 1)} utilization` : '<span class="muted">no utilization published yet</span>'}`
    + "</td></tr>"
    + `</table><div class="muted">click: open the host</div>`;
}

function placeTooltip(ev) {
  const pad = 14, w = tooltip.offsetWidth, h = tooltip.offsetHeight;
  const x = ev.clientX + pad + w > window.innerWidth ? ev.clientX - pad - w : ev.clientX + pad;
  const y = ev.clientY + pad + h > window.innerHeight ? ev.clientY - pad - h : ev.clientY + pad;
  tooltip.style.left = `${Math.max(0, x)}px`;
  tooltip.style.top = `${Math.max(0, y)}px`;
}

/** The GPU under a mouse event, or -1. */
function gpuAtEvent(ev) {
  const rect = canvas.getBoundingClientRect();
  return gpuAtPixel(Math.floor((ev.clientX - rect.left) * G.dpr), Math.floor((ev.clientY - rect.top) * G.dpr));
}

function hover(ev) {
  const i = gpuAtEvent(ev);
  if (i !== hovered) {
    hovered = i;
    canvas.style.cursor = i >= 0 ? "pointer" : "default";
    if (i >= 0) {
      const [x, y] = hostOrigin(D.gpus.host[i]);
      Object.assign(hoverBox.style, { left: `${x / G.dpr - 2}px`, top: `${y / G.dpr - 2}px`,
                                      width: `${(G.hostCols * G.c - G.c + G.fill) / G.dpr + 4}px`,
                                      height: `${(G.hostRows * G.c - G.c + G.fill) / G.dpr + 4}px` });
      showTooltip(i);
    }
    tooltip.hidden = hoverBox.hidden = i < 0;
  }
  if (i >= 0) placeTooltip(ev);
}

function leave() { hovered = -1; tooltip.hidden = hoverBox.hidden = true; }

canvas.addEventListener("mousemove", hover);
canvas.addEventListener("mouseleave", leave);
canvas.addEventListener("click", (ev) => {
  const i = gpuAtEvent(ev);
  if (i < 0) return;
  const url = hostUrl(D.gpus.host[i]);
  if (ev.ctrlKey || ev.metaKey) window.open(url, "_blank"); else location.href = url;
});
modeSelect.value = mode;
modeSelect.addEventListener("change", () => {
  mode = modeSelect.value;
  const q = new URLSearchParams(location.search);
  q.set("color", mode);
  history.replaceState(null, "", `${location.pathname}?${q}`);
  if (D) draw();
});

// ------------------------------------------------------------------------------------------------------ start
async function start() {
  const [data, snap] = await Promise.all([   // both preloaded by the template
    api(canvas.dataset.dataUrl),
    fetchSnapshot(canvas.dataset.snapshotUrl).catch((e) => { toast(`live snapshot: ${e.message}`); return null; }),
  ]);
  init(data);
  if (!n) {
    wrap.insertAdjacentHTML("afterbegin", '<p class="muted">This cluster has no GPU.</p>');
    markReady({ cells: 0 });
    return;
  }
  if (snap) applyFrame(snap, { markUnusable: false });
  layout();
  draw();
  markReady({ cells: Number(canvas.dataset.cells) });
  twin.gpuGrid = {   // for the end-to-end tests: where a GPU's cell is (CSS pixels in the canvas), the mode, runs
    get mode() { return mode; },
    cellCenter(i) {
      const o = cellOff[i];
      return o < 0 ? null : { x: ((o % G.width) + G.fill / 2) / G.dpr,
                                  y: (Math.floor(o / G.width) + G.fill / 2) / G.dpr };
    },
    runOf: (i) => runOf[i],
  };
  live(`/ws/clusters/${encodeURIComponent(clusterName)}/`, {
    query: { index: "0" }, seq: snap?.seq ?? 0,        // the snapshot just applied: no second fetch
    onMeta: (meta) => { if (meta.seq < clusterSeq) clusterSeq = 0; },   // the stream started over (Redis reset)
    onFrame: (f) => timeFrame(() => { if (applyFrame(f)) draw(); }),
  });
  loadRunningRuns().catch((e) => toast(`running runs: ${e.message}`));
  setInterval(pollStatuses, STATUS_POLL_MS);
  document.addEventListener("visibilitychange", pollStatuses);
  let pending = false;
  window.addEventListener("resize", () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => { pending = false; layout(); draw(); leave(); });
  });
}

start().catch((e) => toast(`GPU grid: ${e.message}`));
