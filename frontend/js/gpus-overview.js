// The GPU page's zone overview (/clusters/<name>/gpus/?view=zones, where clusters above
// gpu_data.OVERVIEW_ABOVE_GPUS open): one square per rack, zones as labelled blocks, each rack coloured by its value
// in the colour mode (its `overview`, registry.js: e.g. the share of its GPUs in the last run or not usable, the mean
// NIC-link utilization; a capability's mode declares its own). The figures come from gpus/zones.json
// (twin/web/gpu_data.py overview_data), re-read when the cluster's summary stream (frames without per-item sections, docs/live.md) says a run published
// and when the inventory changes. A click on a rack zooms into its zone: the GPU grid of that zone alone; a cluster
// whose spec groups zones into buildings gets a link per building (?building=<n>: the grid of its zones).
import { COLORS, UTIL_GRADIENT, UTIL_PIXEL, api, cssPixel, esc, fmt, live, markReady, toast, twin } from "./twin.js";
import { colourMode, colourModes } from "./registry.js";

const REFRESH_MS = 1000;                          // at most one zones.json read per second while frames arrive
const css = getComputedStyle(document.documentElement);
const THEME = { bg: css.getPropertyValue("--bg").trim(), zone: css.getPropertyValue("--panel").trim(),
                text: css.getPropertyValue("--text").trim(), muted: css.getPropertyValue("--muted").trim() };
const NONE = cssPixel(COLORS.none);

/** Per colour mode (registry.js): its `overview`, the rack's value 0..1 (`value(racks, k)`, null: no data) and the
 *  legend's words; a mode without one draws no data here (zoom into a zone for it). */
function overviewOf(mode) {
  const m = colourMode(mode);
  return m?.overview ?? { label: `${m?.label ?? mode} (zoom into a zone): no data per rack`, value: () => null };
}

/** The largest rack square that shows every zone in the space available (device pixels). */
function overviewLayout(zones, racksPerZone, availW, availH, dpr) {
  const u = Math.max(1, Math.round(dpr)), pad = 4 * u, gap = 8 * u, label = Math.round(16 * dpr);
  let best = null;
  for (let c = Math.round(14 * dpr); c >= 2 * u; c--) {
    best = null;
    for (let zc = 1; zc <= zones; zc++) {
      const zoneW = Math.floor((availW - (zc - 1) * gap) / zc), rc = Math.floor((zoneW - 2 * pad) / c);
      if (rc < 1) break;
      const rr = Math.ceil(racksPerZone / rc), zr = Math.ceil(zones / zc);
      const zoneH = label + rr * c + 2 * pad, height = zr * zoneH + (zr - 1) * gap;
      if (!best || height < best.height) best = { c, u, pad, gap, label, rc, zc, zoneW, zoneH, height, width: availW };
    }
    if (best && best.height <= availH) return best;
  }
  return best;
}

