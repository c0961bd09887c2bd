// The pages' line charts (bandwidth curves, waveforms, sweeps, scatters), drawn by uPlot (chart-base.js); bar charts
// are chart-bars.js's, re-exported here so that a page imports both from chart.js. The spec is the one the pages
// wrote for the hand-drawn SVG charts this replaced, so a page says what to draw, not how.
//
// What every line chart does by itself:
//   - axes with the page's tick format (its fmt function) and its axis titles (they name the unit);
//   - a robust value range: one spike does not flatten the rest (chart-base.js robustRange); the points cut off are
//     marked at the edge, and a "full range" switch shows everything;
//   - a "log scale" switch where the values span LOG_DECADES or more (or the page asked for a log axis);
//   - at most MAX_SERIES series drawn at once (reference series, `ref`, aside): the rest are listed behind a
//     "+N more" toggle, and "next" pages through them; showing one more hides the one shown longest ago;
//   - the legend below the plot, never over it (it wraps), each item showing or hiding its series;
//   - a hover readout of every drawn series at the nearest x (or of the nearest point, hover "point"), their true
//     values (lanes and cut ranges only move where a value is drawn); drag to zoom into x, double-click for all;
//   - a PNG download with a title band (exports.js): the spec's label, the cluster, the run, the axes' titles, the
//     date (written in the file's text too).
import { CLAIM_COLOR, DASH, PALETTE, REF_COLOR, alpha, axis, chartFrame, extent, fitWidth, fixedSplits, picture,
         placeTooltip, robustRange, textWidth, theme, toolSwitch, tooltip, uPlot, widthOf } from "./chart-base.js";
import { exportable } from "./exports.js";
import { esc, fmt } from "./twin.js";

export { PALETTE } from "./chart-base.js";
export { barChart } from "./chart-bars.js";

export const MAX_SERIES = 8;              // series drawn at once (reference series aside)
const POINT_REACH = 14;                   // px: hover "point" finds the nearest point within this
const LANE_PX = 34;                       // px: the height of one lane (spec.lanes)
const LANE_FILL = 0.8;                    // of a lane: the height its values span
const LOG_DECADES = 1.5;                  // values spanning this many decades or more: a log scale switch

/** Message sizes as nccl-tests users say them: 1M, 2M, 512K, 1G (powers of 1024). */
export function sizeLabel(bytes) {
  const units = ["", "K", "M", "G", "T"];
  let i = 0;
  while (bytes >= 1024 && i < units.length - 1) { bytes /= 1024; i += 1; }
  return `${Number.isInteger(bytes) ? bytes : bytes.toFixed(1)}${units[i]}`;
}

const colorOf = (ser, i) => ser.color ?? PALETTE[i % PALETTE.length];
const finite = (p) => p.y != null && Number.isFinite(p.y) && p.x != null && Number.isFinite(p.x);
const logX = (s) => s.x.scale === "log2" || s.x.scale === "log";

/** Powers of two from lo to hi (a log2 axis' candidate ticks; fixedSplits thins them). */
function powersOfTwo(lo, hi) {
  const out = [];
  for (let e = Math.floor(Math.log2(lo)); e <= Math.ceil(Math.log2(hi)); e++) out.push(2 ** e);
  return out;
}

// ------------------------------------------------------------------------------------------------ the table
/**
 * uPlot's aligned table for the drawn series: column 0 the x values (each series' own, moved by `spread`), then per
 * drawn series its y column and, with a band, its lo and hi columns. On a log y axis values <= 0 are left out.
 * Returns {data, cols: [{i, ser, y, lo?, hi?}] (column numbers), origX (per row the x before the spread), byX (per
 * drawn series: x -> its point), moved (per drawn series: its x -> the x drawn)}.
 */
