// The GPU grid (/clusters/<name>/gpus/): every GPU of a cluster as one cell of a canvas, zones as labelled blocks,
// racks as small squares inside them (their hosts stacked top to bottom, each host's GPUs in rows), coloured by one
// of the colour modes (registry.js): the generic ones here (job: the runs' GPUs, health, utilization), the others
// registered by the capabilities' browser modules (frontend/js/capabilities/). Drawn into one ImageData through a
// Uint32Array; hover and click find the GPU by arithmetic on the layout. State comes from the page data
// (twin/web/gpu_data.py), the cluster's live snapshot, then the cluster's live stream (docs/live.md), whose frames
// carry every run on the cluster and whose inventory events make the page re-read the statuses.
//
// The pieces: Grid (the structure and its lookups), Inventory (statuses from the page data / status.json),
// LiveRuns (what the frames say: each GPU's run, unusable marks, link utilization), the colour modes (each colours
// every GPU and words its legend, zone figures and tooltip rows from the page context `ctx`), GridView (layout,
// drawing, legend, tooltip), then start() wires them to the page.
//
// Zoomed into one zone (?zone=<name>) or building (?building=<n>), the page data, the statuses and the live frames (a
// scoped stream, docs/live.md) hold that place's GPUs and links alone, in the same format: everything below works
// unchanged. The zone
// overview (?view=zones, one square per rack) is gpus-overview.js.
import {
  COLORS, UTIL_GRADIENT, UTIL_PIXEL, api, cssPixel, esc, fmt, live, markReady, timeFrame, toast, twin, utilCss,
} from "./twin.js";
import { fetchSnapshot, sectionCodes } from "./frames.js";
import { colourMode, colourModes, loadCapabilities, registerColourMode } from "./registry.js";

const DEFAULT_MODE = "job";
const LEGEND_RUNS = 4;                           // runs (or other groups) named in the legend, the largest first

// Jobs get distinct colours, none of them red (unusable) or grey (idle); a run keeps its colour while it runs.
const JOB_COLORS = ["#4aa3ff", "#3fb950", "#f5a524", "#bc8cff", "#39c5cf", "#ff7eb6", "#a3e635", "#ffd33d",
                    "#7c9cff", "#fb923c", "#2dd4bf", "#e879f9"];
// Categories of the health mode: each inventory status (by name: the page data's status_names give the codes),
// then usable-but-for-a-part.
const STATUS_COLORS = { active: "#2f6b4b", failed: COLORS.failed, drained: COLORS.drained, maintenance: "#4aa3ff" };
const PART_DOWN = { key: "unusable", color: "#d55fde", label: "unusable (NIC, cable or leaf down)" };
const css = getComputedStyle(document.documentElement);
const THEME = Object.fromEntries(Object.entries({ bg: "--bg", zone: "--panel", text: "--text", muted: "--muted" })
  .map(([key, name]) => [key, css.getPropertyValue(name).trim()]));
const PX = { idle: cssPixel(COLORS.idle), unusable: cssPixel(COLORS.unusable), none: cssPixel(COLORS.none),
             bg: cssPixel(THEME.bg), zone: cssPixel(THEME.zone) };
const UTIL_BUCKETS = [[0, "< 1 %"], [0.01, "1–50 %"], [0.5, "50–90 %"], [0.9, "≥ 90 %"]];   // [from, label]

// ------------------------------------------------------------------------------------------------------- grid
/** The cluster's structure from the page data: counts, each GPU's zone, GPUs per zone, the hit-testing tables. */
class Grid {
  constructor(data, clusterName) {
    const D = (this.D = data);
    this.clusterName = clusterName;
    this.n = D.gpus.count;
    this.nLinks = D.links.count;
    this.active = D.status_names.indexOf("active");    // the inventory status code of a usable item
    const max = (a) => a.reduce((m, v) => (v > m ? v : m), -1);
    this.dims = { zones: D.zones.name.length, racks: max(D.racks.pos) + 1, hosts: max(D.hosts.pos) + 1,
                  gpus: max(D.gpus.slot) + 1 };
    const { zones, racks, hosts, gpus } = this.dims, n = this.n;
    this.gpuZone = new Uint16Array(n);                  // per GPU: its zone (per-zone figures, redraw rectangles)
    this.zoneGpus = new Uint32Array(zones);
    for (let i = 0; i < n; i++) {
      const h = D.gpus.host[i];
      this.gpuZone[i] = h < 0 ? 0 : D.racks.zone[D.hosts.rack[h]];
      this.zoneGpus[this.gpuZone[i]] += 1;
    }
    // Lookup tables for hit-testing: (zone, rack position, host position) -> host; (host, slot) -> GPU.
    this.hostAt = new Int32Array(zones * racks * hosts).fill(-1);
    D.hosts.rack.forEach((r, h) => {
      if (r >= 0) this.hostAt[(D.racks.zone[r] * racks + D.racks.pos[r]) * hosts + D.hosts.pos[h]] = h;
    });
    this.gpuAtHost = new Int32Array(D.hosts.id.length * gpus).fill(-1);
    for (let i = 0; i < n; i++) if (D.gpus.host[i] >= 0) this.gpuAtHost[D.gpus.host[i] * gpus + D.gpus.slot[i]] = i;
  }

