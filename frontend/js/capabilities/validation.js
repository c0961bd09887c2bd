// The validation capability in the browser (twin/capabilities/validation): the result view of a `validate` run (its
// summary is what `python -m sim validate --json` prints: CONTRACTS.md, docs/validation.md), drawn on the run's page,
// and the pieces the Validation page (js/validation.js) draws with: the error by kind (count, median, p90, max after
// the fitted factors, the median before them, the cross-validated median), predicted against measured on log-log
// axes with the y = x line and a +-10 % band (each point's source on hover, a click picks it: its link), the fitted
// factors, the sources and every observation.
import { esc, fmt } from "../twin.js";
import { lineChart, PALETTE } from "../chart.js";
import { registerView } from "../registry.js";
import { headlineCards } from "../run_results.js";

export const BAND = 0.10;                        // the +-10 % band around y = x
const LINE = "#8b94a7", BAND_COLOR = "#3fb950";
/** Four significant digits, trailing zeros of the fraction dropped: 9000, 480.1, 0.4, 1.23e+7. */
export const num = (x) => (x == null ? "–" : Number(x).toPrecision(4).replace(/(\.\d*?)0+(e|$)/, "$1$2")
  .replace(/\.(e|$)/, "$1"));
const COMPACT = new Intl.NumberFormat("en-US", { notation: "compact", maximumSignificantDigits: 3 });
const tick = (x) => (x >= 1e-3 ? COMPACT.format(x) : Number(x).toExponential(0));
export const err = (x) => (x == null ? "–" : `${(100 * x).toFixed(1)} %`);
export const signed = (x) => (x == null ? "–" : `${x >= 0 ? "+" : ""}${(100 * x).toFixed(1)} %`);
const errClass = (x) => (x == null ? "" : Math.abs(x) <= BAND ? "ok" : Math.abs(x) <= 0.35 ? "warn" : "bad");

/** The kinds' colours, in a stable order (the order they are listed in). */
export function kindColors(kinds) {
  return new Map(kinds.map((k, i) => [k, PALETTE[i % PALETTE.length]]));
}

/** Error by kind: one row for all and one per kind, from the engine's blocks (`result`: overall, kinds, before,
 *  cross_validated); `selected` (overall, kinds, optional before): the figures over the observations the filters
 *  keep, as a last row when given. */
export function summaryHtml(result, { selected = null, label = "the corpus" } = {}) {
  const before = result.before ?? {};
  const row = (name, a, b, cv, attrs = "") => `<tr ${attrs}><td>${esc(name)}</td><td class="num">${fmt.int(a?.count)}</td>
    <td class="num ${errClass(a?.median)}">${err(a?.median)}</td><td class="num">${err(a?.p90)}</td>
    <td class="num">${err(a?.max)}</td><td class="num">${err(b?.median)}</td><td class="num">${err(cv)}</td></tr>`;
  const cv = result.cross_validated;
  const rows = [row("all", result.overall, before.overall, cv?.median, 'data-kind=""'),
    ...Object.entries(result.kinds ?? {}).map(([k, a]) => row(k, a, before.kinds?.[k], null,
                                                                `data-kind="${esc(k)}"`))];
  if (selected) {
    rows.push(row("selected by the filters", selected.overall, selected.before?.overall, null,
                  'class="selected-row" data-kind="selected"'));
  }
  return `<table class="data val-summary" data-export-name="error by kind (${esc(label)})"><thead><tr><th>kind</th>
    <th class="num">observations</th><th class="num">median |error|</th><th class="num">p90</th><th class="num">max</th>
    <th class="num">median before the fitted factors</th>
    <th class="num">cross-validated median${cv ? ` (${cv.folds} folds)` : ""}</th></tr></thead>
    <tbody>${fmt.rows(rows)}</tbody></table>`;
}

