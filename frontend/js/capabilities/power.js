// The power capability in the browser (twin/capabilities/power): the `power` result view (a run's draw over a step
// per building, over days, its buildings and racks against their budgets and cooling, the cap trade-off curve and the
// published references beside the simulated figures), which the Power page (power.js) draws too, and the GPU page's
// colour modes: `power` (each GPU by its mean draw over the step, a share of its TDP: the live gpu_power section) and
// `rack_headroom` (each GPU by its rack's peak against the rack budget: rack_power), or ?run=<id>'s stored arrays.
import { COLORS, UTIL_GRADIENT, UTIL_PIXEL, api, cssPixel, esc, fmt, toast } from "../twin.js";
import { barChart, lineChart, PALETTE } from "../chart.js";
import { sectionConstants } from "../frames.js";
import { registerColourMode, registerView } from "../registry.js";
import { headlineCards } from "../run_results.js";
import { publishedHtml } from "../published.js";

const DRAWN_POINTS = 3000;          // a waveform drawn on at most this many points (each bucket's low and high kept)
const num = (x, d = 2) => (x == null ? "–" : Number(x).toFixed(d));
const mw = fmt.MW;
const kw = (x) => (x == null ? "–" : fmt.W(Number(x) * 1e3));

/** A run's stored array (the runs API with arrays=base64: little-endian bytes) as a typed array, its shape beside. */
export function decodeArray(a) {
  if (!a) return null;
  const bytes = Uint8Array.from(atob(a.data), (c) => c.charCodeAt(0));
  const T = { "<f4": Float32Array, "<f8": Float64Array, "|u1": Uint8Array, "<u2": Uint16Array, "<i4": Int32Array,
              "<i8": BigInt64Array }[a.dtype];
  if (!T) throw new Error(`array dtype ${a.dtype} is not read here`);
  const data = new T(bytes.buffer, 0, bytes.byteLength / T.BYTES_PER_ELEMENT);
  return Object.assign(data, { shape: a.shape });
}

/** The named arrays of run `id` ({name: typed array}; missing ones left out). */
export async function runArrays(id, names) {
  const doc = await api(`/api/runs/${id}/results/?arrays=base64&names=${names.join(",")}`);
  return Object.fromEntries(Object.entries(doc.arrays ?? {}).map(([k, a]) => [k, decodeArray(a)]));
}

/** Points of a binned series (bin edges `edges`, values `y`) at the bins' centres, thinned to about DRAWN_POINTS by
 *  keeping each bucket's lowest and highest bin (a swing or a peak is never averaged away). */
export function binnedPoints(edges, y, scaleX = 1, start = 0, count = y.length) {
  const per = Math.max(1, Math.ceil(count / (DRAWN_POINTS / 2))), out = [];
  const at = (i) => ({ x: ((edges[i] + edges[i + 1]) / 2) * scaleX, y: y[start + i] });
  for (let b = 0; b < count; b += per) {
    let lo = b, hi = b;
    for (let i = b; i < Math.min(count, b + per); i++) {
      if (y[start + i] < y[start + lo]) lo = i;
      if (y[start + i] > y[start + hi]) hi = i;
    }
    if (lo === hi) out.push(at(lo)); else out.push(...(lo < hi ? [at(lo), at(hi)] : [at(hi), at(lo)]));
  }
  return out;
}

/** The step's waveforms (MW against ms): the cluster, each building, the job. Returns the chart. */
export function stepChart(el, s, a) {
  const e = a.step_edges_s, T = a.cluster_mw.length, B = a.building_mw?.shape?.[0] ?? 0;
  const series = [{ name: "cluster", color: PALETTE[0], markers: false, points: binnedPoints(e, a.cluster_mw, 1e3) }];
  for (let b = 0; b < B; b++) {
    series.push({ name: `building ${b}`, color: PALETTE[(b + 2) % PALETTE.length], markers: false,
                  points: binnedPoints(e, a.building_mw, 1e3, b * T, T) });
  }
  series.push({ name: "the job (its GPUs and hosts)", color: PALETTE[1], dash: "--", markers: false,
                points: binnedPoints(e, a.job_mw, 1e3) });
  const budgets = (s.buildings ?? []).filter((b) => b.budget_mw != null);
  return lineChart(el, {
    label: "power over one step", height: 280, series,
    x: { scale: "linear", label: "time in the step (ms)", name: "t", format: (v) => fmt.int(v) },
    y: { scale: "linear", min: 0, label: "power (MW)", format: fmt.num, tipFormat: mw },
    refLines: budgets.length ? [{ y: budgets[0].budget_mw, label: `building budget ${mw(budgets[0].budget_mw)}` }] : [],
  });
}

