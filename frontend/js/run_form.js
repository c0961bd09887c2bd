// The forms that start runs (POST /api/runs/). Their fields, defaults, bounds and choices come from the server (each
// kind's parameter declaration, sim/core/params.py, passed into the page as JSON by twin/runs/params.py form_fields):
// nothing is listed twice here. Types: int, float, bool, choice, text, size, sizes, int_list.
// A 400 answer is shown next to the field it names (and as a toast); a created run opens its page.
import { api, ApiError, errorText, esc, fmt, toast } from "./twin.js";

/** Read JSON that a template put in a <script type="application/json" id=...> (Django's json_script). */
export const pageData = (id) => JSON.parse(document.getElementById(id).textContent);

const NULL_WORD = "default";            // how the form writes a null choice (e.g. the fabric's default routing)
const LONG_TEXT = 1000;                 // a text parameter allowed more characters than this is a list: a textarea

/** A text parameter that holds a list (a host or GPU list, one entry per line): pasted, or loaded from a file. */
const isList = (f) => f.type === "text" && f.max != null && f.max > LONG_TEXT;

function inputHtml(f) {
  const v = f.default, placeholder = f.null ? ` placeholder="${esc(f.shown ?? NULL_WORD)}"` : "";
  if (f.type === "choice") {
    const opts = (f.null ? [[null, NULL_WORD]] : []).concat(f.choices.map((c) => [c, c]));
    return `<select name="${f.name}">${opts.map(([val, label]) =>
      `<option value="${esc(val ?? "")}"${val === v ? " selected" : ""}>${esc(label)}</option>`).join("")}</select>`;
  }
  if (f.type === "bool") return `<input type="checkbox" name="${f.name}"${v ? " checked" : ""}>`;
  if (isList(f)) {
    return `<textarea name="${f.name}" rows="4" spellcheck="false" placeholder="one per line (# comments)">${
      esc(v ?? "")}</textarea><input type="file" multiple data-load-into="${f.name}"
      accept=".txt,.hosts,.toml,.json,.log,.out,text/plain,application/json"
      title="load it from a file (several: one after the other)">`;
  }
  if (f.type === "int" || f.type === "float") {
    const bounds = `${f.min != null ? ` min="${f.min}"` : ""}${f.max != null ? ` max="${f.max}"` : ""}`;
    return `<input type="number" name="${f.name}" value="${esc(v ?? "")}"${bounds}${
      f.type === "float" ? ' step="any"' : ""}${placeholder}>`;
  }
  return `<input type="text" name="${f.name}" value="${esc(Array.isArray(v) ? v.join(", ") : v ?? "")}"${placeholder}>`;
}

/** A parameter's label: its help's first clause (up to a ";" or ":" outside parentheses), capitalized; the whole
 *  help is the field's tooltip and the parameter's name (what the API and the command line take) is shown beside. */
