// The collectives capability in the browser (twin/capabilities/collectives): the result views of its kinds,
// registered by name (registry.js): collective (busbw and algbw against message size with the roofline, the
// nccl-tests table of the median run, hottest links, seed spread), fabric_health, figure (the published AllGather
// figure's panels beside the published claims; also drawn by figure_page.js), preset_figure (a preset's page of
// figures: busbw by message size against the roofline per collective, and rail-local vs cross-rail traffic; also
// drawn by preset_page.js).
import { esc, fmt } from "../twin.js";
import { publishedHtml } from "../published.js";
import { barChart, lineChart, sizeLabel } from "../chart.js";
import { registerView } from "../registry.js";
import {
  busbwChart, figureCards, headlineCards, median, NINETY, normClass, PERCENT_Y, pct,
} from "../run_results.js";

function ncclTable(rows) {
  const row = (r) => `<tr><td class="num" data-value="${r.size}">${sizeLabel(r.size)}</td><td class="num">${fmt.int(r.count)}</td>
    <td>${esc(r.type)}</td><td class="num">${r.time_us.toFixed(1)}</td><td class="num">${r.algbw_GBps.toFixed(2)}</td>
    <td class="num">${r.busbw_GBps.toFixed(2)}</td>
    <td class="num ${normClass(r.norm_busbw)}">${pct(r.norm_busbw)}</td></tr>`;
  return `<table class="data compact nccl"><thead><tr><th class="num" data-quantity="bytes">size</th><th class="num">count</th><th>type</th>
    <th class="num">time (us)</th><th class="num">algbw (GB/s)</th><th class="num">busbw (GB/s)</th>
    <th class="num">norm busbw</th></tr></thead><tbody>${fmt.rows(rows.map(row))}</tbody></table>`;
}

function hottestTable(links, cluster) {
  if (!links?.length) return '<p class="muted">no link data</p>';
  const row = (h) => `<tr><td class="mono">${esc(h.name)}</td>
    <td class="num"><span class="util-bar" style="--u:${Math.min(1, h.utilization)}"></span> ${pct(h.utilization)}</td>
    <td class="num">${fmt.int(h.flows)}</td></tr>`;
  return `<table class="data compact"><thead><tr><th>link (direction)</th><th class="num">utilization</th>
    <th class="num">flows</th></tr></thead><tbody>${fmt.rows(links.map(row))}</tbody></table>
    <p class="hint">Utilization during the largest size. Every link: the
      <a href="/clusters/${encodeURIComponent(cluster)}/fabric/">fabric heatmap</a>.</p>`;
}

const SEED_BARS = 10;                   // at most this many bars in a run's distribution over seeds
const SEEDS_OPEN = 8;                   // the list of every seed starts open up to this many seeds

/** How many seeds reached each normalized busbw (%): one bar per value (to 0.1 %) when there are few distinct
 *  values, else one per equal range between the lowest and the highest. `seeds`: the summary's per_seed. */
function seedBars(seeds) {
  const values = seeds.map((x) => 100 * x.norm_busbw).filter(Number.isFinite);
  const counts = new Map();
  for (const v of values) counts.set(v.toFixed(1), (counts.get(v.toFixed(1)) ?? 0) + 1);
  if (counts.size <= SEED_BARS) {
    return [...counts].sort((a, b) => Number(a[0]) - Number(b[0])).map(([v, n]) => ({ label: `${v} %`, value: n }));
  }
  const lo = Math.min(...values), width = (Math.max(...values) - lo) / SEED_BARS;
  const n = new Array(SEED_BARS).fill(0);
  for (const v of values) n[Math.min(SEED_BARS - 1, Math.floor((v - lo) / width))] += 1;
  const edge = (i) => (lo + i * width).toFixed(1);
  return n.map((value, i) => ({ label: `${edge(i)}–${edge(i + 1)} %`, value }));
}

/** The spread over seeds: its range, how the seeds are distributed (.seed-bars, drawn from seedBars()) and every
 *  seed in a list that folds (hundreds of seeds would make the page thousands of pixels long). */
