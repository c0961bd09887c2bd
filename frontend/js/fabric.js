// The fabric page: the backend fabric of one cluster as it behaves. fabric.json gives the structure in live link
// order (fabric-model.js); the cluster's live stream (docs/live.md) brings per-link utilization, which repaints the
// tier heatmaps (heatmap.js) and refreshes the zone, rack and switch aggregates and the hottest links, and
// inventory events (a link or switch whose status changed), which reload the statuses and top the change list.
// Drill-down: zone -> its racks and spines -> one switch and its ports (/api/inventory/switches/<id>/neighbors/).
// Zoomed into a zone or building (?zone=<name>, ?building=<n>), fabric.json, status.json and the live stream hold its
// links alone (docs/live.md, scoped frames), in the same format; the zone overview (?view=zones) is
// fabric-overview.js.
import { countCell, LiveRows, pct as pctOf, updateRows, utilCell } from "./fabric-cells.js";
import { applyStatus, buildModel, FabricStats, LINK_NIC_LEAF, linkIndex, rowBlocks } from "./fabric-model.js";
import { fetchSnapshot } from "./frames.js";
import { TierHeatmap } from "./heatmap.js";
import { api, COLORS, esc, fmt, live, markReady, timeFrame, toast, UTIL_GRADIENT, utilCss } from "./twin.js";

const root = document.getElementById("fabric");
const cluster = root.dataset.cluster;
const $ = (id) => document.getElementById(id);
const DETAILS_RETRY_MS = 30000, FAILED_SHOWN = 200, HEATMAP_MAX_HEIGHT = 420;
const CHANGES_SHOWN = 20, CHANGED_MODELS = ["link", "switch"];   // the items whose statuses this page shows
const STATUS_DEBOUNCE_MS = 250;                     // inventory events closer than this: one status reload
const LINK_DETAILS_BATCH = 500;                     // links.json's limit (fabric_data.LINK_DETAILS_MAX)

const state = {
  model: null, stats: null, heatmaps: [], util: null, note: "",
  run: { id: 0, status: null, progress: 0, kind: "", timeMs: 0 },
  zone: -1, switch: -1, focusLink: -1,
  marked: [], markedFrom: "",            // links named in the URL (#links=<ids>&from=<text>: the Debug page's culprit)
  rows: { zones: null, racks: null, spines: null, ports: null },       // LiveRows of the tables
  switchFigures: null,                                                  // updater of the switch panel's figures
};

// --- names and formats ------------------------------------------------------------------------------------------

const upper = (name) => name.toUpperCase();
const tierOf = (i) => state.model.tiers[state.stats.tierIndex[state.model.tier[i]]];
const tierShort = (t, arrow = "→") => `${upper(t.lower)}${arrow}${upper(t.upper)}`;
const tierTitle = (t) => `${t.code === LINK_NIC_LEAF ? "Host links: " : ""}${tierShort(t, " → ")}`;
const statusName = (code) => state.model.statusNames[code] ?? "unknown";
const badge = (status) => `<span class="badge ${esc(status)}">${esc(status)}</span>`;
const hasData = () => state.stats.hasData;
const pct = (u) => pctOf(u, hasData());
const liveUtil = (value) => utilCell(value, hasData);

// --- link details (names and ends), fetched lazily and cached ---------------------------------------------------

const details = new Map();                          // link id -> {name, status, speed_gbps, a, b}
const detailsAsked = new Map();                     // link id -> the promise of the request that brings it
let detailsQueue = [], detailsBatch = null;

/** Resolve once the details of these link indexes are fetched (true if all are now known): missing ids are
 *  batched (one request per 60 ms), ids already asked for wait for their request. */
function needDetails(indexes) {
  const m = state.model, waits = new Set();
  for (const i of indexes) {
    const id = m.linkId[i];
    if (details.has(id)) continue;
    if (!detailsAsked.has(id)) {
      detailsBatch ??= new Promise((resolve) => setTimeout(() => fetchDetails().then(resolve), 60));
      detailsQueue.push(id);
      detailsAsked.set(id, detailsBatch);
    }
    waits.add(detailsAsked.get(id));
  }
  return Promise.all(waits).then(() => indexes.every((i) => details.has(m.linkId[i])));
}

