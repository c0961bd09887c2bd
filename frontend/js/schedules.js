// /schedules/ : saved scenarios (GET /api/runs/scenarios/) and the schedules that start them
// (GET /api/runs/schedules/), each schedule's recent runs (GET /api/runs/?schedule__isnull=false: a run a schedule
// started records it), a scenario's history drawn from GET /api/runs/scenarios/<id>/trend/, and the forms that make
// and edit them. Every field of the forms comes from the server's declarations (twin/web/views/schedules.py: the
// kinds' parameters, the scenario's and the schedule's serializer fields, the crontab and interval serializers);
// edit, pause and delete are offered where a row's can_change says so, creation where the user may add.
// Live: the runs stream says when a schedule started a run (run_created with its schedule): the lists are read again
// (last start, next start, the new run); each run of a schedule still queued or running is followed on its own
// stream (run_live.js: its badge's status and progress), and its end reads the lists again (its last result). Every (re)connection
// of the runs stream reads them again, so nothing a dropped socket missed stays stale.
import { api, ApiError, coalesced, errorText, esc, fmt, live, markReady, toast } from "./twin.js";
import { fieldErrors, fieldHtml, pageData, paramFieldsHtml, readFields, showErrors } from "./run_form.js";
import { lineChart } from "./chart.js";
import { runStreams } from "./run_live.js";
import { figureText, median, paramValue, shortTime } from "./run_results.js";

const clusters = pageData("clusters-info");
const forms = pageData("schedule-forms");
const user = pageData("schedule-user");
const kindInfo = pageData("run-kinds");
const TREND_LIMIT = pageData("trend-limit");
const RECENT = 5;                              // runs linked per schedule row
const LIST = "limit=500";

const kindOf = new Map(forms.kinds.map((k) => [k.name, k]));
const state = { scenarios: [], schedules: [], recent: new Map(), chosen: null, chosenSchedule: null, editing: { scenario: null, schedule: null } };
const scenarioForm = document.getElementById("scenario-form");
const scheduleForm = document.getElementById("schedule-form");
let trendChart = null;

// ------------------------------------------------------------------------------------------------- the lists
/** A scenario's parameters that differ from its kind's defaults, in one line. */
function scenarioParams(s) {
  const fields = kindOf.get(s.kind)?.params ?? [];
  const byName = new Map(fields.map((f) => [f.name, f]));
  const shown = Object.entries(s.params ?? {}).filter(([k, v]) =>
    !byName.has(k) || JSON.stringify(v) !== JSON.stringify(byName.get(k).default));
  return shown.length ? shown.map(([k, v]) => `${k}=${paramValue(v)}`).join(" ") : "defaults";
}

/** A schedule's timing in words: "every 6 hours", or the crontab as cron writes it (minute hour dom month dow). */
function whenText(t) {
  if (t.interval) return `every ${t.interval.every} ${t.interval.period}`;
  const c = t.crontab ?? {};
  return `cron ${[c.minute, c.hour, c.day_of_month, c.month_of_year, c.day_of_week].join(" ")}`;
}

const owner = (row) => esc(row.created_by ?? "–");

function scenarioRow(s) {
  const actions = s.can_change ? `<button type="button" class="link" data-edit-scenario="${s.id}">edit</button>
    <button type="button" class="link" data-delete-scenario="${s.id}">delete</button>` : "";
  return `<tr id="scenario-${s.id}" data-scenario="${s.id}"${state.chosen === s.id ? ' class="chosen"' : ""}>
    <td><a href="#scenario-${s.id}" data-trend="${s.id}" title="${esc(s.description || "")}">${esc(s.name)}</a></td>
    <td>${esc(kindInfo[s.kind]?.label ?? s.kind)}</td><td>${esc(s.cluster?.name ?? s.cluster?.id ?? "")}</td>
    <td class="params-cell" title="${esc(JSON.stringify(s.params))}">${esc(scenarioParams(s))}</td>
    <td>${owner(s)}</td>
    <td><a href="#scenario-${s.id}" data-trend="${s.id}">history</a></td>
    <td class="row-actions">${actions}</td></tr>`;
}

