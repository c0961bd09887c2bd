// The Calibration page (twin/capabilities/calibration/page.py): the cluster's calibrate runs with their live progress
// (run_live.js, the runs' streams), the form that starts one (its fields from the engine's declaration; the
// measurements file read in the browser into the `measurements` field, or pasted), and the selected run's result
// (js/capabilities/calibration.js, the same view the run's page draws) once it has finished.
import { api, coalesced, esc, markReady, toast } from "./twin.js";
import { mountKindForm, pageData } from "./run_form.js";
import { liveRunRows } from "./run_live.js";
import { figureText, paramsText, progressBar, statusBadge } from "./run_results.js";
import { renderCalibration } from "./capabilities/calibration.js";

const info = pageData("calibration-info"), cluster = info.cluster, FINISHED = new Set(info.finished);
const $ = (id) => document.getElementById(id);
let selected = Number(new URLSearchParams(location.search).get("run")) || null;

const figure = (run, when) => {
  const h = (run.headline ?? []).find((x) => x.key === `error_${when}`);
  return h ? figureText(h.value, h.format) : "–";
};
const cells = (r) => `<td><a href="/experiments/${r.id}/">#${r.id}</a></td><td>${esc(paramsText(r))}</td>
  <td>${statusBadge(r.status)}</td><td>${progressBar(r.progress ?? (r.status === "succeeded" ? 100 : 0))}</td>
  <td class="num">${figure(r, "before")}</td><td class="num">${figure(r, "after")}</td>
  <td class="num">${figure(r, "held_out")}</td>`;

const show = liveRunRows($("cal-runs").querySelector("tbody"), FINISHED, cells, {
  onEnd: (run) => { if (run.id === selected) return detail(run); return undefined; },
});

function mark() {
  for (const tr of $("cal-runs").querySelectorAll("tr[data-run]")) {
    tr.classList.toggle("selected", Number(tr.dataset.run) === selected);
  }
}

/** (Re)read the cluster's calibrate runs. */
const load = coalesced(async () => {
  try {
    const page = await api(`/api/runs/?kind=calibrate&cluster__name=${encodeURIComponent(cluster.name)}`
                           + "&limit=50&ordering=-id");
    show(page.results, "");
    $("cal-none").hidden = page.results.length > 0;
    mark();
  } catch (e) { toast(`runs not loaded: ${e.message}`); }
});

/** The selected run: its status and, once it has succeeded, its result. */
async function detail(run) {
  const box = $("cal-detail");
  box.hidden = false;
  box.dataset.run = run.id;
  box.dataset.status = run.status;
  $("cal-title").innerHTML = `Calibration <a href="/experiments/${run.id}/">run #${run.id}</a>`;
  $("cal-status").className = `badge ${run.status}`;
  $("cal-status").textContent = run.status;
  const result = $("cal-result");
  if (!FINISHED.has(run.status)) {
    $("cal-message").textContent = "running: its progress is in the table above; the result appears when it ends";
    result.replaceChildren();
    return;
  }
  $("cal-message").textContent = run.error ? run.error : "";
  if (run.status !== "succeeded") { result.replaceChildren(); return; }
  const { summary } = await api(`/api/runs/${run.id}/results/?arrays=none`);
  if (run.id !== selected) return;
  renderCalibration(result, summary, { cluster: cluster.name, run });
  box.dataset.drawn = String(run.id);
}

async function select(id) {
  selected = id;
  history.replaceState(null, "", `${location.pathname}?run=${id}`);
  mark();
  try { await detail(await api(`/api/runs/${id}/`)); } catch (e) { toast(`run #${id}: ${e.message}`); }
}

$("cal-runs").addEventListener("click", (ev) => {
  const tr = ev.target.closest("tr[data-run]");
  if (tr && !ev.target.closest("a")) select(Number(tr.dataset.run));
});

mountKindForm($("calibrate-form"), info.form, {
  cluster: cluster.name, canStart: info.user.can_start, authenticated: info.user.authenticated,
  onStarted: (run) => { select(run.id); load(); },
});

await load();
if (selected) await select(selected);
markReady();