async function fetchDetails() {
  const ids = detailsQueue;
  detailsQueue = [];
  detailsBatch = null;
  try {
    for (let k = 0; k < ids.length; k += LINK_DETAILS_BATCH) {
      const body = await api(`${root.dataset.linksUrl}?id=${ids.slice(k, k + LINK_DETAILS_BATCH).join(",")}`);
      for (const d of body.results) details.set(d.id, d);
    }
  } catch (e) {
    toast(`Link names: ${e.message}`);
    setTimeout(() => ids.forEach((id) => detailsAsked.delete(id)), DETAILS_RETRY_MS);     // then asked again
  }
}

/** "rtsw.z00.000:16 → ctsw.z00.s00:0" from the cached details, else the switch names the arrays know. */
function linkEnds(i) {
  const m = state.model, d = details.get(m.linkId[i]);
  if (d) return `${m.short(d.a.port)} → ${m.short(d.b.port)}`;
  return `${m.a[i] >= 0 ? m.short(m.sw.name[m.a[i]]) : "NIC"} → ${m.short(m.sw.name[m.b[i]])}`;
}

/** Why an active link counts as not active: "switch rtsw.z00.003 is failed" (else ""). */
function downBecause(i) {
  const m = state.model;
  if (m.linkStatus[i] !== 0 || m.status[i] === 0) return "";
  const s = m.sw.status[m.b[i]] ? m.b[i] : m.a[i];
  return `the link is active, switch ${m.short(m.sw.name[s])} is ${statusName(m.sw.status[s])}`;
}

/** The link's name when it says more than its ends (a hand-named cable). */
function linkName(i) {
  const d = details.get(state.model.linkId[i]);
  return d && d.name !== `${d.a.port}~${d.b.port}` ? d.name : "";
}

// --- run indicator and summary ----------------------------------------------------------------------------------

function renderRun() {
  const el = $("fabric-run"), r = state.run;
  const note = state.note ? `<div class="warn">${esc(state.note)}</div>` : "";
  el.dataset.run = r.id ? String(r.id) : "";
  if (!r.id) {
    el.innerHTML = `<span class="muted">No simulation yet on this cluster: utilization shows once a run
      publishes. Start one from <a href="/experiments/">Experiments</a>.</span>${note}`;
    return;
  }
  const when = r.timeMs ? fmt.when(r.timeMs) : "";
  const runLink = `<a href="/experiments/${r.id}/">run #${r.id}</a> <span class="muted">${esc(r.kind)}</span>
    ${badge(r.status ?? "unknown")} <span class="muted">${when}</span>`;
  const u = state.utilRun;                    // the run whose link utilization is drawn (null: none yet)
  el.dataset.utilRun = u ? String(u) : "";
  // A run that brings no link utilization (a figure, a failures timeline) is not the state drawn: say which is.
  const head = u === r.id ? `<div>State from ${runLink}</div>`
    : u ? `<div>Link utilization from <a href="/experiments/${u}/">run #${u}</a>; the latest, ${runLink}, has sent
        none</div>`
    : `<div class="no-util">Latest: ${runLink}: no link utilization from it (${r.status === "running"
        || r.status === "queued" ? "none sent yet" : "its kind simulates none"}), so no link state to show. Start a
        collective or a job from <a href="/experiments/">Experiments</a>.</div>`;
  el.innerHTML = `${head}
    <div class="run-progress"><span class="progress"><span style="width:${r.progress}%"></span></span>
      <span>${r.progress.toFixed(0)} %</span></div>${note}`;
}

function renderSummary() {
  const m = state.model, s = state.stats;
  const down = m.tiers.reduce((n, _, k) => n + s.tier(k).down, 0);
  const figures = [[fmt.int(m.L), "backend links"], [fmt.int(m.S), "switches"],
                   [fmt.int(down), "links not active", down ? "bad" : ""],
                   ...m.tiers.map((t, k) => [`${pct(s.tier(k).mean)} / ${pct(s.tier(k).max)}`,
                                             `${tierTitle(t)}: mean / max`])];
  $("fabric-summary").innerHTML = figures.map(([v, label, cls = ""]) =>
    `<div class="figure"><span class="value ${cls}">${v}</span><span class="label">${esc(label)}</span></div>`)
    .join("");
}

// --- heatmaps ---------------------------------------------------------------------------------------------------

