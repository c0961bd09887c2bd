// What a run's results look like, by the name of the result view its kind declares (the server sends it as
// `run.view`; VIEWS maps it to a function): collective (busbw and algbw against message size with the roofline, the
// nccl-tests table of the median run, hottest links, seed spread), fabric_health, figure (the published AllGather
// figure's panels beside the published claims) and summary (any other kind: its headline figures and its summary).
// Sweeps (combinations table, bars, lines against a numeric axis) are drawn by run_view.js with the helpers below.
// A figure over several seeds is {median, min, max}; the server sends each run's headline figures (`run.headline`:
// key, label, format, value) and its parameters in one line (`run.params_text`): nothing here is per kind.
import { esc, fmt } from "./twin.js";
import { barChart, lineChart, PALETTE, sizeLabel } from "./chart.js";

export const pct = (x, d = 1) => fmt.pct(x, d);
const normClass = (x) => (x == null ? "" : x >= 0.9 ? "ok" : x >= 0.5 ? "warn" : "bad");
const orDefault = (v) => v ?? "default";                      // a null parameter is the server's default
/** One parameter's value as a table shows it: lists comma-separated, null as the server's default. */
export const paramValue = (v) => (Array.isArray(v) ? v.map(orDefault).join(", ")
  : v !== null && typeof v === "object" ? JSON.stringify(v) : String(orDefault(v)));
// Normalized busbw in percent, as the published figure draws it.
const PERCENT_Y = { scale: "linear", min: 0, max: 105, ticks: [0, 20, 40, 60, 80, 100], label: "normalized busbw (%)",
                    format: (v) => `${Number(v).toFixed(0)} %` };
const NINETY = { y: 90, label: "90 %", dash: ":" };
const SHARED_ROOFLINE = "#c8ccd4";

