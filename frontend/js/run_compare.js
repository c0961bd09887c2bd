// /experiments/compare/?runs=1,2,3 : runs side by side. The parameters table highlights what differs, the headline
// table gives each run's headline figures (as the server declares them per kind: median, and the spread over
// seeds), and one chart draws every run's busbw against message size with its roofline (the median run's).
import { api, esc, fmt, markReady, toast } from "./twin.js";
import { PALETTE } from "./chart.js";
import { pageData } from "./run_form.js";
import { busbwChart, figureText, paramsText, paramValue, pct, stalledBadge, statusBadge } from "./run_results.js";

const { runs: ids } = pageData("compare-page");
const clusterName = new Map(pageData("clusters-info").map((c) => [c.id, c.name]));

const runHead = (r, i) => `<th><span class="swatch" style="background:${PALETTE[i % PALETTE.length]}"></span>
  <a href="/experiments/${r.id}/">#${r.id}</a> <span class="muted">${esc(r.kind)}</span></th>`;

function paramsTable(runs) {
  const rows = [["cluster", runs.map((r) => clusterName.get(r.cluster?.id) ?? r.cluster?.id)],
                ["kind", runs.map((r) => r.kind)]];
  const keys = [...new Set(runs.flatMap((r) => Object.keys(r.params)))];
  for (const k of keys) rows.push([k, runs.map((r) => (k in r.params ? paramValue(r.params[k]) : "—"))]);
  return `<thead><tr><th>parameter</th>${runs.map(runHead).join("")}</tr></thead><tbody>${rows.map(([k, vals]) => {
    const differs = new Set(vals.map(String)).size > 1;
    const cells = vals.map((v) => `<td class="mono">${esc(v)}</td>`).join("");
    return `<tr class="${differs ? "differs" : ""}"><th>${esc(k)}</th>${cells}</tr>`;
  }).join("")}</tbody>`;
}

function headlineTable(runs) {
  const s = (r) => r.summary ?? {};
  const last = (r) => s(r).rows?.[s(r).rows.length - 1];
  const hot = (r) => s(r).hottest_links?.[0];
  // every headline figure any of the runs has, in order of appearance
  const figures = new Map();
  for (const r of runs) for (const h of r.headline ?? []) if (!figures.has(h.key)) figures.set(h.key, h);
  const figure = (key) => (r) => {
    const h = (r.headline ?? []).find((x) => x.key === key);
    return h && h.value != null ? esc(figureText(h.value, h.format)) : "–";
  };
  const lines = [
    ["status", (r) => statusBadge(r.status) + stalledBadge(r)],
    ["what", (r) => esc(paramsText(r))],
    ...[...figures.values()].map((h) => [esc(h.label), figure(h.key)]),
    ["largest size (table)",
     (r) => (last(r) ? `${last(r).busbw_GBps.toFixed(1)} GB/s at ${fmt.bytes(last(r).size)}
       <span class="muted">${esc(s(r).table_of ?? "")}</span>` : "–")],
    ["roofline", (r) => fmt.GBps(s(r).roofline_GBps)],
    ["hottest link",
     (r) => (hot(r) ? `${pct(hot(r).utilization)} <span class="muted mono">${esc(hot(r).name)}</span>` : "–")],
  ];
  return `<thead><tr><th></th>${runs.map(runHead).join("")}</tr></thead><tbody>${lines.map(([label, f]) =>
    `<tr><th>${label}</th>${runs.map((r) => `<td>${f(r)}</td>`).join("")}</tr>`).join("")}</tbody>`;
}

async function main() {
  try {
    const page = await api(`/api/runs/?id__in=${ids.join(",")}&limit=${ids.length}`);
    const byId = new Map(page.results.map((r) => [r.id, r]));
    const runs = ids.map((id) => byId.get(id)).filter(Boolean);
    document.getElementById("compare-params").innerHTML = paramsTable(runs);
    document.getElementById("compare-headline").innerHTML = headlineTable(runs);
    const curves = runs.map((r, i) => ({ name: `#${r.id}`, summary: r.summary, color: PALETTE[i % PALETTE.length] }))
      .filter((c) => c.summary?.rows?.length);
    const others = runs.filter((r) => !r.summary?.rows?.length).map((r) => `#${r.id} (${r.kind}, ${r.status})`);
    const chart = document.getElementById("compare-chart");
    chart.dataset.run = curves.map((c) => c.name.slice(1)).join(",");   // named in its download (exports.js)
    busbwChart(chart, curves);
    document.getElementById("compare-note").textContent = others.length
      ? `No busbw curve for ${others.join(", ")}: only finished collective and fabric-health runs have one.` : "";
  } catch (e) {
    toast(`compare: ${e.message}`);
  }
  markReady();
}
main();
