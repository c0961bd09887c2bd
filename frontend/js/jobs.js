// The Jobs page (twin/capabilities/jobs/page.py): a cluster's training-job queue from /api/runs/jobs/, kept live by the
// cluster's stream (the gpu_job and job_stats sections: frames.js sectionRows), the GPUs its running jobs hold (the
// server's count, /api/runs/jobs/occupancy/: what-ifs and finished jobs never hold any), a release button on each
// running job its user may release, one job's placement on the cluster (a canvas, one pixel per GPU), its step
// breakdown and its throughput over time (chart.js), and the form that submits a job (a `job` run) and its
// what-ifs (/api/runs/jobs/<id>/whatif/: the same job once per value of one parameter, placement, routing, qps, or
// on other clusters, RoCE against the InfiniBand twin), side by side as the runs end; under the job, the nearest
// published run's figures beside its own (published.js).
// The form's fields come from the job kind's declaration (sim/jobs/params.py JOB, passed in #jobs-info); its layout
// from the chosen model's default on this cluster, asked of the server whenever the model changes
// (/api/runs/jobs/default/, sim/jobs/defaults.py), shown with why beside the form. A refused layout's error names
// the layouts nearest it that fit this cluster (the server's words, under the field it refuses).
import { api, ApiError, coalesced, errorText, esc, fmt, live, markReady, timeFrame, toast, COLORS } from "./twin.js";
import { fieldErrors, lockForm, pageData, paramFieldsHtml, parseValue, readFields, showErrors } from "./run_form.js";
import { sectionRows } from "./frames.js";
import { barChart, lineChart, PALETTE } from "./chart.js";
import { exportable } from "./exports.js";
import { drawPipeline, runPipeline } from "./pipeline.js";
import { publishedHtml } from "./published.js";

const info = pageData("jobs-info");
const cluster = info.cluster;
const el = {
  tbody: document.querySelector("#jobs-table tbody"), none: document.getElementById("jobs-none"),
  summary: document.getElementById("jobs-summary"), form: document.getElementById("job-form"),
  detail: document.getElementById("job-detail"), title: document.getElementById("job-title"),
  phase: document.getElementById("job-phase"), figures: document.getElementById("job-figures"),
  canvas: document.getElementById("job-placement"), hint: document.getElementById("placement-hint"),
  breakdown: document.getElementById("job-breakdown"), throughput: document.getElementById("job-throughput"),
  whatif: document.getElementById("whatif"), whatifTable: document.getElementById("whatif-table"),
  pipeline: document.getElementById("job-pipeline"),
  published: document.getElementById("job-published"), publishedTable: document.getElementById("job-published-table"),
  defaultBox: document.getElementById("job-default"),
};
const jobs = new Map();          // job id -> the API's row, live figures merged in
const series = new Map();        // job id -> [{x: seconds since the page opened, y: tokens/s}] from live frames
const placements = new Map();    // job id -> its rank -> GPU list (null while asked)
const pipelines = new Map();     // run id -> its pipeline slot table rows (null while asked): a finished run's never change
const t0 = performance.now();
let selected = null, charts = [];
let occupancy = null;            // {jobs, held_gpus, gpus}: the server's count (twin.runs.job_actions.occupancy)

// -------------------------------------------------------------------------------------------------- figures
const secs = fmt.s;
const big = (x) => (x == null ? "–" : x >= 1e6 ? `${(x / 1e6).toFixed(2)} M` : x >= 1e3 ? `${(x / 1e3).toFixed(1)} k`
  : x.toFixed(0));
const num = (x, d = 0) => (x == null ? "–" : Number(x).toFixed(d));
const figure = (job, key) => job.live?.[key] ?? job.results?.[key] ?? null;
const phaseOf = (job) => job.live?.phase ?? job.state;
const layoutText = (p = {}) => ["tp", "cp", "pp", "dp"].filter((k) => p[k] != null).map((k) => `${k}${p[k]}`).join(" ");