function buildHeatmaps() {
  const m = state.model, tooltip = $("fabric-tooltip");
  $("fabric-legend").innerHTML = `<span>0 %</span><span class="ramp" style="background:${UTIL_GRADIENT}">
    </span><span>100 %</span>
    <span><i class="swatch" style="background:${COLORS.failed}"></i>not active (ringed)</span>
    <span><i class="swatch" style="background:${COLORS.none}"></i>no data</span>`;
  state.heatmaps = m.tiers.map((t) => {
    const panel = document.createElement("div");
    panel.className = "tier";
    panel.innerHTML = `<h3>${esc(tierTitle(t))} <span class="tier-stats"></span></h3><div></div>`;
    $("heatmaps").append(panel);
    const links = new Int32Array(t.links);
    for (let i = 0, k = 0; i < m.L; i++) if (m.tier[i] === t.code) links[k++] = i;
    const hm = new TierHeatmap(panel.lastElementChild, {
      tier: t, blocks: rowBlocks(m, t.row_tier), cols: t.cols, links, rowOf: m.row, colOf: m.col,
      onHover: (i, ev) => showTooltip(tooltip, i, ev),
      onClick: (i, s) => { state.focusLink = i; selectSwitch(s); },
    });
    hm.statsEl = panel.querySelector(".tier-stats");
    return hm;
  });
  layoutHeatmaps();
  let resizeTimer = null;
  window.addEventListener("resize", () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(() => { layoutHeatmaps(); drawHeatmaps(); }, 150);
  });
}

function layoutHeatmaps() {
  const width = $("heatmaps").clientWidth;
  for (const hm of state.heatmaps) {
    hm.layout(width, HEATMAP_MAX_HEIGHT);
    hm.mark(state.model.status, state.switch);
  }
}

function drawHeatmaps() {
  state.heatmaps.forEach((hm, k) => {
    hm.draw(state.util, state.model.status, hasData());
    const x = state.stats.tier(k);
    hm.statsEl.innerHTML = `${fmt.int(x.n + x.down)} links · mean ${pct(x.mean)} · max ${pct(x.max)}` +
      (x.down ? ` · <span class="bad">${fmt.int(x.down)} not active</span>` : "");
  });
}

let hoverTimer = null;
function showTooltip(el, i, ev) {
  if (i < 0) { el.hidden = true; return; }
  const m = state.model, d = details.get(m.linkId[i]), name = linkName(i), why = downBecause(i);
  const st = statusName(m.status[i]), u = state.util ? state.util[i] : 0;
  el.innerHTML = `<div><b>${esc(linkEnds(i))}</b></div>${name ? `<div class="mono">${esc(name)}</div>` : ""}
    ${why ? `<div class="warn">${esc(why)}</div>` : ""}
    <div class="muted">${esc(tierTitle(tierOf(i)))} · row ${esc(m.short(m.sw.name[m.row[i]]))} · column ${m.col[i]}
      · link #${m.linkId[i]}</div>
    <div>${badge(st)} utilization <b>${st === "active" ? pct(u) : "–"}</b>${d ? ` of ${d.speed_gbps} Gb/s` : ""}</div>`;
  el.hidden = false;
  el.style.left = `${Math.min(ev.clientX + 14, window.innerWidth - el.offsetWidth - 8)}px`;
  el.style.top = `${ev.clientY + 14}px`;
  if (d) return;
  clearTimeout(hoverTimer);                         // once the pointer rests: the names of the row's links
  hoverTimer = setTimeout(() => {
    const hm = state.heatmaps.find((h) => h.tier.code === m.tier[i]);
    needDetails(hm.links.filter((j) => m.row[j] === m.row[i])).then((known) => {
      if (known && !el.hidden && hm.hover === i) showTooltip(el, i, ev);
    });
  }, 120);
}

// --- zones, racks and spines ------------------------------------------------------------------------------------

