// Small SVG charts for bandwidth curves (native ES module, no dependencies; styles: css/experiments.css, ".chart").
//
// lineChart(el, spec): x linear, log2 (message sizes, job sizes) or log, y linear or log, several series (line,
// markers, optional min-max band; a scatter without its line), horizontal reference lines (the roofline, a 90 % line), brackets at the right edge (a
// published claim such as "10-90 %"), a legend that shows and hides series, and a hover readout of every series at
// the nearest x (or, with hover "point", of the one point nearest the pointer, which a click picks). barChart(el, spec): horizontal bars (one per sweep combination). Both redraw when resized.
import { exportable } from "./exports.js";
import { esc } from "./twin.js";

export const PALETTE = ["#4aa3ff", "#f5a524", "#3fb950", "#e5484d", "#b58cff", "#17becf", "#ff7f0e", "#e377c2",
                        "#bcbd22", "#8c96a8"];
const DASH = { "-": "", "--": "7 4", ":": "2 3", "-.": "7 3 2 3" };       // matplotlib's line styles
const NS = "http://www.w3.org/2000/svg";
const M = { top: 14, right: 16, bottom: 40, left: 58 };                     // plot margins (px)
const RANGE_ROOM = 34;                                                      // px at the right edge for brackets
const CLAIM_COLOR = "#c9a227", REF_COLOR = "#8b94a7";

/** Message sizes as nccl-tests users say them: 1M, 2M, 512K, 1G (powers of 1024). */
export function sizeLabel(bytes) {
  const units = ["", "K", "M", "G", "T"];
  let i = 0;
  while (bytes >= 1024 && i < units.length - 1) { bytes /= 1024; i += 1; }
  return `${Number.isInteger(bytes) ? bytes : bytes.toFixed(1)}${units[i]}`;
}

/** Powers of two from lo to hi (inclusive), thinned to at most `max` ticks. */
function log2Ticks(lo, hi, max = 12) {
  const a = Math.floor(Math.log2(lo)), b = Math.ceil(Math.log2(hi));
  const step = Math.max(1, Math.ceil((b - a + 1) / max));
  const out = [];
  for (let e = a; e <= b; e += step) out.push(2 ** e);
  return out;
}

/** Round steps (1, 2, 2.5, 5 x 10^k) covering lo..hi in about `n` ticks. */
function niceTicks(lo, hi, n = 5) {
  const raw = (hi - lo) / n || 1, mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw);
  const out = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(+v.toPrecision(12));
  return out;
}

function logTicks(lo, hi) {
  const out = [];
  for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) out.push(10 ** e);
  return out;
}

/** Data -> pixels on a "linear", "log2" or "log" (10) axis. */
function scale(kind, d0, d1, r0, r1) {
  const f = kind === "log2" ? Math.log2 : kind === "log" ? Math.log10 : (v) => v;
  const a = f(d0), b = f(d1), k = (r1 - r0) / ((b - a) || 1);
  return (v) => r0 + (f(v) - a) * k;
}

function svgEl(tag, attrs = {}, text) {
  const e = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) if (v != null) e.setAttribute(k, v);
  if (text != null) e.textContent = text;
  return e;
}

/** Keep a chart drawn at its container's width: draw(width) now and again whenever the width changes. */
function responsive(el, draw) {
  let width = 0;
  const redraw = () => {
    const w = Math.max(320, Math.floor(el.clientWidth));
    if (w !== width) { width = w; draw(w); }
  };
  const ro = new ResizeObserver(redraw);
  ro.observe(el);
  redraw();
  return { redraw: () => { width = 0; redraw(); }, destroy: () => ro.disconnect() };
}

/** The one hover readout of the page (twin.css .tooltip). */
function tooltip() {
  let t = document.getElementById("chart-tooltip");
  if (!t) {
    t = Object.assign(document.createElement("div"), { id: "chart-tooltip", className: "tooltip", hidden: true });
    document.body.append(t);
  }
  return t;
}