  short(name) { return name.startsWith(`${this.clusterName}.`) ? name.slice(this.clusterName.length + 1) : name; }
  gpuIndex(i) { return this.D.gpus.index ? this.D.gpus.index[i] : i; }
  gpuName(i) { const D = this.D; return D.gpus.names[i] ?? `${D.hosts.name[D.gpus.host[i]]}.gpu${D.gpus.slot[i]}`; }
  hostUrl(h) { return `/inventory/host/${this.D.hosts.id[h]}/`; }
  summary() {
    const D = this.D;
    return `${fmt.int(this.n)} GPUs · ${fmt.int(D.hosts.id.length)} hosts · ${fmt.int(D.racks.name.length)} racks · `
      + `${fmt.int(this.dims.zones)} zones`;
  }
}

// -------------------------------------------------------------------------------------------------- inventory
/** The inventory's view of each GPU: status code, unusable-reason bits, blocked (not usable: status not active or
 *  a part down), and each host's status. Replaced whole by each read (page data, then status.json). */
class Inventory {
  constructor(grid) { this.grid = grid; }

  set(s) {
    const n = this.grid.n, active = this.grid.active;
    this.status = Uint8Array.from(s.status);
    this.reasons = new Uint8Array(n);
    s.unusable.gpu.forEach((g, k) => { this.reasons[g] = s.unusable.reasons[k]; });
    this.blocked = Uint8Array.from(this.status, (v, i) => (v !== active || this.reasons[i] !== 0 ? 1 : 0));
    this.hostStatus = new Uint8Array(this.grid.D.hosts.id.length).fill(active);
    s.hosts_not_active.host.forEach((h, k) => { this.hostStatus[h] = s.hosts_not_active.status[k]; });
  }
}

// ------------------------------------------------------------------------------------------------------- live
/** What the cluster's live frames say: each GPU's run (0: none), the GPUs a run's states called unusable, each
 *  backend link's utilization (the max over the runs that published one), and the runs seen. */
class LiveRuns {
  constructor(grid, { onRunInfo = () => {} } = {}) {
    this.grid = grid;
    this.onRunInfo = onRunInfo;                        // a run's API record arrived (its legend label can say more)
    this.runOf = new Uint32Array(grid.n);
    this.unusable = new Uint8Array(grid.n);
    this.util = new Float32Array(grid.nLinks);
    this.onRunFrame = () => {};   // a frame of a run was accepted (the colour modes' runFrame hooks)
    this.runs = new Map();   // run id -> {seen (by the cluster stream), final, status, progress, util, color, info}
    this.clusterSeq = 0;     // the last cluster-stream frame applied (initial snapshot included)
    this.mismatchShown = false;
  }

  run(r) {
    let run = this.runs.get(r);
    if (!run) {
      run = { seen: false, final: false, status: null, progress: null, util: null, color: null, info: null };
      this.runs.set(r, run);
      // a list query, not /api/runs/<id>/: a run deleted since it published is an empty list, not a failed request
      api(`/api/runs/?id__in=${r}`).then((page) => {
        run.info = page.results?.[0] ?? null;
        if (run.info) this.onRunInfo(r);
      }).catch(() => { /* the label stays "run #<id>" */ });
    }
    return run;
  }

  /** Apply one frame of run f.runId to the GPU and link state; false when it is stale or of no run. A GPU whose
   *  state is "in job" goes to the run; a GPU the run had and no longer has is freed; the final frame frees them
   *  all. "Unusable" states mark GPUs only from frames that arrive after the last inventory read (`markUnusable`):
   *  a run's GPU states are the inventory as it was when the run started, and the inventory read is fresher than a
   *  snapshot. A frame of the run's own stream (`runStream`: its snapshot at load) counts only while the cluster
   *  stream has not spoken for that run (its sequence numbers are another stream's). */
  apply(f, { runStream = false, markUnusable = !runStream } = {}) {
    const r = f.runId, { n, nLinks } = this.grid;
    if (!r) return false;
    if (!runStream) {
      if (f.seq <= this.clusterSeq) return false;      // already applied (a resync of the same snapshot) or stale
      this.clusterSeq = f.seq;
    }
    const run = this.run(r);
    if (runStream ? run.seen : run.final && !f.final) return false;
    if (!runStream) run.seen = true;
    if (f.status) run.status = f.status;
    if (f.progress != null) run.progress = f.progress;
    const st = f.sections.gpu_state, lu = f.sections.link_util;
    if ((st && st.length !== n) || (lu && lu.length !== nLinks)) {
      if (!this.mismatchShown) toast(`live frames do not match this page (${fmt.int(n)} GPUs, ${fmt.int(nLinks)} `
                                     + "links): the cluster was rebuilt, reload the page");
      this.mismatchShown = true;
      return false;
    }
    if (st) {
      const { in_job: inJob, unusable } = sectionCodes("gpu_state").byName;   // the codes, from the server's table
      const runOf = this.runOf, marks = this.unusable;
      for (let i = 0; i < n; i++) {
        const s = st[i];
        if (s === inJob) runOf[i] = r;
        else if (runOf[i] === r) runOf[i] = 0;
        if (markUnusable) marks[i] = s === unusable ? 1 : 0;
      }
    }
    this.onRunFrame(f);
    if (lu) {
      // a new run's utilization replaces the last values of finished runs; running runs combine (max per link)
      if (!run.final) for (const other of this.runs.values()) if (other.final) other.util = null;
      run.util = lu;
    }
    if (f.final) {
      run.final = true;
      for (let i = 0; i < n; i++) if (this.runOf[i] === r) this.runOf[i] = 0;
    }
    if (lu || f.final) this.combineUtil();
    return true;
  }

  combineUtil() {
    const util = this.util.fill(0), nLinks = this.grid.nLinks;
    for (const run of this.runs.values()) {
      const u = run.util;
      if (u) for (let l = 0; l < nLinks; l++) if (u[l] > util[l]) util[l] = u[l];
    }
  }