function seedsHtml(s) {
  if (!(s.per_seed?.length > 1)) {
    return '<h3>Seeds</h3><p class="muted">one seed (routing hash and placement); run several to see the spread</p>';
  }
  const row = (x) => `<tr${x.seed === s.median_seed ? ' class="best" title="the median run"' : ""}>
    <td class="num">${x.seed}</td><td class="num ${normClass(x.norm_busbw)}">${pct(x.norm_busbw)}</td>
    <td class="num">${pct(x.limit_norm_busbw)}</td></tr>`;
  const n = s.per_seed.length, b = s.norm_busbw;
  return `<h3>Spread over ${n} seeds</h3>
    <p>normalized busbw: median ${pct(b.median)}, ${pct(b.min)} – ${pct(b.max)}; the table and hottest links are the
      ${esc(s.table_of)}. Seeds per value:</p><div class="seed-bars"></div>
    <details class="seed-list"${n <= SEEDS_OPEN ? " open" : ""}><summary>every seed (${n})</summary>
    <table class="data compact"><thead><tr><th class="num">seed</th><th class="num">norm busbw</th>
    <th class="num">large-message limit</th></tr></thead><tbody>${fmt.rows(s.per_seed.map(row))}</tbody></table>
    </details>`;
}

/** collective: headline figures, the busbw/algbw chart with its roofline, the nccl-tests table and hottest links
 *  of the median run, the spread over seeds. */
export function renderCollective(el, s, { cluster, run }) {
  const of = s.table_of ? ` <span class="muted">(${esc(s.table_of)})</span>` : "";   // runs from before it was said
  el.innerHTML = `${headlineCards(run.headline, [
    [fmt.GBps(s.roofline_GBps), "roofline"],
    [`${fmt.int(s.ranks)} ranks`, `${fmt.int(s.hosts)} hosts, ${s.fabric}`],
    [`${s.routing} · ${s.qps} QP`, `${s.placement} placement`]])}
    <div class="grid-2 results-grid">
      <section class="panel"><h3>${esc(s.collective)} (${esc(s.algorithm)}): bus bandwidth${of}</h3>
        <div class="busbw-chart" id="busbw-chart"></div></section>
      <section class="panel"><h3>nccl-tests${of}</h3>${ncclTable(s.rows ?? [])}</section></div>
    <div class="grid-2 results-grid">
      <section class="panel"><h3>Hottest links</h3>${hottestTable(s.hottest_links, cluster)}</section>
      <section class="panel">${seedsHtml(s)}</section></div>`;
  busbwChart(el.querySelector(".busbw-chart"), [{ name: "run", summary: s }], { algbw: true });
  if (s.per_seed?.length > 1) {
    barChart(el.querySelector(".seed-bars"),
             { bars: seedBars(s.per_seed), format: (n) => (Number.isInteger(n) ? fmt.int(n) : ""),   // seed counts
               label: "seeds per normalized busbw", unit: "seeds" });
  }
}

/** fabric_health: healthy or not and why, the figures, the AllGather rows and the hottest links. */
export function renderFabricHealth(el, s, { cluster }) {
  const verdict = s.healthy ? "healthy" : "unhealthy";
  el.innerHTML = `<p class="health"><span class="badge ${s.healthy ? "succeeded" : "failed"}">${verdict}</span>
    normalized busbw ${pct(median(s.norm_busbw))} against a threshold of ${pct(s.threshold, 0)}${
    s.problem ? ` — <span class="bad">${esc(s.problem)}</span>` : ""}</p>${figureCards([
    [fmt.int(s.job_gpus), "GPUs in the AllGather"], [fmt.int(s.usable_gpus), `usable of ${fmt.int(s.gpus)}`],
    [fmt.int(s.unreachable_gpus), "GPUs no job can use", s.unreachable_gpus ? "bad" : ""],
    [fmt.int(s.non_active_links), "backend links not active", s.non_active_links ? "warn" : ""],
    [fmt.int(s.non_active_switches), "backend switches not active", s.non_active_switches ? "warn" : ""],
    [`${s.routing} · ${s.qps} QP`, "routing"]])}
    ${s.rows ? `<div class="grid-2 results-grid">
      <section class="panel"><h3>AllGather</h3><div class="busbw-chart"></div>${ncclTable(s.rows)}</section>
      <section class="panel"><h3>Hottest links</h3>${hottestTable(s.hottest_links, cluster)}</section></div>` : ""}`;
  if (s.rows?.length > 1) busbwChart(el.querySelector(".busbw-chart"), [{ name: "run", summary: s }]);
}


/** The figure's panels (x: job size, log2; y: normalized busbw %, 0-105; median line and min-max band per series;
 *  a 90 % line; the panel's published claims as brackets at the right edge), then a table of each claim against
 *  what this run simulated. `published`: {source, metric, claims: [{panel, groups, low, high, label}]}. */