function placeTooltip(tip, ev) {
  tip.hidden = false;
  const w = tip.offsetWidth, h = tip.offsetHeight;
  tip.style.left = `${Math.min(ev.clientX + 14, innerWidth - w - 8)}px`;
  tip.style.top = `${Math.max(8, Math.min(ev.clientY + 14, innerHeight - h - 8))}px`;
}

const colorOf = (ser, i) => ser.color ?? PALETTE[i % PALETTE.length];
const finite = (p) => p.y != null && Number.isFinite(p.y);

/** The data range of a line chart's spec (explicit y.min / y.max win). */
function domain(s) {
  const xs = [], ys = [];
  for (const ser of s.series) for (const p of ser.points.filter(finite)) {
    xs.push(p.x); ys.push(p.y);
    if (ser.band && p.lo != null) ys.push(p.lo, p.hi);
  }
  for (const r of s.refLines ?? []) ys.push(r.y);
  const log2 = s.x.scale === "log2" || s.x.scale === "log";
  let [x0, x1] = xs.length ? [Math.min(...xs), Math.max(...xs)] : (log2 ? [1, 2] : [0, 1]);
  if (x0 === x1) [x0, x1] = log2 ? [x0 / 2, x1 * 2] : [x0 - 1, x1 + 1];
  x0 = s.x.min ?? x0;
  x1 = s.x.max ?? x1;
  const y0 = s.y.min ?? (s.y.scale === "log" ? Math.min(...ys.filter((v) => v > 0)) / 1.5 : 0);
  let y1 = s.y.max ?? (ys.length ? Math.max(...ys) * 1.08 : 1);
  if (!(y1 > y0)) y1 = y0 + 1;
  return { x0, x1, y0, y1 };
}

// ------------------------------------------------------------------------------------------------ line chart
// lineChart() composes the pieces below; each draws one part of the SVG from the spec `s` and the scales `sc`
// (lineScales) of the current width.

/** The pixel geometry of a line chart `W` px wide: height, data domain, the plot's right edge (room left for the
 *  brackets), and the data -> pixel functions fx, fy. */
function lineScales(s, W) {
  const H = s.height ?? 300, d = domain(s);
  const edge = W - M.right - (s.ranges?.length ? RANGE_ROOM : 0);
  return { W, H, ...d, edge, fx: scale(s.x.scale, d.x0, d.x1, M.left, edge),
           fy: scale(s.y.scale, d.y0, d.y1, H - M.bottom, M.top) };
}

/** A tick label centred under its tick, unless half of it would cross the chart's edge: then it ends (or starts)
 *  at the tick, so that the last date of a time axis is not cut off. */
function tickAnchor(x, text, W) {
  const half = String(text).length * 3.4;          // about half the width of the 11 px axis font
  return x + half > W ? "end" : x - half < 0 ? "start" : "middle";
}

/** Grid lines, tick labels and the two axis titles. */
function axesEl(s, { W, H, fx, fy, x0, x1, y0, y1 }) {
  const g = svgEl("g"), grid = svgEl("g", { class: "grid" }), labels = svgEl("g", { class: "axis" });
  const xfmt = s.x.format ?? String, yfmt = s.y.format ?? String;
  const xt = s.x.ticks ?? (s.x.scale === "log2" ? log2Ticks(x0, x1) : s.x.scale === "log" ? logTicks(x0, x1)
    : niceTicks(x0, x1, 6));
  const yt = s.y.ticks ?? (s.y.scale === "log" ? logTicks(y0, y1) : niceTicks(y0, y1, 5));
  for (const t of xt.filter((v) => v >= x0 * 0.999 && v <= x1 * 1.001)) {
    grid.append(svgEl("line", { x1: fx(t), x2: fx(t), y1: M.top, y2: H - M.bottom }));
    labels.append(svgEl("text", { x: fx(t), y: H - M.bottom + 15, "text-anchor": tickAnchor(fx(t), xfmt(t), W) },
                        xfmt(t)));
  }
  for (const t of yt.filter((v) => v >= y0 && v <= y1)) {
    grid.append(svgEl("line", { x1: M.left, x2: W - M.right, y1: fy(t), y2: fy(t) }));
    labels.append(svgEl("text", { x: M.left - 6, y: fy(t) + 4, "text-anchor": "end" }, yfmt(t)));
  }
  labels.append(svgEl("text", { x: (M.left + W - M.right) / 2, y: H - 6, "text-anchor": "middle",
                                class: "axis-label" }, s.x.label),
                svgEl("text", { x: -(M.top + H - M.bottom) / 2, y: 13, transform: "rotate(-90)",
                                "text-anchor": "middle", class: "axis-label" }, s.y.label));
  g.append(grid, labels);
  return g;
}