  hasUtil() { return [...this.runs.values()].some((run) => run.util); }

  /** The run's job colour, chosen the first time it is asked: the first not held by a running run nor in `avoid`
   *  (colours shown for something else: what holds GPUs, see holdersOf). */
  color(r, avoid = new Set()) {
    const run = this.runs.get(r);
    if (run.color == null) {
      const used = new Set([...this.runs.values()].filter((x) => !x.final && x.color != null).map((x) => x.color));
      run.color = JOB_COLORS.findIndex((c, k) => !used.has(k) && !avoid.has(c));
      if (run.color < 0) run.color = r % JOB_COLORS.length;
    }
    return JOB_COLORS[run.color];
  }

  label(r) {
    const run = this.runs.get(r), info = run?.info;
    const what = info ? `${info.kind}${info.params?.gpus ? ` · ${fmt.int(info.params.gpus)} GPUs` : ""}` : "";
    const state = run?.final ? run.status : run?.status === "running" ? `running ${Math.round(run.progress ?? 0)} %`
      : run?.status ?? "";
    return `run #${r}${what ? ` ${what}` : ""}${state ? ` (${state})` : ""}`;
  }
}

// ---------------------------------------------------------------------------------------------------- colours
/** The health mode's categories: the inventory statuses in code order, then PART_DOWN. */
function healthCategories(statusNames) {
  const cats = statusNames.map((key) => ({ key, color: STATUS_COLORS[key] ?? COLORS.none }));
  cats.push(PART_DOWN);
  return cats.map((c) => ({ ...c, px: cssPixel(c.color) }));
}

/** The zone overview's share of a rack's GPUs counted in `counts` (a zones.json racks column; null without it). */
const rackShare = (counts, gpus, k) => (counts ? counts[k] / Math.max(1, gpus[k]) : null);

/** The legend's items of groups of GPUs (runs, jobs...): `groups` [[id, count]], the largest `named` (LEGEND_RUNS)
 *  named (in id order, so items do not swap), the rest summed; the legend stays one line (the grid must not move
 *  under the pointer). `item(id, count)` words one; `more(n, gpus)` the rest. */
function legendGroups(groups, item, more, named = LEGEND_RUNS) {
  const sorted = [...groups].sort((a, b) => b[1] - a[1]);
  let html = sorted.slice(0, named).sort((a, b) => a[0] - b[0]).map(([id, c]) => item(id, c)).join("");
  if (sorted.length > named) {
    const rest = sorted.slice(named);
    html += more(rest.length, rest.reduce((m, [, c]) => m + c, 0));
  }
  return html;
}

/** What holds GPUs beyond a run in flight (a job placed on them for days, between its runs), from the modes that
 *  declare a `holder` (registry.js): [{of (per GPU: 0, or 1 + its group), groups: [{id, color, label}], attr,
 *  plural}]. */
const holdersOf = (ctx) => colourModes().filter((m) => m.holder).map((m) => m.holder(ctx)).filter(Boolean);

// The default mode: a GPU held by a running job (a mode's `holder`) in the job's colour first (a placed job holds its
// GPUs between its runs: coloured by runs alone, it would look idle), else the run in flight on it, else idle.
registerColourMode("job", {
  label: "jobs and runs", order: 10,
  colorize(ctx, colors) {
    const { grid: { n, gpuZone }, inv: { blocked }, live: liveRuns } = ctx, { runOf, unusable: liveUnusable } = liveRuns;
    const perZone = new Float64Array(ctx.grid.dims.zones), byRun = new Map(), held = holdersOf(ctx);
    const heldPx = held.map((h) => h.groups.map((g) => cssPixel(g.color)));
    const heldCounts = held.map((h) => new Uint32Array(h.groups.length));
    const avoid = new Set(held.flatMap((h) => h.groups.map((g) => g.color)));   // a run never takes a job's colour
    let idle = 0, unusable = 0, lastRun = 0, lastColor = 0, lastCount = null;
    gpus: for (let i = 0; i < n; i++) {
      if (blocked[i] | liveUnusable[i]) { colors[i] = PX.unusable; unusable += 1; continue; }
      for (let k = 0; k < held.length; k++) {
        const g = held[k].of[i];
        if (g && g <= heldPx[k].length) {
          colors[i] = heldPx[k][g - 1]; heldCounts[k][g - 1] += 1; perZone[gpuZone[i]] += 1;
          continue gpus;
        }
      }
      const r = runOf[i];
      if (r === 0) { colors[i] = PX.idle; idle += 1; continue; }
      if (r !== lastRun) {
        lastRun = r; lastColor = cssPixel(liveRuns.color(r, avoid));
        lastCount = byRun.get(r) ?? byRun.set(r, { n: 0 }).get(r);
      }
      colors[i] = lastColor; lastCount.n += 1; perZone[gpuZone[i]] += 1;
    }
    return { byRun, idle, unusable, perZone, held, heldCounts };
  },
  zoneFigure: (ctx, v) => `${fmt.int(v)} in jobs`,
  overview: { label: "share of the rack's GPUs in the last run", value: (r, k) => rackShare(r.in_run, r.gpus, k) },
  legend(ctx, counts) {
    // the holders' groups first (running jobs), then the runs, LEGEND_RUNS named in all
    let html = "", named = 0;
    counts.held.forEach((h, k) => {
      const groups = h.groups.map((g, j) => [j, counts.heldCounts[k][j]]).filter(([, c]) => c > 0);
      html += legendGroups(groups, (j, c) => legendItem(h.groups[j].color, h.groups[j].label, c,
                                                        ` data-${h.attr}="${h.groups[j].id}"`),
                           (m, gpus) => `<span class="item">${m} more ${h.plural} <b>${fmt.int(gpus)}</b></span>`,
                           LEGEND_RUNS - named);
      named = Math.min(LEGEND_RUNS, named + groups.length);
    });
    const lr = ctx.live, byRun = [...counts.byRun].map(([r, c]) => [r, c.n]);
    html += legendGroups(byRun, (r, c) => legendItem(lr.color(r), lr.label(r), c, ` data-run="${r}"`),
                         (k, gpus) => `<span class="item">${k} more runs <b>${fmt.int(gpus)}</b></span>`,
                         LEGEND_RUNS - named);
    if (!html) html += `<span class="muted">no job or run on the cluster</span>`;
    return html + legendItem(COLORS.idle, "idle", counts.idle) + legendItem(COLORS.unusable, "unusable", counts.unusable);
  },
});

