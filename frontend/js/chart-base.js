// What chart.js's line charts and chart-bars.js's bar charts share: uPlot itself (vendored, frontend/vendor/uplot/,
// no build step), the palette and line styles, the page's theme read from twin.css, the axes (their tick labels
// through the page's own formatter, e.g. fmt.bytes, sized to the longest so none is cut), the robust value range (one
// spike does not flatten the rest), the page's one hover readout, keeping a chart at its box's width, the toolbar
// above a chart and the picture its PNG download takes (the plot with its legend below; exports.js adds the title
// band). Native ES module; styles: css/experiments.css ".chart".
import uPlot from "../vendor/uplot/uPlot.esm.js";

export { uPlot };

export const PALETTE = ["#4aa3ff", "#f5a524", "#3fb950", "#e5484d", "#b58cff", "#17becf", "#ff7f0e", "#e377c2",
                        "#bcbd22", "#8c96a8"];
export const DASH = { "-": [], "--": [7, 4], ":": [2, 3], "-.": [7, 3, 2, 3] };       // matplotlib's line styles
export const REF_COLOR = "#8b94a7", CLAIM_COLOR = "#c9a227";

// Robust range: with at least ROBUST_MIN values, a top (or bottom) past ROBUST_SPAN times the 2nd..98th percentile's
// extent from the axis' base is cut to ROBUST_ROOM of that extent; the points beyond are marked at the edge.
const ROBUST_MIN = 20, ROBUST_Q = 0.98, ROBUST_SPAN = 2.5, ROBUST_ROOM = 1.25, HEADROOM = 1.08;

let themeCache = null;
/** The page's colours and fonts (twin.css's variables), read once. */
export function theme() {
  if (!themeCache) {
    const cs = getComputedStyle(document.documentElement), v = (n) => cs.getPropertyValue(n).trim();
    const family = getComputedStyle(document.body).fontFamily || "system-ui, sans-serif";
    themeCache = { text: v("--text"), muted: v("--muted"), line: v("--line"), bg: v("--panel") || v("--bg"),
                   family, font: `11px ${family}`, labelFont: `12px ${family}` };
  }
  return themeCache;
}

/** A CSS colour with alpha `a` (0..1): "#4aa3ff" -> "rgba(74,163,255,0.1)"; other notations are returned as they
 *  are. */
export function alpha(color, a) {
  const m = /^#([0-9a-f]{3}|[0-9a-f]{6})$/i.exec(color ?? "");
  if (!m) return color;
  const h = m[1].length === 3 ? [...m[1]].map((c) => c + c).join("") : m[1];
  const [r, g, b] = [0, 2, 4].map((i) => parseInt(h.slice(i, i + 2), 16));
  return `rgba(${r},${g},${b},${a})`;
}

/** [min, max] of `values` (numbers; [Infinity, -Infinity] when none): a loop, as a waveform's thousands of values
 *  are too many for Math.min(...values). */
export function extent(values) {
  let lo = Infinity, hi = -Infinity;
  for (const v of values) { if (v < lo) lo = v; if (v > hi) hi = v; }
  return [lo, hi];
}

/** The width, in CSS pixels, of the longest of `labels` in the axis font. */
export function textWidth(labels, font = theme().font) {
  const ctx = (textWidth.ctx ??= document.createElement("canvas").getContext("2d"));
  ctx.font = font;
  return Math.max(0, ...labels.map((t) => ctx.measureText(String(t)).width));
}

/** A uPlot axis in the page's theme: tick labels through `format` (the page's, e.g. fmt.bytes); a vertical axis is
 *  as wide as its longest label. `opts`: uPlot axis options (scale, side, label, splits, space...). */