function table(s, drawn, { log, width }) {
  const xsAll = drawn.flatMap(({ ser }) => ser.points.filter(finite).map((p) => p.x));
  const [x0, x1] = extent(xsAll), plotW = Math.max(100, width - 100);
  const shift = (k) => {
    const dpx = s.spread ? (k - (drawn.length - 1) / 2) * s.spread : 0;
    if (!dpx || !(x1 > x0)) return (x) => x;
    if (logX(s)) { const f = Math.log(x1 / x0) * dpx / plotW; return (x) => x * Math.exp(f); }
    const f = (x1 - x0) * dpx / plotW;
    return (x) => x + f;
  };
  const pts = drawn.map(({ ser }) => ser.points.filter((p) => finite(p) && (!log || p.y > 0)));
  const moved = drawn.map((_, k) => shift(k));
  const rows = new Map();
  pts.forEach((list, k) => list.forEach((p) => rows.set(moved[k](p.x), p.x)));
  const xs = [...rows.keys()].sort((a, b) => a - b), at = new Map(xs.map((x, r) => [x, r]));
  const data = [xs], cols = [];
  const column = () => { data.push(new Array(xs.length).fill(null)); return data.length - 1; };
  drawn.forEach(({ ser, i }, k) => {
    const col = { i, ser, y: column() };
    if (ser.band) Object.assign(col, { lo: column(), hi: column() });
    for (const p of pts[k]) {
      const r = at.get(moved[k](p.x));
      data[col.y][r] = p.y;
      if (col.lo && p.lo != null && (!log || p.lo > 0)) { data[col.lo][r] = p.lo; data[col.hi][r] = p.hi; }
    }
    cols.push(col);
  });
  const byX = pts.map((list) => new Map(list.map((p) => [p.x, p])));
  return { data, cols, origX: xs.map((x) => rows.get(x)), byX, moved };
}

/** Lanes (spec.lanes): each drawn series in its own band of the y axis, the first at the top, on one value scale
 *  (lo..hi: the spec's y.min or 0, to the largest value or reference line) so that amplitudes compare. Rewrites the
 *  table's y columns in place; returns the value -> lane position function (its .lo and .hi: the lanes' scale). */
function intoLanes(s, t) {
  const [vmin, vmax] = extent([...t.cols.flatMap((c) => t.data[c.y].filter((v) => v != null)),
                                ...(s.refLines ?? []).map((r) => r.y)]);
  const lo = s.y.min ?? Math.min(0, vmin), hi = Math.max(lo + 1e-9, vmax), L = t.cols.length;
  const lane = (v, k) => L - 1 - k + (1 - LANE_FILL) / 2 + LANE_FILL * (v - lo) / (hi - lo);
  t.cols.forEach((c, k) => { t.data[c.y] = t.data[c.y].map((v) => (v == null ? null : lane(v, k))); });
  return Object.assign(lane, { lo, hi });
}

// --------------------------------------------------------------------------------------------- drawing hooks
/** uPlot's canvas pixels of value v on scale key. */
const px = (u, v, key) => u.valToPos(v, key, true);
const ratio = (u) => u.ctx.canvas.width / u.width;
/** The row whose x is drawn nearest the pointer's `left` (CSS px in the plot): by pixels, not values (on a log
 *  axis the nearest value is not the nearest point). */
function nearestRow(u, left) {
  const xs = u.data[0];
  if (!xs.length || left == null || left < 0) return null;
  let lo = 0, hi = xs.length - 1;
  while (lo < hi) {                                 // the first row drawn at or right of the pointer
    const mid = (lo + hi) >> 1;
    if (u.valToPos(xs[mid], "x") < left) lo = mid + 1; else hi = mid;
  }
  return lo > 0 && left - u.valToPos(xs[lo - 1], "x") < u.valToPos(xs[lo], "x") - left ? lo - 1 : lo;
}

/** The rows of the x range drawn (all, or the zoomed window). */
function rowsDrawn(u, v) {
  const [i0, i1] = u.series[0].idxs ?? [];
  return i0 == null ? [0, v.t.data[0].length - 1] : [i0, i1];
}

/** Horizontal reference lines (the roofline, a 90 % line), labelled at their right end; in lanes, one per lane,
 *  faint, their labels in the legend. */