function buildZoneTable() {
  const m = state.model, table = $("zone-table"), head = table.createTHead();
  head.insertRow().innerHTML = '<th rowspan="2">Zone</th>' +
    m.tiers.map((t) => `<th colspan="3" class="group">${esc(tierTitle(t))}</th>`).join("");
  head.insertRow().innerHTML = m.tiers.map(() =>
    '<th class="num">mean</th><th class="num">max</th><th class="num">not active</th>').join("");
  const zones = [...m.doc.zones.keys()];
  if (m.linkZone.includes(m.Z)) zones.push(m.Z);   // links whose lower switch is in no zone
  state.rows.zones = new LiveRows(table.createTBody(), zones.map((z) => ({
    key: z, title: "its racks and spines",
    cells: [esc(z < m.Z ? m.short(m.doc.zones[z]) : "no zone"), ...m.tiers.flatMap((_, k) => [
      liveUtil(() => state.stats.tier(k, z).mean),
      liveUtil(() => state.stats.tier(k, z).max),
      countCell(() => { const x = state.stats.tier(k, z); return [x.down, x.n + x.down]; }),
    ])],
  })), { onClick: (z) => selectZone(z) });
}

/** One switch per row with its links down (host links for a leaf) and up, and its non-active links. */
function switchRows(tbody, switches, label) {
  const m = state.model;
  return new LiveRows(tbody, Array.from(switches, (s) => ({
    key: s, title: m.sw.name[s],
    cells: [esc(label(s)) + (m.sw.status[s] ? ` ${badge(statusName(m.sw.status[s]))}` : ""),
            liveUtil(() => state.stats.down(s).mean), liveUtil(() => state.stats.down(s).max),
            liveUtil(() => state.stats.up(s).mean), liveUtil(() => state.stats.up(s).max),
            countCell(() => [state.stats.swDown[s]])],
  })), { onClick: selectSwitch, lazy: true });
}

/** The selected zone's racks (each one's leaf: host links and uplinks) and spines (downlinks and uplinks). */
function renderZoneDetail() {
  const m = state.model, el = $("zone-detail"), z = state.zone;
  for (const key of ["racks", "spines"]) state.rows[key]?.drop();
  el.hidden = z < 0;
  if (z < 0) return;
  const [leaf = "leaf", spine = "spine"] = m.doc.switch_tiers.map(upper);
  el.innerHTML = `<h2>Zone ${esc(z < m.Z ? m.short(m.doc.zones[z]) : "no zone")}
      <button class="link close">close</button></h2>
    <div class="grid-2"><div><h3>Racks (${esc(leaf)})</h3><div class="scroll"><table class="data compact racks">
      <thead><tr><th>Rack</th><th class="num">hosts mean</th><th class="num">hosts max</th><th class="num">up mean</th>
      <th class="num">up max</th><th class="num">not active</th></tr></thead><tbody></tbody></table></div></div>
    <div><h3>${esc(spine)}</h3><div class="scroll"><table class="data compact spines">
      <thead><tr><th>Switch</th><th class="num">down mean</th><th class="num">down max</th><th class="num">up mean</th>
      <th class="num">up max</th><th class="num">not active</th></tr></thead><tbody></tbody></table></div></div></div>`;
  el.querySelector(".close").addEventListener("click", () => selectZone(-1));
  const inZone = (tier) => rowBlocks(m, tier).find((b) => b.zone === (z < m.Z ? z : -1))?.rows ?? [];
  const rack = (s) => m.short(m.sw.rack[s] >= 0 ? m.doc.racks[m.sw.rack[s]] : m.sw.name[s]);
  state.rows.racks = switchRows(el.querySelector(".racks tbody"), inZone(0), rack);
  state.rows.spines = switchRows(el.querySelector(".spines tbody"), inZone(1), (s) => m.short(m.sw.name[s]));
  markSelectedRows();
}

function selectZone(z, scroll = true) {
  state.zone = z;
  renderZoneDetail();
  saveHash();
  if (z >= 0 && scroll) $("zone-detail").scrollIntoView({ block: "nearest", behavior: "smooth" });
}

function markSelectedRows() {
  for (const tr of document.querySelectorAll("#zone-table tbody tr, #zone-detail tbody tr")) {
    const key = Number(tr.dataset.key);
    tr.classList.toggle("selected", tr.closest("#zone-table") ? key === state.zone : key === state.switch);
  }
  for (const tr of document.querySelectorAll("#zone-detail tr.selected")) {   // scroll its box, not the page
    const box = tr.closest(".scroll");
    box.scrollTop = tr.offsetTop - box.clientHeight / 2;
  }
}

// --- one switch and its ports -----------------------------------------------------------------------------------

