// What a run's results look like: the result view its kind declares (the server sends its name as `run.view`), found
// by name in registry.js (each capability's browser module registers its own views: frontend/js/capabilities/). Here
// the generic ones and what they share: summary (any kind without a view of its own: its headline values and its
// summary as JSON), the sweeps' tables, bars and lines (drawn by run_view.js), the value cards, formats and charts.
// A value over several seeds is {median, min, max}; the server sends each run's headline values (`run.headline`:
// key, label, format, value) and its parameters in one line (`run.params_text`): nothing here is per kind.
import { esc, fmt } from "./twin.js";
import { barChart, lineChart, PALETTE, sizeLabel } from "./chart.js";
import { registerView } from "./registry.js";

export const pct = (x, d = 1) => fmt.pct(x, d);
export const normClass = (x) => (x == null ? "" : x >= 0.9 ? "ok" : x >= 0.5 ? "warn" : "bad");
const orDefault = (v) => v ?? "default";                      // a null parameter is the server's default
/** One parameter's value as a table shows it: lists comma-separated, null as the server's default. */
export const paramValue = (v) => (Array.isArray(v) ? v.map(orDefault).join(", ")
  : v !== null && typeof v === "object" ? JSON.stringify(v) : String(orDefault(v)));
// Normalized busbw in percent (a share of the roofline): the y axis of sweep lines and of the capabilities' charts.
export const PERCENT_Y = { scale: "linear", min: 0, max: 105, ticks: [0, 20, 40, 60, 80, 100], label: "normalized busbw (%)",
                    format: (v) => `${Number(v).toFixed(0)} %` };
export const NINETY = { y: 90, label: "90 %", dash: ":" };
const SHARED_ROOFLINE = "#c8ccd4";

/** A time as a list shows it: the pages' one date format, how long ago on hover (fmt.when). */
export const shortTime = (iso) => fmt.when(iso);
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

/** The number a value stands for: itself, or the median of {median, min, max}. */
export const median = (v) => (v !== null && typeof v === "object" ? v.median : v);
const FORMATS = { pct: (x) => pct(x), error: (x) => pct(x, 2), GBps: (x) => fmt.GBps(x), int: (x) => fmt.int(x),
                  text: (x) => String(x ?? "–"), s: (x) => fmt.s(x), TBps: (x) => fmt.TBps(x),
                  num: (x) => (x == null ? "–" : Number(x).toFixed(2)) };
/** A value as text in its format: "41.2 %", or over seeds "41.2 % (38.0 – 45.1 %)" when they differ. */
export function figureText(value, format = "pct") {
  const f = FORMATS[format] ?? FORMATS.text;
  if (value === null || typeof value !== "object") return f(value);
  return value.min === value.max ? f(value.median) : `${f(value.median)} (${f(value.min)} – ${f(value.max)})`;
}
/** The CSS class of a value (good / fair / bad) for a share such as normalized busbw. */
export const figureClass = (value, format = "pct") => (format === "pct" ? normClass(median(value)) : "");
/** A run's first headline value, as the runs list shows it (a sweep's is its best child's). */
export function headlineCell(run) {
  const h = run.headline?.[0];
  if (!h || h.value == null) return "–";
  const f = FORMATS[h.format] ?? FORMATS.text;
  const title = `${h.label}: ${figureText(h.value, h.format)}`;
  return `<span class="${figureClass(h.value, h.format)}" title="${esc(title)}">${esc(f(median(h.value)))}</span>`;
}

/** A row of headline figures: [value, label, class?]. */
export function figureCards(items) {
  return `<div class="figures-row">${items.map(([value, label, cls = ""]) => `<div class="figure">
    <span class="value ${cls}">${esc(value)}</span><span class="label">${esc(label)}</span></div>`).join("")}</div>`;
}

/** Cards of a run's headline figures (from the server's `run.headline`). */
export function headlineCards(headline, extra = []) {
  const over = (v) => (v !== null && typeof v === "object" && v.min !== v.max ? " (median over seeds)" : "");
  return figureCards([...headline.map((h) => [figureText(h.value, h.format), `${h.label}${over(h.value)}`,
                                              figureClass(h.value, h.format)]), ...extra]);
}

/** The busbw-vs-size chart spec for one or more runs ({name, summary, color?, dash?}): one busbw series per run (and
 *  algbw if asked), each run's roofline as a dotted line (runs with the same roofline share one, labelled with
 *  their names unless `rooflineNames` is false: many curves of one cluster share one roofline). */
function busbwChartSpec(runs, { algbw = false, rooflineNames = true } = {}) {
  const series = [], refLines = [], several = runs.length > 1;
  const curve = (rows, key) => rows.map((r) => ({ x: r.size, y: r[key] }));
  runs.forEach(({ name, summary, color = PALETTE[0], dash }) => {
    const rows = summary.rows ?? [];
    series.push({ name: several ? `${name} busbw` : "busbw", color, dash, points: curve(rows, "busbw_GBps") });
    if (algbw) series.push({ name: "algbw", color: PALETTE[2], dash: "--", points: curve(rows, "algbw_GBps") });
    const y = summary.roofline_GBps;
    if (y == null) return;
    const same = refLines.find((r) => r.y === y);
    if (same) same.names.push(name);
    else refLines.push({ y, names: [name], color: several ? color : PALETTE[1], dash: ":" });
  });
  for (const r of refLines) {
    r.label = `${several && rooflineNames ? `${r.names.join(", ")} ` : ""}roofline ${fmt.GBps(r.y)}`;
    if (r.names.length > 1) r.color = SHARED_ROOFLINE;
  }
  return { label: "bus bandwidth against message size", series, refLines,
           x: { scale: "log2", label: "message size (bytes)", name: "size", format: sizeLabel },
           y: { scale: "linear", min: 0, label: "bandwidth (GB/s)", format: fmt.num, tipFormat: fmt.GBps } };
}

/** The busbw chart (chart.js offers the log y switch: small sizes and large clusters sit near 0 on a linear axis). */
export function busbwChart(el, runs, options) {
  return lineChart(el, busbwChartSpec(runs, options));
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
    <th>worker</th></tr></thead><tbody>${fmt.rows(rows.map(row))}</tbody></table>`;
}

/** The bar chart of the ranking value (`key`, a share: its median) per combination, the best one highlighted. */
export function sweepBars(el, axes, rows, best, key) {
  const names = Object.keys(axes);
  barChart(el, { format: (v) => fmt.pct(v), max: 1, refLines: [{ value: 0.9, label: "90 %" }], unit: "share (%)",
                 label: `${key} by combination`,
                 highlight: rows.findIndex((r) => r.run === best?.run),
                 bars: rows.map((r) => ({ label: comboLabel(names, r), value: median(r[key]) ?? null,
                                          href: `/experiments/${r.run}/`, note: r.status })) });
}

/** The ranking value (`key`, a share: its median) against the sweep's last numeric axis (e.g. qps), one line per
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

// ---------------------------------------------------------------------------------------------- any kind
/** summary: any other kind: its headline figures, then its summary as JSON. */
export function renderSummary(el, s, { run }) {
  el.innerHTML = `${headlineCards(run.headline ?? [])}
    <section class="panel"><h3>Summary</h3><pre class="mono">${esc(JSON.stringify(s, null, 1))}</pre></section>`;
}

registerView("summary", renderSummary);
