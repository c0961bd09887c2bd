// The pages' bar charts: horizontal bars, one per item (a step's parts, a sweep's combinations, seeds per value),
// drawn by uPlot (chart-base.js) with its bars path builder on a vertical category axis. Imported through chart.js.
// Like the line charts: the value axis has the page's tick format and its unit as title, its range is robust (one
// bar far past the others is cut at the edge, its value still written, and "full range" shows it whole), a hover
// readout names the bar, and the PNG download carries a title band (exports.js).
import { PALETTE, REF_COLOR, DASH, axis, chartFrame, fitWidth, picture, placeTooltip, robustRange, textWidth, theme,
         toolSwitch, tooltip, uPlot, widthOf } from "./chart-base.js";
import { exportable } from "./exports.js";
import { esc, fmt } from "./twin.js";

const ROW_PX = 22, HIGHLIGHT = "#3fb950";

/** A label cut to `width` px (the label font) with an ellipsis. */
function fit(text, width, font) {
  if (textWidth([text], font) <= width) return text;
  let t = text;
  while (t.length > 1 && textWidth([`${t}…`], font) > width) t = t.slice(0, -1);
  return `${t}…`;
}

/**
 * Horizontal bars in `el`: spec {bars: [{label, value, color?, href?, note?}], label? (the chart's title), unit? (the
 * value axis' title, with its unit), max?, format(v) (a bar's value), tickFormat(max)? (the axis' formatter for a
 * largest value max: one unit on every tick, e.g. fmt.durationAxis), refLines: [{value, label}], highlight (index of
 * the bar drawn green)}. A bar without a value shows its note; a bar with an href opens it on a click.
 * Returns {destroy()}; el.dataset.bars holds the number of bars (for tests).
 */