/** What a point's readout says: the observation and its source (title, where, note), its figures. */
export function pointHtml(o, sources) {
  const src = sources.get(o.source);
  return `<div><b>${esc(o.label ?? o.id)}</b></div>
    <div>${esc(src?.title ?? o.title ?? o.source ?? "")}${src?.date ? ` <span class="muted">(${esc(src.date)})</span>` : ""}</div>
    ${o.where ? `<div class="muted">where: ${esc(o.where)}</div>` : ""}
    ${o.hardware ? `<div class="muted">hardware: ${esc(o.hardware)}</div>` : ""}
    ${o.note ? `<div class="muted">note: ${esc(o.note)}</div>` : ""}
    <div>${esc(o.kind)}${o.gpu ? ` · ${esc(o.gpu)}` : ""}${o.cluster ? ` · ${esc(o.cluster)}` : ""}</div>
    <div>measured <b>${num(o.measured)}</b> ${esc(o.unit ?? "")} · predicted <b>${num(o.predicted)}</b> ·
      error <b class="${errClass(o.error)}">${signed(o.error)}</b></div>
    ${o.excused ? `<div class="warn">excused: ${esc(o.excused)}</div>` : ""}`;
}

/**
 * Predicted against measured in `el`, log-log: one series per kind (colours: kindColors), the y = x line, the
 * +-10 % band around it. Observations whose measured or predicted value is not above 0 cannot be drawn on log axes
 * and are counted in el.dataset.skipped. `sources`: Map id -> source; `onPoint(o)`: a click on a point.
 */
export function scatterChart(el, observations, { sources = new Map(), onPoint = null, colors = null,
                                                 label = "predicted against measured" } = {}) {
  const drawn = observations.filter((o) => o.measured > 0 && o.predicted > 0);
  el.dataset.points = String(drawn.length);
  el.dataset.skipped = String(observations.length - drawn.length);
  const kinds = [...new Set(drawn.map((o) => o.kind))];
  const color = colors ?? kindColors(kinds);
  const values = drawn.flatMap((o) => [o.measured, o.predicted]);
  const lo = values.length ? Math.min(...values) / 1.5 : 0.1, hi = values.length ? Math.max(...values) * 1.5 : 10;
  const ends = [lo, hi];
  return lineChart(el, {
    label, height: 420, hover: "point", logSwitch: false,
    x: { scale: "log", label: "measured", name: "measured", format: tick, min: lo, max: hi },
    y: { scale: "log", label: "predicted by the twin", format: tick, tipFormat: num, min: lo, max: hi },
    series: [
      { name: `±${100 * BAND} %`, color: BAND_COLOR, band: true, whiskers: false, line: false, markers: false,
        hover: false, ref: true, points: ends.map((v) => ({ x: v, y: v, lo: v * (1 - BAND), hi: v * (1 + BAND) })) },
      { name: "y = x", color: LINE, dash: "--", markers: false, hover: false, ref: true,
        points: ends.map((v) => ({ x: v, y: v })) },
      ...kinds.map((k) => ({ name: k, color: color.get(k), line: false,
                             points: drawn.filter((o) => o.kind === k)
                               .map((o) => ({ x: o.measured, y: o.predicted, id: o.id, o })) })),
    ],
    pointTip: (p) => pointHtml(p.o, sources),
    onPoint: onPoint && ((p) => onPoint(p.o)),
  });
}

/** The fitted factors: prior, fitted value, bounds, what each is. */
export function factorsHtml(factors) {
  const rows = (factors ?? []).map((f) => `<tr data-factor="${esc(f.name)}"><td class="mono">${esc(f.name)}</td>
    <td class="num">${num(f.prior)}</td><td class="num">${num(f.value)}</td>
    <td class="num">${num(f.low)} – ${num(f.high)}</td><td>${esc(f.doc ?? "")}</td></tr>`);
  return `<table class="data val-factors" data-export-name="fitted factors"><thead><tr><th>factor</th>
    <th class="num">prior</th><th class="num">fitted</th><th class="num">bounds</th><th>what it is</th></tr></thead>
    <tbody>${fmt.rows(rows)}</tbody></table>`;
}

