// The fabric page's zone overview (/clusters/<name>/fabric/?view=zones, where clusters above
// gpu_data.OVERVIEW_ABOVE_GPUS open): per tier the fabric's figures, and a table of zones by tier (links not active,
// mean and max utilization of the active ones in the last run's frame), from fabric/zones.json
// (twin/web/fabric_data.py overview_data). It is re-read when the cluster's summary stream (frames without per-item
// sections, docs/live.md) says a run published, and when the inventory changes. A click on a zone zooms into it: the
// fabric page of that zone alone (heatmaps, racks, spines, switches, single links), as fabric.js draws it; where the
// spec groups zones into buildings, each row links its building too (?building=<n>: the fabric of its zones).
import { pct } from "./fabric-cells.js";
import { api, COLORS, esc, fmt, live, markReady, toast, twin, utilCss } from "./twin.js";

const REFRESH_MS = 1000;                          // at most one zones.json read per second while frames arrive
const root = document.getElementById("fabric");
const cluster = root.dataset.cluster, $ = (id) => document.getElementById(id);
const upper = (name) => name.toUpperCase();
const tierTitle = (t) => `${t.code === 0 ? "Host links: " : ""}${upper(t.lower)} → ${upper(t.upper)}`;

function short(name) { return name.startsWith(`${cluster}.`) ? name.slice(cluster.length + 1) : name; }

function utilTd(v, hasData) {
  const color = hasData ? utilCss(v) : COLORS.none;
  return `<td class="num util"><i class="swatch" style="background:${color}"></i><span>${pct(v, hasData)}</span></td>`;
}

function render(doc) {
  const hasData = doc.tiers.some((t) => t.mean), run = doc.run;
  const runLink = run && `<a href="/experiments/${run.id}/">run #${run.id}</a>
      <span class="badge ${esc(run.status)}">${esc(run.status)}</span> ${fmt.int(run.progress)} %`;
  // The last frame's run may bring no link utilization (a figure, a failures timeline): not a state to claim.
  $("fabric-run").innerHTML = run && hasData ? `<div>State from ${runLink}</div>`
    : run ? `<div class="no-util">Latest: ${runLink}: no link utilization from it, so no link state to show.</div>`
    : '<span class="muted">No simulation yet on this cluster: utilization shows once a run publishes.</span>';
  const figures = [[fmt.int(doc.links.count), "backend links"], [fmt.int(doc.zones.length), "zones"],
                   ...doc.tiers.map((t) => {
                     const down = t.down.reduce((a, b) => a + b, 0);
                     return [`${fmt.int(down)}`, `${tierTitle(t)}: not active`, down ? "bad" : ""];
                   })];
  $("fabric-summary").innerHTML = figures.map(([v, label, cls = ""]) =>
    `<div class="figure"><span class="value ${cls}">${v}</span><span class="label">${esc(label)}</span></div>`)
    .join("");
  const table = $("zone-table"), B = doc.buildings ?? [];
  const byBuilding = B.some((b) => b != null && b !== B[0]);
  const buildingTd = (z) => (byBuilding ? `<td>${B[z] == null ? "–"
    : `<a href="?building=${B[z]}" data-building="${B[z]}">building ${B[z]}</a>`}</td>` : "");
  table.innerHTML = `<thead><tr>${byBuilding ? '<th rowspan="2">Building</th>' : ""}<th rowspan="2">Zone</th>`
    + doc.tiers.map((t) => `<th colspan="3" class="group">${esc(tierTitle(t))}</th>`).join("") + "</tr><tr>"
    + doc.tiers.map(() => '<th class="num">mean</th><th class="num">max</th><th class="num">not active</th>').join("")
    + "</tr></thead><tbody>"
    + doc.zones.map((name, z) => `<tr class="${name ? "clickable" : ""}" data-zone="${esc(name ?? "")}">`
      + buildingTd(z)
      + `<td>${name ? `<a href="?zone=${encodeURIComponent(name)}">${esc(short(name))}</a>` : "no zone"}</td>`
      + doc.tiers.map((t) => utilTd(t.mean?.[z] ?? 0, hasData) + utilTd(t.max?.[z] ?? 0, hasData)
        + `<td class="num ${t.down[z] ? "bad" : ""}">${fmt.int(t.down[z])} / ${fmt.int(t.links[z])}</td>`).join("")
      + "</tr>").join("") + "</tbody>";
  table.dataset.zones = String(doc.zones.length);
}

async function start() {
  let doc;
  try {
    doc = await api(root.dataset.zonesUrl);
  } catch (e) {
    $("fabric-run").textContent = `Could not load the fabric: ${e.message}`;
    return;
  }
  render(doc);
  markReady({ zones: doc.zones.length });
  twin.fabricOverview = { reads: 1 };
  $("zone-table").addEventListener("click", (ev) => {
    const tr = ev.target.closest("tr[data-zone]");
    if (tr?.dataset.zone && ev.target.tagName !== "A") location.href = `?zone=${encodeURIComponent(tr.dataset.zone)}`;
  });
  let reading = null, again = false, lastRead = 0;
  const reread = () => {
    if (reading) { again = true; return; }
    const wait = Math.max(0, lastRead + REFRESH_MS - performance.now());
    reading = new Promise((resolve) => setTimeout(resolve, wait)).then(() => api(root.dataset.zonesUrl))
      .then((d) => { lastRead = performance.now(); twin.fabricOverview.reads += 1; render(d); })
      .catch((e) => toast(`Zone overview: ${e.message}`))
      .finally(() => { reading = null; if (again) { again = false; reread(); } });
  };
  live(`/ws/clusters/${encodeURIComponent(cluster)}/`, {
    query: { summary: "1" },
    onFrame: () => reread(),
    onEvent: (msg) => { if (msg.type === "inventory") reread(); },
  });
}

start();