export function renderFigure(el, s, { published }) {
  const bySeries = new Map(s.series.map((x) => [x.key, x]));
  const points = new Map();
  for (const p of s.summary) {
    if (!points.has(p.series)) points.set(p.series, []);
    points.get(p.series).push({ x: p.gpus, y: 100 * p.median, lo: 100 * p.min, hi: 100 * p.max });
  }
  // A claim against the panel's series of its groups, each at the largest job it ran (one-zone series stop at a
  // zone's size).
  const simulated = (c) => {
    const pts = (s.panels[c.panel]?.series ?? []).filter((k) => c.groups.includes(bySeries.get(k)?.group))
      .map((k) => points.get(k)?.reduce((p, q) => (q.x > p.x ? q : p))).filter(Boolean);
    if (!pts.length) return "–";
    const lo = Math.min(...pts.map((q) => q.y)).toFixed(0), hi = Math.max(...pts.map((q) => q.y)).toFixed(0);
    const jobs = [...new Set(pts.map((q) => q.x))].map(fmt.int).join(" / ");
    return `${lo}${hi !== lo ? ` – ${hi}` : ""} % <span class="muted">at ${jobs} GPUs</span>`;
  };
  const claimRow = (c) => `<tr><td>${esc(s.panels[c.panel]?.title ?? c.panel)}</td>
    <td>${c.groups.map((g) => `(${esc(g)})`).join(" ")}</td>
    <td><span class="published-tag">published</span> ${esc(c.label)}</td><td>${simulated(c)}</td></tr>`;
  el.innerHTML = `<p class="hint">${esc(s.metric)}; median and min–max over ${s.seeds} seeds per point,
    ${fmt.int(s.runs)} simulated runs on ${esc(s.fabric)}. Brackets at the right edge:
    <span class="published-tag">published</span> claims.</p>
    <div class="figure-panels">${s.panels.map((p, i) => `<section class="panel figure-panel" data-panel="${i}">
      <h3>${esc(p.title)}</h3><div class="figure-chart"></div></section>`).join("")}</div>
    <section class="panel published"><h3>Published figure vs this simulation</h3>
      <table class="data compact"><thead><tr><th>panel</th><th>series</th><th>published (${esc(published.source)})</th>
      <th>simulated here (medians, each series at its largest job)</th></tr></thead>
      <tbody>${published.claims.map(claimRow).join("")}</tbody></table>
      <p class="hint">Published metric: ${esc(published.metric)}. The claims are ranges stated in the paper, not its
        data points; a simulated value outside its bracket is where the twin and the paper disagree.</p></section>`;
  el.querySelectorAll(".figure-panel").forEach((panelEl, i) => {
    const panel = s.panels[i];
    lineChart(panelEl.querySelector(".figure-chart"), {
      label: panel.title, height: 320, spread: 3, y: PERCENT_Y, refLines: [NINETY],
      x: { scale: "log2", ticks: s.jobs, label: "job size (GPUs)", name: "GPUs", format: fmt.int },
      ranges: published.claims.filter((c) => c.panel === i)
        .map((c) => ({ low: 100 * c.low, high: 100 * c.high, label: c.label })),
      series: panel.series.filter((k) => points.has(k)).map((k) => {
        const { label = k, color, dash } = bySeries.get(k) ?? {};
        return { name: label, color, dash, band: true, points: points.get(k) };
      }),
    });
  });
}

// A job's line style: the largest job solid, the next dashed, the smallest dotted; the configuration is the colour.
const JOB_DASH = ["-", "--", ":"];

/** The traffic classes of one run as a stacked bar of the bytes between hosts (leaf, spine, core), its shares. */
function trafficBar(t, classes) {
  if (!t.network) return '<span class="muted">no bytes between hosts</span>';
  const share = (c) => (t[c] ?? 0) / t.network;          // a class of a higher tier than this run reached: 0
  return `<div class="stacked-bar" title="${classes.map((c) => `${c} ${pct(share(c))}`).join(", ")}">${
    classes.map((c) => `<span class="cls-${esc(c)}" style="width:${(100 * share(c)).toFixed(3)}%"></span>`)
      .join("")}</div>`;
}

/** preset_figure: headline figures and the hardware, one busbw chart per collective (every configuration and job
 *  against the rooflines), the traffic table (per collective, configuration and job: NVLink's share of all bytes,
 *  then the bytes between hosts kept on a leaf / rail or crossing the spines and cores), the published figures
 *  beside the simulated ones, or why there are none. */