function rowHtml(job) {
  return `<td>${job.id}</td><td title="${esc(job.name)}">${esc(job.name)}</td><td title="${esc(job.model)}">${esc(job.model)}</td>
    <td class="num">${fmt.int(job.n_gpus || job.params?.gpus)}</td><td title="${esc(layoutText(job.params))}">${esc(layoutText(job.params))}</td>
    <td><span class="badge ${esc(phaseOf(job))}" data-phase="${esc(phaseOf(job))}">${esc(phaseOf(job))}</span></td>
    <td class="num">${secs(figure(job, "step_time_s"))}</td><td class="num">${big(figure(job, "tokens_per_s"))}</td>
    <td class="num">${num(figure(job, "tflops_per_gpu"))}</td><td class="num">${fmt.pct(figure(job, "mfu"), 1)}</td>
    <td>${job.run ? `<a href="/experiments/${job.run.id}/">#${job.run.id}</a>` : "–"}</td>
    <td>${job.can_release && phaseOf(job) !== "finished"
    ? `<button type="button" class="release" data-release="${job.id}" title="end the job: its GPUs are free again">release</button>`
    : ""}</td>`;
}

/** End a running job (POST /api/runs/jobs/<id>/release/): its GPUs are free again. */
async function release(id, button) {
  button.disabled = true;
  try {
    const row = await api(`/api/runs/jobs/${id}/release/`, { method: "POST" });
    jobs.set(id, { ...row, live: null });
    toast(`job #${id} released: ${fmt.int(row.n_gpus)} GPUs free`, { kind: "info", ms: 2000 });
  } catch (e) { toast(`job #${id} not released: ${e.message}`); button.disabled = false; }
  await load();
}

function renderTable() {
  const rows = [...jobs.values()].sort((a, b) => b.id - a.id);
  el.tbody.replaceChildren(...rows.map((job) => {
    const tr = document.createElement("tr");
    tr.dataset.job = job.id;
    tr.dataset.state = phaseOf(job);
    tr.innerHTML = rowHtml(job);
    if (job.id === selected) tr.classList.add("selected");
    tr.addEventListener("click", (ev) => {
      const b = ev.target.closest("button[data-release]");
      if (b) { ev.stopPropagation(); release(job.id, b); } else select(job.id);
    });
    return tr;
  }));
  el.none.hidden = rows.length > 0;
  if (occupancy) {
    el.summary.textContent = `${fmt.int(rows.length)} jobs; ${fmt.int(occupancy.held_gpus)} GPUs of `
      + `${fmt.int(occupancy.gpus)} held by ${fmt.int(occupancy.jobs)} running job${occupancy.jobs === 1 ? "" : "s"}`;
    el.summary.dataset.held = String(occupancy.held_gpus);
  }
}

/** (Re)read the cluster's newest jobs; a reload asked while one runs is done once after it. */
const load = coalesced(async () => {
  try {
    const [page, held] = await Promise.all([api(`/api/runs/jobs/?cluster=${cluster.id}&limit=100&ordering=-id`),
                                            api(`/api/runs/jobs/occupancy/?cluster=${cluster.id}`)]);
    occupancy = held;
    for (const row of page.results) {
      const live = jobs.get(row.id)?.live ?? null;     // a live phase the database has moved past is dropped
      jobs.set(row.id, { ...row, live: live && row.state !== "running" && row.state !== "queued" ? null : live });
    }
    renderTable();
    if (selected != null && jobs.has(selected)) renderDetail();
  } catch (e) { toast(`jobs not loaded: ${e.message}`); }
});

// ----------------------------------------------------------------------------------------------- one job
function select(id) {
  selected = id;
  renderTable();
  renderDetail();
}

/** The job's GPUs, asked once it is placed; the placement is drawn again when they arrive. */
function gpusOf(job) {
  if (!job.n_gpus) return [];
  if (!placements.has(job.id)) {
    placements.set(job.id, null);
    api(`/api/runs/jobs/${job.id}/gpus/`).then((doc) => {
      placements.set(job.id, doc.gpus);
      if (selected === job.id) drawPlacement(jobs.get(job.id));
    }).catch(() => placements.delete(job.id));
  }
  return placements.get(job.id) ?? [];
}

/** The cluster's GPUs, one pixel each (rows of `cols` in GPU index order: hosts, racks, zones as built), the job's
 *  GPUs coloured by pipeline stage when it has stages, the others dark. */
