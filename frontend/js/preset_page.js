// /experiments/presets/ : every preset's page of figures. The presets of sim/presets with the clusters built from
// them; a cluster selector; the newest finished `preset_figure` run of the chosen cluster drawn as the page opens
// (?run=<id> draws that run); a form (its fields from sim/fabric/params.py PRESET_FIGURE) starts one, its progress
// live in the table, drawn when it ends.
import { api, errorText, esc, fmt, markReady, toast } from "./twin.js";
import { fieldHtml, lockForm, pageData, readFields, showErrors, startRun } from "./run_form.js";
import { paramsText, progressBar, shortTime, statusBadge } from "./run_results.js";
import { renderPresetFigure } from "./capabilities/collectives.js";
import { liveRunRows } from "./run_live.js";

const KIND = "preset_figure";
const page = pageData("preset-page");
const user = pageData("run-form-user");
const FINISHED = new Set(pageData("finished-statuses"));
const clusterName = new Map(pageData("clusters-info").map((c) => [c.id, c.name]));
const form = document.getElementById("new-preset-figure");
const select = document.getElementById("preset-cluster");
const tbody = document.querySelector("#preset-figure-runs tbody");
const out = document.getElementById("preset-figure-results");
let shown = null;

document.querySelector("#presets tbody").innerHTML = page.presets.map((p) => `<tr data-preset="${esc(p.name)}">
  <td class="mono">${esc(p.name)}</td><td>${esc(p.title)}<div class="muted small">${esc(p.description)}</div></td>
  <td class="num">${fmt.int(p.gpus)}</td><td>${esc(p.fabric)}${p.rails > 1 ? `, ${p.rails} rails` : ""}</td>
  <td>${p.clusters.length ? p.clusters.map((c) => `<a href="?cluster=${encodeURIComponent(c)}">${esc(c)}</a>`)
    .join(", ") : '<span class="muted">not built</span>'}</td></tr>`).join("");
document.getElementById("preset-figure-fields").innerHTML = page.params.map(fieldHtml).join("");
if (!user.can_start) lockForm(form, { authenticated: user.authenticated, next: location.pathname });

function cells(r) {
  return `<td><a href="/experiments/${r.id}/">#${r.id}</a></td><td>${esc(clusterName.get(r.cluster?.id) ?? "")}</td>
    <td>${esc(paramsText(r))}</td><td>${statusBadge(r.status)}</td><td>${progressBar(r.progress)}</td>
    <td class="muted nowrap">${shortTime(r.created_at)}</td>`;
}

async function show(run) {
  shown = run.id;
  tbody.querySelectorAll("tr").forEach((tr) => tr.classList.toggle("selected", Number(tr.dataset.run) === run.id));
  const cluster = clusterName.get(run.cluster?.id) ?? "";
  document.getElementById("preset-figure-title").innerHTML = `Figures of ${esc(cluster)}, run
    <a href="/experiments/${run.id}/">#${run.id}</a>`;
  if (run.kind !== KIND) {
    out.innerHTML = `<p class="bad">Run #${run.id} is a ${esc(run.kind)} run, not a preset figures run.</p>`;
    return;
  }
  if (run.status !== "succeeded") {
    const error = run.error ? `: <span class="mono bad">${esc(run.error)}</span>` : "";
    out.innerHTML = `<p class="muted">Run #${run.id} is ${esc(run.status)}${error}; its figures appear when it
      succeeds.</p>`;
    return;
  }
  const res = await api(`/api/runs/${run.id}/results/?arrays=none`);
  renderPresetFigure(out, res.summary, { run, cluster });
}

// a run that ends is drawn if it is the one shown, or if it is of the chosen cluster
const showRuns = liveRunRows(tbody, FINISHED, cells, {
  rowClass: "clickable",
  onEnd: (r) => (shown === r.id || clusterName.get(r.cluster?.id) === select.value ? show(r) : null) });

async function listRuns() {
  const q = select.value ? `&cluster__name=${encodeURIComponent(select.value)}` : "";
  const list = await api(`/api/runs/?kind=${KIND}${q}&ordering=-id&limit=20`);
  showRuns(list.results, '<tr><td colspan="6" class="muted">no preset figures run on this cluster yet: start one</td></tr>');
  return list.results;
}

async function openCluster(chosenRun) {
  shown = null;
  const runs = await listRuns();
  const latest = page.latest[select.value];
  const run = chosenRun ? await api(`/api/runs/${chosenRun}/`)
    : runs.find((r) => r.status === "succeeded") ?? (latest ? await api(`/api/runs/${latest}/`) : null);
  if (run) await show(run);
  else {
    document.getElementById("preset-figure-title").textContent = `Figures of ${select.value || "no cluster"}`;
    out.innerHTML = `<p class="muted">No finished preset figures run on ${esc(select.value || "any cluster")} yet:
      start one above.</p>`;
  }
}

form.addEventListener("submit", (ev) => {
  ev.preventDefault();
  const { params, errors } = readFields(form, page.params);
  showErrors(form, errors);
  if (Object.keys(errors).length) return toast(errorText(errors));
  return startRun(form, { kind: KIND, cluster: select.value, params }, {
    onStarted: (run) => {
      out.innerHTML = `<p class="muted">Run #${run.id} is running: its figures appear here when it ends.</p>`;
      shown = run.id;
      listRuns().catch((e) => toast(e.message));
    } });
});

select.addEventListener("change", () => {
  history.replaceState(null, "", `?cluster=${encodeURIComponent(select.value)}`);
  openCluster(null).catch((e) => toast(e.message));
});

tbody.addEventListener("click", (ev) => {
  const tr = ev.target.closest("tr[data-run]");
  if (!tr || ev.target.closest("a")) return;
  history.replaceState(null, "", `?cluster=${encodeURIComponent(select.value)}&run=${tr.dataset.run}`);
  api(`/api/runs/${tr.dataset.run}/`).then(show).catch((e) => toast(e.message));
});

async function main() {
  try {
    await openCluster(page.run);
  } catch (e) {
    toast(`preset figures: ${e.message}`);
  }
  markReady();
}
main();