export function labelOf(f) {
  const help = f.help || f.name;
  let depth = 0, end = help.length;
  for (let i = 0; i < help.length; i++) {
    const c = help[i];
    if (c === "(") depth += 1;
    else if (c === ")") depth = Math.max(0, depth - 1);
    else if (depth === 0 && (c === ";" || (c === ":" && help[i + 1] === " "))) { end = i; break; }
  }
  const text = help.slice(0, end).trim();
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** One labelled field (a server-side parameter: name, type, default, choices, bounds, help) with its error slot. */
export function fieldHtml(f) {
  const help = f.help ? ` title="${esc(f.help)}"` : "";
  return `<label class="field" data-field="${f.name}"${help}><span class="field-label">${esc(labelOf(f))}
    <code class="param-name">${esc(f.name)}</code></span>${inputHtml(f)}
    <span class="field-error" data-error-for="${f.name}"></span></label>`;
}

/** A value typed in the form as the API takes it; throws Error(reason) when it cannot be. */
export function parseValue(f, text) {
  const t = String(text).trim();
  if (f.null && (t === "" || t === NULL_WORD)) return null;
  if (f.type === "int" || f.type === "float") {
    const n = Number(t);
    if (t === "" || !Number.isFinite(n) || (f.type === "int" && !Number.isInteger(n))) {
      throw new Error(`expected ${f.type === "int" ? "a whole number" : "a number"}, got "${t}"`);
    }
    return n;
  }
  if (f.type === "int_list") return t.split(/[\s,]+/).filter(Boolean).map((x) => parseValue({ type: "int" }, x));
  if (f.type === "bool") return ["1", "true", "yes", "on"].includes(t.toLowerCase());
  return t;
}

/** The parameters a form's fields hold: empty fields are left out, so the server applies its defaults. When the
 *  form names a calibration profile, fields left at their default are left out too: the profile's values replace
 *  the defaults, and a value sent is the user's own, which wins over the profile's (docs/runs.md). */
export function readFields(form, fields, skip = new Set()) {
  const params = {}, errors = {};
  for (const f of fields) {
    const el = form.elements[f.name];
    if (!el || skip.has(f.name)) continue;
    if (f.type === "bool") { params[f.name] = el.checked; continue; }
    if (el.value.trim() === "" && !(f.null && f.type === "choice")) continue;
    try { params[f.name] = parseValue(f, el.value); } catch (e) { errors[f.name] = e.message; }
  }
  if (params.calibration) {
    for (const f of fields) {
      const atDefault = f.name in params && JSON.stringify(params[f.name]) === JSON.stringify(f.default);
      if (atDefault && f.name !== "calibration") delete params[f.name];
    }
  }
  return { params, errors };
}

/** Clear the error slots of a form, then write `errors` (name -> text) into them; unknown names go to `general`. */
export function showErrors(form, errors) {
  for (const el of form.querySelectorAll("[data-error-for]")) el.textContent = "";
  for (const el of form.querySelectorAll(".has-error")) el.classList.remove("has-error");
  for (const [name, text] of Object.entries(errors)) {
    const slot = form.querySelector(`[data-error-for="${CSS.escape(name)}"]`)
      ?? form.querySelector('[data-error-for="general"]');
    if (!slot) continue;
    slot.textContent = slot.textContent ? `${slot.textContent}; ${text}` : text;
    slot.closest(".field, .axis")?.classList.add("has-error");
  }
}

/** A DRF 400 body of POST /api/runs/ as {field: text}: the run's own fields (cluster, kind), its params, and for a
 *  sweep its base params and its axes ("sweep", with the combination that failed). */
export function fieldErrors(body) {
  const out = {};
  const put = (k, v) => { out[k] = out[k] ? `${out[k]}; ${v}` : v; };
  if (!body || typeof body !== "object") return { general: errorText(body) };
  for (const [k, v] of Object.entries(body)) {
    if (k !== "params" || Array.isArray(v) || typeof v !== "object") {
      put(k === "non_field_errors" ? "general" : k, errorText(v));
      continue;
    }
    for (const [pk, pv] of Object.entries(v)) {
      if (pk === "params" && pv && typeof pv === "object" && !Array.isArray(pv)) {
        for (const [bk, bv] of Object.entries(pv)) put(bk, errorText(bv));       // a sweep's base parameters
      } else if (pk === "sweep" && pv && pv.combination) {
        const combo = Object.entries(pv.combination).map(([a, b]) => `${a}=${b}`).join(", ");
        put("sweep", `${combo}: ${errorText(pv.errors)}`);
      } else put(pk, errorText(pv));
    }
  }
  return out;
}

/** POST the run; on success open its page (or call onStarted(run)), on a 400 show the errors by field. */
export async function startRun(form, body, { onStarted = null } = {}) {
  const submit = form.querySelector('button[type="submit"]');
  submit.disabled = true;
  try {
    const run = await api("/api/runs/", { method: "POST", body });
    showErrors(form, {});
    toast(`run #${run.id} started`, { kind: "info", ms: 2000 });
    if (onStarted) { submit.disabled = false; onStarted(run); } else location.href = `/experiments/${run.id}/`;
  } catch (e) {
    submit.disabled = false;
    if (e instanceof ApiError && e.status === 400) showErrors(form, fieldErrors(e.body));
    const forbidden = e instanceof ApiError && e.status === 403;
    toast(forbidden ? "your account may not start runs" : `run not started: ${e.message}`);
  }
}

/** A kind's parameters as the forms show them: the ``main`` ones, the rest folded under "more parameters". */
export function paramFieldsHtml(fields, main) {
  const first = fields.filter((f) => main.includes(f.name)), more = fields.filter((f) => !main.includes(f.name));
  return `<div class="fields">${first.map(fieldHtml).join("")}</div>
    <details class="more"><summary>more parameters</summary><div class="fields">${more.map(fieldHtml).join("")}</div>
    </details>`;
}

/** A long text field's file input (data-load-into) reads the chosen files in the browser into the field (a host
 *  list, a measurements file, nccl-tests logs: several one after the other, as the server reads several pasted
 *  logs), refused above the field's bound. */
export function loadFilesInto(form, fields) {
  for (const input of form.querySelectorAll("input[data-load-into]")) {
    const f = fields.find((x) => x.name === input.dataset.loadInto);
    input.addEventListener("change", async () => {
      const files = [...input.files];
      if (!files.length) return;
      const size = files.reduce((n, file) => n + file.size, 0);
      if (size > f.max) {
        const what = files.length > 1 ? `${files.length} files are` : `${files[0].name} is`;
        showErrors(form, { [f.name]: `${what} ${fmt.bytes(size)}, at most ${fmt.bytes(f.max)}` });
        return;
      }
      const texts = await Promise.all(files.map((file) => file.text()));
      form.elements[f.name].value = texts.map((t) => (t.endsWith("\n") ? t : `${t}\n`)).join("");
      showErrors(form, {});
    });
  }
}

/** The form of one run kind on a cluster page (`f`: the page's form data {kind, fields, main}): its parameters,
 *  Start, errors by field; locked for a visitor who may not start runs; a started run goes to onStarted(run). */
export function mountKindForm(form, f, { cluster, canStart, authenticated, onStarted }) {
  form.innerHTML = `${paramFieldsHtml(f.fields, f.main)}<div class="form-foot">
    <button type="submit" class="primary">Start</button><span class="field-error" data-error-for="general"></span>
    <span class="field-error" data-error-for="cost"></span></div>`;
  loadFilesInto(form, f.fields);
  if (!canStart) { lockForm(form, { authenticated, next: location.pathname }); return; }
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const { params, errors } = readFields(form, f.fields);
    showErrors(form, errors);
    if (Object.keys(errors).length) return undefined;
    return startRun(form, { kind: f.kind, cluster, params }, { onStarted });
  });
}