registerColourMode("health", {
  label: "health", order: 30,
  attach(ctx) { ctx.state.health = healthCategories(ctx.grid.D.status_names); },
  colorize(ctx, colors) {
    const { grid, inv: { status, reasons }, live: { unusable: liveUnusable } } = ctx, { n, gpuZone } = grid;
    const health = ctx.state.health, perZone = new Float64Array(grid.dims.zones);
    const cat = new Uint32Array(health.length), partDown = health.length - 1, active = grid.active;
    for (let i = 0; i < n; i++) {
      const k = status[i] !== active ? status[i] : (reasons[i] | liveUnusable[i]) !== 0 ? partDown : active;
      colors[i] = health[k].px; cat[k] += 1;
      if (k !== active) perZone[gpuZone[i]] += 1;
    }
    return { cat, perZone };
  },
  zoneFigure: (ctx, v) => (v ? `${fmt.int(v)} not usable` : "all usable"),
  overview: { label: "share of the rack's GPUs not usable", value: (r, k) => rackShare(r.not_usable, r.gpus, k) },
  legend: (ctx, counts) => ctx.state.health.map((h, k) => legendItem(h.color, h.label ?? h.key, counts.cat[k],
                                                                     ` data-health="${h.key}"`)).join(""),
});

registerColourMode("utilization", {
  label: "utilization", order: 40,
  colorize(ctx, colors) {
    const { grid, live: { util } } = ctx, { n, gpuZone } = grid, perZone = new Float64Array(grid.dims.zones);
    const buckets = new Uint32Array(UTIL_BUCKETS.length), link = grid.D.gpus.link;
    const [, from1, from2, from3] = UTIL_BUCKETS.map(([from]) => from);
    let none = 0, sum = 0;
    for (let i = 0; i < n; i++) {
      const l = link[i];
      if (l < 0) { colors[i] = PX.none; none += 1; continue; }
      const u = util[l];
      colors[i] = UTIL_PIXEL[Math.min(255, Math.max(0, Math.round(u * 255)))];
      buckets[u < from1 ? 0 : u < from2 ? 1 : u < from3 ? 2 : 3] += 1;
      sum += u; perZone[gpuZone[i]] += u;
    }
    return { buckets, none, mean: sum / Math.max(1, n - none), perZone };
  },
  zoneFigure: (ctx, v, total) => `mean ${fmt.pct(v / Math.max(1, total))}`,
  overview: { label: "mean NIC-link utilization of the rack's GPUs", value: (r, k) => (r.util ? r.util[k] : null) },
  legend(ctx, counts) {
    const lr = ctx.live;
    let html = `<span class="item"><span class="util-scale" style="background:${UTIL_GRADIENT}">`
      + `</span> NIC link utilization 0–100 %</span>`;
    UTIL_BUCKETS.forEach(([from, label], k) => { html += legendItem(utilCss(from), label, counts.buckets[k]); });
    if (counts.none) html += legendItem(COLORS.none, "no NIC cable", counts.none);
    html += `<span class="item">mean <b>${fmt.pct(counts.mean, 1)}</b></span>`;
    const src = [...lr.runs].filter(([, run]) => run.util).map(([id]) => lr.label(id));
    const from = src.length ? `from ${src.join(", ")}` : "no run has published yet";
    return `${html}<span class="item muted source" title="${esc(from)}">${esc(from)}</span>`;
  },
});

// ------------------------------------------------------------------------------------------------------ layout
/** Choose the largest cell that shows the whole cluster in the space available (device pixels): a host is its
 *  GPUs in two rows (slot 0 top left), a rack its hosts stacked, a zone a grid of racks, the cluster a grid of
 *  zones. */
