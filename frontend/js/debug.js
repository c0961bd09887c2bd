// The Debug page (twin/capabilities/debug/page.py): pick a finished rehearsal (a `debug` run) and see the culprit with its
// explanation, its GPUs on the GPU page and its links on the fabric page, where each rank stopped (a rank x sequence
// heatmap on a canvas, one row per host when ranks are many: twin/capabilities/debug/data.py), the straggler ranking and the
// dumps to download; the start-up model's curve over scale (a `startup` run); the forms that start both (fields from
// sim/debug/params.py DEBUG and STARTUP, passed in #debug-info). A running rehearsal shows its stage and the engine's
// fractions done from its live stream (the debug_progress section: frames.js sectionRow).
import { api, coalesced, esc, fmt, live, markReady, toast } from "./twin.js";
import { mountKindForm, pageData } from "./run_form.js";
import { sectionRow } from "./frames.js";
import { lineChart, PALETTE } from "./chart.js";
import { exportable } from "./exports.js";

const info = pageData("debug-info");
const cluster = info.cluster;
const $ = (id) => document.getElementById(id);
const CELL_COLORS = ["#3a4252", "#4aa3ff", "#f5a524", "#3fb950"];   // by state: absent, scheduled, started, completed
const CULPRIT_COLOR = "#e5484d", ROW_PX_MAX = 12, COL_PX = 18, SHOWN = 20, MARK_PX = 5;
let heat = null, chart = null;

const clusterPath = (what) => `/clusters/${encodeURIComponent(cluster.name)}/${what}`;
const secs = fmt.s;                       // 102826.4 s -> "1.19 d": the unit its size calls for

// ------------------------------------------------------------------------------------------------ run pickers
async function runsOf(kind) {
  const page = await api(`/api/runs/?cluster=${cluster.id}&kind=${kind}&limit=50&ordering=-id`);
  return page.results;
}

function fillPicker(select, runs, wanted) {
  select.innerHTML = runs.map((r) => `<option value="${r.id}"${r.id === wanted ? " selected" : ""}>#${r.id} `
    + `${esc(r.status)} · ${esc(r.params_text ?? "")}</option>`).join("");
  select.hidden = !runs.length;           // no run to pick: the panel says so, no empty box
}

async function loadPickers(wantDebug = null, wantStartup = null) {
  const [debugRuns, startupRuns] = await Promise.all(["debug", "startup"].map((k) => runsOf(k).catch(() => [])));
  const asked = Number(new URLSearchParams(location.search).get("run")) || null;
  const pick = (runs, want) => want ?? runs.find((r) => r.status === "succeeded")?.id ?? runs[0]?.id ?? null;
  const d = pick(debugRuns, wantDebug ?? (debugRuns.some((r) => r.id === asked) ? asked : null));
  const s = pick(startupRuns, wantStartup ?? (startupRuns.some((r) => r.id === asked) ? asked : null));
  fillPicker($("debug-run"), debugRuns, d);
  fillPicker($("startup-run"), startupRuns, s);
  $("debug-none").hidden = debugRuns.length > 0;
  $("startup-none").hidden = startupRuns.length > 0;
  await Promise.all([d && showDebug(d), s && showStartup(s)]);
}

// ------------------------------------------------------------------------------------------------ a rehearsal
let watching = null;
async function showDebug(id) {
  const doc = await api(`${clusterPath("debug")}/${id}.json`);
  $("debug-detail").hidden = false;
  watch(doc);
  const el = $("culprit"), s = doc.summary;
  if (!s) {
    el.className = "culprit";
    el.innerHTML = doc.status === "failed" ? `<p class="bad">Run #${doc.id} failed: ${esc(doc.error)}</p>`
      : `<p class="muted" data-status="${esc(doc.status)}">Run #${doc.id} is ${esc(doc.status)}.</p>`;
    $("stop-heatmap").width = 0;
    $("stragglers").innerHTML = "";
    return;
  }
  renderCulprit(el, doc);
  if (doc.heatmap) drawHeatmap(doc.heatmap);
  renderStragglers(s.stragglers);
}