/** One GPU of each pipeline stage over the step (W against ms), each stage in its own lane on one scale, so that
 *  their phases read out of phase with each other (overlaid, 16 square waves are a blur); the compute,
 *  communication and wait levels as lines in every lane. */
export function stagesChart(el, s, a) {
  const e = a.step_edges_s, [P, T] = a.stage_w.shape;
  const series = Array.from({ length: P }, (_, k) => ({
    name: `stage ${k}`, color: PALETTE[k % PALETTE.length], markers: false,
    points: binnedPoints(e, a.stage_w, 1e3, k * T, T) }));
  const lv = s.gpu_levels_w ?? {};
  return lineChart(el, {
    label: "a GPU of each stage over one step", height: 240, series, lanes: true,
    x: { scale: "linear", label: "time in the step (ms)", name: "t", format: (v) => fmt.int(v) },
    y: { scale: "linear", min: 0, label: "stage, GPU power (W)", format: (v) => fmt.int(v),
         tipFormat: fmt.W },
    refLines: [["compute", lv.compute_w], ["comm", lv.comm_w], ["wait", lv.wait_w]]
      .filter(([, w]) => w != null).map(([name, w]) => ({ y: w, label: `${name} ${fmt.W(w)}`, dash: "--" })),
  });
}

/** The cluster's draw over days under failures (MW against hours). */
export function daysChart(el, s, a) {
  return lineChart(el, {
    label: "power over days", height: 240,
    series: [{ name: "cluster", color: PALETTE[0], markers: false,
               points: binnedPoints(a.timeline_edges_s, a.timeline_mw, 1 / 3600) }],
    x: { scale: "linear", label: "time (hours)", name: "t", format: fmt.num },
    y: { scale: "linear", label: "power (MW)", format: fmt.num, tipFormat: mw },
  });
}

/** Every rack's peak over the step (kW, highest first) against the rack budget and cooling rating. */
export function racksChart(el, s, a) {
  const n = a.rack_peak_kw.length, order = Array.from({ length: n }, (_, i) => i)
    .sort((i, j) => a.rack_peak_kw[j] - a.rack_peak_kw[i]);
  const r = s.racks;
  return lineChart(el, {
    label: "racks by peak", height: 220,
    series: [{ name: "peak", color: PALETTE[3], markers: n <= 60, points: order.map((i, k) => ({ x: k + 1, y: a.rack_peak_kw[i] })) },
             { name: "mean (heat)", color: PALETTE[0], dash: "--", markers: false,
               points: order.map((i, k) => ({ x: k + 1, y: a.rack_mean_kw[i] })) }],
    x: { scale: "linear", label: "racks, highest peak first", name: "rank", format: (v) => fmt.int(v) },
    y: { scale: "linear", min: 0, label: "rack power (kW)", format: fmt.num, tipFormat: kw },
    refLines: [{ y: r.budget_kw, label: `rack budget ${kw(r.budget_kw)}` },
               ...(r.cooling_kw !== r.budget_kw ? [{ y: r.cooling_kw, label: `cooling ${kw(r.cooling_kw)}`, dash: "--" }] : [])],
  });
}