function computeLayout(dims, availW, availH, dpr) {
  const { zones, racks, hosts, gpus } = dims;
  const u = Math.max(1, Math.round(dpr));
  const hostCols = gpus > 4 ? Math.ceil(gpus / 2) : gpus, hostRows = Math.ceil(gpus / hostCols);
  const g = { dpr, u, hostCols, hostRows, pad: 6 * u, zoneGap: 10 * u, label: Math.round(18 * dpr) };
  let best = null;
  for (let c = Math.round(16 * dpr); c >= Math.max(2, Math.round(2 * dpr)); c--) {
    // gaps grow with the level they separate: GPUs (a seam, once cells are big enough), hosts, racks, zones
    const seam = c >= 6 * u ? u : 0, fill = c - seam, hostGap = u + 2 * seam, rackGap = 3 * u + 2 * seam;
    const hostH = hostRows * c + hostGap, rackW = hostCols * c + rackGap, rackH = hosts * hostH - hostGap + rackGap;
    best = null;                                        // the lowest arrangement with this cell size
    for (let zc = 1; zc <= zones; zc++) {
      const room = Math.floor((availW - (zc - 1) * g.zoneGap) / zc) - 2 * g.pad + rackGap;
      let rc = Math.min(racks, Math.floor(room / rackW));
      if (rc < 1) break;
      const rr = Math.ceil(racks / rc);
      rc = Math.ceil(racks / rr);                       // balance the rows: no near-empty last row
      const zr = Math.ceil(zones / zc);
      const zoneW = rc * rackW - rackGap + 2 * g.pad, zoneH = g.label + rr * rackH - rackGap + 2 * g.pad;
      const height = zr * zoneH + (zr - 1) * g.zoneGap;
      if (!best || height < best.height) {
        best = { ...g, c, fill, hostGap, rackGap, hostH, rackW, rackH, rc, rr, zc, zr, zoneW, zoneH, height,
                 width: zc * zoneW + (zc - 1) * g.zoneGap };
      }
    }
    if (best && best.height <= availH) return best;
  }
  return best;                                          // the smallest cell: the page scrolls
}

// -------------------------------------------------------------------------------------------------------- view
/** The canvas, its legend, hover box and tooltip: lays the grid out, draws only what changed, finds the GPU under
 *  the pointer. */
class GridView {
  constructor(el, page, mode) {
    this.el = el;                                       // {canvas, wrap, tooltip, hoverBox, legend}
    this.ctx = el.canvas.getContext("2d");
    this.page = page;                                   // the context the colour modes see (start())
    const { grid, inv, live: liveRuns } = page;
    this.grid = grid; this.inv = inv; this.live = liveRuns; this.mode = mode;
    this.colors = new Uint32Array(grid.n);              // per GPU: its colour now
    this.dirty = new Int32Array(4 * grid.dims.zones);   // per zone: the rectangle of the cells a draw changed
    this.hovered = -1;
    this.legendHtml = "";
    this.G = null;                                      // geometry of the current layout (device pixels)
  }

  /** Lay the grid out for the current size: canvas size, the zone blocks, each GPU's cell offset. */
  layout() {
    const { canvas, wrap } = this.el, { grid, ctx } = this, n = grid.n, D = grid.D;
    const dpr = window.devicePixelRatio || 1;
    const top = wrap.getBoundingClientRect().top + window.scrollY;
    const availW = Math.max(300, wrap.clientWidth) * dpr;
    const availH = Math.max(320, window.innerHeight - top - 16) * dpr;
    const G = (this.G = computeLayout(grid.dims, availW, availH, dpr));
    canvas.width = G.width;
    canvas.height = G.height;
    canvas.style.width = `${G.width / dpr}px`;
    canvas.style.height = `${G.height / dpr}px`;
    this.img = ctx.createImageData(G.width, G.height);
    const buf = (this.buf = new Uint32Array(this.img.data.buffer));   // the pixels, packed 32-bit
    buf.fill(PX.bg);
    for (let z = 0; z < grid.dims.zones; z++) {
      const [x0, y0] = this.zoneOrigin(z);
      for (let y = y0; y < y0 + G.zoneH; y++) buf.fill(PX.zone, y * G.width + x0, y * G.width + x0 + G.zoneW);
    }
    ctx.putImageData(this.img, 0, 0);
    this.drawn = new Uint32Array(n);                    // as last written; 0 is no colour (pixels are opaque)
    this.labels = [];                                   // zone label texts as last drawn
    this.cellOff = new Int32Array(n).fill(-1);          // per GPU: its cell's top-left pixel offset (-1: not drawn)
    let cells = 0;
    for (let i = 0; i < n; i++) {
      const h = D.gpus.host[i];
      if (h < 0) continue;
      const [x, y] = this.hostOrigin(h), s = D.gpus.slot[i];
      this.cellOff[i] = (y + Math.floor(s / G.hostCols) * G.c) * G.width + x + (s % G.hostCols) * G.c;
      cells += 1;
    }
    canvas.dataset.cells = String(cells);
  }

  zoneOrigin(z) {
    const G = this.G;
    return [(z % G.zc) * (G.zoneW + G.zoneGap), Math.floor(z / G.zc) * (G.zoneH + G.zoneGap)];
  }

  /** Top-left device pixel of a host's first GPU cell. */
  hostOrigin(h) {
    const G = this.G, D = this.grid.D, r = D.hosts.rack[h], p = D.racks.pos[r];
    const [zx, zy] = this.zoneOrigin(D.racks.zone[r]);
    return [zx + G.pad + (p % G.rc) * G.rackW,
            zy + G.pad + G.label + Math.floor(p / G.rc) * G.rackH + D.hosts.pos[h] * G.hostH];
  }

  /** The GPU under device pixel (x, y), or -1: arithmetic on the layout, then two table lookups. */
  gpuAtPixel(x, y) {
    const G = this.G, { dims, hostAt, gpuAtHost } = this.grid;
    const zx = Math.floor(x / (G.zoneW + G.zoneGap)), zy = Math.floor(y / (G.zoneH + G.zoneGap));
    const lx = x - zx * (G.zoneW + G.zoneGap) - G.pad, ly = y - zy * (G.zoneH + G.zoneGap) - G.pad - G.label;
    const z = zy * G.zc + zx;
    if (zx >= G.zc || z >= dims.zones || lx < 0 || ly < 0) return -1;
    const col = Math.floor(lx / G.rackW), row = Math.floor(ly / G.rackH);
    const rx = lx - col * G.rackW, ry = ly - row * G.rackH, p = row * G.rc + col;
    if (col >= G.rc || p >= dims.racks || rx >= G.hostCols * G.c) return -1;
    const hp = Math.floor(ry / G.hostH), hy = ry - hp * G.hostH;
    if (hp >= dims.hosts || hy >= G.hostRows * G.c) return -1;
    const h = hostAt[(z * dims.racks + p) * dims.hosts + hp];
    return h < 0 ? -1 : gpuAtHost[h * dims.gpus + Math.floor(hy / G.c) * G.hostCols + Math.floor(rx / G.c)];
  }

