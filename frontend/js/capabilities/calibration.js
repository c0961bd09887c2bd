// The calibration capability in the browser (twin/capabilities/calibration): the result view of a `calibrate` run
// (its summary is what `python -m sim calibrate --json` prints, docs/calibration.md), drawn on the run's page and on
// the Calibration page: headline figures, predicted against measured (before and after the fit, with the 1:1
// line; log-log when the values span decades), the median |error| by kind, the fitted parameters with their 95 %
// intervals and the Jacobian's rank, the parameters the fit refused (the data cannot determine them) with the
// measurement that would, the held-out error, every observation, and the form that saves the fit as a calibration
// profile (POST /api/calibrations/, with the held-out error and the refusals).
import { api, ApiError, esc, fmt, toast } from "../twin.js";
import { barChart, lineChart, PALETTE } from "../chart.js";
import { registerView } from "../registry.js";
import { fieldErrors, showErrors } from "../run_form.js";
import { headlineCards } from "../run_results.js";

const LOG_SPAN = 100;                   // values spanning this factor (two decades) or more: log-log axes
const BEFORE = PALETTE[1], AFTER = PALETTE[0], ONE_TO_ONE = "#8b94a7";
const num = (x) => (x == null ? "–" : Number(x).toPrecision(4).replace(/\.?0+(e|$)/, "$1"));
const signed = (x) => (x == null ? "–" : `${x >= 0 ? "+" : ""}${(100 * x).toFixed(2)} %`);

/** Predicted against measured: before and after as two series, the 1:1 line. */
function scatter(el, s) {
  const rows = s.entries;
  const values = rows.flatMap((r) => [r.measured, r.before.predicted, r.after.predicted]).filter((v) => v > 0);
  const lo = Math.min(...values), hi = Math.max(...values), log = hi / lo >= LOG_SPAN;
  const ends = log ? [lo / 1.2, hi * 1.2] : [0, hi * 1.05];
  const point = (r, when) => ({ x: r.measured, y: r[when].predicted });
  const axis = (label) => ({ scale: log ? "log" : "linear", label, format: num, ...(log ? {} : { min: 0 }) });
  return lineChart(el, {
    label: "predicted against measured", height: 340, logSwitch: false,
    x: { ...axis("measured"), name: "measured" }, y: { ...axis("predicted"), tipFormat: num },
    series: [{ name: "1:1", color: ONE_TO_ONE, dash: "--", markers: false, ref: true, points: ends.map((v) => ({ x: v, y: v })) },
             { name: "before the fit", color: BEFORE, line: false, points: rows.map((r) => point(r, "before")) },
             { name: "after the fit", color: AFTER, line: false, points: rows.map((r) => point(r, "after")) }],
  });
}

/** Median |error| by kind (and all), before and after the fit. */
function residuals(el, s) {
  const bars = Object.keys(s.before).flatMap((kind) => [
    { label: `${kind} · before`, value: 100 * s.before[kind].median_abs_error, color: BEFORE },
    { label: `${kind} · after`, value: 100 * s.after[kind].median_abs_error, color: AFTER }]);
  return barChart(el, { bars, format: (v) => `${v.toFixed(v >= 10 ? 0 : 2)} %`, label: "median |error| by kind",
                        unit: "median |error| (%)" });
}

function parametersHtml(s) {
  const rows = Object.entries(s.parameters).map(([name, p]) => {
    const warn = s.warnings.filter((w) => w.startsWith(`${name}:`)).map((w) => w.slice(name.length + 1).trim());
    return `<tr data-param="${esc(name)}"><td class="mono">${esc(name)}</td><td class="num">${num(p.value)}</td>
      <td class="num">${num(p.low)}</td><td class="num">${num(p.high)}</td>
      <td class="num">${num(p.bounds[0])} – ${num(p.bounds[1])}</td><td class="num">${num(p.start)}</td>
      <td>${p.identifiable ? "yes" : '<span class="bad">refused</span>'}</td><td>${esc(warn.join("; "))}</td></tr>`;
  });
  return `<table class="data" id="cal-parameters" data-export-name="fitted parameters"><thead><tr><th>parameter</th>
    <th class="num">value</th><th class="num">95 % low</th><th class="num">95 % high</th><th class="num">bounds</th>
    <th class="num">start</th><th>determined</th><th>warnings</th></tr></thead><tbody>${fmt.rows(rows)}</tbody></table>`;
}

/** The parameters the fit would not apply, each with why and the measurement that would determine it. */
function refusedHtml(s) {
  const refused = s.refused ?? [];
  if (!refused.length) return "";
  return `<h3>Refused <span class="muted">the measurements cannot determine these: kept at their start</span></h3>
    <ul class="cal-refused" id="cal-refused">${refused.map((r) => `<li data-param="${esc(r.name)}"><code>${esc(r.name)}</code>:
    ${esc(r.reason)}; <em>${esc(r.would)}</em> would determine it</li>`).join("")}</ul>`;
}