/** The cap trade-off: step time against the job's mean power, and energy per token against the cap. */
export function sweepCharts(elStep, elEnergy, s) {
  const rows = [...(s.sweep ?? [])].sort((p, q) => p.cap_w - q.cap_w);
  if (!rows.length) return [];
  const label = (r) => `${fmt.int(r.cap_w)} W`;
  return [lineChart(elStep, {
    label: "step time against power", height: 220,
    series: [{ name: "step (s) per cap", color: PALETTE[0],
               points: rows.map((r) => ({ x: r.job_mean_mw, y: r.step_s, label: label(r) })) }],
    x: { scale: "linear", label: "the job's mean draw (MW)", name: "job MW", format: fmt.num },
    y: { scale: "linear", label: "step (s)", format: fmt.num, tipFormat: (v) => fmt.s(v) },
  }), lineChart(elEnergy, {
    label: "energy per token against the cap", height: 220,
    series: [{ name: "J / token (GPUs and hosts)", color: PALETTE[2], points: rows.map((r) => ({ x: r.cap_w, y: r.energy_per_token_j })) }],
    x: { scale: "linear", label: "GPU cap (W)", name: "cap", format: (v) => fmt.int(v) },
    y: { scale: "linear", label: "energy (J / token)", format: fmt.num, tipFormat: (v) => `${num(v, 3)} J` },
  })];
}

function buildingsTable(s) {
  return `<table class="data power-buildings"><thead><tr><th>building</th><th class="num">peak</th>
    <th class="num">mean</th><th class="num">swing</th><th class="num">ramp (MW/s)</th><th class="num">budget</th>
    <th>over</th></tr></thead><tbody>${fmt.rows((s.buildings ?? []).map((b) => `<tr data-building="${b.building}">
    <td>${b.building}</td><td class="num">${mw(b.peak_mw)}</td><td class="num">${mw(b.mean_mw)}</td>
    <td class="num">${mw(b.swing_mw)}</td><td class="num">${num(b.ramp_mw_per_s, 1)}</td>
    <td class="num">${b.budget_mw == null ? "none" : mw(b.budget_mw)}</td>
    <td>${b.over_budget ? '<span class="bad">over budget</span>' : "–"}</td></tr>`))}</tbody></table>`;
}

function racksTable(s) {
  const r = s.racks;
  return `<table class="data power-racks"><thead><tr><th>rack</th><th class="num">job GPUs</th>
    <th class="num">peak</th><th class="num">mean</th><th class="num">headroom</th><th class="num">heat / cooling</th>
    </tr></thead><tbody>${fmt.rows((r.worst ?? []).map((w) => `<tr data-rack="${esc(w.rack)}">
    <td class="mono">${esc(w.rack)}</td><td class="num">${fmt.int(w.gpus)}</td><td class="num">${kw(w.peak_kw)}</td>
    <td class="num">${kw(w.mean_kw)}</td><td class="num${w.headroom_kw < 0 ? " bad" : ""}">${kw(w.headroom_kw)}</td>
    <td class="num${w.heat_share > 1 ? " bad" : ""}">${fmt.pct(w.heat_share, 1)}</td></tr>`))}</tbody></table>`;
}

function stagesTable(s) {
  return `<table class="data power-stages"><thead><tr><th>stage</th><th class="num">GPUs</th><th class="num">mean W</th>
    <th class="num">peak W</th><th class="num">computing</th><th class="num">communicating</th><th class="num">waiting</th>
    </tr></thead><tbody>${fmt.rows((s.stages ?? []).map((t) => `<tr><td>${t.stage}</td><td class="num">${fmt.int(t.gpus)}</td>
    <td class="num">${fmt.int(t.mean_w)}</td><td class="num">${fmt.int(t.peak_w)}</td><td class="num">${fmt.s(t.compute_s)}</td>
    <td class="num">${fmt.s(t.comm_s)}</td><td class="num">${fmt.s(t.wait_s)}</td></tr>`))}</tbody></table>`;
}

