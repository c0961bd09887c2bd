// The Validation page (twin/capabilities/validation/page.py): the last finished `validate` run's result, read from
// /validation/data/ with the filters (kind, GPU) and drawn with the validation capability's pieces
// (capabilities/validation.js: error by kind, predicted against measured log-log with y = x and +-10 %, each point's
// source on hover and, clicked, kept beside the chart with its link; the fitted factors, the sources, the
// observations); the validate runs with their live progress (run_live.js) and the form that starts one (its fields
// from the kind's declaration, sim/validation/params.py VALIDATE, passed in #validation-info); when a run ends
// successfully the page shows it. Below, the user's own measurements against a calibration profile: a finished
// calibrate run, chosen by itself or by the profile saved from it, read from /validation/measurements/.
import { api, coalesced, esc, fmt, live, markReady, timeFrame, toast } from "./twin.js";
import { sectionRow } from "./frames.js";
import { mountKindForm, pageData } from "./run_form.js";
import { liveRunRows } from "./run_live.js";
import { figureText, paramsText, progressBar, statusBadge } from "./run_results.js";
import { err, factorsHtml, observationsHtml, pointHtml, scatterChart, sourceMap, sourcesHtml, summaryHtml,
         verdictHtml } from "./capabilities/validation.js";

const info = pageData("validation-info"), FINISHED = new Set(info.finished);
const $ = (id) => document.getElementById(id);
const state = { run: info.latest, kind: "", gpu: "", calibration: "" };
const charts = {};

/** The filters from the URL (?kind=&gpu=&run=&calibration=run:<id>|profile:<id>). */
function fromUrl() {
  const q = new URLSearchParams(location.search);
  state.kind = q.get("kind") ?? "";
  state.gpu = q.get("gpu") ?? "";
  state.calibration = q.get("calibration") ?? "";
  if (Number(q.get("run"))) state.run = Number(q.get("run"));
}

function toUrl() {
  const q = new URLSearchParams();
  for (const k of ["kind", "gpu", "calibration"]) if (state[k]) q.set(k, state[k]);
  if (state.run && state.run !== info.latest) q.set("run", state.run);
  history.replaceState(null, "", `${location.pathname}${q.size ? `?${q}` : ""}`);
}

const query = (extra = {}) => new URLSearchParams(Object.entries({ kind: state.kind, gpu: state.gpu, ...extra })
  .filter(([, v]) => v !== "" && v != null)).toString();

/** A filter's options from the data's choices (value and count), keeping the chosen one even when absent. */
function fillSelect(sel, choices, chosen, every) {
  const options = choices.map((c) => `<option value="${esc(c.value)}">${esc(c.value)} (${fmt.int(c.count)})</option>`);
  if (chosen && !choices.some((c) => c.value === chosen)) options.push(`<option value="${esc(chosen)}">${esc(chosen)} (0)</option>`);
  sel.innerHTML = `<option value="">${every}</option>${options.join("")}`;
  sel.value = chosen;
}

function showPoint(o, sources, box = $("val-point")) {
  const src = sources.get(o.source);
  box.classList.remove("muted");
  box.dataset.id = o.id;
  box.innerHTML = `${pointHtml(o, sources)}${o.url ? `<p><a class="val-source-link" href="${esc(o.url)}" target="_blank"
    rel="noopener noreferrer">${esc(src?.title ?? "the source")}</a></p>` : ""}`;
}