function drawRefLines(u, s, v) {
  const ctx = u.ctx, k = ratio(u), { left, top, width, height } = u.bbox;
  ctx.save();
  if (v.lane) ctx.globalAlpha = 0.5;
  ctx.font = `${11 * k}px ${theme().family}`;
  ctx.textAlign = "right";
  for (const r of s.refLines ?? []) {
    const ys = v.lane ? v.t.cols.map((_, j) => v.lane(r.y, j)) : [r.y];
    ctx.strokeStyle = ctx.fillStyle = r.color ?? REF_COLOR;
    ctx.lineWidth = 1.2 * k;
    ctx.setLineDash((DASH[r.dash ?? "--"] ?? []).map((d) => d * k));
    ys.forEach((y, j) => {
      const yy = px(u, y, "y");
      if (yy < top - 1 || yy > top + height + 1) return;
      ctx.beginPath(); ctx.moveTo(left, yy); ctx.lineTo(left + width, yy); ctx.stroke();
      if (!v.lane && r.label) ctx.fillText(r.label, left + width - 4 * k, yy - 4 * k);
    });
  }
  ctx.restore();
}

/** Lanes: a line between two lanes. */
function drawLaneRules(u, v) {
  const ctx = u.ctx, { left, width } = u.bbox;
  ctx.save();
  ctx.strokeStyle = theme().line;
  ctx.lineWidth = 1;
  for (let j = 1; j < v.t.cols.length; j++) {
    const y = px(u, j, "y");
    ctx.beginPath(); ctx.moveTo(left, y); ctx.lineTo(left + width, y); ctx.stroke();
  }
  ctx.restore();
}

/** A band's min-max whisker at each of its points (unless whiskers: false). */
function drawWhiskers(u, v) {
  const ctx = u.ctx, k = ratio(u);
  ctx.save();
  ctx.lineWidth = k;
  ctx.globalAlpha = 0.6;
  for (const c of v.t.cols) {
    if (!c.lo || c.ser.whiskers === false || !u.series[c.y].show) continue;
    ctx.strokeStyle = colorOf(c.ser, c.i);
    ctx.beginPath();
    v.t.data[0].forEach((x, r) => {
      const lo = v.t.data[c.lo][r], hi = v.t.data[c.hi][r];
      if (lo == null || hi == null) return;
      const xx = px(u, x, "x");
      ctx.moveTo(xx, px(u, lo, "y")); ctx.lineTo(xx, px(u, hi, "y"));
    });
    ctx.stroke();
  }
  ctx.restore();
}

/** A published claim per range: a bracket at the right edge from low to high, labelled along it when there is
 *  room. */
function drawRanges(u, s) {
  const ctx = u.ctx, k = ratio(u), { left, width } = u.bbox, x = left + width + 10 * k;
  const [y0, y1] = [u.scales.y.min, u.scales.y.max];
  ctx.save();
  ctx.font = `${10 * k}px ${theme().family}`;
  for (const r of s.ranges ?? []) {
    const ya = px(u, Math.min(r.high, y1), "y"), yb = px(u, Math.max(r.low, y0), "y");
    ctx.strokeStyle = ctx.fillStyle = r.color ?? CLAIM_COLOR;
    ctx.lineWidth = 2 * k;
    ctx.beginPath();
    ctx.moveTo(x - 5 * k, ya + k); ctx.lineTo(x, ya + k); ctx.lineTo(x, yb - k); ctx.lineTo(x - 5 * k, yb - k);
    ctx.stroke();
    const text = `published ${Math.round(r.low)}–${Math.round(r.high)} %`;
    if (yb - ya > ctx.measureText(text).width + 4 * k) {
      ctx.save();
      ctx.translate(x + 12 * k, (ya + yb) / 2);
      ctx.rotate(-Math.PI / 2);
      ctx.textAlign = "center";
      ctx.fillText(text, 0, 0);
      ctx.restore();
    }
  }
  ctx.restore();
}

/** The points outside the value range (a cut range, a zoom): a small triangle at the edge they went past, in their
 *  series' colour. */