/** A published claim: a bracket from ya to yb at x, labelled along it when there is room. */
function bracketEl(r, x, ya, yb) {
  const g = svgEl("g", { class: "range" }), c = r.color ?? CLAIM_COLOR, ym = (ya + yb) / 2;
  g.append(svgEl("path", { d: `M${x - 5},${ya + 1}H${x}V${yb - 1}H${x - 5}`, stroke: c, fill: "none",
                           "stroke-width": 2 }),
           svgEl("title", {}, `published: ${r.label}`));
  const text = `published ${Math.round(r.low)}–${Math.round(r.high)} %`;
  if (yb - ya > text.length * 5.6) {
    g.append(svgEl("text", { x: x + 12, y: ym, transform: `rotate(-90 ${x + 12} ${ym})`, "text-anchor": "middle",
                             fill: c, class: "range-label" }, text));
  }
  return g;
}

/** The spec's ranges as brackets at the right edge, clipped to the y domain. */
function rangesEls(s, { edge, fy, y0, y1 }) {
  return (s.ranges ?? []).map((r) => bracketEl(r, edge + 10, fy(Math.min(r.high, y1)), fy(Math.max(r.low, y0))));
}

/** Horizontal reference lines (the roofline, a 90 % line), each labelled at its right end. */
function refLinesEls(s, { edge, fy }) {
  return (s.refLines ?? []).flatMap((r) => {
    const y = fy(r.y), c = r.color ?? REF_COLOR;
    return [svgEl("line", { x1: M.left, x2: edge, y1: y, y2: y, stroke: c, "stroke-width": 1.2,
                            "stroke-dasharray": DASH[r.dash ?? "--"], class: "ref" }),
            svgEl("text", { x: edge - 4, y: y - 4, "text-anchor": "end", fill: c, class: "ref-label" }, r.label)];
  });
}

/** One series: its min-max band (shade and whiskers), its line, its markers; x through `px`. */
function seriesEl(ser, color, px, fy) {
  const g = svgEl("g", { class: "series", "data-name": ser.name }), pts = ser.points.filter(finite);
  const band = ser.band ? pts.filter((p) => p.lo != null) : [];
  if (band.length) {
    const d = band.map((p, j) => `${j ? "L" : "M"}${px(p.x)},${fy(p.hi)}`).join("")
      + band.slice().reverse().map((p) => `L${px(p.x)},${fy(p.lo)}`).join("") + "Z";
    g.append(svgEl("path", { d, fill: color, opacity: 0.1, stroke: "none" }));
    for (const p of ser.whiskers === false ? [] : band) {
      g.append(svgEl("line", { x1: px(p.x), x2: px(p.x), y1: fy(p.lo), y2: fy(p.hi), stroke: color, opacity: 0.6 }));
    }
  }
  if (ser.line !== false) {
    g.append(svgEl("path", { d: pts.map((p, j) => `${j ? "L" : "M"}${px(p.x)},${fy(p.y)}`).join(""), fill: "none",
                             stroke: color, "stroke-width": 1.8, "stroke-dasharray": DASH[ser.dash ?? "-"] }));
  }
  if (ser.markers === false) return g;
  const r = ser.line === false ? 4 : 2.6;                   // a scatter's points stand alone: larger
  for (const p of pts) {
    g.append(svgEl("circle", { cx: px(p.x), cy: fy(p.y), r, fill: color, opacity: 0.85, "data-id": p.id }));
  }
  return g;
}