const SHORT_TIME = new Intl.DateTimeFormat([], { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
/** A time as a list shows it: "Nov 29, 17:05" (the full date and time in its title). */
export const shortTime = (iso) => (iso
  ? `<span title="${esc(fmt.time(iso))}">${esc(SHORT_TIME.format(new Date(iso)))}</span>` : "–");
export const statusBadge = (status) => `<span class="badge ${esc(status)}">${esc(status)}</span>`;
/** "stalled" when the server says a running run's worker went silent (run.stalled, derived from its heartbeat). */
export const stalledBadge = (run) => (run.stalled
  ? ` <span class="badge failed stalled" title="${esc(run.stalled_reason)}">stalled</span>` : "");
/** A progress bar (twin.css .progress) carrying data-progress, as run_live.js applyRowFrame() updates it. */
export const progressBar = (progress) => `<div class="progress" data-progress="${progress}">
  <span style="width:${progress}%"></span></div>`;

/** A run's parameters in one line (lists and tables), as its kind words them on the server. */
export const paramsText = (run) => run.params_text
  ?? Object.entries(run.params ?? {}).map(([k, v]) => `${k}=${paramValue(v)}`).join(" ");

/** The number a figure stands for: itself, or the median of {median, min, max}. */
export const median = (v) => (v !== null && typeof v === "object" ? v.median : v);
const FORMATS = { pct: (x) => pct(x), GBps: (x) => fmt.GBps(x), int: (x) => fmt.int(x), text: (x) => String(x ?? "–"),
                  s: (x) => fmt.s(x), TBps: (x) => fmt.TBps(x),
                  num: (x) => (x == null ? "–" : Number(x).toFixed(2)) };
/** A figure as text in its format: "41.2 %", or over seeds "41.2 % (38.0 – 45.1 %)" when they differ. */
export function figureText(value, format = "pct") {
  const f = FORMATS[format] ?? FORMATS.text;
  if (value === null || typeof value !== "object") return f(value);
  return value.min === value.max ? f(value.median) : `${f(value.median)} (${f(value.min)} – ${f(value.max)})`;
}
/** The CSS class of a figure (good / fair / bad) for a share such as normalized busbw. */
export const figureClass = (value, format = "pct") => (format === "pct" ? normClass(median(value)) : "");
/** A run's first headline figure, as the runs list shows it (a sweep's is its best child's). */
export function headlineCell(run) {
  const h = run.headline?.[0];
  if (!h || h.value == null) return "–";
  const f = FORMATS[h.format] ?? FORMATS.text;
  const title = `${h.label}: ${figureText(h.value, h.format)}`;
  return `<span class="${figureClass(h.value, h.format)}" title="${esc(title)}">${esc(f(median(h.value)))}</span>`;
}

/** A row of headline figures: [value, label, class?]. */
function figureCards(items) {
  return `<div class="figures-row">${items.map(([value, label, cls = ""]) => `<div class="figure">
    <span class="value ${cls}">${esc(value)}</span><span class="label">${esc(label)}</span></div>`).join("")}</div>`;
}

/** The busbw-vs-size chart spec for one or more runs ({name, summary, color?}): one busbw series per run (and
 *  algbw if asked), each run's roofline as a dotted line (runs with the same roofline share one). */
function busbwChartSpec(runs, { algbw = false } = {}) {
  const series = [], refLines = [], several = runs.length > 1;
  const curve = (rows, key) => rows.map((r) => ({ x: r.size, y: r[key] }));
  runs.forEach(({ name, summary, color = PALETTE[0] }) => {
    const rows = summary.rows ?? [];
    series.push({ name: several ? `${name} busbw` : "busbw", color, points: curve(rows, "busbw_GBps") });
    if (algbw) series.push({ name: "algbw", color: PALETTE[2], dash: "--", points: curve(rows, "algbw_GBps") });
    const y = summary.roofline_GBps;
    if (y == null) return;
    const same = refLines.find((r) => r.y === y);
    if (same) same.names.push(name);
    else refLines.push({ y, names: [name], color: several ? color : PALETTE[1], dash: ":" });
  });
  for (const r of refLines) {
    r.label = `${several ? `${r.names.join(", ")} ` : ""}roofline ${fmt.GBps(r.y)}`;
    if (r.names.length > 1) r.color = SHARED_ROOFLINE;
  }
  return { label: "bus bandwidth against message size", series, refLines,
           x: { scale: "log2", label: "message size (bytes)", name: "size", format: sizeLabel },
           y: { scale: "linear", min: 0, label: "GB/s", format: (v) => v.toFixed(v >= 10 || v === 0 ? 0 : 1),
                tipFormat: (v) => `${v.toFixed(1)} GB/s` } };
}

/** The busbw chart with a linear / log y switch (small sizes and large clusters sit near 0 on a linear axis). */
export function busbwChart(el, runs, options) {
  const toggle = Object.assign(document.createElement("label"), { className: "chart-toggle" });
  toggle.innerHTML = '<input type="checkbox"> log scale';
  const box = document.createElement("div");
  el.replaceChildren(toggle, box);
  let chart = null;
  const draw = (log) => {
    const spec = busbwChartSpec(runs, options);
    if (log) spec.y = { ...spec.y, scale: "log", min: undefined, format: (v) => String(+v.toPrecision(3)) };
    chart?.destroy();                                     // its resize observer, before the new chart takes the box
    chart = lineChart(box, spec);
  };
  toggle.querySelector("input").addEventListener("change", (ev) => draw(ev.target.checked));
  draw(false);
}

function ncclTable(rows) {
  const row = (r) => `<tr><td class="num">${sizeLabel(r.size)}</td><td class="num">${fmt.int(r.count)}</td>
    <td>${esc(r.type)}</td><td class="num">${r.time_us.toFixed(1)}</td><td class="num">${r.algbw_GBps.toFixed(2)}</td>
    <td class="num">${r.busbw_GBps.toFixed(2)}</td>
    <td class="num ${normClass(r.norm_busbw)}">${pct(r.norm_busbw)}</td></tr>`;
  return `<table class="data compact nccl"><thead><tr><th class="num">size</th><th class="num">count</th><th>type</th>
    <th class="num">time (us)</th><th class="num">algbw (GB/s)</th><th class="num">busbw (GB/s)</th>
    <th class="num">norm busbw</th></tr></thead><tbody>${rows.map(row).join("")}</tbody></table>`;
}

function hottestTable(links, cluster) {
  if (!links?.length) return '<p class="muted">no link data</p>';
  const row = (h) => `<tr><td class="mono">${esc(h.name)}</td>
    <td class="num"><span class="util-bar" style="--u:${Math.min(1, h.utilization)}"></span> ${pct(h.utilization)}</td>
    <td class="num">${fmt.int(h.flows)}</td></tr>`;
  return `<table class="data compact"><thead><tr><th>link (direction)</th><th class="num">utilization</th>
    <th class="num">flows</th></tr></thead><tbody>${links.map(row).join("")}</tbody></table>
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
    <th class="num">large-message limit</th></tr></thead><tbody>${s.per_seed.map(row).join("")}</tbody></table>
    </details>`;
}

/** Cards of a run's headline figures (from the server's `run.headline`). */
function headlineCards(headline, extra = []) {
  const over = (v) => (v !== null && typeof v === "object" && v.min !== v.max ? " (median over seeds)" : "");
  return figureCards([...headline.map((h) => [figureText(h.value, h.format), `${h.label}${over(h.value)}`,
                                              figureClass(h.value, h.format)]), ...extra]);
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
             { bars: seedBars(s.per_seed), format: (n) => (Number.isInteger(n) ? fmt.int(n) : "") });  // seed counts
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

// ------------------------------------------------------------------------------------------------- storage
/** A checkpoint's blocked vs background time as a bar (HTML). */
export function phaseBar(s) {
  const end = s.durable_seconds || 0;
  if (!end) return "";
  const w = (a, b) => `${(100 * Math.max(0, b - a) / end).toFixed(2)}%`, blocked = s.blocked_seconds;
  return `<div class="phase blocked" style="width:${w(0, blocked)}" title="training blocked ${fmt.s(blocked)}">
      blocked ${fmt.s(blocked)}</div><div class="phase background" style="width:${w(blocked, end)}"
      title="${s.restore ? "loading" : "uploading in the background"} until ${fmt.s(end)}">
      ${s.restore ? "loaded" : "durable"} at ${fmt.s(end)}</div>`;
}

/** A checkpoint's aggregate rates over simulated time (its summary's `series`, bytes/s) against the storage's
 *  rated bandwidth (`s.rated`, from the server): drawn when the curves reach a tenth of the sustained figure, else
 *  only named (returned as the note to show). Returns that note ("" when the lines are drawn). */
export function checkpointChart(el, s) {
  const t = s.series.times, mid = (i) => (t[i] + t[i + 1]) / 2;
  const pts = (arr) => arr.map((v, i) => ({ x: mid(i), y: v / 1e12 }));
  const series = [{ name: "at the servers (stored bytes)", color: PALETTE[0], points: pts(s.series.rate), markers: false },
                  { name: "checkpoint bytes (goodput)", color: PALETTE[2], dash: "--", points: pts(s.series.goodput),
                    markers: false }];
  if (s.series.staging_rate.some((v) => v > 0)) {
    series.push({ name: "GPU <-> host copies", color: PALETTE[1], dash: ":", points: pts(s.series.staging_rate),
                  markers: false });
  }
  if (s.series.loading_rate.some((v) => v > 0)) {
    series.push({ name: "training-data reads", color: PALETTE[4], dash: "-.", points: pts(s.series.loading_rate),
                  markers: false });
  }
  const rated = s.rated, peak = Math.max(...s.series.rate, ...s.series.staging_rate, ...s.series.loading_rate);
  const onScale = rated && peak >= rated.sustained / 10;
  lineChart(el, {
    label: "aggregate rate over simulated time", height: 260, series,
    x: { scale: "linear", label: "simulated time (s)", name: "t", format: (v) => fmt.s(v) },
    y: { scale: "linear", min: 0, label: "TB/s", format: (v) => v.toFixed(v >= 10 || v === 0 ? 0 : 1),
         tipFormat: (v) => `${v.toFixed(2)} TB/s` },
    refLines: onScale ? [{ y: rated.sustained / 1e12, label: `rated sustained ${fmt.TBps(rated.sustained)}` },
                         { y: rated.peak / 1e12, label: `rated peak ${fmt.TBps(rated.peak)}`, dash: "--" }] : [],
  });
  if (rated) el.title = rated.source;
  return !rated || onScale ? "" : `rated ${fmt.TBps(rated.sustained)} sustained, ${fmt.TBps(rated.peak)} peak: off `
    + `this scale (peak here ${fmt.TBps(peak)})`;
}

/** checkpoint: headline figures, blocked vs durable, the timeline, the bottlenecks and the busiest of each tier. */
export function renderCheckpoint(el, s, { run }) {
  const dl = s.data_loading;
  el.innerHTML = `${headlineCards(run.headline ?? [], [
    [`${fmt.int(s.gpus)} GPUs`, `${fmt.int(s.hosts_used)} hosts, ${fmt.int(s.writers)} writing`],
    [`${fmt.int(s.servers_used)} servers`, `${s.store}, ${s.redundancy} (x${(+s.amplification).toFixed(2)})`],
    ...(dl ? [[fmt.pct(dl.kept, 0), "of the training-data reads kept"]] : [])])}
    <section class="panel"><h3>Timeline</h3><div class="phase-bar">${phaseBar(s)}</div><div class="timeline"></div>
      <p class="hint timeline-note"></p></section>
    <div class="grid-2 results-grid">
      <section class="panel"><h3>Bottlenecks</h3>${resourceTable(s.bottlenecks, "name")}</section>
      <section class="panel"><h3>Busiest resource of each tier</h3>${resourceTable(s.tiers, "busiest")}</section>
    </div>`;
  el.querySelector(".timeline-note").textContent = checkpointChart(el.querySelector(".timeline"), s);
}

function resourceTable(rows, nameKey) {
  return `<table class="data"><thead><tr><th>tier</th><th>resource</th><th class="num">utilization</th></tr></thead>
    <tbody>${(rows ?? []).map((r) => `<tr><td>${esc(r.tier)}</td><td class="mono">${esc(r[nameKey])}</td>
    <td class="num">${pct(r.utilization ?? r.max_utilization)}</td></tr>`).join("")}</tbody></table>`;
}

/** storage (fan-out): the time per client count and what bounds it. */
export function renderFanout(el, s, { run }) {
  el.innerHTML = `${headlineCards(run.headline ?? [], [[fmt.int(s.clients), `clients on ${fmt.int(s.hosts)} hosts`],
    [`${fmt.int(s.files)} x ${sizeLabel(s.file_size)}`, `files, ${s.ops_per_file} metadata operations each`]])}
    <section class="panel"><h3>Time against clients</h3><div class="fanout-chart"></div></section>`;
  if (s.sweep?.length) {
    lineChart(el.querySelector(".fanout-chart"), {
      label: "time against clients", height: 240,
      series: [{ name: "every client has read every file", points: s.sweep.map((r) => ({ x: r.clients, y: r.seconds })) }],
      x: { scale: "log2", label: "clients", name: "clients", format: (v) => fmt.int(v) },
      y: { scale: "linear", min: 0, label: "s", format: (v) => String(+v.toPrecision(3)), tipFormat: (v) => fmt.s(v) },
    });
  }
}

// --------------------------------------------------------------------------------------------------- sweeps
const comboLabel = (names, r) => names.map((n) => `${n}=${orDefault(r[n])}`).join(" ");

/** A sweep's children (rows with run, axis values, status, progress and the swept kind's headline figures, their
 *  medians over seeds) as a table; rows carry data-run so that live frames can update them. `headline`: the swept
 *  kind's headline declarations ({key, label, format}). */
export function sweepTable(axes, rows, best, headline) {
  const names = Object.keys(axes);
  const row = (r) => `<tr data-run="${r.run}"${best?.run === r.run ? ' class="best"' : ""}>
    <td><a href="/experiments/${r.run}/">#${r.run}</a></td>
    ${names.map((n) => `<td>${esc(orDefault(r[n]))}</td>`).join("")}
    <td>${statusBadge(r.status)}</td><td>${progressBar(r.progress ?? (r.status === "succeeded" ? 100 : 0))}</td>
    ${headline.map((h) => `<td class="num ${figureClass(r[h.key], h.format)}"
      title="${esc(figureText(r[h.key], h.format))}">${esc((FORMATS[h.format] ?? FORMATS.text)(median(r[h.key])))}</td>`)
      .join("")}
    <td class="muted">${esc(r.error || r.worker || "")}</td></tr>`;
  return `<table class="data compact sweep-children"><thead><tr><th>run</th>${
    names.map((n) => `<th>${esc(n)}</th>`).join("")}<th>status</th><th>progress</th>${
    headline.map((h) => `<th class="num" title="${esc(h.label)} (median over seeds)">${esc(h.label)}</th>`).join("")}
    <th>worker</th></tr></thead><tbody>${rows.map(row).join("")}</tbody></table>`;
}

/** The bar chart of the ranking figure (`key`, a share: its median) per combination, the best one highlighted. */
export function sweepBars(el, axes, rows, best, key) {
  const names = Object.keys(axes);
  barChart(el, { format: (v) => `${(100 * v).toFixed(0)} %`, max: 1, refLines: [{ value: 0.9, label: "90 %" }],
                 highlight: rows.findIndex((r) => r.run === best?.run),
                 bars: rows.map((r) => ({ label: comboLabel(names, r), value: median(r[key]) ?? null,
                                          href: `/experiments/${r.run}/`, note: r.status })) });
}

/** The ranking figure (`key`, a share: its median) against the sweep's last numeric axis (e.g. qps), one line per
 *  combination of the other axes (e.g. per routing). Draws nothing when no axis is numeric. */
export function sweepLines(el, axes, rows, key, label) {
  const numeric = Object.entries(axes).filter(([, v]) => v.length > 1 && v.every((x) => typeof x === "number"));
  if (!numeric.length) return;
  const [name, values] = numeric[numeric.length - 1];
  const others = Object.keys(axes).filter((k) => k !== name);
  const groups = new Map();
  for (const r of rows) {
    const line = comboLabel(others, r) || label;
    if (!groups.has(line)) groups.set(line, []);
    const y = median(r[key]);
    groups.get(line).push({ x: r[name], y: y == null ? null : 100 * y });
  }
  const xs = [...new Set(values)].sort((a, b) => a - b);
  lineChart(el, { label: `${label} against ${name}`, height: 260, y: { ...PERCENT_Y, label: `${label} (%)` },
                  refLines: [NINETY],
                  x: { scale: xs[0] > 0 ? "log2" : "linear", ticks: xs, label: name, name, format: String },
                  series: [...groups].map(([line, pts]) => ({ name: line, points: pts.sort((a, b) => a.x - b.x) })) });
}

// --------------------------------------------------------------------------------------------------- figure
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

// ---------------------------------------------------------------------------------------------- any kind
/** summary: any other kind: its headline figures, then its summary as JSON. */
export function renderSummary(el, s, { run }) {
  el.innerHTML = `${headlineCards(run.headline ?? [])}
    <section class="panel"><h3>Summary</h3><pre class="mono">${esc(JSON.stringify(s, null, 1))}</pre></section>`;
}

/** job: a training job's step (sim.jobs.job JobResult.to_dict()): headline figures, the step's parts as bars (compute,
 *  exposed communication per dimension, bubble), a link to the job on its cluster's Jobs page, then the JSON. */
export function renderJob(el, s, { cluster, run }) {
  const jobLink = s.job && cluster ? `<a href="/clusters/${encodeURIComponent(cluster)}/jobs/?job=${s.job}">job #${s.job}
    on the Jobs page</a>` : "";
  el.innerHTML = `${headlineCards(run.headline ?? [])}
    <section class="panel"><h3>Step breakdown (s) ${jobLink}</h3><div class="job-breakdown-chart"></div></section>
    <section class="panel"><h3>Summary</h3><pre class="mono">${esc(JSON.stringify(s, null, 1))}</pre></section>`;
  const parts = Object.entries(s.breakdown ?? {}).filter(([k]) => k !== "step");
  if (parts.length) {
    barChart(el.querySelector(".job-breakdown-chart"), {
      bars: parts.map(([k, v], i) => ({ label: k === "compute" || k === "bubble" ? k : `exposed ${k}`, value: v,
                                         color: PALETTE[i % PALETTE.length] })),
      format: (v) => `${Number(v).toFixed(3)} s` });
  }
}

/** jobs: several jobs sharing the fabric (sim.jobs.job JobsResult.to_dict()): the worst slowdown, then per job its
 *  model, GPUs, layout, step alone and together, slowdown and MFU together (each linked to its Job), then the JSON. */
export function renderJobs(el, s, { cluster, run }) {
  const link = (j) => (j.job && cluster
    ? `<a href="/clusters/${encodeURIComponent(cluster)}/jobs/?job=${j.job}">${esc(j.name)}</a>` : esc(j.name));
  const slow = (x) => x - 1;
  const sec = (x) => (x == null ? "–" : `${Number(x).toFixed(4)} s`);      // slowdowns of a few % stay visible
  const row = (j) => {
    const l = j.layout ?? {};
    return `<tr><td>${link(j)}</td><td>${esc(j.model?.name ?? "")}</td><td class="num">${fmt.int(l.gpus)}</td>
      <td class="mono">${l.tp} x ${l.cp} x ${l.pp} x ${l.dp}</td><td class="num">${sec(j.alone_step_time)}</td>
      <td class="num">${sec(j.step_time)}</td>
      <td class="num ${slow(j.slowdown) > 0.05 ? "warn" : ""}">${pct(slow(j.slowdown))}</td>
      <td class="num">${pct(j.mfu)}</td></tr>`;
  };
  el.innerHTML = `${headlineCards(run.headline ?? [], [[fmt.int(s.gpus), `GPUs in ${(s.jobs ?? []).length} jobs`]])}
    <section class="panel"><h3>Jobs together and alone</h3>
    <table class="data jobs-table"><thead><tr><th>job</th><th>model</th><th class="num">GPUs</th>
    <th>tp x cp x pp x dp</th><th class="num">step alone</th><th class="num">step together</th>
    <th class="num">slowdown</th><th class="num">MFU together</th></tr></thead>
    <tbody>${(s.jobs ?? []).map(row).join("")}</tbody></table></section>
    <section class="panel"><h3>Summary</h3><pre class="mono">${esc(JSON.stringify(s, null, 1))}</pre></section>`;
}

/** failures: a long job under failures (twin/capabilities/failures/kinds.py): headline figures, the effective time over
 *  seeds, the mean time lost per phase, a link to the run on its cluster's Reliability page (its timeline, losses
 *  and sweep drawn), then the summary without the replayed timeline and the per-seed list. */
export function renderFailures(el, s, { cluster, run }) {
  const d = s.distribution ?? {}, e = d.effective_ratio ?? {};
  const link = cluster ? `<a href="/clusters/${encodeURIComponent(cluster)}/reliability/?run=${run.id}">its
    timeline, losses${s.sweep ? " and interval sweep" : ""} on the Reliability page</a>` : "";
  const phases = Object.entries(d.lost_mean?.by_phase ?? {}).filter(([, v]) => v > 0)
    .map(([k, v]) => `<tr><td>${esc(k)}</td><td class="num">${(v / 3600).toFixed(2)} h</td></tr>`).join("");
  const { replay, per_seed: perSeed, ...rest } = s;
  el.innerHTML = `${headlineCards(run.headline ?? [], [[`${fmt.int(d.count)} seeds`,
    `effective p5 ${pct(e.p5)} · p95 ${pct(e.p95)}`]])}
    <section class="panel"><h3>Mean time lost per phase ${link}</h3><table class="data"><tbody>${phases}</tbody></table>
    </section>
    <section class="panel"><h3>Summary <span class="muted">(${fmt.int(perSeed?.length)} seeds' figures and seed
      ${replay?.seed ?? "–"}'s timeline left out)</span></h3>
      <pre class="mono">${esc(JSON.stringify(rest, null, 1))}</pre>
    </section>`;
}

/** debug: a rehearsal (twin/capabilities/debug/kinds.py): the verdict and the culprit (its explanation, ranks, hosts and
 *  links), links to the Debug page (heatmap, stragglers), the GPU page coloured by it, the dumps; then the JSON. */
export function renderDebug(el, s, { cluster, run }) {
  const c = s.culprit, at = (what) => `/clusters/${encodeURIComponent(cluster ?? "")}/${what}`;
  const few = (xs, f) => `${xs.slice(0, 12).map(f).join(", ")}${xs.length > 12 ? ` and ${fmt.int(xs.length - 12)} more` : ""}`;
  const item = (kind) => (x) => (x.id != null ? `<a href="/inventory/${kind}/${x.id}/">${esc(x.name)}</a>` : esc(x.name));
  const culprit = c ? `<ul class="debug-culprit">
      <li>${esc(c.kind)} at ${esc(c.op)} #${fmt.int(c.collective_seq_id)} of ${esc(c.process_group?.desc ?? "")}
        (${fmt.int(c.process_group?.size)} ranks, ${fmt.int(c.waiting_ranks)} waiting)</li>
      <li>ranks <span class="mono">${few(c.ranks ?? [], (r) => fmt.int(r))}</span></li>
      ${(c.hosts ?? []).length ? `<li>hosts ${few(c.hosts, item("host"))}</li>` : ""}
      ${(c.links ?? []).length ? `<li>links ${few(c.links, item("link"))}</li>` : ""}</ul>` : "";
  const pages = cluster ? `<a href="${at("debug/")}?run=${run.id}">Debug page</a> ·
    <a href="${at("gpus/")}?color=debug&run=${run.id}">GPU page coloured by it</a> · ` : "";
  el.innerHTML = `${headlineCards(run.headline ?? [], [[s.verdict ?? "", "verdict"]])}
    <section class="panel"><h3>${c ? "Culprit" : "No culprit"}</h3>
      <p id="debug-explanation">${esc(c?.explanation ?? (s.verdict === "slow" ? "no hang or desync; see the straggler "
        + "ranking" : "a clean job"))}</p>${culprit}
      <p class="hint">inject <span class="mono">${esc(s.inject ?? "none")}</span> · ${pages}
        <a href="${esc(s.dumps_url ?? "")}" download>dumps (tar.gz)</a></p></section>
    <section class="panel"><h3>Summary</h3><pre class="mono">${esc(JSON.stringify(s, null, 1))}</pre></section>`;
}

/** startup: the process-group start-up model over scale (sim.debug.startup.model): per scale the groups, the total, its
 *  dominant term and the total with each optimization; the curve is on the Debug page; then the JSON. */
export function renderStartup(el, s, { cluster, run }) {
  const secs = (x) => (x == null ? "–" : x >= 100 ? `${fmt.int(x)} s` : `${Number(x).toFixed(2)} s`);
  const rows = s.rows ?? [], opts = (rows[0]?.optimizations ?? []).map((o) => o.name);
  const page = cluster ? ` <a href="/clusters/${encodeURIComponent(cluster)}/debug/?run=${run.id}">the curve on the
    Debug page</a>` : "";
  el.innerHTML = `${headlineCards(run.headline ?? [])}
    <section class="panel"><h3>Start-up over scale${page}</h3>
    <table class="data compact startup-rows"><thead><tr><th class="num">ranks</th><th class="num">groups</th>
    <th class="num">total</th><th>dominant</th>${opts.map((o) => `<th class="num">${esc(o)}</th>`).join("")}</tr></thead>
    <tbody>${rows.map((r) => `<tr><td class="num">${fmt.int(r.gpus)}</td><td class="num">${fmt.int(r.groups?.total)}</td>
      <td class="num">${secs(r.total_s)}</td><td>${esc(r.dominant ?? "")}</td>${opts.map((o) =>
      `<td class="num">${secs((r.optimizations ?? []).find((x) => x.name === o)?.total_s)}</td>`).join("")}</tr>`)
      .join("")}</tbody></table></section>
    <section class="panel"><h3>Summary</h3><pre class="mono">${esc(JSON.stringify(s, null, 1))}</pre></section>`;
}

/** The result views by the name a kind declares (`run.view`): f(el, summary, {cluster, run, published}). */
export const VIEWS = { collective: renderCollective, fabric_health: renderFabricHealth, figure: renderFigure,
                       job: renderJob, jobs: renderJobs, checkpoint: renderCheckpoint, storage: renderFanout,
                       failures: renderFailures, debug: renderDebug, startup: renderStartup, summary: renderSummary };