function drawPlacement(job) {
  const n = cluster.gpus, cols = Math.max(8, Math.ceil(Math.sqrt(n * 3) / 8) * 8), rows = Math.ceil(n / cols);
  const c = el.canvas;
  c.width = cols; c.height = rows;
  const ctx = c.getContext("2d"), img = ctx.createImageData(cols, rows), px = new Uint32Array(img.data.buffer);
  const rgb = (hex) => { const v = parseInt(hex.slice(1), 16);
                         return ((255 << 24) | ((v & 0xff) << 16) | (v & 0xff00) | (v >>> 16)) >>> 0; };
  px.fill(rgb(COLORS.none), 0, n);
  const gpus = gpusOf(job), p = job.params ?? {}, inner = (p.tp ?? 1) * (p.cp ?? 1), stages = p.pp ?? 1;
  const palette = PALETTE.map(rgb);
  for (let r = 0; r < gpus.length; r++) {
    const stage = stages > 1 && (p.order ?? "tp,cp,pp,dp") === "tp,cp,pp,dp" ? Math.floor(r / inner) % stages : 0;
    px[gpus[r]] = palette[stage % palette.length];
  }
  ctx.putImageData(img, 0, 0);
  exportable(c, { name: "placement" });
  c.dataset.gpus = String(gpus.length);
  el.hint.textContent = gpus.length ? `${fmt.int(gpus.length)} GPUs of ${fmt.int(n)} (one pixel per GPU, index order`
    + `${stages > 1 ? `; colour: pipeline stage mod ${PALETTE.length}` : ""})` : "not placed yet";
}

/** The step's parts in seconds from the job's results: compute, exposed communication per dimension, bubble. */
function breakdownBars(results) {
  const b = results?.breakdown;
  if (!b || typeof b !== "object") return [];
  const bars = [];
  const add = (label, v) => { if (typeof v === "number") bars.push({ label, value: v }); };
  for (const [k, v] of Object.entries(b)) {
    if (v && typeof v === "object") for (const [k2, v2] of Object.entries(v)) add(`${k.replace(/_s$/, "")} ${k2}`, v2);
    else add(k.replace(/_s$/, ""), v);
  }
  return bars.map((x, i) => ({ ...x, color: PALETTE[i % PALETTE.length] }));
}

function renderDetail() {
  const job = jobs.get(selected);
  el.detail.hidden = !job;
  if (!job) return;
  charts.forEach((c) => c.destroy());
  charts = [];
  el.title.textContent = `#${job.id} ${job.name} · ${job.model} · ${layoutText(job.params)}`;
  el.phase.textContent = phaseOf(job);
  el.phase.className = `badge ${phaseOf(job)}`;
  el.detail.dataset.phase = phaseOf(job);
  el.figures.textContent = job.error ? job.error : `step ${secs(figure(job, "step_time_s"))} · `
    + `${big(figure(job, "tokens_per_s"))} tokens/s · ${num(figure(job, "tflops_per_gpu"))} TFLOPs/GPU · `
    + `MFU ${fmt.pct(figure(job, "mfu"), 1)}`;
  drawPlacement(job);
  const published = publishedHtml(job.results?.published);        // the nearest published run (sim/jobs/published.py)
  el.published.hidden = !published;
  el.publishedTable.innerHTML = published;
  drawJobPipeline(job);
  const bars = breakdownBars(job.results);
  el.detail.dataset.run = job.run?.id ?? "";               // named in a chart's download (exports.js caption)
  if (bars.length) charts.push(barChart(el.breakdown, { bars, format: secs, label: "the step's parts", unit: "time (s)" }));
  else el.breakdown.innerHTML = `<p class="muted">${job.state === "failed" ? "failed" : "no step simulated yet"}</p>`;
  const pts = (job.results?.throughput ?? []).map((p) => ({ x: p.t ?? p.time_s, y: p.tokens_per_s }))
    .filter((p) => p.x != null && p.y != null);
  const use = pts.length ? { pts, x: "simulated time (s)" } : throughputOverTime(job);
  el.throughput.dataset.points = String(use.pts.length);
  if (use.pts.length) {
    charts.push(lineChart(el.throughput, {
      label: "throughput", height: 220, legend: false, series: [{ name: job.name, points: use.pts }],
      x: { scale: "linear", label: use.x, name: "t", format: (v) => num(v, 1) },
      y: { scale: "linear", min: 0, label: "tokens/s", format: big } }));
  } else el.throughput.innerHTML = '<p class="muted">no throughput reported yet</p>';
}