function drawCutMarks(u, v) {
  const ctx = u.ctx, k = ratio(u), { top, height } = u.bbox, [lo, hi] = [u.scales.y.min, u.scales.y.max];
  const [i0, i1] = rowsDrawn(u, v);
  ctx.save();
  for (const c of v.t.cols) {
    if (!u.series[c.y].show) continue;
    ctx.fillStyle = colorOf(c.ser, c.i);
    let lastX = -Infinity;
    for (let r = i0; r <= i1; r++) {
      const y = v.t.data[c.y][r];
      if (y == null || (y <= hi && y >= lo)) continue;
      const xx = px(u, v.t.data[0][r], "x");
      if (xx - lastX < 6 * k) continue;
      lastX = xx;
      const up = y > hi, e = up ? top + 2 * k : top + height - 2 * k, d = (up ? 1 : -1) * 6 * k;
      ctx.beginPath(); ctx.moveTo(xx, e); ctx.lineTo(xx - 4 * k, e + d); ctx.lineTo(xx + 4 * k, e + d);
      ctx.closePath(); ctx.fill();
    }
  }
  ctx.restore();
}

// ------------------------------------------------------------------------------------------------ the readout
/** The hover readout at row r: the x, then every drawn series' true value there (and its min-max), then the
 *  reference lines. */
function readoutHtml(s, v, r) {
  const x = v.t.origX[r], xfmt = s.x.format ?? fmt.num, tipfmt = s.y.tipFormat ?? s.y.format ?? fmt.num;
  const rows = v.t.cols.map((c, k) => {
    const p = v.t.byX[k].get(x);
    if (!p) return "";
    const spread = p.lo != null && p.lo !== p.hi
      ? ` <span class="muted">(${esc(tipfmt(p.lo))}–${esc(tipfmt(p.hi))})</span>` : "";
    return `<div><span class="swatch" style="background:${colorOf(c.ser, c.i)}"></span> ${esc(c.ser.name)}: `
      + `<b>${esc(tipfmt(p.y))}</b>${spread}</div>`;
  }).join("");
  const refs = (s.refLines ?? []).map((l) => `<div class="muted">${esc(l.label ?? "")}</div>`).join("");
  return `<div><b>${esc(s.x.name ?? s.x.label ?? "x")}: ${esc(xfmt(x))}</b></div>${rows}${refs}`;
}

/** The drawn points with markers that hover "point" may pick: [{p, ser, i, x (drawn x)}]. */
function markedPoints(v) {
  return v.t.cols.flatMap((c, k) => (c.ser.hover === false || c.ser.markers === false ? []
    : [...v.t.byX[k].values()].map((p) => ({ p, ser: c.ser, i: c.i, x: v.t.moved[k](p.x), y: p.y }))));
}

/** Hover "point": the readout of the one point nearest the pointer (within POINT_REACH px), ringed; a click on it
 *  calls s.onPoint(point, series). */
function attachPointHover(u, s, v, tip) {
  const ring = Object.assign(document.createElement("div"), { className: "point-ring", hidden: true });
  u.over.append(ring);
  const nearest = (ev) => {
    const box = u.over.getBoundingClientRect(), x = ev.clientX - box.left, y = ev.clientY - box.top;
    let best = null, d2 = POINT_REACH ** 2;
    for (const q of markedPoints(v)) {
      const d = (u.valToPos(q.x, "x") - x) ** 2 + (u.valToPos(q.y, "y") - y) ** 2;
      if (d <= d2) { best = q; d2 = d; }
    }
    return best;
  };
  u.over.addEventListener("mousemove", (ev) => {
    const near = nearest(ev);
    u.over.style.cursor = near && s.onPoint ? "pointer" : "";
    ring.hidden = !near;
    if (!near) { tip.hidden = true; return; }
    Object.assign(ring.style, { left: `${u.valToPos(near.x, "x")}px`, top: `${u.valToPos(near.y, "y")}px`,
                                borderColor: colorOf(near.ser, near.i) });
    tip.innerHTML = s.pointTip ? s.pointTip(near.p, near.ser)
      : `<div><b>${esc(near.ser.name)}</b></div><div>${esc((s.x.format ?? fmt.num)(near.p.x))}, `
        + `${esc((s.y.tipFormat ?? s.y.format ?? fmt.num)(near.p.y))}</div>`;
    placeTooltip(tip, ev.clientX, ev.clientY);
  });
  u.over.addEventListener("mouseleave", () => { tip.hidden = true; ring.hidden = true; });
  u.over.addEventListener("click", (ev) => {
    const q = nearest(ev);
    if (q && s.onPoint) s.onPoint(q.p, q.ser);
  });
}