export function barChart(el, spec) {
  const { tools, plot, legend, desc } = chartFrame(el);
  legend.hidden = true;
  const th = theme(), labelFont = `12px ${th.family}`, vfmt = spec.format ?? fmt.num, bars = spec.bars;
  desc.textContent = `${spec.label ?? "bars"}: ${bars.map((b) => `${b.label} ${b.value == null ? (b.note ?? "–")
    : vfmt(b.value)}`).join(", ")}.`;
  const n = bars.length, values = bars.map((b) => (b.value != null && Number.isFinite(b.value) ? b.value : null));
  const colors = bars.map((b, i) => b.color ?? (i === spec.highlight ? HIGHLIGHT : PALETTE[0]));
  const refs = spec.refLines ?? [];
  const tip = tooltip();
  const state = { full: false };
  let u = null, range = null;
  el.dataset.bars = String(n);

  function build() {
    u?.destroy();
    const width = widthOf(plot);
    range = robustRange(values.filter((x) => x != null), { min: 0, max: spec.max, robust: !state.full,
                                                           also: refs.map((r) => r.value) });
    if (!spec.max && !range.cut) range.hi = Math.max(range.hi, 1e-9);
    const tick = spec.tickFormat ? spec.tickFormat(range.hi) : vfmt;
    const labelW = Math.min(Math.floor(width * 0.4), Math.ceil(textWidth(bars.map((b) => b.label), labelFont)) + 14);
    const valueW = Math.ceil(textWidth(values.map((x) => (x == null ? "" : vfmt(x))))) + 14;
    const labels = bars.map((b) => fit(b.label, labelW - 12, labelFont));
    const opts = {
      width, height: n * ROW_PX + (spec.unit ? 48 : 30), padding: [6, valueW, 0, 0], legend: { show: false },
      scales: { x: { time: false, ori: 1, dir: -1, range: [-0.5, n - 0.5] },
                y: { ori: 0, dir: 1, range: [range.lo, range.hi] } },
      axes: [
        { scale: "x", side: 3, size: labelW, gap: 6, stroke: th.text, font: labelFont, grid: { show: false },
          ticks: { show: false }, splits: () => bars.map((_, i) => i),
          values: (uu, splits) => splits.map((i) => labels[i] ?? "") },
        axis(tick, { scale: "y", side: 2, label: spec.unit, space: 70 }),
      ],
      series: [{}, { label: spec.label ?? "value", width: 0, fill: PALETTE[0], points: { show: false },
                     // a colour per bar (uPlot's disp.fill, unit 3: one value per bar)
                     paths: uPlot.paths.bars({ size: [0.72, 18], disp: { fill: { unit: 3, values: () => colors } } }),
                   }],
      cursor: { x: false, y: false, drag: { x: false, y: false }, points: { show: false } },
      hooks: { draw: [drawValues], setCursor: [hover] },
    };
    u = new uPlot(opts, [bars.map((_, i) => i), values], (self, init) => { plot.append(self.root); self.batch(init); });
    u.root.setAttribute("role", "img");
    u.root.setAttribute("aria-label", spec.label ?? "");
    u.root.addEventListener("click", (ev) => { const b = bars[rowAt(ev)]; if (b?.href) location.href = b.href; });
    u.root.addEventListener("mousemove", (ev) => { u.root.style.cursor = bars[rowAt(ev)]?.href ? "pointer" : ""; });
    const full = toolSwitch("full", "full range", state.full, (on) => { state.full = on; build(); },
                            "a bar far past the others is cut at the edge, its value written: the rest stays readable");
    tools.replaceChildren(...(range.cut || state.full ? [full] : []));
    tools.hidden = !tools.childElementCount;
  }

  /** The bar at a pointer event's height (over the plot or its label), or -1. */
  function rowAt(ev) {
    const box = u.over.getBoundingClientRect(), y = ev.clientY - box.top;
    if (y < 0 || y > box.height) return -1;
    const i = Math.round(u.posToVal(y, "x"));
    return i >= 0 && i < n ? i : -1;
  }

  /** Each bar's value at its end (inside the plot when the bar is cut), a missing value's note, the reference
   *  lines. */
  function drawValues(uu) {
    const ctx = uu.ctx, k = ctx.canvas.width / uu.width, { left, top, width, height } = uu.bbox;
    ctx.save();
    ctx.font = `${11.5 * k}px ${th.family}`;
    ctx.textBaseline = "middle";
    ctx.textAlign = "left";                       // (uPlot leaves the axes' alignment set)
    bars.forEach((b, i) => {
      const y = uu.valToPos(i, "x", true);
      if (values[i] == null) {
        ctx.fillStyle = th.muted;
        ctx.fillText(b.note ?? "–", left + 4 * k, y);
        return;
      }
      const text = vfmt(values[i]), end = uu.valToPos(values[i], "y", true), w = ctx.measureText(text).width;
      ctx.fillStyle = th.text;
      ctx.fillText(text, end > left + width ? left + width - w - 4 * k : end + 5 * k, y);
    });
    ctx.strokeStyle = REF_COLOR;
    ctx.lineWidth = k;
    ctx.setLineDash(DASH["--"].map((d) => d * k));
    for (const r of refs) {
      const x = uu.valToPos(r.value, "y", true);
      ctx.beginPath(); ctx.moveTo(x, top); ctx.lineTo(x, top + height); ctx.stroke();
    }
    ctx.restore();
  }

  function hover(uu) {
    const i = uu.cursor.idx;
    if (i == null || uu.cursor.top < 0) { tip.hidden = true; return; }
    const b = bars[i];
    tip.innerHTML = `<div><b>${esc(b.label)}</b>: ${esc(values[i] == null ? (b.note ?? "–") : vfmt(values[i]))}</div>`
      + refs.map((r) => `<div class="muted">${esc(r.label ?? "")}</div>`).join("")
      + (b.href ? '<div class="muted">click to open</div>' : "");
    const box = uu.over.getBoundingClientRect();
    placeTooltip(tip, box.left + uu.cursor.left, box.top + uu.cursor.top);
  }

  build();
  const unwatch = fitWidth(plot, () => u);
  el.chart = { get u() { return u; }, valueRange: () => [range.lo, range.hi] };
  exportable(el, { title: spec.label, units: () => [spec.unit], picture: () => picture(u) });
  return { destroy() { unwatch(); u?.destroy(); tip.hidden = true; } };
}