function capLine(s) {
  const src = { default: "the GPU's default limit", given: "given", "rack budget": "derived from the rack budget",
                "building budget": "derived from the building budget" }[s.cap_source] ?? s.cap_source;
  let text = `GPU cap ${fmt.int(s.cap_w)} W (${src}), GEMM clock ${fmt.pct(s.clock_share, 1)}`;
  if (s.floor_w != null) text += `, floor ${fmt.int(s.floor_w)} W while waiting`;
  if (s.uncapped) {
    text += ` · step ${s.step_time_cost >= 0 ? "+" : ""}${fmt.pct(s.step_time_cost, 1)} against the uncapped `
      + `${fmt.s(s.uncapped.step_s)}, the job ${mw(s.job_mean_saved_mw)} lower, `
      + `${num(s.energy_saved_per_token_j, 3)} J/token saved`;
  }
  return text;
}

/** power: a run's figures, waveforms, places, trade-off and published references; `arrays` given or fetched. */
export async function renderPower(el, s, { run, arrays = null } = {}) {
  const r = s.racks ?? {}, tl = s.timeline;
  el.innerHTML = `${headlineCards(run.headline ?? [], [
    [`${fmt.int(s.gpus)} GPUs`, `${esc(s.model)} tp ${s.layout?.tp} cp ${s.layout?.cp} pp ${s.layout?.pp} dp ${s.layout?.dp}`],
    [mw(s.job_mean_mw), "the job's mean draw (its GPUs and hosts)"],
    [`${fmt.int(r.over_budget)} of ${fmt.int(r.count)}`, `racks over their ${kw(r.budget_kw)} budget`
      + (r.over_budget_uncapped != null ? ` (${fmt.int(r.over_budget_uncapped)} without the cap)` : "")]])}
    <p class="power-cap" data-cap="${s.cap_w}">${esc(capLine(s))}</p>
    <section class="panel"><h3>Over one step <span class="muted">${fmt.s(s.step_s)} at ${num(s.resolution_ms, 2)} ms;
      swing ${mw(s.cluster_swing_mw)}, steepest ramp ${num(s.cluster_ramp_mw_per_s, 0)} MW/s</span></h3>
      <div class="power-step"></div>
      <h3>A GPU of each pipeline stage <span class="muted">its phases (computing, communicating, waiting) out of phase
        with the other stages'</span></h3><div class="power-stage-lines"></div></section>
    ${tl ? `<section class="panel"><h3>Over ${num(tl.days, 1)} days under failures <span class="muted">mean
      ${mw(tl.mean_mw)}, ${mw(tl.min_mw)} – ${mw(tl.peak_mw)}, largest jump ${mw(tl.jump_mw)}; ${fmt.int(tl.interruptions)}
      interruptions, ${fmt.int(tl.checkpoints)} checkpoints, ${fmt.MWh(tl.energy_mwh)}</span></h3>
      <div class="power-days"></div></section>` : ""}
    ${s.published?.length ? `<section class="panel"><h3>Published beside simulated</h3>${publishedHtml(s.published)}</section>` : ""}
    <div class="grid-2 results-grid">
      <section class="panel"><h3>Buildings</h3>${buildingsTable(s)}</section>
      <section class="panel"><h3>Stages <span class="muted">one GPU of each pipeline stage</span></h3>${stagesTable(s)}</section>
    </div>
    <section class="panel"><h3>Racks <span class="muted">${fmt.int(r.with_job)} run the job; peak against the budget,
      mean heat against the cooling (${kw(r.cooling_kw)}); ${fmt.int(r.over_cooling)} over cooling</span></h3>
      <div class="power-racks-chart"></div>${racksTable(s)}</section>
    ${s.sweep?.length ? `<section class="panel"><h3>Cap trade-off <span class="muted">each cap's GEMM clock by the
      cap/clock relation (docs/power.md)</span></h3><div class="grid-2"><div class="power-sweep-step"></div>
      <div class="power-sweep-energy"></div></div></section>` : ""}`;
  const q = (c) => el.querySelector(c);
  if (s.sweep?.length) sweepCharts(q(".power-sweep-step"), q(".power-sweep-energy"), s);
  let a = arrays;
  if (!a) {
    try {
      a = await runArrays(run.id, ["step_edges_s", "cluster_mw", "job_mw", "building_mw", "stage_w", "rack_peak_kw",
                                   "rack_mean_kw", "timeline_edges_s", "timeline_mw"]);
    } catch (e) { toast(`run #${run.id}: ${e.message}`); return; }
  }
  if (a.cluster_mw) { stepChart(q(".power-step"), s, a); q(".power-step").dataset.bins = String(a.cluster_mw.length); }
  if (a.stage_w) stagesChart(q(".power-stage-lines"), s, a);
  if (tl && a.timeline_mw) daysChart(q(".power-days"), s, a);
  if (a.rack_peak_kw) racksChart(q(".power-racks-chart"), s, a);
  el.dataset.drawn = "1";
}

