// /experiments/figure/ : the published AllGather figure. A form starts a `figure` run on a cluster (its fields come
// from the figure kind's parameter declaration, sim/fabric/params.py FIGURE), the table lists past figure runs with live
// progress, and the panels of the chosen run (?run=<id>, else the newest that succeeded) are drawn with the
// published claim beside them.
import { api, errorText, esc, markReady, toast } from "./twin.js";
import { fieldHtml, lockForm, pageData, readFields, showErrors, startRun } from "./run_form.js";
import { paramsText, progressBar, shortTime, statusBadge } from "./run_results.js";
import { renderFigure } from "./capabilities/collectives.js";
import { liveRunRows } from "./run_live.js";

const page = pageData("figure-page");
const user = pageData("run-form-user");
const FINISHED = new Set(pageData("finished-statuses"));
const clusterName = new Map(pageData("clusters-info").map((c) => [c.id, c.name]));
const form = document.getElementById("new-figure");
const tbody = document.querySelector("#figure-runs tbody");
const out = document.getElementById("figure-results");
let shown = null;

document.getElementById("figure-fields").innerHTML = page.params.map(fieldHtml).join("");
if (!user.can_start) lockForm(form, { authenticated: user.authenticated, next: location.pathname });
form.addEventListener("submit", (ev) => {
  ev.preventDefault();
  const { params, errors } = readFields(form, page.params);
  showErrors(form, errors);
  if (Object.keys(errors).length) return toast(errorText(errors));
  return startRun(form, { kind: "figure", cluster: form.elements.cluster.value, params });
});

function cells(r) {
  return `<td><a href="/experiments/${r.id}/">#${r.id}</a></td><td>${esc(clusterName.get(r.cluster?.id) ?? "")}</td>
    <td>${esc(paramsText(r))}</td><td>${statusBadge(r.status)}</td><td>${progressBar(r.progress)}</td>
    <td class="muted nowrap">${shortTime(r.created_at)}</td>`;
}

async function show(run) {
  shown = run.id;
  tbody.querySelectorAll("tr").forEach((tr) => tr.classList.toggle("selected", Number(tr.dataset.run) === run.id));
  document.getElementById("figure-title").innerHTML = `Panels of run <a href="/experiments/${run.id}/">#${run.id}</a>
    <span class="muted">on ${esc(clusterName.get(run.cluster?.id) ?? "")}</span>`;
  if (run.view !== "figure") {
    out.innerHTML = `<p class="bad">Run #${run.id} is a ${esc(run.kind)} run, not a figure run.</p>`;
    return;
  }
  if (run.status !== "succeeded") {
    const error = run.error ? `: <span class="mono bad">${esc(run.error)}</span>` : "";
    out.innerHTML = `<p class="muted">Run #${run.id} is ${esc(run.status)}${error}; its panels appear when it
      succeeds.</p>`;
    return;
  }
  const res = await api(`/api/runs/${run.id}/results/?arrays=none`);
  renderFigure(out, res.summary, { published: page.published, run });
}

// a run that ends is drawn if it is the one shown, or if none is shown yet
const showRuns = liveRunRows(tbody, FINISHED, cells, {
  rowClass: "clickable", onEnd: (r) => (shown === r.id || shown == null ? show(r) : null) });

tbody.addEventListener("click", (ev) => {
  const tr = ev.target.closest("tr[data-run]");
  if (!tr || ev.target.closest("a")) return;
  history.replaceState(null, "", `?run=${tr.dataset.run}`);
  api(`/api/runs/${tr.dataset.run}/`).then(show).catch((e) => toast(e.message));
});

async function main() {
  try {
    const list = await api("/api/runs/?kind=figure&ordering=-id&limit=20");
    showRuns(list.results, '<tr><td colspan="6" class="muted">no figure run yet: start one</td></tr>');
    const chosen = page.run ? await api(`/api/runs/${page.run}/`) : list.results.find((r) => r.status === "succeeded");
    if (chosen) await show(chosen);
    else out.innerHTML = '<p class="muted">No finished figure run to draw yet.</p>';
  } catch (e) {
    toast(`figure runs: ${e.message}`);
  }
  markReady();
}
main();