function renderCulprit(el, doc) {
  const s = doc.summary, c = s.culprit ?? { found: false, explanation: `verdict ${s.verdict ?? "clean"}: every rank `
    + "completed the same collectives" };
  c.found = s.culprit != null;
  el.className = `culprit${c.found ? " found" : ""}`;
  el.dataset.found = c.found ? "1" : "0";
  const links = (c.links ?? []).filter((l) => l.id != null);
  const hosts = (c.hosts ?? []).map((h) => (h.id != null ? `<a href="/inventory/host/${h.id}/">${esc(h.name)}</a>`
    : esc(h.name)));
  const from = encodeURIComponent(`run #${doc.id}`);
  el.innerHTML = `<p><b>${c.found ? "Culprit" : "No culprit"}</b>: <span id="culprit-text">${esc(c.explanation
    ?? "")}</span></p>${c.found ? `<ul>
      <li>ranks <span class="mono" id="culprit-ranks">${esc((c.ranks ?? []).slice(0, SHOWN).join(", "))}</span>
        ${(c.ranks ?? []).length > SHOWN ? `and ${fmt.int(c.ranks.length - SHOWN)} more` : ""}</li>
      ${hosts.length ? `<li>hosts ${hosts.slice(0, SHOWN).join(", ")}</li>` : ""}
      ${(c.links ?? []).length ? `<li>links on their paths: ${c.links.slice(0, SHOWN).map((l) => `<span class="mono">
        ${esc(l.name)}</span>`).join(", ")}</li>` : ""}</ul>` : ""}
    <p class="hint">inject <span class="mono">${esc(s.inject ?? "")}</span> · ${fmt.int(s.ranks)} ranks ·
      <a id="gpu-link" href="${clusterPath("gpus/")}?color=debug&run=${doc.id}">GPU page</a>
      ${links.length ? ` · <a id="fabric-link" href="${clusterPath("fabric/")}#links=${links.map((l) => l.id)
        .join(",")}&from=${from}">links on the fabric page</a>` : ""}
      · ${doc.dumps_refusal ? `<span id="dumps-link">dumps: ${esc(doc.dumps_refusal)}</span>`
        : `<a id="dumps-link" href="/api/runs/${doc.id}/dumps/" download title="a folder of every rank's flight recorder dump, as PyTorch's fr_trace reads it once unpacked; built as it downloads (tens of seconds at 16,384 ranks)">dumps
          (${fmt.bytes(s.dumps_written_bytes ?? s.dumps_bytes)} of files, tar.gz)</a>
          <a id="dumps-zip-link" href="/api/runs/${doc.id}/dumps/?archive=zip" download>zip</a>${
          c && (c.ranks ?? []).length ? ` · <a id="rank-dump-link" href="/api/runs/${doc.id}/dumps/${c.ranks[0]}/" download
            title="this rank's dump alone, in a folder of its own (tar.gz)">rank ${c.ranks[0]}'s dump</a>` : ""}`}
      · <a href="/experiments/${doc.id}/">run #${doc.id}</a></p>`;
}

/** The heatmap's columns: instants (s from the earliest stop) on its time axis, else record ids. */
const columnsOf = (h) => (h.axis === "time" ? h.times_s : h.record_ids) ?? [];
const signedSecs = (s) => `${s < 0 ? "−" : "+"}${secs(Math.abs(s))}`;

/** The rank (or host) x time (or record) heatmap: each row's cells coloured by its state then; the culprit's rows
 *  marked in the left gutter (at least MARK_PX tall however many rows) and listed under the canvas. */
function drawHeatmap(h) {
  const cells = Uint8Array.from(atob(h.cells), (ch) => ch.charCodeAt(0));
  const cols = columnsOf(h), rows = h.rows.length, n = cols.length, label = 10;
  const rowPx = Math.max(1, Math.min(ROW_PX_MAX, Math.floor(600 / Math.max(rows, 1))));
  const c = $("stop-heatmap");
  c.width = label + n * COL_PX; c.height = rows * rowPx;
  const ctx = c.getContext("2d");
  for (let r = 0; r < rows; r++) {
    for (let k = 0; k < n; k++) {
      ctx.fillStyle = CELL_COLORS[cells[r * n + k]] ?? CELL_COLORS[0];
      ctx.fillRect(label + k * COL_PX, r * rowPx, COL_PX - 1, Math.max(1, rowPx - (rowPx > 3 ? 1 : 0)));
    }
  }
  ctx.fillStyle = CULPRIT_COLOR;
  for (const r of h.culprit) {
    const tall = Math.max(MARK_PX, rowPx), top = Math.max(0, Math.min(c.height - tall, r * rowPx + rowPx / 2 - tall / 2));
    ctx.fillRect(0, top, label - 2, tall);
    ctx.strokeStyle = CULPRIT_COLOR;
    ctx.strokeRect(label + 0.5, r * rowPx + 0.5, n * COL_PX - 1, Math.max(1, rowPx - 1));
  }
  c.dataset.rows = String(rows);
  c.dataset.culprit = h.culprit.join(",");
  exportable(c, { name: "where each rank stopped" });
  heat = { h, rowPx, label };
  const what = h.level === "host" ? `hosts (each ${h.axis === "time" ? "its most advanced rank: an idle one stands out among waiting peers" : "its least advanced rank"})` : "ranks";
  $("heatmap-note").textContent = h.axis === "time"
    ? `${fmt.int(rows)} ${what} × ${n} instants, ${signedSecs(cols[0] ?? 0)} to ${signedSecs(cols[n - 1] ?? 0)} from the earliest stop`
    : `${fmt.int(rows)} ${what} × ${n} recorded collectives up to the earliest stop and a few past it (record ${cols[0] ?? "–"}–${cols[n - 1] ?? "–"})`;
  $("heatmap-culprit").innerHTML = h.culprit.length
    ? `culprit: ${h.culprit.slice(0, SHOWN).map((r) => `<span class="mono" data-culprit-row="${r}">${esc(h.level)} ${esc(h.rows[r])}</span> (row ${fmt.int(r + 1)} of ${fmt.int(rows)})`).join(", ")}`
    : "";
  $("heatmap-legend").innerHTML = Object.entries(h.states).map(([code, name]) => `<span class="item"><span
    class="swatch" style="background:${CELL_COLORS[code]}"></span>${esc(name)}</span>`).join("")
    + `<span class="item"><span class="swatch" style="background:${CULPRIT_COLOR}"></span>culprit</span>`;
}