const FINISHED = new Set(pageData("finished-statuses"));
const runTitle = (status, progress) => (status === "running" ? `running, ${Math.round(progress)} %` : status);

/** A schedule's last result: its newest finished run, its status and first headline figure. */
function lastResult(t) {
  const r = (state.recent.get(t.id) ?? []).find((x) => FINISHED.has(x.status));
  if (!r) return '<span class="muted">none yet</span>';
  const h = r.headline?.[0];
  return `<a href="/experiments/${r.id}/" class="badge ${esc(r.status)}">#${r.id} ${esc(r.status)}</a>${
    h && h.value != null ? ` <span class="last-figure">${esc(h.label)} <b>${esc(figureText(h.value, h.format))}</b></span>` : ""}`;
}

function scheduleRow(t) {
  const scenario = state.scenarios.find((s) => s.id === t.scenario);
  const runs = (state.recent.get(t.id) ?? []).map((r) =>
    `<a href="/experiments/${r.id}/" class="badge ${esc(r.status)}" data-run="${r.id}"
        title="${esc(runTitle(r.status, r.progress))}">#${r.id}</a>`).join("");
  const actions = t.can_change ? `<button type="button" class="link" data-toggle-schedule="${t.id}">${
    t.enabled ? "pause" : "resume"}</button>
    <button type="button" class="link" data-edit-schedule="${t.id}">edit</button>
    <button type="button" class="link" data-delete-schedule="${t.id}">delete</button>` : "";
  return `<tr id="schedule-${t.id}" data-schedule="${t.id}" data-enabled="${t.enabled}"${
    state.chosenSchedule === t.id ? ' class="chosen"' : ""}>
    <td>${esc(t.name)}</td>
    <td>${scenario ? `<a href="#scenario-${scenario.id}" data-trend="${scenario.id}">${esc(scenario.name)}</a>`
    : `#${t.scenario}`}</td>
    <td class="nowrap">${esc(whenText(t))}<br><span class="muted next-run">next ${
      t.next_run_at ? shortTime(t.next_run_at) : "–"}</span></td>
    <td><span class="badge ${t.enabled ? "active" : "queued"}">${t.enabled ? "active" : "paused"}</span></td>
    <td class="last-run">${shortTime(t.last_run_at)}</td><td class="num starts">${fmt.int(t.total_run_count)}</td>
    <td class="recent-runs">${runs || '<span class="muted">none yet</span>'}</td>
    <td class="last-result">${lastResult(t)}</td><td>${owner(t)}</td>
    <td class="row-actions">${actions}</td></tr>`;
}

function drawLists() {
  const st = document.querySelector("#scenarios-table tbody"), tt = document.querySelector("#schedules-table tbody");
  st.innerHTML = state.scenarios.map(scenarioRow).join("")
    || '<tr><td colspan="7" class="muted">no scenario yet: save one with the form</td></tr>';
  tt.innerHTML = state.schedules.map(scheduleRow).join("")
    || '<tr><td colspan="10" class="muted">no schedule yet: make one with the form</td></tr>';
  fillScenarioChoice();
}

const load = coalesced(async () => {
  const [scenarios, schedules, runs] = await Promise.all([
    api(`/api/runs/scenarios/?${LIST}&ordering=name`), api(`/api/runs/schedules/?${LIST}`),
    api("/api/runs/?schedule__isnull=false&ordering=-id&limit=500")]);
  state.scenarios = scenarios.results;
  state.schedules = schedules.results;
  state.recent = new Map();
  for (const r of runs.results) {
    const list = state.recent.get(r.schedule.id) ?? [];
    if (list.length < RECENT) list.push(r);
    state.recent.set(r.schedule.id, list);
  }
  drawLists();
  streams.sync([...state.recent.values()].flat());
});

// ----------------------------------------------------------------------------------------------------- live
/** The schedules' unfinished runs, each followed on its stream (run_live.js): its badges' status and progress frame
 *  by frame; its end reads the lists again (the schedule's last result) and the chosen scenario's history. */
const streams = runStreams(FINISHED, {
  onFrame(id, frame) {
    if (frame.status == null) return;            // an older snapshot filling in sections only
    for (const badge of document.querySelectorAll(`#schedules-table a[data-run="${id}"]`)) {
      badge.className = `badge ${frame.status}`;
      badge.title = runTitle(frame.status, frame.progress);
    }
  },
  onEnd() {
    load().then(() => (state.chosen != null ? showTrend(state.chosen, document.getElementById("trend-metric").value)
      : null)).catch((e) => toast(`schedules: ${e.message}`));
  },
});