/** The job's pipeline schedule as its run simulated it (the run's `pipeline` array, fetched once per run). */
function drawJobPipeline(job) {
  const runId = job.run?.id;
  if (!runId || !job.results) {
    el.pipeline.innerHTML = '<p class="muted">no step simulated yet</p>';
    return;
  }
  if (!pipelines.has(runId)) {
    pipelines.set(runId, null);
    el.pipeline.innerHTML = '<p class="muted">loading…</p>';
    runPipeline(runId)
      .then((r) => {
        // the job's figures arrive before its run stores its arrays: asked again shortly until the run has ended
        if (!["succeeded", "failed", "cancelled"].includes(r.status)) {
          setTimeout(() => { pipelines.delete(runId); if (selected === job.id) renderDetail(); }, 1000);
          return;
        }
        pipelines.set(runId, r.rows);
        if (selected === job.id) renderDetail();
      })
      .catch((e) => { pipelines.set(runId, []); toast(`pipeline schedule of run #${runId}: ${errorText(e)}`); });
    return;
  }
  const rows = pipelines.get(runId);
  if (rows) drawPipeline(el.pipeline, rows);
}

/** The job's throughput over its wall-clock life: each tokens/s its frames brought (seconds since it started),
 *  held until the next one and until it finished (or now): a steady job is a flat line from start to end, not one
 *  dot. */
function throughputOverTime(job) {
  const start = Date.parse(job.started_at ?? ""), y = figure(job, "tokens_per_s");
  if (!Number.isFinite(start)) return { pts: series.get(job.id) ?? [], x: "seconds since this page opened" };
  const end = (job.finished_at ? Date.parse(job.finished_at) : Date.now()) - start;
  const seen = (series.get(job.id) ?? []).filter((p) => p.t != null).map((p) => ({ x: (p.t - start) / 1000, y: p.y }));
  const pts = seen.length ? seen : y != null ? [{ x: 0, y }] : [];
  if (pts.length) pts.push({ x: Math.max(pts[pts.length - 1].x, end / 1000), y: pts[pts.length - 1].y });
  return { pts, x: "seconds since the job started" };
}

// ------------------------------------------------------------------------------------------------------ live
function onFrame(frame, merged) {
  const rows = frame.sections.job_stats ? sectionRows("job_stats", frame.sections.job_stats) : null;
  if (!rows && !frame.final) return;
  timeFrame(() => {
    let unknown = false;
    for (const r of rows ?? []) {
      const job = jobs.get(r.job);
      if (!job) { if (r.phase !== "finished") unknown = true; continue; }
      job.live = r;
      if (r.tokens_per_s != null && ["simulating", "running", "finished"].includes(r.phase)) {
        const s = series.get(r.job) ?? [];
        const x = (performance.now() - t0) / 1000;
        if (!s.length || s[s.length - 1].y !== r.tokens_per_s || x - s[s.length - 1].x > 5) {
          s.push({ x, y: r.tokens_per_s, t: frame.timeMs });
        }
        series.set(r.job, s);
      }
    }
    renderTable();
    if (selected != null) renderDetail();
    if (unknown || frame.final || rows) load();       // the count of held GPUs is the server's
  });
}

// ------------------------------------------------------------------------------------------------------ form
function formHtml(form) {
  const axes = form.whatif.map((a) => `<option>${esc(a)}</option>`).join("");
  return `${paramFieldsHtml(form.fields, form.main)}
    <fieldset class="whatif-fields"><legend>what-if: also run the same job with</legend>
      <label class="field"><span>vary</span><select name="whatif-axis"><option value="">nothing</option>${axes}</select></label>
      <label class="field" data-field="whatif"><span>values (comma-separated; cluster: names)</span>
        <input type="text" name="whatif-values" placeholder="e.g. random, first-fit"><span class="field-error"
        data-error-for="whatif"></span></label></fieldset>
    <div class="form-foot"><button type="submit" class="primary">Submit job</button>
      <span class="field-error" data-error-for="general"></span><span class="field-error" data-error-for="cluster"></span></div>`;
}

