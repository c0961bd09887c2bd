// The Power page (twin/capabilities/power/page.py): a cluster's `power` runs (twin/capabilities/power/kinds.py over
// sim/power), one run drawn by the capability's result view (capabilities/power.js renderPower: the step's waveform
// per building, the days under failures, buildings, racks against budget and cooling, the cap trade-off curve, the
// published references), the links to the GPU page coloured by power and by rack budget headroom, and the form that
// starts a run (fields from the kind's declaration, sim/power/params.py POWER, passed in #power-info). A running run
// is followed on the cluster's live stream (its progress, and its power_stats row once computed: frames.js sectionRow).
import { api, coalesced, esc, fmt, live, markReady, timeFrame, toast } from "./twin.js";
import { mountKindForm, pageData } from "./run_form.js";
import { sectionRow } from "./frames.js";
import { renderPower } from "./capabilities/power.js";

const info = pageData("power-info");
const cluster = info.cluster;
const $ = (id) => document.getElementById(id);
const runs = new Map();            // run id -> the API's record
let selected = null, drawn = null;

const num = (x, d = 2) => (x == null || Number.isNaN(x) ? "–" : Number(x).toFixed(d));

function rowHtml(run) {
  const s = run.summary ?? {};
  const status = run.status === "running" ? `running ${Math.round(run.progress ?? 0)} %` : run.status;
  return `<td><a href="/experiments/${run.id}/">#${run.id}</a></td><td>${esc(run.params_text ?? "")}</td>
    <td><span class="badge ${esc(run.status)}">${esc(status)}</span></td><td class="num">${num(s.cluster_peak_mw)}</td>
    <td class="num">${num(s.cluster_swing_mw)}</td><td class="num">${num(s.energy_per_token_j, 3)}</td>`;
}

function renderRuns() {
  const list = [...runs.values()].sort((a, b) => b.id - a.id);
  $("power-runs").tBodies[0].replaceChildren(...list.map((run) => {
    const tr = document.createElement("tr");
    tr.dataset.run = run.id;
    tr.dataset.status = run.status;
    tr.innerHTML = rowHtml(run);
    if (run.id === selected) tr.classList.add("selected");
    tr.addEventListener("click", (ev) => { if (!ev.target.closest("a")) select(run.id); });
    return tr;
  }));
  $("power-none").hidden = list.length > 0;
}

const load = coalesced(async () => {
  try {
    const page = await api(`/api/runs/?kind=power&cluster__name=${encodeURIComponent(cluster.name)}&limit=50&ordering=-id`);
    for (const run of page.results) runs.set(run.id, run);
    renderRuns();
    if (selected != null) renderDetail();
  } catch (e) { toast(`runs not loaded: ${e.message}`); }
});

function select(id) {
  selected = id;
  history.replaceState(null, "", `${location.pathname}?run=${id}`);
  renderRuns();
  renderDetail();
}

/** The selected run: its figures once it succeeded (drawn once per run), its status or error before. */
function renderDetail() {
  const run = runs.get(selected);
  $("power-detail").hidden = !run;
  if (!run) return;
  const d = $("power-detail");
  d.dataset.run = run.id;
  d.dataset.status = run.status;
  $("power-title").textContent = `#${run.id} · ${run.params_text ?? ""}`;
  $("power-status").textContent = run.status;
  $("power-status").className = `badge ${run.status}`;
  const gpus = `/clusters/${encodeURIComponent(cluster.name)}/gpus/?run=${run.id}&color=`;
  $("power-gpus").href = `${gpus}power`;
  $("power-headroom").href = `${gpus}rack_headroom`;
  const el = $("power-result");
  if (run.status !== "succeeded" || !run.summary) {
    drawn = null;
    el.innerHTML = `<p class="${run.error ? "bad" : "muted"}">${esc(run.error || `${run.status} ${Math.round(run.progress ?? 0)} %`)}</p>`;
    return;
  }
  if (drawn === run.id) return;
  drawn = run.id;
  renderPower(el, run.summary, { run });
}

/** The live indicator: the run a frame is of, its progress, and its power_stats row once computed. */
function onFrame(frame, merged) {
  const row = merged.power_stats ? sectionRow("power_stats", merged.power_stats) : null;
  if (!frame.runId || (!row && !runs.has(frame.runId))) return;
  const el = $("power-live");
  el.dataset.run = String(frame.runId);
  el.dataset.phase = row?.phase ?? "";
  const figures = row && row.phase === "done"
    ? ` · peak <b data-peak="${row.cluster_peak_mw}">${num(row.cluster_peak_mw)} MW</b>, swing ${num(row.cluster_swing_mw)} MW,`
      + ` ${num(row.energy_per_token_j, 3)} J/token, ${fmt.int(row.racks_over_budget)} racks over budget` : "";
  el.innerHTML = `<a href="/experiments/${frame.runId}/">run #${frame.runId}</a> · ${esc(frame.status ?? "running")}`
    + ` ${Math.round(frame.progress ?? 0)} %${figures}`;
  if (frame.final) load();
}

// ------------------------------------------------------------------------------------------------------ start
const f = info.form;
mountKindForm($("power-form"), f, {
  cluster: cluster.name, canStart: info.user.can_start, authenticated: info.user.authenticated,
  onStarted: (run) => { runs.set(run.id, run); select(run.id); load(); },
});
live(`/ws/clusters/${encodeURIComponent(cluster.name)}/`, { query: { index: "0" },
                                                          onFrame: (frame, merged) => timeFrame(() => onFrame(frame, merged)) });
await load();
const asked = Number(new URLSearchParams(location.search).get("run"));
if (asked && !runs.has(asked)) {
  const r = await api(`/api/runs/?id__in=${asked}`).catch(() => null);
  if (r?.results?.[0]) runs.set(asked, r.results[0]);
}
if (asked && runs.has(asked)) select(asked);
else if (runs.size) {
  const done = [...runs.values()].filter((r) => r.status === "succeeded").map((r) => r.id);
  select(Math.max(...(done.length ? done : runs.keys())));
}
setInterval(() => { if ([...runs.values()].some((r) => ["queued", "running"].includes(r.status))) load(); }, 3000);
markReady();
window.twin.power = { runs, select };