async function selectSwitch(s) {
  const m = state.model, el = $("switch-panel");
  state.switch = s;
  state.heatmaps.forEach((hm) => hm.mark(m.status, s));
  if (s >= 0 && m.sw.zone[s] >= 0 && m.sw.zone[s] !== state.zone) { state.zone = m.sw.zone[s]; renderZoneDetail(); }
  markSelectedRows();
  saveHash();
  state.rows.ports?.drop();
  state.switchFigures = null;
  el.hidden = s < 0;
  if (s < 0) return;
  const id = m.sw.id[s], tier = upper(m.doc.switch_tiers[m.sw.tier[s]] ?? String(m.sw.tier[s]));
  const zone = m.sw.zone[s] >= 0 ? m.short(m.doc.zones[m.sw.zone[s]]) : "–";
  const rack = m.sw.rack[s] >= 0 ? m.short(m.doc.racks[m.sw.rack[s]]) : "–";
  el.innerHTML = `<h2>${esc(tier)} ${esc(m.short(m.sw.name[s]))} ${badge(statusName(m.sw.status[s]))}
      <button class="link close">close</button></h2>
    <div class="facts"><span>zone <b>${esc(zone)}</b></span><span>rack <b>${esc(rack)}</b></span>
      <span>group <b>${m.sw.group[s]}</b></span><span>model <b>${esc(m.doc.models[m.sw.model[s]] ?? "–")}</b></span>
      <a href="/inventory/switch/${id}/">in the inventory</a></div>
    <div class="mono muted">${esc(m.sw.name[s])}</div>
    <div class="figures-row switch-figures"></div>
    <table class="data compact ports"><tbody><tr><td class="muted">loading ports…</td></tr></tbody></table>`;
  el.querySelector(".close").addEventListener("click", () => selectSwitch(-1));
  const figures = el.querySelector(".switch-figures");
  state.switchFigures = () => {
    figures.innerHTML = [[state.stats.down(s), "down"], [state.stats.up(s), "up"]].filter(([x]) => x.n)
      .map(([x, dir]) => `<div class="figure"><span class="value">${pct(x.mean)} / ${pct(x.max)}</span>
        <span class="label">${fmt.int(x.n)} active ${dir}links: mean / max</span></div>`).join("");
  };
  state.switchFigures();
  el.scrollIntoView({ block: "nearest" });
  try {
    const body = await api(`/api/inventory/switches/${id}/neighbors/`);
    if (state.switch === s) renderPorts(el.querySelector("table.ports"), body.neighbors);
  } catch (e) {
    toast(`Ports of ${m.sw.name[s]}: ${e.message}`);
    el.querySelector("table.ports").innerHTML = `<tr><td class="bad">${esc(e.message)}</td></tr>`;
  }
}

/** The switch's cabled ports, down then up by slot: link, peer device, link status and live utilization. */
function renderPorts(table, neighbors) {
  const m = state.model, slot = (name) => name.slice(name.lastIndexOf(":"));
  neighbors.sort((x, y) => (x.link.direction === "up") - (y.link.direction === "up")
    || Number(slot(x.port.name).slice(1)) - Number(slot(y.port.name).slice(1)));
  table.innerHTML = '<thead><tr><th>Port</th><th>Peer</th><th>Link</th><th class="num">Util.</th></tr></thead>';
  state.rows.ports = new LiveRows(table.createTBody(), neighbors.map((n) => {
    const i = linkIndex(m, n.link.id), peer = n.remote_device;
    const peerIndex = peer.type === "switch" ? m.sw.id.indexOf(peer.id) : -1;
    return {
      key: i, title: n.link.name,
      cells: [`<span class="mono">${esc(slot(n.port.name))}</span> <span class="muted">${n.link.direction}</span>`,
              peerIndex >= 0 ? `<a href="#" data-switch="${peerIndex}">${esc(m.short(peer.name))}</a>`
                : esc(m.short(peer.name)),
              `${badge(n.link.status)} <span class="muted">${n.link.speed_gbps} G</span>`,
              liveUtil(() => (i >= 0 && m.status[i] === 0 && state.util ? state.util[i] : 0))],
    };
  }), { lazy: true });
  for (const a of table.querySelectorAll("a[data-switch]")) {
    a.addEventListener("click", (ev) => { ev.preventDefault(); selectSwitch(Number(a.dataset.switch)); });
  }
  const focus = table.querySelector(`tr[data-key="${state.focusLink}"]`);
  if (focus) { focus.classList.add("focus"); focus.scrollIntoView({ block: "nearest" }); }
}