/** The variants of one submission: [{label, cluster, params}], the first the job as given. */
function variants(form, params) {
  const axis = form.elements["whatif-axis"].value;
  const base = { label: "as given", cluster: cluster.name, params };
  if (!axis) return { list: [base] };
  const values = form.elements["whatif-values"].value.split(",").map((s) => s.trim()).filter(Boolean);
  if (!values.length) return { error: "give one or more values to compare" };
  const list = [base];
  for (const v of values) {
    if (axis === "cluster") {
      if (!info.clusters.some((c) => c.name === v)) return { error: `no cluster named ${v}` };
      list.push({ label: `cluster ${v}`, cluster: v, params });
      continue;
    }
    const f = info.form.fields.find((x) => x.name === axis);
    try { parseValue(f, v); } catch (e) { return { error: `${axis}: ${e.message}` }; }
    list.push({ label: `${axis} ${v}`, cluster: cluster.name, params });
  }
  if (list.length - 1 > info.form.whatif_max) return { error: `at most ${info.form.whatif_max} values` };
  return { list, axis, values };
}

const whatifRuns = [];   // [{label, run}] of the last what-if

async function followWhatif() {
  if (!whatifRuns.length) return;
  const ids = whatifRuns.map((w) => w.run.id).join(",");
  const runs = await api(`/api/runs/?id__in=${ids}&limit=50`);
  const byRun = new Map(runs.results.map((r) => [r.id, r]));
  const cols = [["step", "step_time_s", secs], ["tokens/s", "tokens_per_s", big], ["TFLOPs/GPU", "tflops_per_gpu", num],
                ["MFU", "mfu", (x) => fmt.pct(x, 1)]];
  el.whatif.hidden = false;
  el.whatifTable.tHead.innerHTML = `<tr><th>variant</th><th>cluster</th><th>run</th><th>status</th>${
    cols.map(([h]) => `<th class="num">${h}</th>`).join("")}<th>error</th></tr>`;
  el.whatifTable.tBodies[0].innerHTML = whatifRuns.map((w) => {
    const r = byRun.get(w.run.id) ?? w.run, s = r.summary ?? {};
    return `<tr data-run="${r.id}" data-status="${esc(r.status)}"><td>${esc(w.label)}</td><td>${esc(w.cluster)}</td>
      <td><a href="/experiments/${r.id}/">#${r.id}</a></td><td><span class="badge ${esc(r.status)}">${esc(r.status)}</span></td>
      ${cols.map(([, k, f]) => `<td class="num">${f(s[k] ?? null)}</td>`).join("")}<td class="bad">${esc(r.error ?? "")}</td></tr>`;
  }).join("");
  if (runs.results.some((r) => ["queued", "running"].includes(r.status))) setTimeout(followWhatif, 1500);
}

function mountForm() {
  const form = info.form;
  if (!form) { el.form.innerHTML = '<p class="muted">No job kind is registered on this server.</p>'; return; }
  el.form.innerHTML = formHtml(form);
  if (form.fields.some((f) => f.name === "gpus") && el.form.elements.gpus) el.form.elements.gpus.max = cluster.gpus;
  if (!info.user.can_start) { lockForm(el.form, { authenticated: info.user.authenticated, next: location.pathname }); return; }
  el.form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const { params, errors } = readFields(el.form, form.fields);
    const { list, error, axis, values } = variants(el.form, params);
    if (error) errors.whatif = error;
    showErrors(el.form, errors);
    if (Object.keys(errors).length) { toast(errorText(errors)); return; }
    const submit = el.form.querySelector('button[type="submit"]');
    submit.disabled = true;
    const made = [];
    try {
      const base = list[0];
      const run = await api("/api/runs/", { method: "POST", body: { kind: form.kind, cluster: base.cluster, params: base.params } });
      made.push({ ...base, run });
      if (axis) {      // the what-ifs of the job just made: named for what they vary, never holding GPUs
        const [job] = (await api(`/api/runs/jobs/?run=${run.id}&limit=1`)).results;
        const runs = await api(`/api/runs/jobs/${job.id}/whatif/`, { method: "POST", body: { vary: axis, values } });
        runs.forEach((r, i) => made.push({ ...list[i + 1], run: r }));
      }
      showErrors(el.form, {});
      toast(`${made.length === 1 ? "job" : `${made.length} runs`} submitted`, { kind: "info", ms: 2000 });
    } catch (e) {
      if (e instanceof ApiError && e.status === 400) {
        const errs = fieldErrors(e.body);
        if (errs.values || errs.vary) errs.whatif = [errs.vary, errs.values].filter(Boolean).join("; ");
        showErrors(el.form, errs);
      }
      toast(`${made.length ? `${made.length} submitted, then ` : ""}not submitted: ${e.message}`);
    } finally { submit.disabled = false; }
    if (made.length > 1) { whatifRuns.splice(0, whatifRuns.length, ...made); followWhatif(); }
    await load();
    const mine = [...jobs.values()].find((j) => made[0] && made[0].run.id === j.run?.id);
    if (mine) select(mine.id);
  });
}