export function axis(format, opts = {}) {
  const th = theme(), vertical = opts.side === 1 || opts.side === 3;
  return {
    stroke: th.muted, font: th.font, labelFont: th.labelFont, labelSize: opts.label ? 18 : 0, labelGap: 2, gap: 4,
    grid: { stroke: th.line, width: 1 }, ticks: { stroke: th.line, width: 1, size: 4 },
    values: (u, splits) => splits.map((v) => (v == null ? "" : String(format(v)))),
    ...(vertical ? { size: (u, values, i, cycle) => (cycle > 1 && u.axes[i]._size
      ? u.axes[i]._size : Math.ceil(textWidth(values ?? []) + 12)) } : { size: 30 }),
    ...opts,
  };
}

/** Ticks at `ticks` (the page's own: job sizes, dates) within the scale, thinned so that their labels (`format`) do
 *  not touch: a uPlot axis `splits` function (`vertical`: a value axis, 16 px a label). */
export function fixedSplits(ticks, format, vertical = false) {
  return (u, axisIdx, min, max) => {
    const key = u.axes[axisIdx].scale, out = [];
    let last = -Infinity;
    for (const t of ticks.filter((v) => v >= min - 1e-9 * Math.abs(min) && v <= max + 1e-9 * Math.abs(max))) {
      const px = u.valToPos(t, key), room = vertical ? 16 : textWidth([format(t)]) + 10;
      if (Math.abs(px - last) >= room) { out.push(t); last = px; }
    }
    return out;
  };
}

/** The value range of an axis, robust: `values` (finite numbers; on a log axis positive ones), `log` (the axis is
 *  logarithmic), `min` / `max` (the page's fixed ends, either may be null), `also` (values that must be in range: the
 *  reference lines). A linear axis of values >= 0 starts at 0. A top (bottom) far past the bulk of the values (one
 *  spike) is cut: see ROBUST_*. Returns {lo, hi, cut} (cut: whether the range leaves values out). */
export function robustRange(values, { log = false, min = null, max = null, also = [], robust = true } = {}) {
  const T = log ? Math.log10 : (v) => v, inv = log ? (t) => 10 ** t : (t) => t;
  const vs = (log ? values.filter((v) => v > 0) : values).slice().sort((a, b) => a - b);
  const refs = also.filter((v) => Number.isFinite(v) && (!log || v > 0));
  if (!vs.length && !refs.length) return { lo: log ? 1 : 0, hi: log ? 10 : 1, cut: false };
  const [dmin, dmax] = extent([...vs, ...refs]);
  let lo = min != null && (!log || min > 0) ? min : log ? dmin / 1.5 : dmin >= 0 ? 0 : dmin;
  let hi = max != null ? max : log ? dmax * 1.5 : dmax === lo ? lo + 1 : lo + (dmax - lo) * HEADROOM;
  let cut = false;
  if (robust && vs.length >= ROBUST_MIN) {
    const at = (q) => vs[Math.floor(q * (vs.length - 1))];
    const base = T(lo), qHi = T(at(ROBUST_Q));
    if (max == null && qHi > base && T(vs.at(-1)) - base > ROBUST_SPAN * (qHi - base)) {
      hi = inv(Math.max(base + ROBUST_ROOM * (qHi - base), ...refs.map(T)));     // the reference lines stay in
      cut = true;
    }
    if (min == null && !log && dmin < 0) {
      const qLo = at(1 - ROBUST_Q), ceil = hi;
      if (qLo < ceil && ceil - dmin > ROBUST_SPAN * (ceil - qLo)) {
        lo = ceil - ROBUST_ROOM * (ceil - qLo);
        cut = true;
      }
    }
  }
  if (!(hi > lo)) hi = log ? lo * 10 : lo + 1;
  return { lo, hi, cut };
}

// ------------------------------------------------------------------------------------------------ the readout
/** The one hover readout of the page (twin.css .tooltip). */
export function tooltip() {
  let t = document.getElementById("chart-tooltip");
  if (!t) {
    t = Object.assign(document.createElement("div"), { id: "chart-tooltip", className: "tooltip", hidden: true });
    document.body.append(t);
  }
  return t;
}