/** The shown series (`shown`: [{ser, i}]), side by side around equal x values when s.spread is set. */
function seriesEls(s, shown, { fx, fy }) {
  return shown.map(({ ser, i }, k) => {
    const dx = s.spread ? (k - (shown.length - 1) / 2) * s.spread : 0;
    return seriesEl(ser, colorOf(ser, i), (x) => fx(x) + dx, fy);
  });
}

/** The hover readout's text at x: every shown series' value there (and its min-max), then the reference lines. */
function readoutHtml(s, shown, x) {
  const xfmt = s.x.format ?? String, tipfmt = s.y.tipFormat ?? s.y.format ?? String;
  const rows = shown.map(({ ser, i }) => {
    const p = ser.points.find((q) => q.x === x);
    if (!p || !finite(p)) return "";
    const spread = p.lo != null && p.lo !== p.hi
      ? ` <span class="muted">(${tipfmt(p.lo)}–${tipfmt(p.hi)})</span>` : "";
    return `<div><span class="swatch" style="background:${colorOf(ser, i)}"></span> ${esc(ser.name)}: `
      + `<b>${esc(tipfmt(p.y))}</b>${spread}</div>`;
  }).join("");
  const refs = (s.refLines ?? []).map((r) => `<div class="muted">${esc(r.label ?? "")}</div>`).join("");
  return `<div><b>${esc(s.x.name ?? s.x.label ?? "x")}: ${esc(xfmt(x))}</b></div>${rows}${refs}`;
}

/** Crosshair at the x nearest the pointer and the readout (readoutHtml) in the page's tooltip `tip`. */
function attachHover(svg, s, shown, { W, H, fx }, tip) {
  const top = M.top, bottom = H - M.bottom;
  const xs = [...new Set(shown.flatMap(({ ser }) => ser.points.map((p) => p.x)))].sort((a, b) => a - b);
  const cross = svgEl("line", { class: "crosshair", y1: top, y2: bottom, visibility: "hidden" });
  const hit = svgEl("rect", { x: M.left, y: top, width: Math.max(0, W - M.left - M.right), height: bottom - top,
                              fill: "transparent" });
  svg.append(cross, hit);
  hit.addEventListener("mousemove", (ev) => {
    if (!xs.length) return;
    const px = ev.clientX - svg.getBoundingClientRect().left;
    const x = xs.reduce((best, v) => (Math.abs(fx(v) - px) < Math.abs(fx(best) - px) ? v : best), xs[0]);
    cross.setAttribute("x1", fx(x)); cross.setAttribute("x2", fx(x)); cross.setAttribute("visibility", "visible");
    tip.innerHTML = readoutHtml(s, shown, x);
    placeTooltip(tip, ev);
  });
  hit.addEventListener("mouseleave", () => { tip.hidden = true; cross.setAttribute("visibility", "hidden"); });
}

/** Hover "point": the readout of the one point nearest the pointer (within POINT_REACH px) among the shown series
 *  that take part (``hover`` not false), ringed; a click on it calls s.onPoint(point, series). */