// ------------------------------------------------------------------------------------------------- options
/** The y values the range is taken from: the drawn columns (and bands) between rows i0 and i1. */
function windowValues(u, v) {
  const [i0, i1] = rowsDrawn(u, v), out = [];
  for (const c of v.t.cols) {
    if (!u.series[c.y]?.show) continue;
    for (const col of [c.y, c.lo, c.hi]) {
      if (col == null) continue;
      const d = v.t.data[col];
      for (let r = i0; r <= i1; r++) if (d[r] != null && Number.isFinite(d[r])) out.push(d[r]);
    }
  }
  return out;
}

/** uPlot's options for spec `s` drawn as `v` (the table, the state) at `width`. */
function options(s, v, width) {
  const L = v.t.cols.length, xfmt = s.x.format ?? fmt.num, yfmt = s.y.format ?? fmt.num;
  const lanesH = v.lane ? L * LANE_PX + 60 : 0;
  const last = v.t.origX.length ? String(xfmt(v.t.origX.at(-1))) : "";     // the last x label: whole, not cut
  const right = Math.max(18, Math.ceil(textWidth([last]) / 2) + 6) + (s.ranges?.length ? 36 : 0);
  const series = [{}];
  for (const c of v.t.cols) {
    const color = colorOf(c.ser, c.i), scatter = c.ser.line === false;
    series[c.y] = {
      label: c.ser.name, stroke: color, width: scatter ? 0 : 1.8, dash: DASH[c.ser.dash ?? "-"], spanGaps: true,
      ...(scatter ? { paths: () => null } : {}),
      points: { show: c.ser.markers !== false, size: scatter ? 8 : 5, fill: color, stroke: color, width: 0 },
    };
    if (c.lo) {
      const edge = { stroke: "transparent", width: 0, spanGaps: true, points: { show: false } };
      series[c.lo] = { ...edge, label: `${c.ser.name} min` };
      series[c.hi] = { ...edge, label: `${c.ser.name} max` };
    }
  }
  const xAxis = axis(xfmt, { scale: "x", side: 2, label: s.x.label, space: 60 });
  if (s.x.ticks) xAxis.splits = fixedSplits(s.x.ticks, xfmt);
  else if (s.x.scale === "log2") {
    xAxis.splits = (u, ai, lo, hi) => fixedSplits(powersOfTwo(lo, hi), xfmt)(u, ai, lo, hi);
  }
  const yAxis = v.lane     // in lanes: a tick per lane, named by its series; the title gives the lanes' scale
    ? axis((j) => v.t.cols[L - 1 - Math.floor(j)]?.ser.name ?? "", {
      scale: "y", side: 3, label: `${s.y.label}: ${yfmt(v.lane.lo)}–${yfmt(v.lane.hi)} a lane`,
      splits: () => v.t.cols.map((_, j) => j + 0.5), grid: { show: false } })
    : axis(yfmt, { scale: "y", side: 3, label: s.y.label,
                   ...(s.y.ticks ? { splits: fixedSplits(s.y.ticks, yfmt, true) } : {}) });
  return {
    width, height: Math.max(s.height ?? 300, lanesH), padding: [12, right, 0, 0],
    legend: { show: false },
    scales: {
      // x: the data's extent (or the zoom's), not widened to whole powers of ten (uPlot's default on a log axis)
      x: { time: false, ...(logX(s) ? { distr: 3, log: s.x.scale === "log2" ? 2 : 10 } : {}),
           range: (u, lo, hi) => (lo < hi ? [lo, hi] : logX(s) ? [lo / 2, hi * 2] : [lo - 1, hi + 1]) },
      y: v.lane ? { range: [0, L] } : {
        ...(v.log ? { distr: 3, log: 10 } : {}),
        range: (u) => {
          const r = robustRange(windowValues(u, v), { log: v.log, min: s.y.min, max: s.y.max, robust: !v.full,
                                                      also: (s.refLines ?? []).map((l) => l.y) });
          v.cut = r.cut;
          return [r.lo, r.hi];
        },
      },
    },
    axes: [xAxis, yAxis],
    series,
    bands: v.t.cols.filter((c) => c.lo && c.ser.band).map((c) => ({ series: [c.hi, c.lo],
                                                                   fill: alpha(colorOf(c.ser, c.i), 0.12) })),
    cursor: s.hover === "point"
      ? { x: false, y: false, points: { show: false }, drag: { x: true, y: false } }
      : { y: false, drag: { x: true, y: false }, points: { size: 7 },
          dataIdx: (u) => nearestRow(u, u.cursor.left) },
    hooks: {
      drawAxes: [(u) => { if (v.lane) drawLaneRules(u, v); drawRefLines(u, s, v); }],
      draw: [(u) => { drawWhiskers(u, v); drawRanges(u, s); if (!v.lane) drawCutMarks(u, v); }],
    },
  };
}