// --- hottest and non-active links -------------------------------------------------------------------------------

function renderHottest() {
  const m = state.model, hot = state.stats.hottest(), table = $("hottest-links");
  table.dataset.count = String(hot.length);
  if (!hot.length) {
    const why = hasData() ? "no link carries traffic" : state.run.id
      ? `no link utilization: run #${state.run.id} simulates none` : "no simulation yet";
    table.innerHTML = `<tbody><tr><td class="muted">${why}</td></tr></tbody>`;
    return;
  }
  table.innerHTML = '<thead><tr><th class="num">Util.</th><th>Link</th><th>Tier</th></tr></thead><tbody>' +
    hot.map((i) => `<tr class="clickable" data-link="${i}" title="${esc(linkName(i))}">
      <td class="num util"><i class="swatch" style="background:${utilCss(state.util[i])}"></i>${pct(state.util[i])}</td>
      <td class="mono">${esc(linkEnds(i))}</td><td class="muted">${esc(tierShort(tierOf(i)))}</td></tr>`).join("") +
    "</tbody>";
  const missing = hot.filter((i) => !details.has(m.linkId[i]));
  if (missing.length) needDetails(missing).then((known) => known && renderHottest());
}

function renderFailed() {
  const m = state.model, failed = [];
  for (let i = 0; i < m.L; i++) if (m.status[i] !== 0) failed.push(i);
  const perTier = m.tiers.map((t, k) => `${tierShort(t)} ${fmt.int(state.stats.tier(k).down)}`);
  $("failed-count").textContent = `${fmt.int(failed.length)} (${perTier.join(" · ")})`;
  const box = $("failed-list");
  if (!failed.length) { box.innerHTML = '<p class="ok">Every backend link is active.</p>'; return; }
  const shown = failed.slice(0, FAILED_SHOWN);
  const all = `/api/inventory/links/?cluster=${encodeURIComponent(cluster)}&status=failed&status=drained` +
    "&status=maintenance";
  box.innerHTML = `<table class="data compact"><thead><tr><th>Link</th><th>Tier</th><th>Status</th></tr></thead>
    <tbody>${shown.map((i) => `<tr class="clickable" data-link="${i}" title="${esc(linkName(i))}">
      <td class="mono">${esc(linkEnds(i))}</td><td>${esc(tierShort(tierOf(i)))}</td>
      <td>${badge(statusName(m.status[i]))} ${m.linkStatus[i] ? "" : '<span class="muted">(its switch)</span>'}</td>
      </tr>`).join("")}</tbody></table>` +
    (failed.length > shown.length ? `<p class="hint">${fmt.int(failed.length - shown.length)} more:
      <a href="${all}">all in the API</a></p>` : "");
  const missing = shown.filter((i) => !details.has(m.linkId[i]));
  if (missing.length) needDetails(missing).then((known) => known && renderFailed());
}

/** The links the URL names (#links=<Link ids>, e.g. those on a debug rehearsal's culprit's paths), listed with their
 *  status and utilization; a click drills down as for the other lists. */
function renderMarked() {
  const m = state.model, shown = state.marked;
  $("marked").hidden = !shown.length;
  if (!shown.length) return;
  $("marked-from").textContent = state.markedFrom;
  $("marked-list").innerHTML = `<table class="data compact"><thead><tr><th>Link</th><th>Tier</th><th>Status</th>
    <th class="num">Util.</th></tr></thead><tbody>${shown.map((i) => `<tr class="clickable" data-link="${i}"
      title="${esc(linkName(i))}"><td class="mono">${esc(linkEnds(i))}</td><td>${esc(tierShort(tierOf(i)))}</td>
      <td>${badge(statusName(m.status[i]))}</td><td class="num">${pct(state.util ? state.util[i] : 0)}</td></tr>`)
    .join("")}</tbody></table>`;
  const missing = shown.filter((i) => !details.has(m.linkId[i]));
  if (missing.length) needDetails(missing).then((known) => known && renderMarked());
}