registerView("power", (el, s, ctx) => { renderPower(el, s, ctx); });

/** power_schedule: the cluster's draw over a job queue's schedule as jobs come and go (MW against hours), its
 *  figures, and each started job's draw. */
export async function renderPowerSchedule(el, s, { run, arrays = null } = {}) {
  const jobs = [...(s.jobs ?? [])].sort((a, b) => b.draw_mw - a.draw_mw).slice(0, 20);
  el.innerHTML = `${headlineCards(run.headline ?? [], [
    [`${fmt.int(s.jobs_run)} jobs`, `placed by ${esc(s.policy)} over ${fmt.s(s.makespan_s)}`],
    [mw(s.idle_mw), "the idle cluster"], [mw(s.mean_mw), "mean draw"], [fmt.MWh(s.energy_mwh), "energy"]])}
    <section class="panel"><h3>Over the schedule <span class="muted">${fmt.s(s.grid_s)} bins; a job's start or end
      changes the draw at once (its step's mean: the step view has its milliseconds)</span></h3>
      <div class="power-schedule"></div></section>
    <section class="panel"><h3>The jobs drawing most <span class="muted">${fmt.int(jobs.length)} of ${fmt.int(s.jobs_run)}</span></h3>
      <table class="data power-schedule-jobs"><thead><tr><th>job</th><th>model</th><th class="num">GPUs</th>
      <th class="num">start</th><th class="num">end</th><th class="num">GPU mean W</th><th class="num">draw</th></tr></thead>
      <tbody>${fmt.rows(jobs.map((j) => `<tr><td>${esc(j.name)}</td><td>${esc(j.model)}</td><td class="num">${fmt.int(j.gpus)}</td>
      <td class="num">${fmt.s(j.start)}</td><td class="num">${fmt.s(j.end)}</td><td class="num">${fmt.int(j.gpu_mean_w)}</td>
      <td class="num">${mw(j.draw_mw)}</td></tr>`))}</tbody></table></section>`;
  let a = arrays;
  if (!a) {
    try { a = await runArrays(run.id, ["schedule_edges_s", "schedule_mw"]); } catch (e) { toast(`run #${run.id}: ${e.message}`); return; }
  }
  if (a.schedule_mw) {
    lineChart(el.querySelector(".power-schedule"), {
      label: "power over the schedule", height: 240,
      series: [{ name: "cluster", color: PALETTE[0], markers: false, points: binnedPoints(a.schedule_edges_s, a.schedule_mw, 1 / 3600) }],
      x: { scale: "linear", label: "time (hours)", name: "t", format: fmt.num },
      y: { scale: "linear", label: "power (MW)", format: fmt.num, tipFormat: mw },
      refLines: [{ y: s.idle_mw, label: `idle ${mw(s.idle_mw)}`, dash: "--" }],
    });
  }
  el.dataset.drawn = "1";
}

registerView("power_schedule", (el, s, ctx) => { renderPowerSchedule(el, s, ctx); });

// ------------------------------------------------------------------------------------------ GPU colour modes
const IDLE_PX = cssPixel(COLORS.idle), OVER_PX = cssPixel(COLORS.failed);

/** A per-GPU section of this page's GPUs: as sent (a scoped frame is the page's), or a stored whole-cluster array
 *  picked by the page's GPU.index values. */
function ofPage(ctx, values) {
  const { n, D } = ctx.grid;
  if (!values) return null;
  if (values.length === n) return values;
  if (D.gpus.index && values.length > Math.max(...D.gpus.index)) return Uint8Array.from(D.gpus.index, (g) => values[g]);
  return null;
}