  /** The GPU under a mouse event, or -1. */
  gpuAtEvent(ev) {
    const rect = this.el.canvas.getBoundingClientRect();
    return this.gpuAtPixel(Math.floor((ev.clientX - rect.left) * this.G.dpr),
                           Math.floor((ev.clientY - rect.top) * this.G.dpr));
  }

  /** Where a GPU's cell is (CSS pixels in the canvas), or null when it is not drawn. */
  cellCenter(i) {
    const o = this.cellOff[i], G = this.G;
    return o < 0 ? null : { x: ((o % G.width) + G.fill / 2) / G.dpr,
                            y: (Math.floor(o / G.width) + G.fill / 2) / G.dpr };
  }

  /** Colour the GPUs, then write only the cells whose colour changed since the last draw and put back, per zone,
   *  only the rectangle around them (never over the zone's label): a frame that moves a few GPUs costs little more
   *  than the colouring loop. */
  draw() {
    const { grid, colors, drawn, cellOff, buf, G } = this, n = grid.n, gpuZone = grid.gpuZone;
    this.counts = this.colourMode().colorize(this.page, colors);
    const c = G.fill, W = G.width, box = this.dirty.fill(-1);   // per zone: x0, y0, x1, y1 of the changed cells
    for (let i = 0; i < n; i++) {
      const col = colors[i], o = cellOff[i];
      if (col === drawn[i] || o < 0) continue;
      drawn[i] = col;
      for (let r = 0, row = o; r < c; r++, row += W) for (let k = 0; k < c; k++) buf[row + k] = col;
      const x = o % W, y = (o - x) / W, b = 4 * gpuZone[i];
      if (box[b] < 0) { box[b] = box[b + 2] = x; box[b + 1] = box[b + 3] = y; continue; }
      if (x < box[b]) box[b] = x; else if (x > box[b + 2]) box[b + 2] = x;
      if (y < box[b + 1]) box[b + 1] = y; else if (y > box[b + 3]) box[b + 3] = y;
    }
    for (let b = 0; b < box.length; b += 4) {
      if (box[b] < 0) continue;
      this.ctx.putImageData(this.img, 0, 0, box[b], box[b + 1], box[b + 2] + c - box[b], box[b + 3] + c - box[b + 1]);
    }
    this.drawLabels();
    this.el.canvas.dataset.mode = this.mode;
    this.renderLegend();
    if (this.hovered >= 0) this.showTooltip(this.hovered);
  }

  /** The colour mode in use (the default one for a name no module registered). */
  colourMode() { return colourMode(this.mode) ?? colourMode(DEFAULT_MODE); }

  zoneFigure(z) { return this.colourMode().zoneFigure(this.page, this.counts.perZone[z], this.grid.zoneGpus[z]); }

  renderLegend() {
    const html = this.colourMode().legend(this.page, this.counts);
    if (html !== this.legendHtml) this.el.legend.innerHTML = this.legendHtml = html;
  }

  /** Each zone's label: its name and figures, redrawn when the text changed. */
  drawLabels() {
    const { ctx, G, grid } = this;
    ctx.font = `${Math.round(12 * G.dpr)}px system-ui, sans-serif`;
    ctx.textBaseline = "middle";
    for (let z = 0; z < grid.dims.zones; z++) {
      const name = grid.short(grid.D.zones.name[z]);
      const text = `${fmt.int(grid.zoneGpus[z])} GPUs · ${this.zoneFigure(z)}`;
      if (this.labels[z] === text) continue;
      this.labels[z] = text;
      const [x, y] = this.zoneOrigin(z), top = y + G.pad, mid = top + G.label / 2 - G.dpr;
      ctx.fillStyle = THEME.zone;
      ctx.fillRect(x, top, G.zoneW, G.label);
      ctx.fillStyle = THEME.text;
      ctx.fillText(name, x + G.pad, mid);
      ctx.fillStyle = THEME.muted;
      ctx.fillText(text, x + G.pad + ctx.measureText(`${name}  `).width, mid,
                   G.zoneW - 3 * G.pad - ctx.measureText(name).width);
    }
  }

