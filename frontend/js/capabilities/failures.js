// The failures capability in the browser (twin/capabilities/failures): its result view (a long job under failures)
// and the GPU page's failures colour mode (a failures run replayed on the grid: ?color=failures&run=<id>&t=<hour>).
import { COLORS, api, cssPixel, esc, fmt, toast, twin } from "../twin.js";
import { registerColourMode, registerView } from "../registry.js";
import { headlineCards, pct } from "../run_results.js";

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

// ---------------------------------------------------------------------------------------------- failure replay
/** A failures run's replayed timeline on the grid (?color=failures&run=<id>&t=<hour>): which GPUs each of its
 *  failures takes down (/clusters/<name>/reliability/failed.json: a GPU, a host's GPUs, a NIC cable's GPU, a leaf's
 *  GPUs), and at the replay hour `t` which are down (failed, not repaired yet) and which failed earlier. */
class FailureReplay {
  constructor(grid) {
    this.grid = grid; this.doc = null; this.t = 0;
    this.down = new Uint8Array(grid.n);       // per GPU: 1 down at t, 2 failed earlier in the run (repaired)
    this.cause = new Map();                   // GPU -> the last event that hit it by t
  }

  async load(url, run) {
    this.doc = await api(`${url}?run=${encodeURIComponent(run)}`);
    return this.doc;
  }

  at(t) {
    this.t = t;
    this.down.fill(0);
    this.cause.clear();
    for (const e of this.doc?.events ?? []) {
      if (e.t_hours > t || e.consequence === "while_down") continue;
      const now = t < e.until_hours ? 1 : 2;
      for (const g of e.gpus) {
        if (g >= this.grid.n) continue;
        if (now === 1 || this.down[g] === 0) this.down[g] = now;
        this.cause.set(g, e);
      }
    }
  }
}

/** The failure replay of ?color=failures&run=<id> (a failures run of this cluster), its hour from ?t= (default: the
 *  run's end) and the page's replay slider (kept in the URL); null otherwise (?run= of another colouring names
 *  another kind of run, a debug rehearsal's). */
async function failureReplay(grid, el, url, redraw) {
  const q = new URLSearchParams(location.search), run = q.get("run");
  if (!run || q.get("color") !== "failures") return null;
  const box = replayBox(el);
  const replay = new FailureReplay(grid);
  try { await replay.load(url, run); } catch (e) { toast(`failures run #${run}: ${e.message}`); return null; }
  const hours = replay.doc.hours || 1, slider = box.querySelector("#gpu-replay-time");
  const asked = Number(q.get("t"));
  replay.at(Number.isFinite(asked) && q.has("t") ? Math.min(asked, hours) : hours);
  box.hidden = false;
  const link = box.querySelector("#gpu-replay-run");
  link.textContent = `#${run}`;
  link.href = `/clusters/${encodeURIComponent(grid.clusterName)}/reliability/?run=${encodeURIComponent(run)}`;
  slider.value = String(Math.round((1000 * replay.t) / hours));
  slider.addEventListener("input", () => {
    replay.at((hours * slider.value) / 1000);
    const u = new URLSearchParams(location.search);
    u.set("t", replay.t.toFixed(2));
    history.replaceState(null, "", `${location.pathname}?${u}`);
    redraw();
  });
  twin.failureReplay = { at: (h) => { replay.at(h); redraw(); }, downOf: (i) => replay.down[i], replay };
  return replay;
}

/** The replay's slider beside the colour select (#gpu-replay: the run's link and its hour), made on first use. */
function replayBox(el) {
  let box = document.getElementById("gpu-replay");
  if (box) return box;
  box = Object.assign(document.createElement("span"), { id: "gpu-replay", className: "gpu-replay", hidden: true });
  box.innerHTML = 'failures run <a id="gpu-replay-run"></a> at hour <input type="range" id="gpu-replay-time" '
    + 'min="0" max="1000" value="1000" aria-label="replay hour">';
  (el.mode.closest("label") ?? el.mode).after(box);
  return box;
}

// ------------------------------------------------------------------------------------------ GPU colour mode
const FAILED_NOW = "#ff2e63", FAILED_BEFORE = "#f5a524";      // a replayed failure: down at the hour, repaired
const PX = { now: cssPixel(FAILED_NOW), before: cssPixel(FAILED_BEFORE), unusable: cssPixel(COLORS.unusable),
             idle: cssPixel(COLORS.idle) };

registerColourMode("failures", {
  label: "failures (replay of a run)", order: 60,
  async attach(ctx) {
    ctx.state.failures = await failureReplay(ctx.grid, ctx.page.el, ctx.page.canvas.dataset.failedUrl,
                                             () => ctx.redraw());
  },
  colorize(ctx, colors) {
    // the replayed run's failed parts at its replay hour: down now, failed earlier (repaired), the rest as health
    const replay = ctx.state.failures, { grid, inv: { blocked } } = ctx, { n, gpuZone } = grid;
    const perZone = new Float64Array(grid.dims.zones);
    let now = 0, before = 0, unusable = 0;
    for (let i = 0; i < n; i++) {
      const d = replay?.down[i] ?? 0;
      if (d === 1) { colors[i] = PX.now; now += 1; perZone[gpuZone[i]] += 1; continue; }
      if (d === 2) { colors[i] = PX.before; before += 1; continue; }
      if (blocked[i]) { colors[i] = PX.unusable; unusable += 1; continue; }
      colors[i] = PX.idle;
    }
    return { now, before, unusable, perZone };
  },
  zoneFigure: (ctx, v) => `${fmt.int(v)} down`,
  legend(ctx, counts) {
    const rp = ctx.state.failures, doc = rp?.doc, item = ctx.legendItem;
    return item(FAILED_NOW, "down at this hour", counts.now, ' data-failed-now="1"')
      + item(FAILED_BEFORE, "failed earlier, repaired", counts.before)
      + item(COLORS.unusable, "unusable in the inventory", counts.unusable)
      + `<span class="item muted source">${doc ? `run #${doc.run}: hour ${rp.t.toFixed(1)} of `
        + `${doc.hours.toFixed(0)}, ${doc.events.filter((e) => e.t_hours <= rp.t).length} failures so far`
        : "no failures run chosen: open one from the Reliability page"}</span>`;
  },
  hover(ctx, i, active) {
    const e = active ? ctx.state.failures?.cause.get(i) : null;
    if (!e) return "";
    return `<tr><th>failure</th><td>${esc(`${e.category} at hour ${e.t_hours.toFixed(1)} (${e.consequence}, `
      + `${e.item_kind} ${ctx.grid.short(e.item)}), back at hour ${e.until_hours.toFixed(1)}`)}</td></tr>`;
  },
});

registerView("failures", renderFailures);