$("stop-heatmap").addEventListener("mousemove", (ev) => {
  const tip = $("heatmap-tip");
  if (!heat) return;
  const rect = ev.target.getBoundingClientRect();
  const { h } = heat, cols = columnsOf(h);
  const r = Math.floor((ev.clientY - rect.top) / heat.rowPx), k = Math.floor((ev.clientX - rect.left - heat.label) / COL_PX);
  if (r < 0 || r >= h.rows.length || k < 0 || k >= cols.length) { tip.hidden = true; return; }
  const cell = atob(h.cells).charCodeAt(r * cols.length + k);
  tip.hidden = false;
  tip.style.left = `${ev.pageX + 12}px`; tip.style.top = `${ev.pageY + 12}px`;
  const at = h.axis === "time" ? `${signedSecs(cols[k])}` : `record ${cols[k]}`;
  const stopped = h.axis === "time" && h.stopped_s?.[r] != null ? ` · stopped at ${signedSecs(h.stopped_s[r])}` : "";
  tip.textContent = `${h.level} ${h.rows[r]} · ${at}: ${h.states[cell]}${stopped} · last record started `
    + `${h.last_started?.[r] ?? "–"}, completed ${h.last_completed?.[r] ?? "–"}${h.culprit.includes(r) ? " · culprit" : ""}`;
});
$("stop-heatmap").addEventListener("mouseleave", () => { $("heatmap-tip").hidden = true; });

// The analyzer's straggler lists and columns (sim/debug/analyze.py, docs/debugging.md) as a person reads them; a key
// not listed is shown with its underscores as spaces. Columns ending in _s are seconds.
const STRAGGLER_LISTS = { process_groups: "Process groups", ranks: "Ranks", hosts: "Hosts" };
const STRAGGLER_COLUMNS = { name: "group", desc: "description", size: "ranks", wait_s: "time waited",
                            excess_s: "wait over the median", slowest_rank: "slowest rank", collectives: "collectives",
                            rank: "rank", host: "host", late_s: "late by", ranks: "ranks" };
const columnLabel = (c) => STRAGGLER_COLUMNS[c] ?? c.replace(/_s$/, "").replaceAll("_", " ");

/** The straggler ranking: each list of the analyzer's `stragglers` (process groups, ranks, hosts) as a table of its
 *  first rows, with readable column names and seconds in their unit; an empty list says none. */
function renderStragglers(st) {
  const box = $("stragglers");
  const lists = st && typeof st === "object" ? Object.entries(st).filter(([, v]) => Array.isArray(v)) : [];
  if (!lists.length) { box.innerHTML = '<p class="muted">no straggler ranking in this run</p>'; return; }
  box.innerHTML = lists.map(([name, rows]) => {
    const cols = [...new Set(rows.slice(0, SHOWN).flatMap((r) => Object.keys(r)))];
    const cell = (c, v) => (typeof v === "number" ? (c.endsWith("_s") ? fmt.s(v)
      : Number.isInteger(v) ? fmt.int(v) : v.toPrecision(3)) : esc(Array.isArray(v) ? v.join(", ") : v ?? "–"));
    const body = rows.length ? rows.slice(0, SHOWN).map((r) => `<tr>${cols.map((c) =>
      `<td>${cell(c, r[c])}</td>`).join("")}</tr>`).join("") : fmt.noneRow(Math.max(1, cols.length));
    return `<h3>${esc(STRAGGLER_LISTS[name] ?? columnLabel(name))}</h3><table class="data compact"
      data-stragglers="${esc(name)}"><thead><tr>${cols.map((c) => `<th>${esc(columnLabel(c))}</th>`).join("")}</tr>
      </thead><tbody>${body}</tbody></table>`;
  }).join("");
}