/** One line: the held-out error beside the error at the start and in-sample. */
export function holdoutText(h) {
  if (!h) return "–";
  if (h.method == null || h.median_abs_error == null) return `none (${h.reason ?? "not computed"})`;
  const scheme = h.method === "folds" ? `${h.folds} folds` : h.method === "leave-one-out" ? "leave-one-out"
    : `${(100 * h.fraction).toFixed(0)} % held out`;
  const pct = (x) => `${(100 * x).toFixed(2)} %`;
  return `${pct(h.median_abs_error)} median |error| on ${fmt.int(h.count)} held-out observations (${scheme}, seed `
    + `${h.seed}); at the start ${pct(h.before_median_abs_error)}, in-sample ${pct(h.in_sample_median_abs_error)}`;
}

function entriesHtml(s) {
  const rows = s.entries.map((r) => `<tr><td>${esc(r.name)}</td><td>${esc(r.kind)}</td><td>${esc(r.label)}</td>
    <td class="num">${num(r.measured)}</td><td class="num">${num(r.before.predicted)}</td>
    <td class="num">${num(r.after.predicted)}</td><td class="num" data-value="${r.before.error}">${signed(r.before.error)}</td>
    <td class="num" data-value="${r.after.error}">${signed(r.after.error)}</td></tr>`);
  return `<table class="data" id="cal-entries" data-export-name="observations"><thead><tr><th>entry</th><th>kind</th>
    <th>what</th><th class="num">measured</th><th class="num">predicted before</th><th class="num">after</th>
    <th class="num">error before</th><th class="num">after</th></tr></thead><tbody>${fmt.rows(rows)}</tbody></table>`;
}

/** What a profile keeps of the fit: the fitted values, their intervals, the before/after summaries. */
export function profileOf(s, run) {
  const values = {}, intervals = {};
  for (const name of s.fit) {
    const p = s.parameters[name];
    values[name] = p.value;
    if (p.low != null && p.high != null) intervals[name] = [p.low, p.high];
  }
  return { values, intervals, summary: { run: run.id, fit: s.fit, before: s.before, after: s.after },
           holdout: s.holdout ?? {}, refused: s.refused ?? [] };
}

function saveForm(el, s, { cluster, run }) {
  const form = el.querySelector("#cal-save");
  if (!form) return;
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const body = { cluster, name: form.elements.name.value.trim(), notes: form.elements.notes.value,
                   ...profileOf(s, run) };
    if (!body.notes) body.notes = `fitted by calibrate run #${run.id}`;
    form.querySelector('button[type="submit"]').disabled = true;
    try {
      const saved = await api("/api/calibrations/", { method: "POST", body });
      showErrors(form, {});
      el.querySelector("#cal-saved").innerHTML = `saved: <a href="/api/calibrations/${saved.id}/">profile
        ${esc(saved.name)}</a>; a run names it with its <code>calibration</code> parameter`;
    } catch (e) {
      if (e instanceof ApiError && e.status === 400) showErrors(form, fieldErrors(e.body));
      toast(`profile not saved: ${e.message}`);
    } finally { form.querySelector('button[type="submit"]').disabled = false; }
  });
}

/** calibration: a calibrate run's result (see the module's comment). `cluster`: the run's cluster's name. */
export function renderCalibration(el, s, { cluster, run }) {
  const n = s.entries.length;
  const canSave = s.fit.length > 0 && cluster;
  el.innerHTML = `${headlineCards(run.headline ?? [], [[`${fmt.int(n)} observations`,
    `fit ${s.fit.join(", ") || "nothing"} · ${s.iterations} iterations, ${s.evaluations} evaluations, `
    + `${s.engine_runs} engine runs, ${s.seconds.toFixed(1)} s`]])}
    ${s.warnings.length ? `<ul class="cal-warnings">${s.warnings.map((w) => `<li>${esc(w)}</li>`).join("")}</ul>` : ""}
    <div class="cal-panels">
      <section><h3>Predicted against measured <span class="muted">before and after the fit; the 1:1 line</span></h3>
        <div id="cal-scatter"></div></section>
      <section><h3>Median |error| by kind <span class="muted">before and after the fit</span></h3>
        <div id="cal-residuals"></div></section>
    </div>
    <h3>Fitted parameters <span class="muted">Jacobian rank ${s.rank?.rank ?? "–"} of ${s.rank?.parameters ?? "–"}</span></h3>
    <div class="table-scroll">${parametersHtml(s)}</div>
    ${refusedHtml(s)}
    <p class="cal-holdout" id="cal-holdout"><strong>Held-out error:</strong> ${esc(holdoutText(s.holdout))}</p>
    ${canSave ? `<h3>Save as a calibration profile</h3>
      <form id="cal-save" class="cal-save" novalidate>
        <label class="field" data-field="name"><span class="field-label">Name <code class="param-name">name</code></span>
          <input type="text" name="name" required placeholder="letters, digits, - and _">
          <span class="field-error" data-error-for="name"></span></label>
        <label class="field" data-field="notes"><span class="field-label">Notes</span>
          <textarea name="notes" rows="2"></textarea><span class="field-error" data-error-for="notes"></span></label>
        <button type="submit" class="primary">Save profile</button>
        <span class="field-error" data-error-for="general"></span><span class="field-error" data-error-for="values"></span>
      </form><p id="cal-saved" class="muted"></p>` : ""}
    <h3>Observations</h3><div class="table-scroll">${entriesHtml(s)}</div>`;
  scatter(el.querySelector("#cal-scatter"), s);
  residuals(el.querySelector("#cal-residuals"), s);
  saveForm(el, s, { cluster, run });
}

registerView("calibration", renderCalibration);