live("/ws/runs/", {
  onMeta() { load().catch((e) => toast(`schedules: ${e.message}`)); },    // every (re)connection: resync
  onEvent(msg) {
    if ((msg.type === "run_created" && msg.schedule != null)
        || (msg.type === "run_deleted" && [...state.recent.values()].some((l) => l.some((r) => r.id === msg.run)))) {
      load().catch((e) => toast(`schedules: ${e.message}`));
    }
  },
});

// --------------------------------------------------------------------------------------- a scenario's history
const TICK_TIME = new Intl.DateTimeFormat([], { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });

/** Draw the history of scenario `id` (its trend: one point per finished run) for one of its kind's headline
 *  figures (`metric`; default the first). */
async function showTrend(id, metric = null) {
  const s = state.scenarios.find((x) => x.id === id);
  if (!s) return;
  state.chosen = id;
  document.querySelectorAll("#scenarios-table tr.chosen").forEach((tr) => tr.classList.remove("chosen"));
  document.getElementById(`scenario-${id}`)?.classList.add("chosen");
  const panel = document.getElementById("trend-panel"), select = document.getElementById("trend-metric");
  const headline = kindInfo[s.kind]?.headline ?? [];
  select.innerHTML = headline.map((h) => `<option value="${esc(h.key)}">${esc(h.label)}</option>`).join("");
  if (metric) select.value = metric;
  const h = headline.find((x) => x.key === select.value) ?? { key: select.value || "norm_busbw", label: "value",
                                                              format: "num" };
  document.getElementById("trend-name").textContent = s.name;
  panel.hidden = false;
  const trend = await api(`/api/runs/scenarios/${id}/trend/?metric=${encodeURIComponent(h.key)}&limit=${TREND_LIMIT}`);
  const points = trend.points.filter((p) => p.value != null)
    .map((p) => ({ x: Date.parse(p.time), y: median(p.value), run: p.run }));
  const box = document.getElementById("trend-chart");
  box.dataset.points = String(points.length);
  box.dataset.scenario = String(id);
  box.dataset.run = points.map((p) => p.run).join(",");     // named in the chart's download (exports.js caption)
  document.getElementById("trend-none").hidden = points.length > 0;
  document.getElementById("trend-count").textContent = `${fmt.int(points.length)} finished run${
    points.length === 1 ? "" : "s"}${points.length ? `, runs #${points[0].run}–#${points[points.length - 1].run}` : ""}`;
  trendChart?.destroy();
  trendChart = null;
  if (!points.length) { box.replaceChildren(); return; }
  const step = Math.max(1, Math.ceil(points.length / 6));
  const format = (v) => figureText(v, h.format);
  trendChart = lineChart(box, {
    label: `${h.label} of ${s.name} over its runs`, height: 260, legend: false,
    x: { scale: "linear", label: "finished", name: "finished", ticks: points.filter((_, i) => i % step === 0).map((p) => p.x),
         format: (v) => TICK_TIME.format(new Date(v)) },
    y: { scale: "linear", label: h.label, format, tipFormat: format },
    series: [{ name: s.name, points }] });
}

// ------------------------------------------------------------------------------------------------- the forms
const optionsHtml = (values, current) => values.map(([v, label]) =>
  `<option value="${esc(v)}"${String(v) === String(current) ? " selected" : ""}>${esc(label)}</option>`).join("");