/** Show `tip` near the viewport point (x, y), inside the window. */
export function placeTooltip(tip, x, y) {
  tip.hidden = false;
  const w = tip.offsetWidth, h = tip.offsetHeight;
  tip.style.left = `${Math.min(x + 14, innerWidth - w - 8)}px`;
  tip.style.top = `${Math.max(8, Math.min(y + 14, innerHeight - h - 8))}px`;
}

// ------------------------------------------------------------------------------------------------ the frame
/** A chart's parts in `el` (its content replaced): a toolbar row (switches), the plot's box, the legend, and the
 *  chart in words for a screen reader (a canvas says nothing: .chart-desc, visually hidden). */
export function chartFrame(el) {
  el.classList.add("chart");
  const tools = Object.assign(document.createElement("div"), { className: "chart-tools" });
  const plot = Object.assign(document.createElement("div"), { className: "chart-plot" });
  const legend = Object.assign(document.createElement("div"), { className: "legend chart-legend" });
  const desc = Object.assign(document.createElement("p"), { className: "chart-desc" });
  el.replaceChildren(tools, plot, legend, desc);
  return { tools, plot, legend, desc };
}

/** A checkbox switch of the toolbar: `label`, checked or not, `onChange(checked)`; data-switch names it. */
export function toolSwitch(name, label, checked, onChange, title = "") {
  const l = Object.assign(document.createElement("label"), { className: "chart-toggle", title });
  l.dataset.switch = name;
  const box = Object.assign(document.createElement("input"), { type: "checkbox", checked });
  box.addEventListener("change", () => onChange(box.checked));
  l.append(box, ` ${label}`);
  return l;
}

/** The width a chart takes in `box` (CSS pixels; at least 320). */
export const widthOf = (box) => Math.max(320, Math.floor(box.clientWidth));

/** Keep uPlot chart `get()` at the width of `box`: resized, not rebuilt, when the width changes. Returns a function
 *  that stops watching. */
export function fitWidth(box, get) {
  const ro = new ResizeObserver(() => {
    const u = get(), w = widthOf(box);
    if (u && w !== u.width) u.setSize({ width: w, height: u.height });
  });
  ro.observe(box);
  return () => ro.disconnect();
}

/** The chart as one canvas for a download: the plot as drawn (uPlot's canvas) and, below it, the `items` of its
 *  legend ({name, color, dash}) in rows, on the page's background. */
export function picture(u, items = []) {
  const src = u.ctx.canvas, k = src.width / u.width, th = theme(), rowH = 18 * k, pad = 8 * k;
  const ctx0 = document.createElement("canvas").getContext("2d");
  ctx0.font = `${12 * k}px ${th.family}`;
  const rows = [[]];
  let x = pad;
  for (const it of items) {
    const w = 26 * k + ctx0.measureText(it.name).width + 14 * k;
    if (x + w > src.width - pad && rows.at(-1).length) { rows.push([]); x = pad; }
    rows.at(-1).push({ ...it, x });
    x += w;
  }
  const legendH = items.length ? rows.length * rowH + pad : 0;
  const c = Object.assign(document.createElement("canvas"), { width: src.width, height: src.height + legendH });
  const ctx = c.getContext("2d");
  ctx.fillStyle = th.bg;
  ctx.fillRect(0, 0, c.width, c.height);
  ctx.drawImage(src, 0, 0);
  ctx.font = ctx0.font;
  ctx.textBaseline = "middle";
  rows.forEach((row, r) => row.forEach((it) => {
    const y = src.height + pad / 2 + r * rowH + rowH / 2;
    ctx.strokeStyle = it.color;
    ctx.lineWidth = 2 * k;
    ctx.setLineDash((DASH[it.dash ?? "-"] ?? []).map((d) => d * k));
    ctx.beginPath();
    ctx.moveTo(it.x, y);
    ctx.lineTo(it.x + 20 * k, y);
    ctx.stroke();
    ctx.fillStyle = th.text;
    ctx.fillText(it.name, it.x + 26 * k, y);
  }));
  return c;
}