export async function startOverview(el, mode, onModeChange) {
  const { canvas, wrap, tooltip, legend } = el, ctx = canvas.getContext("2d");
  const url = canvas.dataset.zonesUrl, clusterName = canvas.dataset.cluster;
  let doc = await api(url), G = null, hovered = -1;
  const dims = () => {
    const perZone = new Int32Array(doc.zones.name.length);
    for (const z of doc.racks.zone) perZone[z] += 1;
    return { zones: perZone.length, racks: Math.max(1, ...perZone) };
  };

  function layout() {
    const dpr = window.devicePixelRatio || 1, d = dims();
    const top = wrap.getBoundingClientRect().top + window.scrollY;
    G = overviewLayout(d.zones, d.racks, Math.max(300, wrap.clientWidth) * dpr,
                       Math.max(320, window.innerHeight - top - 16) * dpr, dpr);
    G.dpr = dpr;
    canvas.width = G.width; canvas.height = G.height;
    canvas.style.width = `${G.width / dpr}px`; canvas.style.height = `${G.height / dpr}px`;
  }
  const zoneOrigin = (z) => [(z % G.zc) * (G.zoneW + G.gap), Math.floor(z / G.zc) * (G.zoneH + G.gap)];
  const rackOrigin = (k) => {
    const [x, y] = zoneOrigin(doc.racks.zone[k]), p = doc.racks.pos[k];
    return [x + G.pad + (p % G.rc) * G.c, y + G.label + G.pad + Math.floor(p / G.rc) * G.c];
  };

  function draw() {
    const m = overviewOf(mode), R = doc.racks, n = R.zone.length, Z = doc.zones.name.length;
    const img = ctx.createImageData(G.width, G.height), buf = new Uint32Array(img.data.buffer);
    buf.fill(cssPixel(THEME.bg));
    const zonePx = cssPixel(THEME.zone), zoneSum = new Float64Array(Z), zoneN = new Float64Array(Z);
    for (let z = 0; z < Z; z++) {
      const [x0, y0] = zoneOrigin(z);
      const y1 = Math.min(G.height, y0 + G.zoneH);
      for (let y = y0; y < y1; y++) buf.fill(zonePx, y * G.width + x0, y * G.width + x0 + G.zoneW);
    }
    const fill = G.c > 3 * G.u ? G.c - G.u : G.c;
    let withData = 0;
    for (let k = 0; k < n; k++) {
      const v = m.value(R, k), [x, y] = rackOrigin(k);
      const px = v == null ? NONE : UTIL_PIXEL[Math.min(255, Math.max(0, Math.round(255 * v)))];
      if (v != null) { zoneSum[R.zone[k]] += v; zoneN[R.zone[k]] += 1; withData += 1; }
      for (let r = 0; r < fill; r++) buf.fill(px, (y + r) * G.width + x, (y + r) * G.width + x + fill);
    }
    ctx.putImageData(img, 0, 0);
    ctx.font = `${Math.round(11 * G.dpr)}px system-ui, sans-serif`;
    ctx.textBaseline = "middle";
    const several = doc.zones.building.some((b) => b !== doc.zones.building[0]);
    for (let z = 0; z < Z; z++) {
      const [x, y] = zoneOrigin(z), name = `${several ? `b${doc.zones.building[z]} ` : ""}${short(doc.zones.name[z])}`;
      const figure = zoneN[z] ? ` ${fmt.pct(zoneSum[z] / zoneN[z])}` : "";
      ctx.fillStyle = THEME.text;
      ctx.fillText(name, x + G.pad, y + G.label / 2 + G.u, G.zoneW - 2 * G.pad);
      ctx.fillStyle = THEME.muted;
      const w = ctx.measureText(`${name} `).width;
      if (w < G.zoneW - 3 * G.pad) ctx.fillText(figure, x + G.pad + w, y + G.label / 2 + G.u, G.zoneW - 2 * G.pad - w);
    }
    const run = doc.run ? `last run #${doc.run.id} (${doc.run.status} ${fmt.int(doc.run.progress)} %)` : "no run yet";
    legend.innerHTML = `<span class="item"><span class="util-scale" style="background:${UTIL_GRADIENT}"></span>
      ${esc(m.label)} 0–100 %</span><span class="item"><span class="swatch" style="background:${COLORS.none}">
      </span> no data</span><span class="item muted source">${esc(run)}</span>`;
    canvas.dataset.mode = mode;
    canvas.dataset.cells = String(n);
    canvas.dataset.withData = String(withData);
  }

  const short = (name) => (name.startsWith(`${clusterName}.`) ? name.slice(clusterName.length + 1) : name);

  /** The rack under device pixel (x, y), or -1. */
  function rackAt(x, y) {
    const zx = Math.floor(x / (G.zoneW + G.gap)), zy = Math.floor(y / (G.zoneH + G.gap)), z = zy * G.zc + zx;
    if (zx >= G.zc || z >= doc.zones.name.length) return -1;
    const [x0, y0] = zoneOrigin(z);
    const col = Math.floor((x - x0 - G.pad) / G.c), row = Math.floor((y - y0 - G.label - G.pad) / G.c);
    if (col < 0 || row < 0 || col >= G.rc) return -1;
    const pos = row * G.rc + col, R = doc.racks;
    for (let k = 0; k < R.zone.length; k++) if (R.zone[k] === z && R.pos[k] === pos) return k;
    return -1;
  }
  const rackAtEvent = (ev) => {
    const r = canvas.getBoundingClientRect();
    return rackAt(Math.floor((ev.clientX - r.left) * G.dpr), Math.floor((ev.clientY - r.top) * G.dpr));
  };
  const zoneUrl = (k) => `?zone=${encodeURIComponent(doc.zones.name[doc.racks.zone[k]])}`
    + `&color=${encodeURIComponent(mode)}`;

  function showTooltip(k, ev) {
    const R = doc.racks, figure = (arr, f = (v) => fmt.int(v)) => (arr ? f(arr[k]) : "–");
    tooltip.innerHTML = `<div class="tt-title">rack ${R.pos[k]} of zone ${esc(short(doc.zones.name[R.zone[k]]))}</div>
      <table><tr><th>GPUs</th><td>${fmt.int(R.gpus[k])}</td></tr>
      <tr><th>not usable</th><td>${figure(R.not_usable)}</td></tr>
      <tr><th>in the last run</th><td>${figure(R.in_run)}</td></tr>
${colourModes().filter((m) => m.overview?.tooltip).map((m) => `
      <tr><th>${esc(m.overview.tooltip)}</th><td>${((v) => (v == null ? "–" : fmt.pct(v, 0)))(m.overview.value(R, k))}</td></tr>`).join("")}
      <tr><th>NIC links</th><td>${figure(R.util, (v) => `${fmt.pct(v, 1)} mean utilization`)}</td></tr></table>
      <div class="muted">click: zoom into the zone, down to its GPUs</div>`;
    tooltip.hidden = false;
    tooltip.style.left = `${Math.min(ev.clientX + 14, window.innerWidth - tooltip.offsetWidth - 8)}px`;
    tooltip.style.top = `${ev.clientY + 14}px`;
  }

  const buildings = [...new Set(doc.zones.building)].sort((a, b) => a - b), nav = el.buildings;
  if (nav && buildings.length > 1) {
    nav.innerHTML = "buildings: " + buildings.map((b) => `<a href="?building=${b}&color=${encodeURIComponent(mode)}"`
      + ` data-building="${b}">${b}</a>`).join(" ");
    nav.hidden = false;
  }
  layout();
  draw();
  markReady({ cells: doc.racks.zone.length });
  twin.gpuOverview = {
    get mode() { return mode; },
    zones: () => doc.zones.name.slice(),
    rackCenter: (k) => { const [x, y] = rackOrigin(k); return { x: (x + G.c / 2) / G.dpr, y: (y + G.c / 2) / G.dpr }; },
    reads: 1,
  };
  onModeChange((m) => { mode = m; draw(); });

  let reading = null, again = false, lastRead = 0;
  const reread = () => {
    if (reading) { again = true; return; }
    const wait = Math.max(0, lastRead + REFRESH_MS - performance.now());
    reading = new Promise((resolve) => setTimeout(resolve, wait)).then(() => api(url)).then((d) => {
      doc = d; lastRead = performance.now(); twin.gpuOverview.reads += 1; draw();
    }).catch((e) => toast(`zone overview: ${e.message}`)).finally(() => {
      reading = null;
      if (again) { again = false; reread(); }
    });
  };
  live(`/ws/clusters/${encodeURIComponent(clusterName)}/`, {
    query: { summary: "1" },
    onFrame: () => reread(),
    onEvent: (msg) => { if (msg.type === "inventory") reread(); },
  });
  canvas.addEventListener("mousemove", (ev) => {
    const k = rackAtEvent(ev);
    hovered = k;
    canvas.style.cursor = k >= 0 ? "pointer" : "default";
    if (k < 0) tooltip.hidden = true; else showTooltip(k, ev);
  });
  canvas.addEventListener("mouseleave", () => { hovered = -1; tooltip.hidden = true; });
  canvas.addEventListener("click", (ev) => {
    const k = rackAtEvent(ev);
    if (k >= 0) location.href = zoneUrl(k);
  });
  let pending = false;
  window.addEventListener("resize", () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => { pending = false; layout(); draw(); });
  });
  return hovered;
}