/** A form for a visitor who may not add: disabled, saying why (and where to log in). */
function lock(form, what, permission) {
  form.querySelectorAll("input, select, button, textarea").forEach((el) => { el.disabled = true; });
  const note = Object.assign(document.createElement("p"), { className: "hint form-lock" });
  note.innerHTML = user.authenticated
    ? `Your account may not add ${what} (it needs the <code>${esc(permission)}</code> permission).`
    : `<a href="/accounts/login/?next=${encodeURIComponent(location.pathname)}">Log in to add ${what}</a>.`;
  form.prepend(note);
}

/** Set a drawn field to a stored value (lists comma-separated, null as empty: the server's default). */
function setField(form, f, value) {
  const el = form.elements[f.name];
  if (!el) return;
  if (f.type === "bool") el.checked = Boolean(value);
  else el.value = value == null ? "" : Array.isArray(value) ? value.join(", ") : String(value);
}

/** A 400 body as {field: text}, the nested objects (params, crontab, interval) by their own fields. */
function formErrors(body) {
  const out = fieldErrors(body);
  for (const key of ["crontab", "interval"]) {
    const v = body?.[key];
    if (v && typeof v === "object" && !Array.isArray(v)) {
      delete out[key];
      for (const [k, e] of Object.entries(v)) out[k === "non_field_errors" ? key : k] = errorText(e);
    }
  }
  return out;
}

async function save(form, url, method, body, what) {
  const submit = form.querySelector('button[type="submit"]');
  submit.disabled = true;
  try {
    const saved = await api(url, { method, body });
    showErrors(form, {});
    toast(`${what} ${saved.name} saved`, { kind: "info", ms: 2000 });
    return saved;
  } catch (e) {
    if (e instanceof ApiError && e.status === 400) showErrors(form, formErrors(e.body));
    toast(`${what} not saved: ${e.message}`);
    return null;
  } finally {
    submit.disabled = false;
  }
}

// a scenario: name, description, kind, cluster, the kind's parameters
function drawScenarioForm(scenario = null) {
  state.editing.scenario = scenario;
  document.getElementById("scenario-form-title").textContent = scenario ? `Edit scenario ${scenario.name}`
    : "New scenario";
  const kind = scenario?.kind ?? forms.kinds[0]?.name;
  const cluster = scenario?.cluster?.name ?? user.current ?? clusters[0]?.name;      // the header's cluster
  scenarioForm.innerHTML = `<div class="fields">${forms.scenario.map(fieldHtml).join("")}</div>
    <div class="form-row">
      <label class="field" data-field="kind"><span>kind</span><select name="kind">${
        optionsHtml(forms.kinds.map((k) => [k.name, k.label]), kind)}</select>
        <span class="field-error" data-error-for="kind"></span></label>
      <label class="field" data-field="cluster"><span>cluster</span><select name="cluster">${
        optionsHtml(clusters.map((c) => [c.name, `${c.name} (${fmt.int(c.gpus)} GPUs)`]), cluster)}</select>
        <span class="field-error" data-error-for="cluster"></span></label></div>
    <div class="kind-params"></div>
    <div class="form-foot"><button type="submit" class="primary">${scenario ? "Save scenario" : "Create scenario"}</button>
      ${scenario ? '<button type="button" class="link cancel-edit">cancel</button>' : ""}
      <span class="field-error" data-error-for="general"></span><span class="field-error" data-error-for="params"></span>
    </div>`;
  const drawParams = (values) => {
    const k = kindOf.get(scenarioForm.elements.kind.value);
    scenarioForm.querySelector(".kind-params").innerHTML = paramFieldsHtml(k.params, k.main);
    for (const f of k.params) if (values && f.name in values) setField(scenarioForm, f, values[f.name]);
  };
  scenarioForm.elements.kind.addEventListener("change", () => drawParams(null));
  drawParams(scenario?.params);
  for (const f of forms.scenario) setField(scenarioForm, f, scenario?.[f.name] ?? f.default);
  scenarioForm.querySelector(".cancel-edit")?.addEventListener("click", () => drawScenarioForm());
  if (!scenario && !user.can_add_scenario) lock(scenarioForm, "scenarios", "runs.add_scenario");
}