const FINISHED = new Set(["succeeded", "failed", "cancelled"]);
const QUIET_MS = 5000;           // a run stream silent that long reads its snapshot: a lost final frame is found

/** A rehearsal still running: its live stream's stage and fractions (debug_progress), followed to its end (the
 *  final frame, a frame or a reconnection's metadata saying it finished, or its snapshot when the stream went
 *  quiet), then reloaded. */
function watch(doc) {
  watching?.close();
  watching = null;
  $("debug-live").textContent = "";
  if (FINISHED.has(doc.status)) return;
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    watching?.close();
    loadPickers(doc.id).catch((e) => toast(`run #${doc.id}: ${e.message}`));
  };
  watching = live(`/ws/runs/${doc.id}/`, {
    query: { index: "0" },
    quietMs: QUIET_MS,
    onMeta(meta) { if (FINISHED.has(meta.run?.status)) end(); },
    onFrame(frame, merged) {
      const row = sectionRow("debug_progress", merged.debug_progress);
      const status = frame.status ?? doc.status;
      if (status !== doc.status && !FINISHED.has(status)) {
        doc.status = status;
        const el = $("culprit").querySelector("[data-status]");
        if (el) { el.dataset.status = status; el.textContent = `Run #${doc.id} is ${status}.`; }
      }
      $("debug-live").textContent = `run #${doc.id} ${status} ${row ? `${row.stage}: simulating `
        + `${fmt.pct(row.simulating)} · dumping ${fmt.pct(row.dumping)} · analyzing ${fmt.pct(row.analyzing)}`
        + ` · packing ${fmt.pct(row.packing ?? 0)}` : `${(frame.progress ?? 0).toFixed(0)} %`}`;
      if (frame.final || FINISHED.has(status)) end();
    },
  });
}

// ------------------------------------------------------------------------------------------------ start-up
/** The start-up curve: per scale the model's terms stacked (each line the sum of the terms up to it), and the total
 *  with each optimization as its own line (docs/debugging.md, the start-up model's result). */
function startupSeries(s) {
  const rows = s.rows ?? [];
  const terms = [...new Set(rows.flatMap((r) => Object.keys(r.terms ?? {})))];
  const stacked = terms.map((t, i) => ({
    name: `${terms.slice(0, i + 1).length > 1 ? "+ " : ""}${t}`, color: PALETTE[i % PALETTE.length],
    points: rows.map((r) => ({ x: r.gpus, y: terms.slice(0, i + 1).reduce((a, u) => a + (r.terms?.[u] ?? 0), 0) })),
  }));
  const variant = (r, v) => r.optimizations?.find((o) => o.name === v)?.total_s ?? null;
  const variants = [...new Set(rows.flatMap((r) => (r.optimizations ?? []).map((o) => o.name)))];
  const lines = variants.map((v, i) => ({ name: `with ${v}`, dash: "--", color: PALETTE[(terms.length + i) % PALETTE.length],
    points: rows.map((r) => ({ x: r.gpus, y: variant(r, v) })).filter((p) => p.y != null) }));
  return { rows, terms, variants, variant, series: [...stacked, ...lines] };
}

async function showStartup(id) {
  const doc = await api(`${clusterPath("debug")}/${id}.json`);
  const el = $("startup-chart");
  chart?.destroy();
  if (!doc.summary) { el.innerHTML = `<p class="muted">run #${doc.id} is ${esc(doc.status)} ${esc(doc.error)}</p>`; return; }
  const { rows, terms, variants, variant, series } = startupSeries(doc.summary);
  chart = lineChart(el, { label: "start-up time over ranks", height: 300, series,
    x: { scale: "log2", label: "ranks", format: (v) => fmt.int(v) },
    y: { scale: "log", label: "start-up time", format: (v) => secs(v) } });
  el.dataset.run = String(doc.id);                        // named in the chart's download (exports.js caption)
  $("startup-table").innerHTML = `<table class="data compact" id="startup-rows"><thead><tr><th class="num">ranks</th>
    ${terms.map((t) => `<th class="num">${esc(t)}</th>`).join("")}<th class="num">total</th><th>dominant</th>
    ${variants.map((v) => `<th class="num">with ${esc(v)}</th>`).join("")}</tr></thead><tbody>${rows.map((r) => `<tr>
    <td class="num">${fmt.int(r.gpus)}</td>${terms.map((t) => `<td class="num">${secs(r.terms?.[t])}</td>`).join("")}
    <td class="num">${secs(r.total_s)}</td><td>${esc(r.dominant ?? "")}</td>${variants.map((v) =>
    `<td class="num">${secs(variant(r, v))}</td>`).join("")}</tr>`).join("")}</tbody></table>`;
}