  showTooltip(i) {
    const { grid, inv, live: lr } = this, D = grid.D;
    const h = D.gpus.host[i], r = D.hosts.rack[h], z = D.racks.zone[r], reasons = inv.reasons[i];
    const st = D.status_names[inv.status[i]];
    const down = D.reason_names.filter((name, k) => reasons & (1 << k) && name !== "no cable");
    const why = [down.length ? `${down.join(", ")} down` : "",
                 reasons & (1 << D.reason_names.indexOf("no cable")) ? "no NIC cable" : "",
                 lr.unusable[i] && !reasons && st === "active" ? "so says the last run" : ""].filter(Boolean);
    const hostSt = D.status_names[inv.hostStatus[h]];
    const hs = inv.hostStatus[h] !== grid.active ? ` <span class="badge ${hostSt}">host ${hostSt}</span>` : "";
    const l = D.gpus.link[i], run = lr.runOf[i];
    this.el.tooltip.innerHTML = `<div class="tt-title">GPU ${fmt.int(grid.gpuIndex(i))} `
      + `<span class="muted">slot ${D.gpus.slot[i]}</span></div>`
      + `<code>${esc(grid.gpuName(i))}</code><table>`
      + `<tr><th>host</th><td>${esc(grid.short(D.hosts.name[h]))}${hs}</td></tr>`
      + `<tr><th>rack</th><td>${esc(grid.short(D.racks.name[r]))}</td></tr>`
      + `<tr><th>zone</th><td>${esc(grid.short(D.zones.name[z]))}</td></tr>`
      + `<tr><th>status</th><td><span class="badge ${st}">${st}</span>`
      + `${why.length ? ` <span class="bad">unusable: ${esc(why.join("; "))}</span>` : ""}</td></tr>`
      + `<tr><th>run</th><td>${run ? esc(lr.label(run)) : '<span class="muted">idle</span>'}</td></tr>`
      + colourModes().map((m) => m.hover?.(this.page, i, m.name === this.mode) ?? "").join("")
      + `<tr><th>NIC link</th><td>${l < 0 ? '<span class="muted">no cable</span>'
        : lr.hasUtil() ? `${fmt.pct(lr.util[l], 1)} utilization`
          : '<span class="muted">no utilization published yet</span>'}`
      + "</td></tr>"
      + `</table><div class="muted">click: open the host</div>`;
  }

  placeTooltip(ev) {
    const tooltip = this.el.tooltip, pad = 14, w = tooltip.offsetWidth, h = tooltip.offsetHeight;
    const x = ev.clientX + pad + w > window.innerWidth ? ev.clientX - pad - w : ev.clientX + pad;
    const y = ev.clientY + pad + h > window.innerHeight ? ev.clientY - pad - h : ev.clientY + pad;
    tooltip.style.left = `${Math.max(0, x)}px`;
    tooltip.style.top = `${Math.max(0, y)}px`;
  }

  hover(ev) {
    const i = this.gpuAtEvent(ev), { canvas, tooltip, hoverBox } = this.el, G = this.G;
    if (i !== this.hovered) {
      this.hovered = i;
      canvas.style.cursor = i >= 0 ? "pointer" : "default";
      if (i >= 0) {
        const [x, y] = this.hostOrigin(this.grid.D.gpus.host[i]);
        Object.assign(hoverBox.style, { left: `${x / G.dpr - 2}px`, top: `${y / G.dpr - 2}px`,
                                        width: `${(G.hostCols * G.c - G.c + G.fill) / G.dpr + 4}px`,
                                        height: `${(G.hostRows * G.c - G.c + G.fill) / G.dpr + 4}px` });
        this.showTooltip(i);
      }
      tooltip.hidden = hoverBox.hidden = i < 0;
    }
    if (i >= 0) this.placeTooltip(ev);
  }

  leave() { this.hovered = -1; this.el.tooltip.hidden = this.el.hoverBox.hidden = true; }
}

function legendItem(color, label, count, extra = "") {
  return `<span class="item${count === 0 ? " zero" : ""}"${extra}><span class="swatch" style="background:${color}">`
    + `</span> ${esc(label)} <b>${fmt.int(count)}</b></span>`;
}

// ------------------------------------------------------------------------------------------------------ start
const el = {
  canvas: document.getElementById("gpu-grid"), wrap: document.getElementById("gpu-grid-wrap"),
  tooltip: document.getElementById("gpu-tooltip"), hoverBox: document.getElementById("gpu-hover"),
  legend: document.getElementById("gpu-legend"), mode: document.getElementById("gpu-color-mode"),
  buildings: document.getElementById("gpu-buildings"),
};

/** The select's options, one per registered colour mode (registry.js), then the mode from the URL (?color=; the
 *  default one for a name no module registered), kept in the URL when the user changes it. */
function modeControl(onChange) {
  const modes = colourModes(), asked = new URLSearchParams(location.search).get("color");
  el.mode.replaceChildren(...modes.map((m) => new Option(m.label, m.name)));
  el.mode.value = modes.some((m) => m.name === asked) ? asked : DEFAULT_MODE;
  el.mode.addEventListener("change", () => {
    const q = new URLSearchParams(location.search);
    q.set("color", el.mode.value);
    history.replaceState(null, "", `${location.pathname}?${q}`);
    onChange(el.mode.value);
  });
  return el.mode.value;
}

/** A function that re-reads the inventory statuses (status.json) and hands them to `apply`; reads asked while one
 *  is under way coalesce into one more read after it. */
function statusReader(url, apply) {
  let running = null, again = false, failed = false;
  const read = async () => {
    try {
      apply(await api(url));
      failed = false;
    } catch (e) {
      if (!failed) toast(`GPU statuses: ${e.message}`);
      failed = true;
    }
  };
  return function refresh() {
    if (running) { again = true; return running; }
    running = read().finally(() => {
      running = null;
      if (again) { again = false; refresh(); }
    });
    return running;
  };
}

/** Runs that were already running when the page opened: their own last frames (the cluster snapshot holds only
 *  the last run's). Applied only where the cluster stream has not spoken for that run yet. */
async function loadRunningRuns(clusterName, liveRuns, view) {
  const list = await api(`/api/runs/?cluster__name=${encodeURIComponent(clusterName)}&status=running&limit=100`);
  for (const info of list.results ?? []) {
    liveRuns.run(info.id).info = info;
    const f = await fetchSnapshot(`/api/live/runs/${info.id}/snapshot/`).catch(() => null);
    if (f && liveRuns.apply(f, { runStream: true })) view.draw();
  }
}