// A click on a link row (hottest, non-active, named) drills down to the switch of the link's heatmap row.
for (const id of ["hottest-links", "failed-list", "marked-list"]) {
  $(id).addEventListener("click", (ev) => {
    const tr = ev.target.closest("tr[data-link]");
    if (!tr) return;
    state.focusLink = Number(tr.dataset.link);
    selectSwitch(state.model.row[state.focusLink]);
  });
}

// --- applying state ---------------------------------------------------------------------------------------------

/** Recompute the statistics and repaint everything that depends on utilization. */
function refresh() {
  state.stats.update(state.util);
  drawHeatmaps();
  renderSummary();
  updateRows();
  state.switchFigures?.();
  renderHottest();
  renderMarked();
}

/** Take a frame's run header and its (merged) link_util section; true if the utilization changed. */
function takeFrame(frame, util, live = true) {
  const r = state.run;
  if (frame.runId && frame.status != null) {
    if (frame.runId !== r.id) onNewRun(frame.runId, live);
    Object.assign(r, { id: frame.runId, status: frame.status, progress: frame.progress, timeMs: frame.timeMs });
  }
  if (util && util.length !== state.model.L) {
    state.note = `live utilization has ${fmt.int(util.length)} links, this page ${fmt.int(state.model.L)}: ` +
      "the fabric changed, reload the page";
    util = null;
  } else if (util) state.note = "";
  const changed = util != null && util !== state.util;
  if (changed) { state.util = util; state.utilRun = frame.runId || state.utilRun; }
  renderRun();
  return changed;
}

/** A run not seen before: its kind for the indicator; if it starts now, the statuses it runs on. Asked as a list
 *  filtered by id: the last frame of a cluster may come from a run deleted since (an empty list, not a 404). */
function onNewRun(id, live) {
  state.run.kind = "";
  api(`/api/runs/?id=${id}`).then(({ results: [run] }) => {
    if (state.run.id !== id) return;
    state.run.kind = run ? `${run.kind}${run.params?.gpus ? ` · ${run.params.gpus} GPUs` : ""}` : "(deleted)";
    renderRun();
  }).catch(() => {});                               // the indicator works without the kind
  if (live) refreshStatus();
}

async function refreshStatus() {
  try {
    const body = await api(root.dataset.statusUrl);
    if (body.links.count !== state.model.L) {
      state.note = "the fabric was rebuilt or recabled: reload the page";
      renderRun();
      return;
    }
    applyStatus(state.model, body);
    state.heatmaps.forEach((hm) => hm.mark(state.model.status, state.switch));
    refresh();
    renderFailed();
  } catch (e) {
    toast(`Link statuses: ${e.message}`);
  }
}

// --- inventory changes -----------------------------------------------------------------------------------------

const changes = [];                                 // change-list lines, newest first: {model, id, name, before, ...}
let statusTimer = null;

/** An inventory event of this cluster (docs/live.md): statuses reloaded once for a burst of events, the link and
 *  switch status changes on top of the list (the whole list reloaded when the event left some out). */
function onInventory(msg) {
  const fabricChanged = msg.changes.some((c) => CHANGED_MODELS.includes(c.model));
  if (fabricChanged || msg.truncated) {
    for (const c of msg.changes) if (c.model === "link") details.delete(c.id);   // its cached status is stale
    clearTimeout(statusTimer);
    statusTimer = setTimeout(refreshStatus, STATUS_DEBOUNCE_MS);
  }
  if (msg.truncated) { loadChanges(); return; }
  const lines = msg.changes.filter((c) => CHANGED_MODELS.includes(c.model) && c.field === "status");
  if (!lines.length) return;
  changes.unshift(...lines.reverse());
  changes.length = Math.min(changes.length, CHANGES_SHOWN);
  renderChanges(lines.length);
}

async function loadChanges() {
  const query = new URLSearchParams({ cluster, field: "status", limit: String(CHANGES_SHOWN) });
  for (const model of CHANGED_MODELS) query.append("model", model);
  try {
    const body = await api(`/api/inventory/changes/?${query}`);
    changes.splice(0, changes.length, ...body.results.map((r) => ({
      model: r.model, id: r.object_id, name: r.object_name, field: "status", before: r.before?.status,
      after: r.after?.status, by: r.user_name || null, at: r.time })));
    renderChanges(0);
  } catch (e) {
    toast(`Status changes: ${e.message}`);
  }
}

