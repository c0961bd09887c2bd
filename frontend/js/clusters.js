// /clusters/ : the presets (GET /api/clusters/presets/: size, GPUs, fabric, estimated build time from the measured
// rows a second), the clusters built (GET /api/clusters/), a spec upload (POST /api/clusters/check/ to preview,
// POST /api/clusters/ to build) and the cluster runs (GET /api/runs/?kind=cluster_build&kind=cluster_delete).
// Building, rebuilding and deleting are runs (twin/runs/clusters.py): the page follows the runs stream (a cluster
// run created or deleted: the lists read again) and each unfinished cluster run's own stream (run_live.js: its
// progress, counted from the rows written and deleted, frame by frame; its end: the lists read again). Every
// (re)connection of the runs stream reads the lists again over REST, so nothing missed during a gap stays stale.
import { api, ApiError, coalesced, esc, fmt, live, markReady, toast } from "./twin.js";
import { fieldErrors, pageData, showErrors } from "./run_form.js";
import { progressBar, statusBadge } from "./run_results.js";
import { liveRunRows } from "./run_live.js";

const page = pageData("clusters-page");
const KINDS = new Set(page.kinds);
const FINISHED = new Set(page.finished);
const RUNS_SHOWN = 12;
const state = { runs: [] };
const form = document.getElementById("spec-form");

const about = (s) => (s == null ? "–" : `~${fmt.duration(s)}`);

// ---------------------------------------------------------------------------------------------- the tables
function presetRow(p) {
  const refusal = p.built ? `${p.name} is built: rebuild or delete it below` : page.build_refusal;
  return `<tr data-preset="${esc(p.name)}" data-built="${p.built}">
    <td title="${esc(p.description)}"><code>${esc(p.name)}</code><br><span class="muted">${esc(p.title)}</span></td>
    <td class="num">${fmt.int(p.gpus)}</td><td>${esc(p.gpu_model)}</td><td class="num">${fmt.int(p.zones)}</td>
    <td>${esc(p.fabric)}</td><td class="num">${fmt.int(p.rows)}</td>
    <td class="num" data-estimate="${p.estimated_build_s}">${about(p.estimated_build_s)}</td>
    <td><button type="button" data-build="${esc(p.name)}"${refusal ? ` disabled title="${esc(refusal)}"` : ""}>Build</button>
    </td></tr>`;
}

function builtRow(c) {
  const busy = c.active ? `<a href="/experiments/${c.active.id}/">${c.active.kind === "cluster_delete" ? "deleting"
    : "building"} #${c.active.id}</a>` : "";
  const off = c.delete_refusal || (c.active ? `run #${c.active.id} is under way` : "");
  const disabled = off ? ` disabled title="${esc(off)}"` : "";
  return `<tr data-cluster="${esc(c.name)}">
    <td><a href="/clusters/${encodeURIComponent(c.name)}/fabric/"><code>${esc(c.name)}</code></a>
      ${c.preset ? `<br><span class="muted">preset ${esc(c.preset)}</span>` : ""}</td>
    <td>${esc(c.title)}</td><td class="num">${fmt.int(c.gpus)}</td><td>${esc(c.gpu_model)}</td>
    <td class="num">${fmt.int(c.hosts)}</td><td>${esc(c.fabric)}</td><td class="num">${fmt.int(c.rows)}</td>
    <td>${esc(fmt.time(c.built_at))}</td><td class="num">${fmt.int(c.runs)}</td>
    <td class="num">${about(c.estimated_delete_s)}</td>
    <td class="row-actions">${busy}
      <button type="button" data-rebuild="${esc(c.name)}"${disabled}>Rebuild</button>
      <button type="button" data-delete="${esc(c.name)}"${disabled}>Delete</button>
      ${c.delete_refusal ? `<span class="hint refusal">${esc(c.delete_refusal)}</span>` : ""}</td></tr>`;
}

/** A cluster run's cells (run_live.js keeps its progress bar and badge live, and draws the row again at its end). */
function runCells(r) {
  const took = r.started_at && r.finished_at ? fmt.duration((Date.parse(r.finished_at) - Date.parse(r.started_at)) / 1000)
    : "";
  const cancel = !FINISHED.has(r.status) && r.can_change
    ? `<button type="button" class="link" data-cancel="${r.id}">cancel</button>` : "";
  return `<td><a href="/experiments/${r.id}/">#${r.id}</a></td><td>${esc(r.params_text)}</td>
    <td>${statusBadge(r.status)}</td><td class="progress-cell">${progressBar(r.progress)}</td>
    <td class="num">${took}</td><td>${esc(r.created_by ?? "–")}</td><td>${cancel}
      ${r.error ? `<span class="bad" title="${esc(r.error)}">${esc(r.error)}</span>` : ""}</td>`;
}

function throughputText(t) {
  const how = (n, setting) => (n ? `measured over ${fmt.int(n)} run${n === 1 ? "" : "s"} here` : `${setting}, until a run measures it`);
  return `estimates: ${fmt.int(t.write)} rows written a second (${how(t.write_runs, "TWIN_RUNS_BUILD_ROWS_PER_SECOND")}),
    ${fmt.int(t.delete)} deleted (${how(t.delete_runs, "TWIN_RUNS_DELETE_ROWS_PER_SECOND")})`;
}

