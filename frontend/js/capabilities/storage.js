// The storage capability in the browser (twin/capabilities/storage): its result views (checkpoint: a checkpoint's
// timeline and bottlenecks; storage: a fan-out's time against clients), its helpers the Storage page shares
// (phaseBar, checkpointChart), and the GPU page's checkpoint colour mode (each GPU by its host's share of the last
// checkpoint done, from the live host_progress section).
import { COLORS, UTIL_GRADIENT, UTIL_PIXEL, cssPixel, esc, fmt } from "../twin.js";
import { lineChart, PALETTE, sizeLabel } from "../chart.js";
import { sectionConstants } from "../frames.js";
import { registerColourMode, registerView } from "../registry.js";
import { headlineCards, pct } from "../run_results.js";
import { publishedHtml } from "../published.js";

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
 *  only named (returned as the note to show). Where the curve passes the rated peak, the note says why, from the
 *  result's published comparison (`s.published`, sim/storage/published.py). Returns the note ("" when none). */
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
    y: { scale: "linear", min: 0, label: "rate (TB/s)", format: fmt.num,
         tipFormat: (v) => `${v.toFixed(2)} TB/s` },
    refLines: onScale ? [{ y: rated.sustained / 1e12, label: `rated sustained ${fmt.TBps(rated.sustained)}` },
                         { y: rated.peak / 1e12, label: `rated peak ${fmt.TBps(rated.peak)}`, dash: "--" }] : [],
  });
  if (rated) el.title = rated.source;
  const ref = (s.published ?? []).find((r) => r.key === "tectonic-peak");
  const top = Math.max(...s.series.rate);
  if (rated && onScale && top > rated.peak) {
    return `The simulated peak ${fmt.TBps(top)} is above the published peak ${fmt.TBps(rated.peak)}`
      + (ref?.why ? `. ${ref.why}` : "");
  }
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
    ${s.published?.length ? `<section class="panel"><h3>Published beside simulated</h3>${publishedHtml(s.published)}
      </section>` : ""}
    <div class="grid-2 results-grid">
      <section class="panel"><h3>Bottlenecks</h3>${resourceTable(s.bottlenecks, "name")}</section>
      <section class="panel"><h3>Busiest resource of each tier</h3>${resourceTable(s.tiers, "busiest")}</section>
    </div>`;
  el.querySelector(".timeline-note").textContent = checkpointChart(el.querySelector(".timeline"), s);
}

function resourceTable(rows, nameKey) {
  return `<table class="data"><thead><tr><th>tier</th><th>resource</th><th class="num">utilization</th></tr></thead>
    <tbody>${fmt.rows((rows ?? []).map((r) => `<tr><td>${esc(r.tier)}</td><td class="mono">${esc(r[nameKey])}</td>
    <td class="num">${pct(r.utilization ?? r.max_utilization)}</td></tr>`))}</tbody></table>`;
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
      y: { scale: "linear", min: 0, label: "time (s)", format: fmt.num, tipFormat: (v) => fmt.s(v) },
    });
  }
}

// ------------------------------------------------------------------------------------------ GPU colour mode
const IDLE_PX = cssPixel(COLORS.idle);

registerColourMode("checkpoint", {
  label: "checkpoint progress", order: 50,
  // per host (Host rows by id): the last checkpoint's host_progress section, as sent, and its run
  attach(ctx) { ctx.state.checkpoint = { progress: null, run: 0 }; },
  runFrame(ctx, f) {
    const hp = f.sections.host_progress;
    if (!hp || hp.length !== ctx.grid.D.hosts.id.length) return false;
    Object.assign(ctx.state.checkpoint, { progress: hp, run: f.runId });
    return true;
  },
  colorize(ctx, colors) {
    // each GPU coloured by its host's share of the checkpoint done (host_progress: share x scale)
    const hp = ctx.state.checkpoint.progress, { grid } = ctx, { n, gpuZone } = grid, host = grid.D.gpus.host;
    const { scale, not_in_job: notInJob } = sectionConstants("host_progress"), perZone = new Float64Array(grid.dims.zones);
    let inJob = 0, done = 0;
    for (let i = 0; i < n; i++) {
      const v = hp && host[i] >= 0 ? hp[host[i]] : notInJob;
      if (v === notInJob) { colors[i] = IDLE_PX; continue; }
      colors[i] = UTIL_PIXEL[Math.round((255 * v) / scale)];
      inJob += 1;
      if (v === scale) done += 1;
      perZone[gpuZone[i]] += v / scale;
    }
    return { inJob, done, perZone };
  },
  zoneFigure: (ctx, v) => `${fmt.int(v)} GPU-equivalents done`,
  overview: { label: "mean checkpoint progress of the rack's hosts",
              value: (r, k) => (r.host_progress && r.host_progress[k] >= 0 ? r.host_progress[k] : null),
              tooltip: "checkpoint done" },
  legend(ctx, counts) {
    const st = ctx.state.checkpoint;
    const from = st.run ? `from ${ctx.live.label(st.run)}` : "no checkpoint has published yet";
    return `<span class="item"><span class="util-scale" style="background:${UTIL_GRADIENT}">`
      + `</span> host's checkpoint done 0–100 %</span>`
      + ctx.legendItem(COLORS.idle, "not in the checkpoint", ctx.grid.n - counts.inJob)
      + `<span class="item" data-checkpoint="${counts.inJob}">GPUs in it <b>${fmt.int(counts.inJob)}</b></span>`
      + `<span class="item">done <b>${fmt.int(counts.done)}</b></span>`
      + `<span class="item muted source" title="${esc(from)}">${esc(from)}</span>`;
  },
});

registerView("checkpoint", renderCheckpoint);
registerView("storage", renderFanout);
