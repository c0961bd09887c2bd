// The jobs capability in the browser (twin/capabilities/jobs): its result views (job: a training job's step; jobs:
// jobs sharing the fabric; schedule draws with the generic summary) and the GPU page's training colour mode (which
// training job each GPU runs: the Job placements of /clusters/<name>/jobs/gpus.json, then the live gpu_job and
// job_stats sections).
import { COLORS, api, cssPixel, esc, fmt, toast } from "../twin.js";
import { barChart, PALETTE } from "../chart.js";
import { sectionRows } from "../frames.js";
import { registerColourMode, registerView } from "../registry.js";
import { headlineCards, pct } from "../run_results.js";
import { drawPipeline, runPipeline } from "../pipeline.js";

const OWN_PARTS = ["compute", "bubble", "optimizer"];     // the step's parts that are not exposed communication

/** job: a training job's step (sim.jobs.job JobResult.to_dict()): headline figures, the step's parts as bars (compute,
 *  exposed communication per dimension, bubble, optimizer), a link to the job on its cluster's Jobs page, then the
 *  JSON (which has the compute's parts by kernel kind, compute_parts). */
export function renderJob(el, s, { cluster, run }) {
  const jobLink = s.job && cluster ? `<a href="/clusters/${encodeURIComponent(cluster)}/jobs/?job=${s.job}">job #${s.job}
    on the Jobs page</a>` : "";
  el.innerHTML = `${headlineCards(run.headline ?? [])}
    <section class="panel"><h3>Step breakdown (s) ${jobLink}</h3><div class="job-breakdown-chart"></div></section>
    <section class="panel"><h3>Pipeline schedule, as simulated</h3><div class="job-pipeline-table"></div></section>
    <section class="panel"><h3>Summary</h3><pre class="mono">${esc(JSON.stringify(s, null, 1))}</pre></section>`;
  const parts = Object.entries(s.breakdown ?? {}).filter(([k]) => k !== "step");
  if (parts.length) {
    barChart(el.querySelector(".job-breakdown-chart"), {
      bars: parts.map(([k, v], i) => ({ label: OWN_PARTS.includes(k) ? k : `exposed ${k}`, value: v,
                                         color: PALETTE[i % PALETTE.length] })),
      format: (v) => `${Number(v).toFixed(3)} s`, label: "the step's parts", unit: "time (s)" });
  }
  const box = el.querySelector(".job-pipeline-table");
  if (run?.status === "succeeded") {
    runPipeline(run.id)
      .then((r) => drawPipeline(box, r.rows))
      .catch((e) => { box.innerHTML = `<p class="muted">${esc(e.message ?? String(e))}</p>`; });
  } else box.innerHTML = '<p class="muted">drawn once the run has succeeded</p>';
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
    <tbody>${fmt.rows((s.jobs ?? []).map(row))}</tbody></table></section>
    <section class="panel"><h3>Summary</h3><pre class="mono">${esc(JSON.stringify(s, null, 1))}</pre></section>`;
}

// ------------------------------------------------------------------------------------ training jobs on the grid
/** Which training job each GPU runs (twin.runs.job_actions.gpu_jobs): `rowOf` per GPU, 0 or the 1-based row of
 *  `rows` (job id, phase, figures); names come from the page's jobs data and, for a job first seen in a frame,
 *  from the jobs API. Each job keeps its colour while the page is open. */
class TrainingJobs {
  constructor(grid, palette, onInfo) {
    this.grid = grid; this.palette = palette; this.onInfo = onInfo;
    this.rowOf = new Uint16Array(grid.n);
    this.rows = [];
    this.names = new Map();          // job id -> {name, model, run}
    this.colors = new Map();         // job id -> colour index
  }

  /** The page data: {gpus, gpu_job (base64 of uint16 per GPU of the cluster), jobs}; a zone's page takes its
   *  GPUs' entries (by GPU.index). */
  setData(doc) {
    const grid = this.grid, zoned = grid.D.zone != null;
    if (doc.gpus !== grid.n && !zoned) return false;
    const bytes = Uint8Array.from(atob(doc.gpu_job), (c) => c.charCodeAt(0));
    const all = new Uint16Array(bytes.buffer, 0, doc.gpus);
    if (zoned) for (let i = 0; i < grid.n; i++) this.rowOf[i] = all[grid.gpuIndex(i)] ?? 0;
    else this.rowOf.set(all);
    this.rows = doc.jobs;
    for (const j of doc.jobs) this.names.set(j.job, { name: j.name, model: j.model, run: j.run });
    return true;
  }

  /** A live frame's gpu_job and job_stats sections (both come together); false when it has none. */
  apply(f) {
    const g = f.sections.gpu_job, stats = f.sections.job_stats;
    if (!g || !stats || g.length !== this.grid.n) return false;
    this.rowOf.set(g);
    this.rows = sectionRows("job_stats", stats);
    const unknown = this.rows.map((r) => r.job).filter((id) => !this.names.has(id));
    if (unknown.length) {
      unknown.forEach((id) => this.names.set(id, { name: `job #${id}` }));
      api(`/api/runs/jobs/?id__in=${unknown.join(",")}&limit=${unknown.length}`).then((page) => {
        for (const j of page.results ?? []) this.names.set(j.id, { name: j.name, model: j.model, run: j.run?.id });
        this.onInfo();
      }).catch(() => { /* the label stays "job #<id>" */ });
    }
    return true;
  }

  job(row) { return this.rows[row - 1]; }

  color(id) {
    if (!this.colors.has(id)) {
      const used = new Set(this.rows.map((r) => this.colors.get(r.job)).filter((c) => c != null));
      const k = this.palette.findIndex((_, c) => !used.has(c));
      this.colors.set(id, k < 0 ? id % this.palette.length : k);
    }
    return this.palette[this.colors.get(id)];
  }

  label(id) {
    const row = this.rows.find((r) => r.job === id), n = this.names.get(id);
    return `job #${id}${n?.name ? ` ${n.name}` : ""}${row?.phase ? ` (${row.phase})` : ""}`;
  }
}

