// The Power page (twin/capabilities/power/page.py): a cluster's `power` runs (twin/capabilities/power/kinds.py over
// sim/power), one run drawn by the capability's result view (capabilities/power.js renderPower: the step's waveform
// per building, the days under failures, buildings, racks against budget and cooling, the cap trade-off curve, the
// published references), the links to the GPU page coloured by power and by rack budget headroom, and the form that
// starts a run (fields from the kind's declaration, sim/power/params.py POWER, passed in #power-info); below, the
// same for `power_schedule` runs (the cluster's draw over a job queue's schedule: renderPowerSchedule). A running
// power run is followed on the cluster's live stream (its progress, and its power_stats row once computed:
// frames.js sectionRow).
import { api, coalesced, esc, fmt, live, markReady, timeFrame, toast } from "./twin.js";
import { mountKindForm, pageData } from "./run_form.js";
import { sectionRow } from "./frames.js";
import { renderPower, renderPowerSchedule } from "./capabilities/power.js";

const info = pageData("power-info");
const cluster = info.cluster;
const $ = (id) => document.getElementById(id);
const num = (x, d = 2) => (x == null || Number.isNaN(x) ? "–" : Number(x).toFixed(d));

/** One kind's runs on the page: its table (`<prefix>-runs`), its detail (`<prefix>-detail`, `-title`, `-status`,
 *  `-result`) drawn by `render` once a run succeeded, its form (`<prefix>-form`). */
function panel(prefix, form, { figures, render, links, param }) {
  const runs = new Map();           // run id -> the API's record
  const p = { runs, selected: null, drawn: null };

  function renderRuns() {
    const list = [...runs.values()].sort((a, b) => b.id - a.id);
    $(`${prefix}-runs`).tBodies[0].replaceChildren(...list.map((run) => {
      const tr = document.createElement("tr");
      tr.dataset.run = run.id;
      tr.dataset.status = run.status;
      const status = run.status === "running" ? `running ${Math.round(run.progress ?? 0)} %` : run.status;
      tr.innerHTML = `<td><a href="/experiments/${run.id}/">#${run.id}</a></td><td>${esc(run.params_text ?? "")}</td>
        <td><span class="badge ${esc(run.status)}">${esc(status)}</span></td>${figures(run.summary ?? {})}`;
      if (run.id === p.selected) tr.classList.add("selected");
      tr.addEventListener("click", (ev) => { if (!ev.target.closest("a")) p.select(run.id); });
      return tr;
    }));
    $(`${prefix}-none`).hidden = list.length > 0;
  }

  function renderDetail() {
    const run = runs.get(p.selected), d = $(`${prefix}-detail`);
    d.hidden = !run;
    if (!run) return;
    d.dataset.run = run.id;
    d.dataset.status = run.status;
    $(`${prefix}-title`).textContent = `#${run.id} · ${run.params_text ?? ""}`;
    $(`${prefix}-status`).textContent = run.status;
    $(`${prefix}-status`).className = `badge ${run.status}`;
    links?.(run);
    const el = $(`${prefix}-result`);
    if (run.status !== "succeeded" || !run.summary) {
      p.drawn = null;
      el.removeAttribute("data-drawn");
      el.innerHTML = `<p class="${run.error ? "bad" : "muted"}">${esc(run.error || `${run.status} ${Math.round(run.progress ?? 0)} %`)}</p>`;
      return;
    }
    if (p.drawn === run.id) return;
    p.drawn = run.id;
    render(el, run.summary, { run });
  }

  p.load = coalesced(async () => {
    try {
      const page = await api(`/api/runs/?kind=${form.kind}&cluster__name=${encodeURIComponent(cluster.name)}`
                             + "&limit=50&ordering=-id");
      for (const run of page.results) runs.set(run.id, run);
      renderRuns();
      if (p.selected != null) renderDetail();
    } catch (e) { toast(`runs not loaded: ${e.message}`); }
  });

  p.select = (id) => {
    p.selected = id;
    const q = new URLSearchParams(location.search);
    q.set(param, id);
    history.replaceState(null, "", `${location.pathname}?${q}`);
    renderRuns();
    renderDetail();
  };

  /** The run the URL names, else the newest that succeeded, else the newest. */
  p.start = async () => {
    await p.load();
    const asked = Number(new URLSearchParams(location.search).get(param));
    if (asked && !runs.has(asked)) {
      const r = await api(`/api/runs/?id__in=${asked}`).catch(() => null);
      if (r?.results?.[0]?.kind === form.kind) runs.set(asked, r.results[0]);
    }
    if (asked && runs.has(asked)) p.select(asked);
    else if (runs.size) {
      const done = [...runs.values()].filter((r) => r.status === "succeeded").map((r) => r.id);
      p.select(Math.max(...(done.length ? done : runs.keys())));
    }
  };

  p.active = () => [...runs.values()].some((r) => ["queued", "running"].includes(r.status));
  if (form) {
    mountKindForm($(`${prefix}-form`), form, {
      cluster: cluster.name, canStart: info.user.can_start, authenticated: info.user.authenticated,
      onStarted: (run) => { runs.set(run.id, run); p.select(run.id); p.load(); },
    });
  }
  return p;
}