/** Disable a form for a visitor who may not start runs, saying why and where to log in. */
export function lockForm(form, { authenticated, next }) {
  form.querySelectorAll("input, select, button, textarea").forEach((el) => { el.disabled = true; });
  const note = document.createElement("p");
  note.className = "hint form-lock";
  note.innerHTML = authenticated
    ? "Your account may not start runs (it needs the <code>runs.add_simulationrun</code> permission)."
    : `<a href="/accounts/login/?next=${encodeURIComponent(next)}">Log in to start runs</a>.`;
  form.prepend(note);
}

// -------------------------------------------------------------------------------- the collective / sweep form
function runFormHtml(schema, fields, clusters, current) {
  const kinds = schema.kinds.map((k, i) =>
    `<label><input type="radio" name="kind" value="${k}"${i ? "" : " checked"}> ${k}</label>`).join("");
  const options = clusters.map((c) =>
    `<option value="${esc(c.name)}"${c.name === current ? " selected" : ""}>${esc(c.name)}</option>`).join("");
  return `<div class="form-row">
      <fieldset class="kind-choice"><legend>kind</legend>${kinds}</fieldset>
      <label class="field" data-field="cluster"><span>cluster</span><select name="cluster">${options}</select>
        <span class="field-error" data-error-for="cluster"></span></label>
      <span class="hint cluster-hint"></span></div>
    ${paramFieldsHtml(fields, schema.main)}
    <fieldset class="sweep-axes" hidden>
      <legend>sweep axes: one run per combination (the last axis varies fastest)</legend>
      <div class="axes"></div><button type="button" class="add-axis">+ axis</button>
      <span class="field-error" data-error-for="sweep"></span></fieldset>
    <div class="form-foot"><button type="submit" class="primary">Start run</button>
      <span class="field-error" data-error-for="general"></span><span class="field-error" data-error-for="kind"></span>
    </div>`;
}