// ------------------------------------------------------------------------------------------ GPU colour mode
const IDLE_PX = cssPixel(COLORS.idle), UNUSABLE_PX = cssPixel(COLORS.unusable);

registerColourMode("training", {
  label: "training job", order: 20,
  // the Job placements are asked at page start, beside the grid data (1.6 MB on a 590k cluster)
  prefetch: ({ canvas }) => api(canvas.dataset.jobsUrl)
    .catch((e) => { toast(`training jobs: ${e.message}`); return null; }),
  async attach(ctx) {
    const tj = ctx.state.training = new TrainingJobs(ctx.grid, ctx.palette, () => ctx.renderLegend());
    const doc = await ctx.prefetched.training;
    if (doc) tj.setData(doc);
  },
  frame: (ctx, f) => ctx.state.training.apply(f),
  // the default mode (gpus.js "job") colours the GPUs a running job holds in its colour before any run's
  holder: (ctx) => {
    const tj = ctx.state.training;
    return tj && { of: tj.rowOf, attr: "job", plural: "jobs",
                   groups: tj.rows.map((r) => ({ id: r.job, color: tj.color(r.job), label: tj.label(r.job) })) };
  },
  colorize(ctx, colors) {
    const tj = ctx.state.training, { grid, inv: { blocked }, live: { unusable: liveUnusable } } = ctx;
    const { n, gpuZone } = grid, perZone = new Float64Array(grid.dims.zones);
    const byJob = new Map(), px = tj.rows.map((r) => cssPixel(tj.color(r.job)));
    let idle = 0, unusable = 0;
    for (let i = 0; i < n; i++) {
      const row = tj.rowOf[i];
      if (blocked[i] | liveUnusable[i]) { colors[i] = UNUSABLE_PX; unusable += 1; continue; }
      if (!row || row > px.length) { colors[i] = IDLE_PX; idle += 1; continue; }
      colors[i] = px[row - 1]; perZone[gpuZone[i]] += 1;
      const id = tj.rows[row - 1].job;
      byJob.set(id, (byJob.get(id) ?? 0) + 1);
    }
    return { byJob, idle, unusable, perZone };
  },
  zoneFigure: (ctx, v) => `${fmt.int(v)} in training jobs`,
  overview: { label: "share of the rack's GPUs in a training job",
              value: (r, k) => (r.gpu_job && r.gpu_job[k] >= 0 ? r.gpu_job[k] : null), tooltip: "in training jobs" },
  legend(ctx, counts) {
    const tj = ctx.state.training, byJob = [...counts.byJob].sort((a, b) => b[1] - a[1]), item = ctx.legendItem;
    const named = byJob.slice(0, ctx.legendRuns).sort((a, b) => a[0] - b[0]);
    let html = "";
    for (const [id, c] of named) html += item(tj.color(id), tj.label(id), c, ` data-job="${id}"`);
    if (byJob.length > ctx.legendRuns) {
      const rest = byJob.slice(ctx.legendRuns);
      const gpus = rest.reduce((m, [, c]) => m + c, 0);
      html += `<span class="item">${rest.length} more jobs <b>${fmt.int(gpus)}</b></span>`;
    }
    if (!byJob.length) html += `<span class="muted">no training job placed on the cluster</span>`;
    return html + item(COLORS.idle, "idle", counts.idle) + item(COLORS.unusable, "unusable", counts.unusable);
  },
  hover(ctx, i) {   // shown in every mode
    const tj = ctx.state.training, row = tj.rowOf[i];
    return `<tr><th>training job</th><td>${row ? esc(tj.label(tj.job(row).job))
      : '<span class="muted">none</span>'}</td></tr>`;
  },
  test: (ctx) => ({
    jobOf: (i) => { const tj = ctx.state.training, row = tj.rowOf[i]; return row ? tj.job(row).job : 0; },
  }),
});

registerView("job", renderJob);
registerView("jobs", renderJobs);