// ------------------------------------------------------------------------------------------------ forms
function mountForm(form, f) {
  if (!f) { form.innerHTML = '<p class="muted">this kind is not available on this server</p>'; return; }
  mountKindForm(form, f, {
    cluster: cluster.name, canStart: info.user.can_start, authenticated: info.user.authenticated,
    onStarted: (run) => (f.kind === "debug" ? loadPickers(run.id) : loadPickers(null, run.id)),
  });
  if (f.kind === "debug") injectExample(form, f);
}

/** The job's ranks as the form holds them: `gpus`, else tp x cp x pp x dp (each field's value, else its default;
 *  null when a value is not a whole number). */
function formRanks(form, fields) {
  const value = (name) => {
    const el = form.elements[name], d = fields.find((x) => x.name === name)?.default;
    const t = el?.value.trim() ?? "";
    const n = t === "" ? d : Number(t);
    return n == null ? null : Number.isInteger(n) && n > 0 ? n : NaN;
  };
  const gpus = value("gpus");
  if (gpus != null) return Number.isNaN(gpus) ? null : gpus;
  const dims = ["tp", "cp", "pp", "dp"].map((k) => value(k) ?? 1);
  return dims.some(Number.isNaN) ? null : dims.reduce((a, b) => a * b, 1);
}

/** Under `inject`: an example fault valid for the job the form describes (a hang of a rank in its range, rebuilt from
 *  the form's values as they change; a click puts it in the field); the syntax is the parameter's help. */
function injectExample(form, spec) {
  const input = form.elements.inject;
  if (!input) return;
  input.placeholder = "empty: a clean job";
  const hint = document.createElement("p");
  hint.className = "hint inject-example";
  hint.id = "inject-example";
  input.closest("label").after(hint);
  const update = () => {
    const ranks = formRanks(form, spec.fields);
    if (ranks == null) { hint.textContent = "inject: KIND:rank=R, R from 0 to the job's ranks - 1"; return; }
    const example = `hang:rank=${Math.min(ranks - 1, Math.floor((3 * ranks) / 4))}`;
    hint.innerHTML = `inject: KIND:rank=R with R from 0 to ${fmt.int(ranks - 1)} (this job's ${fmt.int(ranks)} ranks),
      e.g. <button type="button" class="link mono" data-example="${esc(example)}">${esc(example)}</button>,
      desync:rank=R, slow:rank=R,factor=4, host:rank=R, link:id=&lt;link name&gt;; empty: a clean job`;
  };
  hint.addEventListener("click", (ev) => {
    const b = ev.target.closest("[data-example]");
    if (!b) return;
    input.value = b.dataset.example;
    input.dispatchEvent(new Event("input", { bubbles: true }));
  });
  form.addEventListener("input", (ev) => { if (ev.target !== input) update(); });
  update();
}

$("debug-run").addEventListener("change", (ev) => showDebug(Number(ev.target.value)).catch((e) => toast(e.message)));
$("startup-run").addEventListener("change", (ev) => showStartup(Number(ev.target.value)).catch((e) => toast(e.message)));
mountForm($("debug-form"), info.forms.debug);
mountForm($("startup-form"), info.forms.startup);
loadPickers().catch((e) => toast(`runs not loaded: ${e.message}`)).finally(() => markReady());

// The page's own events: a rehearsal or a start-up run created on this cluster (through the API too) joins its
// picker, the runs shown staying; after a reconnection the pickers are read again (events of the outage lost).
const selected = (id) => Number($(id).value) || null;
const relist = coalesced(() => loadPickers(selected("debug-run"), selected("startup-run"))
  .catch((e) => toast(`runs not loaded: ${e.message}`)));
let connected = false;
live(`/ws/clusters/${encodeURIComponent(cluster.name)}/`, {
  query: { summary: "1" },
  onMeta() { if (connected) relist(); connected = true; },
  onEvent(msg) {
    if ((msg.type === "run_created" && ["debug", "startup"].includes(msg.kind)) || msg.type === "run_deleted") relist();
  },
});