scenarioForm.addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const k = kindOf.get(scenarioForm.elements.kind.value);
  const { params, errors } = readFields(scenarioForm, k.params);
  showErrors(scenarioForm, errors);
  if (Object.keys(errors).length) return;
  const body = { kind: k.name, cluster: scenarioForm.elements.cluster.value, params };
  for (const f of forms.scenario) body[f.name] = scenarioForm.elements[f.name].value.trim();
  const editing = state.editing.scenario;
  const saved = await save(scenarioForm, editing ? `/api/runs/scenarios/${editing.id}/` : "/api/runs/scenarios/",
                           editing ? "PATCH" : "POST", body, "scenario");
  if (!saved) return;
  drawScenarioForm();
  await load();
  showTrend(saved.id);
});

// a schedule: name, enabled, scenario, a crontab or an interval
function fillScenarioChoice() {
  const select = scheduleForm.elements.scenario;
  if (!select) return;
  const current = select.value || state.editing.schedule?.scenario;
  select.innerHTML = optionsHtml(state.scenarios.map((s) => [s.id, s.name]), current);
}

function drawScheduleForm(schedule = null) {
  state.editing.schedule = schedule;
  document.getElementById("schedule-form-title").textContent = schedule ? `Edit schedule ${schedule.name}`
    : "New schedule";
  const when = schedule?.interval ? "interval" : "crontab";
  scheduleForm.innerHTML = `<div class="fields">${forms.schedule.map(fieldHtml).join("")}
      <label class="field" data-field="scenario"><span>scenario</span><select name="scenario"></select>
        <span class="field-error" data-error-for="scenario"></span></label></div>
    <fieldset class="when-choice"><legend>when</legend>
      <label><input type="radio" name="when" value="crontab"${when === "crontab" ? " checked" : ""}> crontab</label>
      <label><input type="radio" name="when" value="interval"${when === "interval" ? " checked" : ""}> interval</label>
    </fieldset>
    <div class="fields when-fields" data-when="crontab">${forms.crontab.map(fieldHtml).join("")}</div>
    <div class="fields when-fields" data-when="interval">${forms.interval.map(fieldHtml).join("")}</div>
    <span class="field-error" data-error-for="crontab"></span><span class="field-error" data-error-for="interval"></span>
    <div class="form-foot"><button type="submit" class="primary">${schedule ? "Save schedule" : "Create schedule"}</button>
      ${schedule ? '<button type="button" class="link cancel-edit">cancel</button>' : ""}
      <span class="field-error" data-error-for="general"></span></div>`;
  fillScenarioChoice();
  for (const f of forms.schedule) setField(scheduleForm, f, schedule ? schedule[f.name] : f.default);
  for (const f of forms.crontab) setField(scheduleForm, f, schedule?.crontab?.[f.name] ?? f.default);
  for (const f of forms.interval) setField(scheduleForm, f, schedule?.interval?.[f.name] ?? f.default);
  const showWhen = () => {
    const chosen = scheduleForm.querySelector('input[name="when"]:checked').value;
    scheduleForm.querySelectorAll(".when-fields").forEach((el) => { el.hidden = el.dataset.when !== chosen; });
  };
  scheduleForm.querySelectorAll('input[name="when"]').forEach((el) => el.addEventListener("change", showWhen));
  showWhen();
  scheduleForm.querySelector(".cancel-edit")?.addEventListener("click", () => drawScheduleForm());
  if (!schedule && !user.can_add_schedule) lock(scheduleForm, "schedules", "django_celery_beat.add_periodictask");
}