const POINT_REACH = 14;
function attachPointHover(svg, s, shown, { W, H, fx, fy }, tip) {
  const pts = shown.filter(({ ser }) => ser.hover !== false && ser.markers !== false)
    .flatMap(({ ser, i }) => ser.points.filter(finite).map((p) => ({ p, ser, i, x: fx(p.x), y: fy(p.y) })));
  const ring = svgEl("circle", { class: "point-ring", r: 7, fill: "none", "stroke-width": 2, visibility: "hidden" });
  const hit = svgEl("rect", { x: M.left, y: M.top, width: Math.max(0, W - M.left - M.right),
                              height: H - M.bottom - M.top, fill: "transparent" });
  svg.append(ring, hit);
  let near = null;
  const nearest = (ev) => {
    const box = svg.getBoundingClientRect(), x = ev.clientX - box.left, y = ev.clientY - box.top;
    let best = null, d2 = POINT_REACH ** 2;
    for (const q of pts) {
      const d = (q.x - x) ** 2 + (q.y - y) ** 2;
      if (d <= d2) { best = q; d2 = d; }
    }
    return best;
  };
  hit.addEventListener("mousemove", (ev) => {
    near = nearest(ev);
    hit.style.cursor = near && s.onPoint ? "pointer" : "";
    if (!near) { tip.hidden = true; ring.setAttribute("visibility", "hidden"); return; }
    ring.setAttribute("cx", near.x); ring.setAttribute("cy", near.y);
    ring.setAttribute("stroke", colorOf(near.ser, near.i)); ring.setAttribute("visibility", "visible");
    tip.innerHTML = s.pointTip ? s.pointTip(near.p, near.ser)
      : `<div><b>${esc(near.ser.name)}</b></div><div>${esc((s.x.format ?? String)(near.p.x))}, `
        + `${esc((s.y.tipFormat ?? s.y.format ?? String)(near.p.y))}</div>`;
    placeTooltip(tip, ev);
  });
  hit.addEventListener("mouseleave", () => { tip.hidden = true; ring.setAttribute("visibility", "hidden"); });
  hit.addEventListener("click", (ev) => {
    const q = nearest(ev);
    if (q && s.onPoint) s.onPoint(q.p, q.ser);
  });
}

/** The legend: one button per series (its line style and name) that shows or hides it (`toggle(name)`). */
function legendButtons(s, hidden, toggle) {
  return s.series.map((ser, i) => {
    const item = Object.assign(document.createElement("button"), { type: "button", className: "legend-item",
                                                                    title: "show / hide" });
    item.setAttribute("aria-pressed", String(!hidden.has(ser.name)));
    item.innerHTML = `<svg width="22" height="10"><line x1="1" x2="21" y1="5" y2="5" stroke="${colorOf(ser, i)}"
      stroke-width="2" stroke-dasharray="${DASH[ser.dash ?? "-"]}"/></svg> ${esc(ser.name)}`;
    item.addEventListener("click", () => toggle(ser.name));
    return item;
  });
}

/**
 * A line chart in `el` (its content is replaced). spec:
 *   x: {scale: "log2" | "log" | "linear", label, name? (hover title), format(v), ticks?},
 *   y: {scale: "linear" | "log", min?, max?, label, format(v) (ticks), tipFormat(v)? (hover), ticks?},
 *   height (px, default 300), spread (px: series drawn side by side around equal x values), legend (default true),
 *   x.min / x.max (the x domain; default the data's),
 *   series: [{name, color?, dash? ("-", "--", ":", "-."), points: [{x, y, lo?, hi?, id?}], band? (shade lo..hi),
 *             whiskers? (default true: a band's lo..hi line at each point), markers? (default true), line? (default
 *             true; false: a scatter, its points only), hover? (default true; false: left out of hover "point")}],
 *   hover: "x" (default: every series at the nearest x) | "point" (the nearest point: pointTip(p, series) -> HTML,
 *   the readout; onPoint(p, series) on a click; a point's id is its circle's data-id),
 *   refLines: [{y, label, color?, dash?}], ranges: [{low, high, label, color?}] (brackets at the right edge).
 * Returns {destroy()}; el.dataset.series holds the number of series drawn (for tests).
 */
