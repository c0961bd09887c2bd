// The debug capability in the browser (twin/capabilities/debug): its result views (debug: a rehearsal's verdict
// and culprit; startup: the process-group start-up model over scale) and the GPU page's debug colour mode (each GPU
// by where its rank stopped in a rehearsal: the live debug_stop section, or ?run=<id>'s stored gpu_stop).
import { COLORS, UTIL_GRADIENT, UTIL_PIXEL, api, cssPixel, esc, fmt, toast } from "../twin.js";
import { sectionConstants } from "../frames.js";
import { registerColourMode, registerView } from "../registry.js";
import { headlineCards } from "../run_results.js";

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
        ${run.dumps_refusal ? `dumps: ${esc(run.dumps_refusal)}`
          : `<a href="${esc(s.dumps_url ?? "")}" download>dumps (tar.gz)</a>
            <a href="${esc(s.dumps_url ?? "")}?archive=zip" download>zip</a>`}</p></section>
    <section class="panel"><h3>Summary</h3><pre class="mono">${esc(JSON.stringify(s, null, 1))}</pre></section>`;
}

/** startup: the process-group start-up model over scale (sim.debug.startup.model): per scale the groups, the total, its
 *  dominant term and the total with each optimization; the curve is on the Debug page; then the JSON. */
export function renderStartup(el, s, { cluster, run }) {
  const secs = fmt.s;
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

// ------------------------------------------------------------------------------------------ GPU colour mode
// A rehearsal's culprit: apart from the utilization scale's red end, which its lagging peers take in this mode.
const CULPRIT_COLOR = "#e879f9";
const PX = { idle: cssPixel(COLORS.idle), culprit: cssPixel(CULPRIT_COLOR) };

/** ?run=<id> with ?color=debug: that rehearsal's stored colouring (its gpu_stop array, coded as the live debug_stop
 *  section), kept while other rehearsals publish on the cluster's stream. */
async function pinDebugRun(st) {
  const q = new URLSearchParams(location.search), r = Number(q.get("run"));
  if (!r || q.get("color") !== "debug") return;
  try {
    const doc = await api(`/api/runs/${r}/results/?names=gpu_stop&arrays=base64`);
    const a = doc.arrays.gpu_stop;
    if (!a) { toast(`run #${r} has no debug colouring (a ${doc.kind} run, ${doc.status})`); return; }
    st.stop = Uint8Array.from(atob(a.data), (c) => c.charCodeAt(0));
    st.run = st.pinned = r;
  } catch (e) { toast(`run #${r}: ${e.message}`); }
}

registerColourMode("debug", {
  label: "debug rehearsal", order: 70,
  // per GPU: a rehearsal's debug_stop codes (the ?run= one's, or the last one sent live), and whose
  async attach(ctx) { ctx.state.debug = { stop: null, run: 0, pinned: 0 }; await pinDebugRun(ctx.state.debug); },
  runFrame(ctx, f) {
    const st = ctx.state.debug, ds = f.sections.debug_stop;
    if (!ds || ds.length !== ctx.grid.n || (st.pinned && st.pinned !== f.runId)) return false;
    st.stop = ds; st.run = f.runId;
    return true;
  },
  colorize(ctx, colors) {
    // each GPU coloured by where its rank stopped in a rehearsal (debug_stop): lag 0 green to lag_max red, the
    // culprit's GPUs in their own colour (CULPRIT_COLOR), GPUs outside the rehearsed job idle
    const ds = ctx.state.debug.stop, { grid } = ctx, { n, gpuZone } = grid, perZone = new Float64Array(grid.dims.zones);
    const { lag_max: lagMax, culprit: culpritCode, not_in_job: notInJob } = sectionConstants("debug_stop");
    let inJob = 0, culprit = 0, behind = 0;
    for (let i = 0; i < n; i++) {
      const v = ds ? ds[i] : notInJob;
      if (v === notInJob) { colors[i] = PX.idle; continue; }
      inJob += 1;
      if (v === culpritCode) { colors[i] = PX.culprit; culprit += 1; perZone[gpuZone[i]] += 1; continue; }
      if (v > 0) behind += 1;
      colors[i] = UTIL_PIXEL[Math.round(255 * Math.min(1, v / Math.max(1, Math.min(lagMax, 8))))];
    }
    return { inJob, culprit, behind, perZone };
  },
  zoneFigure: (ctx, v) => (v ? `${fmt.int(v)} culprit GPUs` : "no culprit"),
  legend(ctx, counts) {
    const st = ctx.state.debug, item = ctx.legendItem;
    const from = st.run ? `from ${ctx.live.label(st.run)}` : "no rehearsal chosen or sent yet";
    return `<span class="item"><span class="util-scale" style="background:${UTIL_GRADIENT}">`
      + `</span> collectives behind the furthest rank 0–8+</span>`
      + item(CULPRIT_COLOR, "culprit", counts.culprit, ' data-debug-culprit="1"')
      + item(COLORS.idle, "not in the rehearsal", ctx.grid.n - counts.inJob)
      + `<span class="item" data-debug="${counts.inJob}">GPUs in it <b>${fmt.int(counts.inJob)}</b>, behind `
      + `<b>${fmt.int(counts.behind)}</b></span>`
      + `<span class="item muted source" title="${esc(from)}">${esc(from)}</span>`;
  },
  test: (ctx) => ({ debugOf: (i) => (ctx.state.debug.stop ? ctx.state.debug.stop[i] : null) }),
});

registerView("debug", renderDebug);
registerView("startup", renderStartup);