/** "link rtsw.z00.000:16 ~ ctsw.z00.s00:0  active → failed  10:02:13 alice", the ``fresh`` newest ones lit. */
function renderChanges(fresh) {
  const table = $("change-list"), m = state.model;
  table.dataset.count = String(changes.length);
  $("changes-note").textContent = changes.length ? `last ${changes.length}` : "";
  if (!changes.length) {
    table.innerHTML = '<tbody><tr><td class="muted">No status change logged.</td></tr></tbody>';
    return;
  }
  table.innerHTML = "<tbody>" + changes.map((c, k) => {
    const when = fmt.when(c.at);
    const label = c.name.split("~").map((end) => m.short(end)).join(" ~ ");     // a link: both ends, short
    return `<tr class="${k < fresh ? "fresh" : ""}" data-model="${esc(c.model)}" data-id="${c.id}"
><td><a href="/inventory/${esc(c.model)}/${c.id}/" class="mono">
      ${esc(c.model)} ${esc(label)}</a></td><td>${badge(c.before ?? "–")} → ${badge(c.after ?? "–")}</td>
      <td class="muted">${when} ${esc(c.by ?? "system")}</td></tr>`;
  }).join("") + "</tbody>";
}

// The drill-down is kept in the URL's hash (#zone=3&switch=1234), so a reload or a shared link shows it again.
function saveHash() {
  const parts = [];
  if (state.zone >= 0) parts.push(`zone=${state.zone}`);
  if (state.switch >= 0) parts.push(`switch=${state.model.sw.id[state.switch]}`);
  if (state.marked.length) parts.push(`links=${state.marked.map((i) => state.model.linkId[i]).join(",")}`);
  if (state.markedFrom) parts.push(`from=${encodeURIComponent(state.markedFrom)}`);
  history.replaceState(null, "", parts.length ? `#${parts.join("&")}` : location.pathname + location.search);
}

function restoreHash() {
  const params = new URLSearchParams(location.hash.slice(1)), m = state.model;
  const z = Number(params.get("zone") ?? -1), s = m.sw.id.indexOf(Number(params.get("switch") ?? -1));
  state.markedFrom = params.get("from") ?? "";
  state.marked = (params.get("links") ?? "").split(",").filter(Boolean).map(Number)
    .map((id) => m.linkId.indexOf(id)).filter((i) => i >= 0);
  renderMarked();
  if (z >= 0 && z <= m.Z) selectZone(z, false);
  if (s >= 0) selectSwitch(s);
  else if (state.marked.length) { state.focusLink = state.marked[0]; selectSwitch(m.row[state.marked[0]]); }
}

async function start() {
  let doc, snap;
  try {
    [doc, snap] = await Promise.all([api(root.dataset.dataUrl),   // no snapshot: drawn as before any run
      fetchSnapshot(root.dataset.snapshotUrl).catch((e) => { toast(`Live snapshot: ${e.message}`); return null; })]);
  } catch (e) {
    toast(`Fabric data: ${e.message}`);
    $("fabric-run").textContent = `Could not load the fabric: ${e.message}`;
    return;
  }
  state.model = buildModel(doc);
  state.stats = new FabricStats(state.model);
  buildHeatmaps();
  buildZoneTable();
  if (snap) takeFrame(snap, snap.sections.link_util ?? null, false);
  else renderRun();
  refresh();
  renderFailed();
  markReady({ links: state.model.L });
  restoreHash();
  if (root.dataset.zone && state.zone < 0) {           // zoomed into a zone: its racks and spines open at once
    const z = state.model.doc.zones.indexOf(root.dataset.zone);
    if (z >= 0) selectZone(z, false);
  }

  loadChanges();
  let connected = false;
  live(`/ws/clusters/${encodeURIComponent(cluster)}/`, {
    query: Object.fromEntries(new URLSearchParams(root.dataset.scope)),   // a zone's or building's links alone
    seq: snap?.seq ?? 0,                               // the snapshot just applied: no second fetch
    onMeta() {                                         // a reconnection: events may have been missed meanwhile
      if (connected) { refreshStatus(); loadChanges(); }
      connected = true;
    },
    onFrame(frame, merged) {
      timeFrame(() => { if (takeFrame(frame, merged.link_util ?? null)) refresh(); });
    },
    onEvent(msg) { if (msg.type === "inventory") onInventory(msg); },
  });
}

start();