scheduleForm.addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const when = scheduleForm.querySelector('input[name="when"]:checked').value;
  const own = readFields(scheduleForm, forms.schedule);
  const timing = readFields(scheduleForm, forms[when]);
  const errors = { ...own.errors, ...timing.errors };
  showErrors(scheduleForm, errors);
  if (Object.keys(errors).length) return;
  for (const f of forms[when]) if (!(f.name in timing.params) && f.default != null) timing.params[f.name] = f.default;
  const body = { ...own.params, scenario: Number(scheduleForm.elements.scenario.value),
                 crontab: when === "crontab" ? timing.params : null, interval: when === "interval" ? timing.params : null };
  const editing = state.editing.schedule;
  const saved = await save(scheduleForm, editing ? `/api/runs/schedules/${editing.id}/` : "/api/runs/schedules/",
                           editing ? "PATCH" : "POST", body, "schedule");
  if (!saved) return;
  drawScheduleForm();
  await load();
});

// ------------------------------------------------------------------------------------------ the rows' actions
async function act(fn, what) {
  try {
    await fn();
    await load();
  } catch (e) {
    toast(`${what}: ${e.message}`);
  }
}

document.querySelector(".schedules-lists").addEventListener("click", (ev) => {
  const d = ev.target.dataset ?? {};
  const byId = (list, id) => list.find((x) => x.id === Number(id));
  if (d.trend) {                               // the URL says which scenario is shown (a link can be shared)
    ev.preventDefault();
    history.replaceState(null, "", `#scenario-${d.trend}`);
    followHash().catch((e) => toast(`history: ${e.message}`));
    return;
  }
  if (d.editScenario) { drawScenarioForm(byId(state.scenarios, d.editScenario)); scenarioForm.scrollIntoView(); return; }
  if (d.editSchedule) { drawScheduleForm(byId(state.schedules, d.editSchedule)); scheduleForm.scrollIntoView(); return; }
  if (d.toggleSchedule) {
    const t = byId(state.schedules, d.toggleSchedule);
    act(() => api(`/api/runs/schedules/${t.id}/`, { method: "PATCH", body: { enabled: !t.enabled } }),
        `${t.enabled ? "pause" : "resume"} ${t.name}`);
    return;
  }
  if (d.deleteSchedule) {
    const t = byId(state.schedules, d.deleteSchedule);
    if (window.confirm(`Delete schedule ${t.name}? Its runs stay.`)) {
      act(() => api(`/api/runs/schedules/${t.id}/`, { method: "DELETE" }), `delete ${t.name}`);
    }
    return;
  }
  if (d.deleteScenario) {
    const s = byId(state.scenarios, d.deleteScenario);
    if (window.confirm(`Delete scenario ${s.name} and the schedules that start it? Its runs stay.`)) {
      act(() => api(`/api/runs/scenarios/${s.id}/`, { method: "DELETE" }), `delete ${s.name}`);
    }
  }
});
document.getElementById("trend-metric").addEventListener("change", (ev) => {
  if (state.chosen != null) showTrend(state.chosen, ev.target.value).catch((e) => toast(`history: ${e.message}`));
});

/** The row the URL's #scenario-<id> or #schedule-<id> names (a run page links here): shown, a scenario's history
 *  drawn. */
async function followHash() {
  const m = location.hash.match(/^#(scenario|schedule)-(\d+)$/);
  if (!m) return;
  const row = document.getElementById(`${m[1]}-${m[2]}`);
  row?.scrollIntoView({ block: "center" });
  if (m[1] === "scenario") await showTrend(Number(m[2]));
  else {
    state.chosenSchedule = Number(m[2]);                  // kept when the live lists draw the rows again
    document.querySelectorAll("#schedules-table tr.chosen").forEach((tr) => tr.classList.remove("chosen"));
    row?.classList.add("chosen");
  }
}
window.addEventListener("hashchange", () => followHash().catch((e) => toast(e.message)));

drawScenarioForm();
drawScheduleForm();
load().then(followHash).catch((e) => toast(`schedules: ${e.message}`)).finally(() => markReady());
