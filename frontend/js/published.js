// Published figures beside simulated ones (sim/core/published.py): a result's `published` list drawn as one table,
// the same on every page that has it: what was measured, the published value with its source (docs/sources.md tag),
// the simulated one, their ratio, and why the two may differ. Nothing here names a page.
import { esc, fmt } from "./twin.js";

const FORMAT = {
  fraction: (x) => fmt.pct(x, 1),
  "TFLOP/s": (x) => fmt.quantity("flops", x),
  "TB/s": (x) => fmt.GBps(Number(x) * 1e3),
  s: (x) => fmt.s(x),
  h: (x) => fmt.duration(Number(x) * 3600),
  count: (x) => fmt.int(x),
  MW: (x) => fmt.MW(x),
  W: (x) => fmt.W(x),
};

function value(unit, x) {
  if (x == null) return "–";
  return (FORMAT[unit] ?? ((v) => String(v)))(x);
}

function range(row) {
  return row.low === row.high ? value(row.unit, row.low) : `${value(row.unit, row.low)} – ${value(row.unit, row.high)}`;
}

/** HTML of a result's published comparisons (an empty string when there are none). */
export function publishedHtml(rows) {
  if (!rows?.length) return "";
  const body = rows.map((r) => `<tr data-key="${esc(r.key)}">
      <td>${esc(r.what)}<div class="muted small">${esc(r.case)}${r.same_case ? "" : ` · nearest published case${r.differs ? `: ${esc(r.differs)}` : ""}`}</div></td>
      <td class="num" data-value="${r.low}">${esc(range(r))}</td>
      <td class="num" data-value="${r.simulated ?? ""}">${esc(value(r.unit, r.simulated))}</td>
      <td class="num" data-value="${r.ratio ?? ""}">${r.ratio == null ? "–" : `${r.ratio.toFixed(2)}×`}</td>
      <td>${esc(r.source)}</td>
      <td class="why">${r.why ? esc(r.why) : '<span class="muted">none known</span>'}</td></tr>`).join("");
  return `<table class="data published-table" data-export-name="published-vs-simulated">
    <thead><tr><th>figure</th><th>published</th><th>simulated</th><th>ratio</th><th>source (docs/sources.md)</th>
    <th>why they may differ</th></tr></thead><tbody>${body}</tbody></table>`;
}