/** A sweep's axes as the API takes them ({parameter: [values]}), or the error to show under them. */
function readAxes(axes, fields) {
  const sweep = {};
  for (const row of axes.querySelectorAll(".axis")) {
    const name = row.querySelector("select").value, f = fields.find((x) => x.name === name);
    const values = row.querySelector("input").value.split(",").map((s) => s.trim()).filter((s) => s !== "");
    if (!values.length) return { error: `${name}: give one or more values, comma-separated` };
    if (name in sweep) return { error: `${name} is given twice` };
    try { sweep[name] = values.map((v) => parseValue(f, v)); } catch (e) { return { error: `${name}: ${e.message}` }; }
  }
  return Object.keys(sweep).length ? { sweep } : { error: "add at least one axis" };
}

/**
 * The form on /experiments/: kind (collective or sweep), cluster, the collective's parameters, and for a sweep
 * one or more axes (a parameter and comma-separated values). `schema` is the page's form data
 * ({kinds, main, params: {collective: [...]}, sweep_kind}), `clusters` the clusters with their GPU counts and
 * default routing.
 */
export function mountRunForm(form, schema, clusters, { current, canStart, authenticated }) {
  const fields = schema.params[schema.sweep_kind];
  form.innerHTML = runFormHtml(schema, fields, clusters, current);
  const axes = form.querySelector(".axes");
  const addAxis = (param, values = "") => {
    const row = Object.assign(document.createElement("div"), { className: "axis" });
    row.innerHTML = `<select name="axis-param">${fields.map((f) => `<option>${esc(f.name)}</option>`).join("")}</select>
      <input type="text" name="axis-values" placeholder="values, comma-separated" value="${esc(values)}">
      <button type="button" class="link remove-axis" title="remove this axis">remove</button>`;
    row.querySelector("select").value = param;
    row.querySelector(".remove-axis").addEventListener("click", () => row.remove());
    axes.append(row);
  };
  addAxis("routing", "ecmp, eecmp");                  // the comparison the users make most: routing x QP scaling
  addAxis("qps", "1, 4, 16");
  form.querySelector(".add-axis").addEventListener("click", () => addAxis(fields[0].name));

  loadFilesInto(form, fields);

  const hint = form.querySelector(".cluster-hint");
  const onCluster = () => {
    const c = clusters.find((x) => x.name === form.elements.cluster.value);
    hint.textContent = c ? `${fmt.int(c.gpus)} GPUs, ${c.fabric || "no"} backend; default routing `
      + `${c.default_routing ?? "–"}` : "";
    if (c && form.elements.gpus) form.elements.gpus.max = c.gpus;
  };
  form.elements.cluster.addEventListener("change", onCluster);
  onCluster();
  const kind = () => form.querySelector('input[name="kind"]:checked').value;
  form.querySelectorAll('input[name="kind"]').forEach((el) => el.addEventListener("change", () => {
    form.querySelector(".sweep-axes").hidden = kind() !== "sweep";
  }));

  if (!canStart) {
    lockForm(form, { authenticated, next: location.pathname + location.search });
    return;
  }
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const cluster = form.elements.cluster.value, isSweep = kind() === "sweep";
    const { sweep, error } = isSweep ? readAxes(axes, fields) : {};
    const { params, errors } = readFields(form, fields, new Set(Object.keys(sweep ?? {})));
    if (error) errors.sweep = error;
    showErrors(form, errors);
    if (Object.keys(errors).length) return toast(errorText(errors));
    return startRun(form, isSweep ? { kind: "sweep", cluster, params: { kind: schema.sweep_kind, params, sweep } }
      : { kind: kind(), cluster, params });
  });
}