// ---------------------------------------------------------------------------------------------------- legend
/** The series shown at first: the reference series and the first MAX_SERIES others. */
function firstShown(s) {
  const out = [];
  let n = 0;
  s.series.forEach((ser, i) => { if (ser.ref || n++ < MAX_SERIES) out.push(i); });
  return out;
}

/** One legend item: its line style and name; a button that shows or hides the series. */
function legendItem(ser, i, shown, onClick) {
  const b = Object.assign(document.createElement("button"), { type: "button", className: "legend-item",
                                                              title: "show / hide" });
  b.dataset.name = ser.name;
  b.setAttribute("aria-pressed", String(shown));
  b.innerHTML = `<svg width="22" height="10"><line x1="1" x2="21" y1="5" y2="5" stroke="${esc(colorOf(ser, i))}"
    stroke-width="2" stroke-dasharray="${DASH[ser.dash ?? "-"].join(" ")}"/></svg> ${esc(ser.name)}`;
  b.addEventListener("click", onClick);
  return b;
}

/** A reference line's legend entry (lanes draw them in every lane, unlabelled): its style and label. */
function refItem(r) {
  const e = Object.assign(document.createElement("span"), { className: "legend-ref" });
  e.innerHTML = `<svg width="22" height="10"><line x1="1" x2="21" y1="5" y2="5" stroke="${esc(r.color ?? REF_COLOR)}"
    stroke-width="1.5" stroke-dasharray="${DASH[r.dash ?? "--"].join(" ")}"/></svg> ${esc(r.label ?? "")}`;
  return e;
}

// ---------------------------------------------------------------------------------------------------- the chart
/**
 * A line chart in `el` (its content is replaced). spec:
 *   label (the chart's title: the PNG's and the screen reader's),
 *   x: {scale: "log2" | "log" | "linear", label (with its unit), name? (hover title), format(v), ticks?},
 *   y: {scale: "linear" | "log", min?, max?, label (with its unit), format(v) (ticks), tipFormat(v)? (hover),
 *       ticks?}, logSwitch (default true: offered where the values span two decades; false where x and y are one
 *   quantity, as in a predicted-against-measured scatter),
 *   height (px, default 300), spread (px: series drawn side by side around equal x values), legend (default true),
 *   lanes (each series in its own lane of the y axis, one value scale: waveforms that would overlap),
 *   series: [{name, color?, dash? ("-", "--", ":", "-."), points: [{x, y, lo?, hi?, id?}], band? (shade lo..hi),
 *             whiskers? (default true: a band's lo..hi line at each point), markers? (default true), line? (default
 *             true; false: a scatter, its points only), hover? (default true; false: left out of hover "point"),
 *             ref? (a reference drawing, e.g. y = x: always drawn at first, not counted in MAX_SERIES)}],
 *   hover: "x" (default: every series at the nearest x) | "point" (the nearest point: pointTip(p, series) -> HTML,
 *   the readout; onPoint(p, series) on a click),
 *   refLines: [{y, label, color?, dash?}], ranges: [{low, high, label, color?}] (brackets at the right edge).
 * Returns {destroy()}. el.chart (for the page and the tests): {u, drawn() (series names), points() (the marked
 * points: [{id, series, x, y}]), pointAt(id) (its viewport position), yRange(), ticks() (the x labels' extents)};
 * el.dataset: series (drawn), seriesTotal, scale ("log" | "linear"), cut (points off the value range).
 */