const load = coalesced(async () => {
  const [presets, built, runs] = await Promise.all([
    api("/api/clusters/presets/"), api("/api/clusters/"),
    api(`/api/runs/?${[...KINDS].map((k) => `kind=${k}`).join("&")}&ordering=-id&limit=${RUNS_SHOWN}`)]);
  state.runs = runs.results;
  document.querySelector("#presets-table tbody").innerHTML = fmt.rows(presets.presets.map(presetRow));
  document.querySelector("#built-table tbody").innerHTML = built.length ? built.map(builtRow).join("")
    : fmt.noneRow(11, "no cluster is built yet: build a preset below");
  showRuns(state.runs, fmt.noneRow(7, "no cluster has been built or deleted yet"));
  document.getElementById("throughput").textContent = throughputText(presets.throughput);
});
// the cluster runs followed on their own streams (frame by frame); a run's end reads the lists again
const showRuns = liveRunRows(document.querySelector("#cluster-runs tbody"), FINISHED, runCells,
                             { onEnd: () => load().catch((e) => toast(`clusters: ${e.message}`)) });

// ---------------------------------------------------------------------------------------------------- live
live("/ws/runs/", {
  onMeta() { load().catch((e) => toast(`clusters: ${e.message}`)); },     // every (re)connection: resync
  onEvent(msg) {
    if ((msg.type === "run_created" && KINDS.has(msg.kind)) || (msg.type === "run_deleted"
        && state.runs.some((r) => r.id === msg.run))) load().catch((e) => toast(`clusters: ${e.message}`));
  },
});

// ------------------------------------------------------------------------------------------------- actions
async function start(what, call) {
  try {
    const run = await call();
    toast(`${what}: run #${run.id} ${run.status}`, { kind: "info", ms: 3000 });
    await load();
    return run;
  } catch (e) {
    toast(`${what}: ${e.message}`);
    return null;
  }
}

document.querySelector("main").addEventListener("click", (ev) => {
  const d = ev.target.dataset ?? {};
  if (d.build) start(`build ${d.build}`, () => api("/api/clusters/", { method: "POST", body: { preset: d.build } }));
  else if (d.rebuild && window.confirm(`Rebuild ${d.rebuild} from its spec? Its runs, scenarios, schedules and jobs are deleted with it.`)) {
    start(`rebuild ${d.rebuild}`, () => api(`/api/clusters/${encodeURIComponent(d.rebuild)}/rebuild/`, { method: "POST", body: {} }));
  } else if (d.delete && window.confirm(`Delete ${d.delete}, with its runs, scenarios, schedules and jobs?`)) {
    start(`delete ${d.delete}`, () => api(`/api/clusters/${encodeURIComponent(d.delete)}/`, { method: "DELETE" }));
  } else if (d.cancel) {
    api(`/api/runs/${d.cancel}/cancel/`, { method: "POST" }).then(load).catch((e) => toast(`cancel: ${e.message}`));
  }
});

// ---------------------------------------------------------------------------------------------- the upload
/** The form as the API's build body: the spec's text, its format (the file's suffix, else the server's guess),
 *  a name and replace when given. */
function specBody() {
  const body = { spec: form.elements.spec.value };
  if (form.elements.format.value) body.format = form.elements.format.value;
  if (form.elements.name.value.trim()) body.name = form.elements.name.value.trim();
  if (form.elements.replace.checked) body.replace = true;
  return body;
}

async function submitSpec(url, done) {
  const out = document.getElementById("spec-check");
  showErrors(form, {});
  try {
    done(await api(url, { method: "POST", body: specBody() }));
  } catch (e) {
    out.hidden = true;
    if (e instanceof ApiError && e.status === 400) showErrors(form, fieldErrors(e.body));
    else showErrors(form, { general: e.message });
  }
}

form.elements.file.addEventListener("change", async () => {
  const file = form.elements.file.files[0];
  if (!file) return;
  if (file.size > page.max_spec_bytes) { showErrors(form, { spec: `${fmt.bytes(file.size)}: a spec is at most ${fmt.bytes(page.max_spec_bytes)}` }); return; }
  form.elements.spec.value = await file.text();
  form.elements.format.value = file.name.toLowerCase().endsWith(".json") ? "json" : "toml";
  document.getElementById("check-spec").click();
});
document.getElementById("check-spec").addEventListener("click", () => submitSpec("/api/clusters/check/", (c) => {
  const out = document.getElementById("spec-check");
  out.hidden = false;
  out.dataset.name = c.name;
  out.innerHTML = `<b>${esc(c.name)}</b>: ${fmt.int(c.gpus)} ${esc(c.gpu_model)} GPUs in ${fmt.int(c.hosts)} hosts,
    ${fmt.int(c.zones)} zones, ${esc(c.fabric)} fabric, ${fmt.int(c.rows)} rows: ${about(c.estimated_build_s)} to build${
    c.exists ? " · <span class=\"warn\">a cluster of this name exists: tick replace, or give a name</span>" : ""}`;
}));
form.addEventListener("submit", (ev) => {
  ev.preventDefault();
  submitSpec("/api/clusters/", (run) => {
    toast(`build: run #${run.id} ${run.status}`, { kind: "info", ms: 3000 });
    load().catch((e) => toast(`clusters: ${e.message}`));
  });
});
if (page.build_refusal) {
  form.querySelectorAll("button, input, select, textarea").forEach((el) => { el.disabled = true; });
  form.insertAdjacentHTML("afterbegin", `<p class="hint form-lock">${esc(page.build_refusal)}${page.authenticated ? ""
    : ` · <a href="/accounts/login/?next=${encodeURIComponent(location.pathname)}">log in</a>`}</p>`);
}

load().catch((e) => toast(`clusters: ${e.message}`)).finally(() => markReady());