// ------------------------------------------------------------------------------------------- default layout
let defaultsAsked = 0, editedSince = false;     // the last default asked for; a layout field edited since

const layoutLine = (d) => {
  const p = d.params;
  return `${p.model}: ${fmt.int(p.gpus)} GPUs · tp ${p.tp} · cp ${p.cp} · pp ${p.pp} · dp ${fmt.int(p.dp)} · `
    + `${p.schedule}${p.virtual_stages > 1 ? ` (${p.virtual_stages} chunks per stage)` : ""} · micro-batch `
    + `${p.micro_batch} · seq ${fmt.int(p.seq)} · batch ${d.shown.batch_tokens} tokens · ${num(d.memory_gb, 1)} GB per GPU`;
};

/** The chosen model's default layout on this cluster, as the server chose it (its published recipe when that fits,
 *  else the fastest layout that fits), written into the layout fields (dp left empty: it follows from gpus) and shown
 *  with why. An answer that comes after the user edited a layout field, or chose another model, is dropped. */
async function applyDefault() {
  const form = info.form, model = el.form.elements.model?.value;
  const mine = ++defaultsAsked;
  editedSince = false;
  el.defaultBox.dataset.model = model ?? "";
  el.defaultBox.dataset.source = "asking";
  if (!form.models.includes(model)) {
    el.defaultBox.innerHTML = `<p>${esc(model)}: no default layout; give its shape and layout.</p>`;
    el.defaultBox.dataset.source = "none";
    return;
  }
  try {
    const d = await api(`/api/runs/jobs/default/?cluster=${cluster.id}&model=${encodeURIComponent(model)}`);
    if (mine !== defaultsAsked) return;
    if (editedSince) {
      el.defaultBox.innerHTML = `<p>${esc(model)}: your layout kept (edited while its default was asked: `
        + `${esc(layoutLine(d))})</p>`;
      el.defaultBox.dataset.source = "kept";
      return;
    }
    for (const name of form.layout) {
      const input = el.form.elements[name];
      if (input) input.value = name === "dp" ? "" : String(d.shown[name]);
    }
    el.defaultBox.innerHTML = `<p class="layout">${esc(layoutLine(d))}</p><p class="why">Why: ${esc(d.why)}</p>`;
    el.defaultBox.dataset.source = d.source;
  } catch (e) {
    if (mine !== defaultsAsked) return;
    el.defaultBox.innerHTML = `<p class="bad">${esc(e instanceof ApiError ? errorText(e.body) : e.message)}</p>`;
    el.defaultBox.dataset.source = "none";
  }
}

function followModel() {
  if (!info.form || !el.form.elements.model) { el.defaultBox.hidden = true; return; }
  el.form.elements.model.addEventListener("change", applyDefault);
  el.form.addEventListener("input", (ev) => { if (info.form.layout.includes(ev.target.name)) editedSince = true; });
}

// ------------------------------------------------------------------------------------------------------ start
mountForm();
followModel();
if (info.form && el.form.elements.model) await applyDefault();
live(`/ws/clusters/${encodeURIComponent(cluster.name)}/`, { query: { index: "0" }, onFrame });
await load();
const asked = Number(new URLSearchParams(location.search).get("job"));
if (asked && jobs.has(asked)) select(asked);
markReady();
window.twin.jobs = { jobs, select, series, applyDefault };