export function lineChart(el, s) {
  const { tools, plot, legend, desc } = chartFrame(el);
  legend.hidden = s.legend === false;
  const counted = s.series.map((ser, i) => i).filter((i) => !s.series[i].ref);
  const positive = s.series.flatMap((ser) => ser.points.filter(finite).flatMap((p) => [p.y, p.lo, p.hi]))
    .filter((y) => y != null && Number.isFinite(y));
  const [ymin, ymax] = extent(positive);
  const decades = ymin > 0 && ymax > ymin ? Math.log10(ymax / ymin) : 0;   // the switch is offered from LOG_DECADES
  const state = { shown: firstShown(s), log: s.y.scale === "log", full: false, open: false, note: "" };
  const canLog = !s.lanes && s.logSwitch !== false && (s.y.scale === "log" || decades >= LOG_DECADES);
  const tip = tooltip();
  let u = null, v = null;

  function build() {
    u?.destroy();
    const drawn = state.shown.slice().sort((a, b) => a - b).map((i) => ({ ser: s.series[i], i }));
    const width = widthOf(plot);
    v = { log: state.log && canLog, full: state.full, cut: false };
    v.t = table(s, drawn, { log: v.log, width });
    v.lane = s.lanes ? intoLanes(s, v.t) : null;
    const opts = options(s, v, width);
    opts.hooks.setScale = [(uu, key) => { if (key === "y") scaled(uu); }];
    if (s.hover !== "point") opts.hooks.setCursor = [hoverX];
    // drawn at once (uPlot commits on a microtask otherwise): the page and the tests read it right after
    u = new uPlot(opts, v.t.data, (self, init) => { plot.append(self.root); self.batch(init); });
    u.root.setAttribute("role", "img");
    u.root.setAttribute("aria-label", s.label ?? "");
    if (s.hover === "point") attachPointHover(u, s, v, tip);
    Object.assign(el.dataset, { series: String(drawn.length), seriesTotal: String(s.series.length),
                                scale: v.log ? "log" : "linear" });
    desc.textContent = `${s.label ?? "chart"}: ${s.y.label ?? "y"} against ${s.x.label ?? "x"}; drawn: ${
      drawn.map((d) => d.ser.name).join(", ")}${s.refLines?.length ? `; lines: ${s.refLines.map((r) => r.label)
      .filter(Boolean).join(", ")}` : ""}.`;
    drawLegend();
  }

  /** The value range changed (built, zoomed): the count of values off it, and the switches. */
  function scaled(uu) {
    el.dataset.cut = String(cutCount(uu));
    drawTools(uu);
  }

  function hoverX(uu) {
    const r = nearestRow(uu, uu.cursor.left);
    if (r == null) { tip.hidden = true; return; }
    tip.innerHTML = readoutHtml(s, v, r);
    const box = uu.over.getBoundingClientRect();
    placeTooltip(tip, box.left + uu.cursor.left, box.top + uu.cursor.top);
  }

  /** How many drawn values lie outside the value range. */
  function cutCount(uu) {
    if (v.lane) return 0;
    const [lo, hi] = [uu.scales.y.min, uu.scales.y.max];
    return v.t.cols.reduce((n, c) => n + v.t.data[c.y].filter((y) => y != null && (y > hi || y < lo)).length, 0);
  }

  function drawTools(uu) {
    const items = [];
    if (canLog) items.push(toolSwitch("log", "log scale", v.log, (on) => { state.log = on; build(); },
                                      "the values span decades: a log axis shows the small ones"));
    if (v.cut || state.full) {
      const n = cutCount(uu), off = v.cut ? ` (${fmt.int(n)} point${n === 1 ? "" : "s"} off the axis)` : "";
      items.push(toolSwitch("full", `full range${off}`, state.full, (on) => { state.full = on; build(); },
                            "a few extreme points are left off the axis (▲ at its edge): the rest stays readable"));
    }
    tools.replaceChildren(...items);
    tools.hidden = !items.length;
  }

  function drawLegend() {
    const shown = new Set(state.shown), more = counted.filter((i, k) => k >= MAX_SERIES && !shown.has(i));
    const listed = s.series.map((ser, i) => i).filter((i) => state.open || !more.includes(i));
    const items = listed.map((i) => legendItem(s.series[i], i, shown.has(i), () => toggle(i)));
    if (more.length || state.open) {
      const b = Object.assign(document.createElement("button"), { type: "button", className: "link legend-more",
        textContent: state.open ? "fewer" : `+${more.length} more` });
      b.dataset.more = String(more.length);
      b.addEventListener("click", () => { state.open = !state.open; drawLegend(); });
      items.push(b);
    }
    if (counted.length > MAX_SERIES) {
      const b = Object.assign(document.createElement("button"), { type: "button", className: "link legend-page",
        textContent: `next ${MAX_SERIES} ›`, title: `draw the next ${MAX_SERIES} series` });
      b.addEventListener("click", nextPage);
      items.push(b);
    }
    if (state.note) items.push(Object.assign(document.createElement("span"), { className: "muted",
                                                                               textContent: state.note }));
    if (s.lanes) items.push(...(s.refLines ?? []).map(refItem));
    items.push(Object.assign(document.createElement("span"), { className: "muted chart-hint",
                                                               textContent: "drag: zoom · double-click: all" }));
    legend.replaceChildren(...items);
  }

  /** Show or hide series i; showing one more than MAX_SERIES hides the one shown longest ago. */
  function toggle(i) {
    state.note = "";
    if (state.shown.includes(i)) state.shown = state.shown.filter((j) => j !== i);
    else {
      state.shown.push(i);
      const on = state.shown.filter((j) => !s.series[j].ref);
      if (!s.series[i].ref && on.length > MAX_SERIES) {
        state.shown = state.shown.filter((j) => j !== on[0]);
        state.note = `${MAX_SERIES} at most at once: ${s.series[on[0]].name} hidden`;
      }
    }
    build();
  }

  /** Draw the next MAX_SERIES counted series after the last one drawn (from the first after the end). */
  function nextPage() {
    const on = counted.filter((i) => state.shown.includes(i)), last = on.length ? counted.indexOf(on.at(-1)) : -1;
    const start = last + 1 >= counted.length ? 0 : last + 1;
    const page = counted.slice(start, start + MAX_SERIES);
    state.shown = [...state.shown.filter((i) => s.series[i].ref), ...page];
    state.note = "";
    build();
  }

  build();
  const unwatch = fitWidth(plot, () => u);
  el.chart = {
    get u() { return u; },
    drawn: () => v.t.cols.map((c) => c.ser.name),
    points: () => markedPoints(v).map((q) => ({ id: q.p.id ?? null, series: q.ser.name, x: q.p.x, y: q.p.y })),
    pointAt(id) {
      const q = markedPoints(v).find((m) => m.p.id === id), box = u.over.getBoundingClientRect();
      return q ? { x: box.left + u.valToPos(q.x, "x"), y: box.top + u.valToPos(q.y, "y") } : null;
    },
    yRange: () => [u.scales.y.min, u.scales.y.max],
    /** The x axis' tick labels as drawn: [{label, left, right}] in CSS pixels of the chart (0..width). */
    ticks() {
      const a = u.axes[0], at = u.bbox.left / ratio(u);
      return (a._splits ?? []).map((x, j) => [String(a._values?.[j] ?? ""), at + u.valToPos(x, "x")])
        .filter(([label]) => label).map(([label, x]) => {
          const w = textWidth([label]);
          return { label, left: x - w / 2, right: x + w / 2, width: u.width };
        });
    },
  };
  exportable(el, { title: s.label, units: () => [s.y.label && `y: ${s.y.label}`, s.x.label && `x: ${s.x.label}`],
                   picture: () => picture(u, v.t.cols.map((c) => ({ name: c.ser.name, color: colorOf(c.ser, c.i),
                                                                    dash: c.ser.dash }))) });
  return { destroy() { unwatch(); u?.destroy(); tip.hidden = true; } };
}