export function lineChart(el, s) {
  el.classList.add("chart");
  const hidden = new Set();                             // names of the series the legend has hidden
  const plot = document.createElement("div");
  const legend = Object.assign(document.createElement("div"), { className: "legend chart-legend" });
  legend.hidden = s.legend === false;
  el.replaceChildren(plot, legend);
  const tip = tooltip();

  function draw(W) {
    const sc = lineScales(s, W);
    const shown = s.series.map((ser, i) => ({ ser, i })).filter(({ ser }) => !hidden.has(ser.name));
    const svg = svgEl("svg", { width: W, height: sc.H, viewBox: `0 0 ${W} ${sc.H}`, role: "img",
                               "aria-label": s.label });
    svg.append(axesEl(s, sc), ...rangesEls(s, sc), ...refLinesEls(s, sc), ...seriesEls(s, shown, sc));
    if (s.hover === "point") attachPointHover(svg, s, shown, sc, tip);
    else attachHover(svg, s, shown, sc, tip);
    plot.replaceChildren(svg);
    el.dataset.series = String(shown.length);
  }
  function drawLegend() { legend.replaceChildren(...legendButtons(s, hidden, toggle)); }
  function toggle(name) {
    if (hidden.has(name)) hidden.delete(name); else hidden.add(name);
    drawLegend();
    view.redraw();
  }

  drawLegend();
  const view = responsive(plot, draw);
  exportable(el);
  return { destroy() { view.destroy(); tip.hidden = true; } };
}

/**
 * Horizontal bars in `el`: spec {bars: [{label, value, color?, href?, note?}], max?, format(v), tickFormat(max)?
 * (the axis's formatter for a largest value max: one unit on every tick, e.g. fmt.durationAxis), refLines: [{value, label}], highlight (index of the bar drawn green)}. A bar without a value shows its note.
 */
export function barChart(el, spec) {
  el.classList.add("chart");
  const fmt = spec.format ?? String, rowH = 22;
  const labelW = Math.min(320, 40 + 7 * Math.max(...spec.bars.map((b) => b.label.length), 4));
  function draw(W) {
    const H = spec.bars.length * rowH + 26, max = spec.max ?? Math.max(...spec.bars.map((b) => b.value ?? 0), 1e-9);
    const fx = scale("linear", 0, max, labelW, W - 70), tick = spec.tickFormat ? spec.tickFormat(max) : fmt;
    const svg = svgEl("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img" });
    const grid = svgEl("g", { class: "grid" }), labels = svgEl("g", { class: "axis" });
    for (const t of niceTicks(0, max, 5)) {
      grid.append(svgEl("line", { x1: fx(t), x2: fx(t), y1: 4, y2: H - 20 }));
      labels.append(svgEl("text", { x: fx(t), y: H - 6, "text-anchor": "middle" }, tick(t)));
    }
    svg.append(grid, labels);
    spec.bars.forEach((b, i) => {
      const y = 6 + i * rowH, g = svgEl("g", { class: "bar" });
      const label = svgEl("text", { x: labelW - 8, y: y + 13, "text-anchor": "end", class: "bar-label" }, b.label);
      if (b.href) { const a = svgEl("a", { href: b.href }); a.append(label); g.append(a); } else g.append(label);
      if (b.value != null) {
        g.append(svgEl("rect", { x: labelW, y: y + 2, width: Math.max(1, fx(b.value) - labelW), height: rowH - 6,
                                 rx: 2, fill: b.color ?? (i === spec.highlight ? "#3fb950" : PALETTE[0]) }),
                 svgEl("text", { x: fx(b.value) + 5, y: y + 13, class: "bar-value" }, fmt(b.value)));
      } else {
        g.append(svgEl("text", { x: labelW + 4, y: y + 13, class: "bar-value muted" }, b.note ?? "–"));
      }
      svg.append(g);
    });
    for (const r of spec.refLines ?? []) {
      const line = svgEl("line", { x1: fx(r.value), x2: fx(r.value), y1: 2, y2: H - 20, class: "ref",
                                   stroke: REF_COLOR, "stroke-dasharray": DASH["--"] });
      line.append(svgEl("title", {}, r.label ?? ""));
      svg.append(line);
    }
    el.replaceChildren(svg);
  }
  const view = responsive(el, draw);
  exportable(el);
  return { destroy: view.destroy };
}