/** The sources: title (linked), publisher, date, how many observations. */
export function sourcesHtml(sources) {
  const rows = (sources ?? []).map((s) => `<tr data-source="${esc(s.id)}"><td><a href="${esc(s.url)}"
    target="_blank" rel="noopener noreferrer">${esc(s.title)}</a><div class="muted mono">${esc(s.id)}</div></td>
    <td>${esc(s.publisher ?? "")}</td><td>${esc(s.date ?? "")}</td><td class="num">${fmt.int(s.count)}</td></tr>`);
  return `<table class="data val-sources" data-export-name="sources"><thead><tr><th>source</th><th>publisher</th>
    <th>date</th><th class="num">observations</th></tr></thead><tbody>${fmt.rows(rows)}</tbody></table>`;
}

/** Every observation: what, kind, GPU, measured, predicted, signed error, its source (linked) and where in it. */
export function observationsHtml(observations, sources = new Map()) {
  const rows = observations.map((o) => `<tr data-id="${esc(o.id)}"><td>${esc(o.label ?? o.id)}</td><td>${esc(o.kind)}</td>
    <td>${esc(o.gpu ?? "")}</td><td class="num">${num(o.measured)} ${esc(o.unit ?? "")}</td>
    <td class="num">${num(o.predicted)}</td>
    <td class="num ${errClass(o.error)}" data-value="${o.error}">${signed(o.error)}</td>
    <td>${o.url ? `<a href="${esc(o.url)}" target="_blank" rel="noopener noreferrer">${esc(sources.get(o.source)?.title
      ?? o.title ?? o.source)}</a>` : esc(o.source ?? "")}${o.where ? ` <span class="muted">· ${esc(o.where)}</span>` : ""}
      ${o.excused ? ` <span class="warn" title="${esc(o.excused)}">excused</span>` : ""}</td></tr>`);
  return `<table class="data val-observations" data-export-name="observations"><thead><tr><th>what</th><th>kind</th>
    <th>GPU</th><th class="num">measured</th><th class="num">predicted</th><th class="num">error</th>
    <th>source</th></tr></thead><tbody>${fmt.rows(rows)}</tbody></table>`;
}

/** Whether the thresholds held, and which broke. */
export function verdictHtml(s) {
  if (s.passed == null) return "";
  return `<p class="val-verdict ${s.passed ? "ok" : "bad"}" data-passed="${s.passed ? 1 : 0}">${s.passed
    ? "the thresholds hold" : `thresholds broken: ${esc((s.broken ?? []).join("; "))}`}</p>`;
}

export const sourceMap = (sources) => new Map((sources ?? []).map((s) => [s.id, s]));

/** validation: a validate run's result (see the module's comment). */
export function renderValidation(el, s, { run } = {}) {
  const sources = sourceMap(s.sources);
  el.innerHTML = `${headlineCards(run?.headline ?? [])}${verdictHtml(s)}
    <h3>Error by kind <span class="muted">absolute relative error |predicted / measured - 1|</span></h3>
    <div class="table-scroll">${summaryHtml(s)}</div>
    <h3>Predicted against measured <span class="muted">log-log; y = x and ±10 %; hover a point for its source</span></h3>
    <div class="val-scatter"></div>
    <h3>Fitted factors</h3><div class="table-scroll">${factorsHtml(s.factors)}</div>
    <h3>Sources</h3><div class="table-scroll">${sourcesHtml(s.sources)}</div>
    <h3>Observations</h3><div class="table-scroll">${observationsHtml(s.observations ?? [], sources)}</div>`;
  scatterChart(el.querySelector(".val-scatter"), s.observations ?? [], { sources });
}

registerView("validation", renderValidation);