// ------------------------------------------------------------------------------------------- the corpus's result
const loadData = coalesced(async () => {
  let d;
  try {
    d = await api(`/validation/data/?${query(state.run ? { run: state.run } : {})}`);
  } catch (e) { toast(`validation not loaded: ${e.message}`); return; }
  const page = document.querySelector("main");
  $("val-none").hidden = d.run != null;
  if (!d.run) {
    $("val-shown").textContent = "";
    page.dataset.run = "";
    return;
  }
  const r = d.result, sources = sourceMap(r.sources);
  state.run = d.run.id;
  page.dataset.run = String(d.run.id);
  $("val-shown").innerHTML = `<a href="/experiments/${d.run.id}/">validate run #${d.run.id}</a>, finished
    ${esc(fmt.time(d.run.finished_at))} (on ${esc(d.run.cluster)}${d.run.params?.kind ? `, kind ${esc(d.run.params.kind)}` : ""}`
    + `${d.run.params?.cross_validate ? `, ${d.run.params.cross_validate} folds` : ""}) · showing
    <b id="val-count">${fmt.int(d.observations.length)}</b> observations`;
  fillSelect($("val-kind"), d.choices.kind, state.kind, "every kind");
  fillSelect($("val-gpu"), d.choices.gpu, state.gpu, "every GPU");
  $("val-verdict").innerHTML = verdictHtml(r);
  const filtering = state.kind || state.gpu;
  $("val-summary").innerHTML = summaryHtml(r, { selected: filtering ? d.selected : null });
  charts.corpus?.destroy();
  charts.corpus = scatterChart($("val-scatter"), d.observations, { sources, onPoint: (o) => showPoint(o, sources) });
  $("val-factors").innerHTML = factorsHtml(r.factors);
  $("val-sources").innerHTML = sourcesHtml(r.sources);
  $("val-observations").innerHTML = observationsHtml(d.observations, sources);
  page.dataset.drawn = `${d.run.id}:${state.kind}:${state.gpu}`;
});