async function start() {
  // zoomed into a zone or a building: "zone=<name>" or "building=<n>", the query of its data and its live stream
  const { canvas, wrap } = el, clusterName = canvas.dataset.cluster, scope = canvas.dataset.scope;
  await loadCapabilities();                            // the capabilities' colour modes, registered by name
  if (canvas.dataset.view === "zones") {
    let follow = null;
    const mode = modeControl((m) => follow?.(m));
    const { startOverview } = await import("./gpus-overview.js");
    await startOverview(el, mode, (f) => { follow = f; });
    return;
  }
  let view = null;
  const mode = modeControl((m) => { if (view) { view.mode = m; view.draw(); } });
  // what a mode reads besides the grid is asked at once too (not after the grid data: 1.6 MB on a 590k cluster)
  const page = { canvas, clusterName, scope, el };
  const prefetched = Object.fromEntries(colourModes().filter((m) => m.prefetch).map((m) => [m.name, m.prefetch(page)]));
  const [data, snap] = await Promise.all([   // both preloaded by the template
    api(canvas.dataset.dataUrl),
    fetchSnapshot(canvas.dataset.snapshotUrl).catch((e) => { toast(`live snapshot: ${e.message}`); return null; }),
  ]);
  const grid = new Grid(data, clusterName), inv = new Inventory(grid);
  const liveRuns = new LiveRuns(grid, {
    onRunInfo: () => { if (view?.counts && view.mode !== "health") view.renderLegend(); },
  });
  inv.set(data);
  /** What a colour mode sees (registry.js): the page's pieces, each mode's state, and what it may call. */
  const ctx = {
    page, grid, inv, live: liveRuns, state: {}, prefetched, legendItem, palette: JOB_COLORS, legendRuns: LEGEND_RUNS,
    get mode() { return view.mode; },
    redraw: () => view?.draw(),
    renderLegend: () => { if (view?.counts) view.renderLegend(); },
  };
  view = new GridView(el, ctx, mode);
  for (const m of colourModes()) {
    try { await m.attach?.(ctx); } catch (e) { toast(`colour mode ${m.label}: ${e.message}`); }
  }
  liveRuns.onRunFrame = (f) => { for (const m of colourModes()) m.runFrame?.(ctx, f); };
  document.getElementById("gpu-summary").textContent = grid.summary();
  if (!grid.n) {
    wrap.insertAdjacentHTML("afterbegin", '<p class="muted">This cluster has no GPU.</p>');
    markReady({ cells: 0 });
    return;
  }
  if (snap) liveRuns.apply(snap, { markUnusable: false });
  view.layout();
  view.draw();
  markReady({ cells: Number(canvas.dataset.cells) });
  twin.gpuGrid = {   // for the end-to-end tests: where a GPU's cell is (CSS pixels in the canvas), the mode, runs
    get mode() { return view.mode; },
    cellCenter: (i) => view.cellCenter(i),
    runOf: (i) => liveRuns.runOf[i],
    colorOf: (i) => { const p = view.colors[i]; return `#${[p, p >>> 8, p >>> 16].map((b) => (b & 255).toString(16)
      .padStart(2, "0")).join("")}`; },
    statusReads: 0,
  };
  for (const m of colourModes()) Object.assign(twin.gpuGrid, m.test?.(ctx) ?? {});   // the modes' own hooks

  // the inventory statuses: re-read when the cluster stream says the inventory changed, and after a reconnection
  // (events sent while the socket was down are lost); a read replaces the unusable marks of earlier frames
  const readStatuses = statusReader(canvas.dataset.statusUrl, (s) => {
    inv.set(s);
    liveRuns.unusable.fill(0);
    view.draw();
    twin.gpuGrid.statusReads += 1;
  });
  let connected = false;
  live(`/ws/clusters/${encodeURIComponent(clusterName)}/`, {
    query: Object.fromEntries(new URLSearchParams(scope)), seq: snap?.seq ?? 0,   // the snapshot just applied
    onMeta: (meta) => {
      if (meta.seq < liveRuns.clusterSeq) liveRuns.clusterSeq = 0;   // the stream started over (Redis reset)
      if (connected) readStatuses();
      connected = true;
    },
    onEvent: (msg) => { if (msg.type === "inventory") readStatuses(); },
    onFrame: (f) => timeFrame(() => {
      let changed = false;
      for (const m of colourModes()) if (m.frame?.(ctx, f)) changed = true;
      if (liveRuns.apply(f) || changed) view.draw();
    }),
  });
  // (a run's own stream is not zone-scoped: a zone's page has the cluster stream's view of the runs only)
  if (!scope) loadRunningRuns(clusterName, liveRuns, view).catch((e) => toast(`running runs: ${e.message}`));

  canvas.addEventListener("mousemove", (ev) => view.hover(ev));
  canvas.addEventListener("mouseleave", () => view.leave());
  canvas.addEventListener("click", (ev) => {
    const i = view.gpuAtEvent(ev);
    if (i < 0) return;
    const url = grid.hostUrl(grid.D.gpus.host[i]);
    if (ev.ctrlKey || ev.metaKey) window.open(url, "_blank"); else location.href = url;
  });
  let pending = false;
  window.addEventListener("resize", () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => { pending = false; view.layout(); view.draw(); view.leave(); });
  });
}

start().catch((e) => toast(`GPU grid: ${e.message}`));