function powerMode(name, section, { label, order, overview, colour, legend, hover }) {
  registerColourMode(name, {
    label, order, overview,
    async attach(ctx) {
      const st = ctx.state[name] = { values: null, run: 0 };
      const q = new URLSearchParams(location.search), r = Number(q.get("run"));
      if (!r || q.get("color") !== name) return;
      try {
        const a = await runArrays(r, [section]);
        if (a[section]) { st.values = ofPage(ctx, a[section]); st.run = r; }
      } catch (e) { toast(`run #${r}: ${e.message}`); }
    },
    runFrame(ctx, f) {
      const v = f.sections[section];
      if (!v || v.length !== ctx.grid.n) return false;
      Object.assign(ctx.state[name], { values: v, run: f.runId });
      return true;
    },
    colorize(ctx, colors) {
      const { values } = ctx.state[name], { n, gpuZone } = ctx.grid, perZone = new Float64Array(ctx.grid.dims.zones);
      const { scale, not_known: none } = sectionConstants(section);
      const counts = { known: 0, over: 0, high: 0, perZone };
      for (let i = 0; i < n; i++) {
        const v = values ? values[i] : none;
        if (v === none) { colors[i] = IDLE_PX; continue; }
        const share = v / scale;
        colors[i] = colour(share);
        counts.known += 1;
        if (share > 1) counts.over += 1;
        if (share >= 0.9) counts.high += 1;
        perZone[gpuZone[i]] += share;
      }
      return counts;
    },
    zoneFigure: (ctx, v, total) => (total ? `mean ${fmt.pct(v / total)}` : ""),
    legend(ctx, counts) {
      const st = ctx.state[name];
      const from = st.run ? `from ${ctx.live.label(st.run)}` : "no power run has published yet";
      return legend(ctx, counts) + `<span class="item muted source" title="${esc(from)}">${esc(from)}</span>`;
    },
    hover(ctx, i) {
      const v = ctx.state[name]?.values?.[i], { scale, not_known: none } = sectionConstants(section);
      return v == null || v === none ? "" : `<tr><th>${esc(hover)}</th><td>${fmt.pct(v / scale, 0)}</td></tr>`;
    },
    test: (ctx) => ({ [`${name}Of`]: (i) => (ctx.state[name].values ? ctx.state[name].values[i] : null) }),
  });
}

const gradient = (share) => UTIL_PIXEL[Math.min(255, Math.max(0, Math.round(255 * share)))];

powerMode("power", "gpu_power", {
  label: "power (GPU draw / TDP)", order: 60, hover: "draw / TDP over the step",
  overview: { label: "mean draw of the rack's GPUs over the step, share of their TDP",
              value: (r, k) => (r.gpu_power && r.gpu_power[k] >= 0 ? r.gpu_power[k] : null), tooltip: "GPU draw / TDP" },
  colour: gradient,
  legend: (ctx, c) => `<span class="item"><span class="util-scale" style="background:${UTIL_GRADIENT}"></span>
    GPU's mean draw over the step, 0–100 % of its TDP</span>
    <span class="item" data-power-high="${c.high}">at 90 % or more <b>${fmt.int(c.high)}</b></span>`,
});

powerMode("rack_headroom", "rack_power", {
  label: "rack budget headroom", order: 61, hover: "rack peak / budget",
  overview: { label: "the rack's peak over the step, share of its power budget",
              value: (r, k) => (r.rack_power && r.rack_power[k] >= 0 ? r.rack_power[k] : null), tooltip: "rack peak / budget" },
  colour: (share) => (share > 1 ? OVER_PX : gradient(share)),
  legend: (ctx, c) => `<span class="item"><span class="util-scale" style="background:${UTIL_GRADIENT}"></span>
    rack's peak over the step, 0–100 % of its budget</span>`
    + ctx.legendItem(COLORS.failed, "in a rack over its budget", c.over, ` data-power-over="${c.over}"`),
});
