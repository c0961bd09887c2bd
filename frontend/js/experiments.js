// /experiments/ : the runs (GET /api/runs/, newest first, filtered, paginated), listed again when a run is created
// or deleted anywhere (the runs stream /ws/runs/: through the API, a form, a schedule), their progress live
// (run_live.js: one /ws/runs/<id>/ stream per unfinished run on the page, closed when it ends; a sweep's bar from
// its children),
// ticks to compare runs, and the form that starts a collective or a sweep (run_form.js).
import { api, coalesced, esc, fmt, live, markReady, toast } from "./twin.js";
import { mountRunForm, pageData } from "./run_form.js";
import { headlineCell, paramsText, progressBar, shortTime, stalledBadge, statusBadge } from "./run_results.js";
import { liveRunRows } from "./run_live.js";

const PAGE_SIZE = 25;
const clusters = pageData("clusters-info");
const clusterName = new Map(clusters.map((c) => [c.id, c.name]));
const FINISHED = new Set(pageData("finished-statuses"));
const user = pageData("run-form-user");
const filters = document.getElementById("run-filters");
const tbody = document.querySelector("#runs-table tbody");
const compareButton = document.getElementById("compare-runs");
const selected = new Set();
let offset = 0, loading = null;

// Filters live in the URL (?cluster=&kind=&status=&children=1&offset=) so a list can be linked and reloaded.
function readUrl() {
  const q = new URLSearchParams(location.search);
  for (const name of ["cluster", "kind", "status"]) filters.elements[name].value = q.get(name) ?? "";
  filters.elements.children.checked = q.get("children") === "1";
  offset = Math.max(0, parseInt(q.get("offset") ?? "0", 10) || 0);
}

function writeUrl() {
  const q = new URLSearchParams();
  for (const name of ["cluster", "kind", "status"]) {
    if (filters.elements[name].value) q.set(name, filters.elements[name].value);
  }
  if (filters.elements.children.checked) q.set("children", "1");
  if (offset) q.set("offset", String(offset));
  history.replaceState(null, "", `${location.pathname}${q.toString() ? `?${q}` : ""}`);
}

function apiQuery() {
  const q = new URLSearchParams({ ordering: "-id", limit: String(PAGE_SIZE), offset: String(offset) });
  if (filters.elements.cluster.value) q.set("cluster__name", filters.elements.cluster.value);
  if (filters.elements.kind.value) q.set("kind", filters.elements.kind.value);
  if (filters.elements.status.value) q.set("status", filters.elements.status.value);
  if (!filters.elements.children.checked) q.set("parent__isnull", "true");
  return q;
}

// Each cell's text may be cut to its column's width (experiments.css): the whole is in its title.
function cells(r) {
  const cluster = String(clusterName.get(r.cluster?.id) ?? r.cluster?.id ?? ""), params = paramsText(r);
  const sweep = r.parent
    ? ` <span class="muted" title="one combination of sweep #${r.parent.id}">↳${r.parent.id}</span>` : "";
  return `<td><input type="checkbox" class="pick" value="${r.id}"${selected.has(r.id) ? " checked" : ""}
      aria-label="select run ${r.id}"></td>
    <td><a href="/experiments/${r.id}/">#${r.id}</a>${sweep}</td>
    <td title="${esc(r.kind)}">${esc(r.kind)}</td><td title="${esc(cluster)}">${esc(cluster)}</td>
    <td class="params-cell" title="${esc(params)}">${esc(params)}</td>
    <td class="status-cell">${statusBadge(r.status)}${stalledBadge(r)}</td><td>${progressBar(r.progress)}</td>
    <td class="num">${headlineCell(r)}</td><td class="muted">${shortTime(r.created_at)}</td>`;
}

const showRuns = liveRunRows(tbody, FINISHED, cells);

async function load() {
  writeUrl();
  const controller = new AbortController();
  loading?.abort();
  loading = controller;
  try {
    const { count, results } = await api(`/api/runs/?${apiQuery()}`, { signal: controller.signal });
    const hidden = filters.elements.children.checked ? "" : " (sweep children are hidden)";
    showRuns(results, `<tr><td colspan="9" class="muted">no runs${hidden}: start one with the form</td></tr>`);
    document.getElementById("runs-range").textContent =
      count ? `${offset + 1}–${offset + results.length} of ${fmt.int(count)}` : "";
    document.querySelector('[data-page="prev"]').disabled = offset === 0;
    document.querySelector('[data-page="next"]').disabled = offset + PAGE_SIZE >= count;
  } catch (e) {
    if (e.name !== "AbortError") toast(`runs: ${e.message}`);
  }
}

tbody.addEventListener("change", (ev) => {
  if (!ev.target.classList.contains("pick")) return;
  const id = Number(ev.target.value);
  if (ev.target.checked) selected.add(id); else selected.delete(id);
  compareButton.disabled = selected.size < 2;
  compareButton.textContent = selected.size ? `Compare ${selected.size}` : "Compare";
});
compareButton.addEventListener("click", () => {
  location.href = `/experiments/compare/?runs=${[...selected].join(",")}`;
});
filters.addEventListener("change", () => { offset = 0; load(); });
document.querySelector(".pager").addEventListener("click", (ev) => {
  const dir = ev.target.dataset?.page;
  if (!dir) return;
  offset = Math.max(0, offset + (dir === "next" ? PAGE_SIZE : -PAGE_SIZE));
  load();
});

// A run created or deleted anywhere: the list again (coalesced: a sweep creates its children at once); after a
// reconnection too, the events of the outage being lost.
const reload = coalesced(load);
let connected = false;
live("/ws/runs/", {
  onMeta() { if (connected) reload(); connected = true; },
  onEvent(msg) { if (msg.type === "run_created" || msg.type === "run_deleted") reload(); },
});

readUrl();
mountRunForm(document.getElementById("new-run"), pageData("run-form-schema"), clusters,
             { current: filters.elements.cluster.value || user.current, canStart: user.can_start,
               authenticated: user.authenticated });
load().then(() => markReady());