const power = panel("power", info.form, {
  param: "run", render: renderPower,
  figures: (s) => `<td class="num">${num(s.cluster_peak_mw)}</td><td class="num">${num(s.cluster_swing_mw)}</td>
    <td class="num">${num(s.energy_per_token_j, 3)}</td>`,
  links(run) {
    const gpus = `/clusters/${encodeURIComponent(cluster.name)}/gpus/?run=${run.id}&color=`;
    $("power-gpus").href = `${gpus}power`;
    $("power-headroom").href = `${gpus}rack_headroom`;
  },
});
const schedule = info.schedule_form ? panel("schedule", info.schedule_form, {
  param: "schedule", render: renderPowerSchedule,
  figures: (s) => `<td class="num">${num(s.peak_mw)}</td><td class="num">${num(s.swing_mw)}</td>
    <td class="num">${fmt.pct(s.utilization, 1)}</td>`,
}) : null;

/** The live indicator: the power run a frame is of, its progress, and its power_stats row once computed. */
function onFrame(frame, merged) {
  const row = merged.power_stats ? sectionRow("power_stats", merged.power_stats) : null;
  if (frame.runId && schedule?.runs.has(frame.runId) && frame.final) schedule.load();
  if (!frame.runId || (!row && !power.runs.has(frame.runId))) return;
  const el = $("power-live");
  el.dataset.run = String(frame.runId);
  el.dataset.phase = row?.phase ?? "";
  const figures = row && row.phase === "done"
    ? ` · peak <b data-peak="${row.cluster_peak_mw}">${fmt.MW(row.cluster_peak_mw)}</b>, swing ${fmt.MW(row.cluster_swing_mw)},`
      + ` ${num(row.energy_per_token_j, 3)} J/token, ${fmt.int(row.racks_over_budget)} racks over budget` : "";
  el.innerHTML = `<a href="/experiments/${frame.runId}/">run #${frame.runId}</a> · ${esc(frame.status ?? "running")}`
    + ` ${Math.round(frame.progress ?? 0)} %${figures}`;
  if (frame.final) power.load();
}

// ------------------------------------------------------------------------------------------------------ start
live(`/ws/clusters/${encodeURIComponent(cluster.name)}/`, { query: { index: "0" },
                                                          onFrame: (frame, merged) => timeFrame(() => onFrame(frame, merged)) });
await Promise.all([power.start(), schedule?.start()]);
setInterval(() => {
  if (power.active()) power.load();
  if (schedule?.active()) schedule.load();
}, 3000);
markReady();
window.twin.power = { runs: power.runs, select: power.select, schedule };