export function renderPresetFigure(el, s, { run }) {
  const configs = new Map(s.configs.map((c) => [c.key, c]));
  const network = s.traffic_classes.filter((c) => c !== "nvlink");
  const hw = s.hardware;
  const local = s.local_name;
  const trafficRow = (r) => {
    const t = r.traffic;
    return `<tr data-collective="${esc(r.collective)}" data-config="${esc(r.config)}" data-gpus="${r.gpus}">
      <td>${esc(r.collective)}</td><td>${esc(configs.get(r.config)?.label ?? r.config)}</td>
      <td class="num">${fmt.int(r.gpus)}</td><td class="num">${pct(t.nvlink / t.total)}</td>
      <td class="num local-share">${t.leaf_local_share == null ? "–" : pct(t.leaf_local_share)}</td>
      <td class="num">${t.cross_spine_share == null ? "–" : pct(t.cross_spine_share)}</td>
      <td class="num">${t.network ? pct(t.core / t.network) : "–"}</td>
      <td class="bar-cell">${trafficBar(t, network)}</td></tr>`;
  };
  el.innerHTML = `${headlineCards(run?.headline ?? [], [
    [`${fmt.GBps(hw.nic_GBps)} · ${fmt.GBps(hw.nvlink_GBps)}`, "NIC · NVLink per GPU (the roofline's)"],
    [`${fmt.int(s.usable_gpus)} GPUs`, `${hw.gpus_per_host} per host, ${s.fabric}${s.rail_optimized ? `, ${hw.rails} rails` : ""}`]])}
    <p class="hint">Ring collectives as nccl-tests runs them, ${fmt.int(s.sizes.length)} message sizes from
      ${sizeLabel(s.sizes[0])} to ${sizeLabel(s.sizes.at(-1))}; jobs: ${s.jobs.map((j) => esc(j.label)).join(", ")}.
      Colour: the configuration; solid, dashed, dotted: the largest job to the smallest. Black dotted: the roofline (the same algorithm on packed hosts, only the NICs and NVLink limiting it).</p>
    <div class="preset-panels">${s.collectives.map((c) => `<section class="panel preset-panel" data-collective="${esc(c)}">
      <h3>${esc(c)} (ring): busbw by message size</h3><div class="busbw-chart"></div></section>`).join("")}</div>
    <section class="panel"><h3>${esc(local)} vs cross-${s.rail_optimized ? "rail" : "spine"} traffic</h3>
      <table class="data compact preset-traffic"><thead><tr><th>collective</th><th>configuration</th>
      <th class="num">GPUs</th><th class="num">NVLink (of all bytes)</th><th class="num">${esc(local)}</th>
      <th class="num">crossing the spine</th><th class="num">of which a core</th>
      <th>bytes between hosts: <span class="cls-key cls-leaf"></span> leaf <span class="cls-key cls-spine"></span>
      spine <span class="cls-key cls-core"></span> core</th></tr></thead>
      <tbody>${s.runs.map(trafficRow).join("")}</tbody></table>
      <p class="hint">From the simulated flows: each flow's bytes by the highest tier its path reaches.
        ${s.rail_optimized ? "On this rail-optimized fabric a leaf is one rail of a scalable unit; NCCL's rings keep one NIC on both ends of a host (PXN hops over NVLink to the GPU on the receiver's rail), so a job inside a scalable unit stays on its rails." : "On a fabric without rails, the share that stays under one leaf."}</p></section>
    <section class="panel published"><h3>Published figures vs this simulation</h3>
      ${s.published?.length ? publishedHtml(s.published) : `<p class="muted none-published">${esc(s.published_note)}</p>`}</section>`;
  el.querySelectorAll(".preset-panel").forEach((panel) => {
    const runs = s.runs.filter((r) => r.collective === panel.dataset.collective).map((r) => {
      const rank = s.jobs.length - 1 - s.jobs.findIndex((j) => j.gpus === r.gpus);     // 0: the largest job
      return { name: `${r.config}, ${fmt.int(r.gpus)} GPUs`, color: configs.get(r.config)?.color,
               dash: JOB_DASH[Math.min(rank, JOB_DASH.length - 1)],
               summary: { rows: r.rows, roofline_GBps: r.roofline_GBps } };
    });
    busbwChart(panel.querySelector(".busbw-chart"), runs, { rooflineNames: false });
  });
}

registerView("collective", renderCollective);
registerView("preset_figure", renderPresetFigure);
registerView("fabric_health", renderFabricHealth);
registerView("figure", renderFigure);