// ----------------------------------------------------------------------------------------- the user's measurements
function fillCalibrations() {
  const { runs, profiles } = info.calibrations;
  $("val-mine-none").hidden = runs.length > 0 || profiles.length > 0;
  const opt = (value, text) => `<option value="${value}">${esc(text)}</option>`;
  $("val-calibration").innerHTML = `<option value="">choose a calibrate run or a profile</option>`
    + (profiles.length ? `<optgroup label="calibration profiles">${profiles.map((p) => opt(`profile:${p.id}`,
      `${p.name} (${p.cluster}${p.run ? `, run #${p.run}` : ""})`)).join("")}</optgroup>` : "")
    + (runs.length ? `<optgroup label="calibrate runs">${runs.map((r) => opt(`run:${r.id}`,
      `#${r.id} on ${r.cluster} · fit ${r.fit.join(", ") || "nothing"}`)).join("")}</optgroup>` : "");
  $("val-calibration").value = state.calibration;
}

const loadMine = coalesced(async () => {
  const box = $("val-mine-result");
  if (!state.calibration) { box.hidden = true; return; }
  const [what, id] = state.calibration.split(":");
  let d;
  try {
    d = await api(`/validation/measurements/?${query({ [what]: id })}`);
  } catch (e) { toast(`measurements not loaded: ${e.message}`); box.hidden = true; return; }
  box.hidden = false;
  const runs = new Map([[`calibrate run #${d.run.id}`, { title: `calibrate run #${d.run.id} on ${d.run.cluster}` }]]);
  $("val-mine-shown").innerHTML = `${d.profile ? `profile <b>${esc(d.profile.name)}</b> (${esc(d.profile.cluster)}), fitted by ` : ""}
    <a href="/experiments/${d.run.id}/">calibrate run #${d.run.id}</a> · fit ${esc(d.fit.join(", ") || "nothing")} ·
    <b id="val-mine-count">${fmt.int(d.observations.length)}</b> observations; "before" is the twin without the fit`;
  const sel = d.selected;
  $("val-mine-summary").innerHTML = summaryHtml({ overall: sel.overall, kinds: sel.kinds, before: sel.before },
                                                { label: "your measurements" });
  charts.mine?.destroy();
  charts.mine = scatterChart($("val-mine-scatter"), d.observations, {
    sources: runs, label: "your measurements: predicted with the profile against measured" });
  $("val-mine-observations").innerHTML = observationsHtml(d.observations, runs);
  box.dataset.drawn = state.calibration;
});

// --------------------------------------------------------------------------------------------------- the runs
const figure = (run, key) => {
  const h = (run.headline ?? []).find((x) => x.key === key);
  return h ? figureText(h.value, h.format) : "–";
};
const cells = (r) => `<td><a href="/experiments/${r.id}/">#${r.id}</a></td><td>${esc(paramsText(r))}</td>
  <td>${statusBadge(r.status)}</td><td>${progressBar(r.progress ?? (r.status === "succeeded" ? 100 : 0))}</td>
  <td class="num">${figure(r, "median")}</td><td class="num">${figure(r, "median_before")}</td>`;

const show = liveRunRows($("val-runs").querySelector("tbody"), FINISHED, cells, {
  async onEnd(run) {
    if (run.status !== "succeeded") {
      if (run.error) toast(`validate run #${run.id}: ${run.error}`);
      return;
    }
    if (run.id > (state.run ?? 0)) {           // the newest finished: the page shows it
      info.latest = run.id;
      state.run = run.id;
      toUrl();
      await loadData();
    }
  },
});

const known = new Set();                 // the validate runs listed (their frames carry no validation_stats always)

const loadRuns = coalesced(async () => {
  try {
    const page = await api("/api/runs/?kind=validate&limit=20&ordering=-id");
    for (const r of page.results) known.add(r.id);
    show(page.results, "");
    $("val-runs-none").hidden = page.results.length > 0;
  } catch (e) { toast(`runs not loaded: ${e.message}`); }
});

$("val-runs").addEventListener("click", async (ev) => {
  const tr = ev.target.closest("tr[data-run]");
  if (!tr || ev.target.closest("a")) return;
  const run = await api(`/api/runs/${tr.dataset.run}/`).catch(() => null);
  if (run?.status !== "succeeded") return;
  state.run = run.id;
  toUrl();
  loadData();
});

/** The live indicator: a validate run on the header's cluster, its progress and, once done, its figures from the
 *  cluster stream's validation_stats row (twin/capabilities/validation/live.py). */
const figure0 = (x) => (x == null || Number.isNaN(x) ? "–" : err(x));
let lastRow = null;                 // the followed run's latest validation_stats row
function onFrame(frame) {
  const data = frame.sections?.validation_stats;
  if (!frame.runId || (!data && !known.has(frame.runId))) return;
  known.add(frame.runId);
  const el = $("val-live");
  const same = el.dataset.run === String(frame.runId);
  // a frame of progress alone (the run's last one among them) keeps the figures its validation_stats row gave
  const row = data ? (lastRow = sectionRow("validation_stats", data)) : same ? lastRow : null;
  el.dataset.run = String(frame.runId);
  el.dataset.phase = row ? row.phase : "";                                 // "": a frame of progress only
  const figures = row?.phase === "done"
    ? ` · ${fmt.int(row.count)} observations, median |error| <b data-median="${row.median}">${figure0(row.median)}</b>`
      + ` (before the fitted factors ${figure0(row.median_before)}${row.cv_median == null || Number.isNaN(row.cv_median)
        ? "" : `, cross-validated ${figure0(row.cv_median)}`})` : "";
  el.innerHTML = `<a href="/experiments/${frame.runId}/">validate run #${frame.runId}</a> · `
    + `${esc(frame.status ?? "running")} ${Math.round(frame.progress ?? 0)} %${figures}`;
  if (frame.final) loadRuns();
}

// --------------------------------------------------------------------------------------------------- start
fromUrl();
for (const [id, key, load] of [["val-kind", "kind", null], ["val-gpu", "gpu", null],
                               ["val-calibration", "calibration", loadMine]]) {
  $(id).addEventListener("change", () => {
    state[key] = $(id).value;
    toUrl();
    if (load) load(); else { loadData(); loadMine(); }
  });
}
fillCalibrations();
if (info.cluster) {
  $("val-form-cluster").textContent = `on ${info.cluster.name} (the run reads no cluster: the corpus names its presets)`;
  live(`/ws/clusters/${encodeURIComponent(info.cluster.name)}/`, {
    query: { index: "0" }, onFrame: (frame) => timeFrame(() => onFrame(frame)) });
  mountKindForm($("validate-form"), info.form, {
    cluster: info.cluster.name, canStart: info.user.can_start, authenticated: info.user.authenticated,
    onStarted: (run) => { known.add(run.id); loadRuns(); },
  });
} else {
  $("val-form-cluster").textContent = "build a cluster first: every run belongs to one";
}
await Promise.all([loadData(), loadRuns(), loadMine()]);
markReady();
window.twin.validation = { state, reload: loadData };
