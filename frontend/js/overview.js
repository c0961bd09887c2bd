// Overview: each cluster card kept live from its cluster's stream (docs/live.md). Its figures (GPUs healthy, failed,
// drained; hosts, switches, links, links failed; bisection bandwidth), its simulations queued or running, and what
// runs on it (twin/web/activity.py: jobs and the GPUs they hold, the last checkpoint, recent failures) are drawn from
// the page's #cluster-activity and read again (overview/activity.json, at most once a second) when the stream says the
// inventory changed (an `inventory` event: a link or GPU failed), a run was created or deleted, a run changed status
// or ended, or a frame carries the jobs' rows; and on every (re)connection of the stream, so that what a dropped socket
// missed is read over REST. Between two reads, frames move each run's progress and status in place, and the newest
// backend link utilization a frame brought (mean and busiest link, with its run and that run's status) is shown as
// it comes (the stream's snapshot at connection: the last run's). Above the cards, the clusters being built.
import { api, coalesced, esc, fmt, live, markReady, timeFrame } from "./twin.js";
import { figureText } from "./run_results.js";

const ACTIVE = new Set(["queued", "running"]);

/** A run's list item as the template draws it (`run`: id, kind, status, progress, from activity.json); given only
 *  an id (a frame of a run not listed yet), its kind is filled in when the API has answered. */
function runItem(id, run = null) {
  const li = document.createElement("li");
  li.dataset.run = id;
  li.innerHTML = `<a href="/experiments/${id}/">#${id}${run ? ` ${esc(run.kind)}` : ""}</a>
    <span class="badge ${esc(run?.status ?? "")}">${esc(run?.status ?? "")}</span>
    <span class="progress"><span style="width: ${run?.progress ?? 0}%"></span></span>`;
  // a list query, not /api/runs/<id>/: a run deleted since it published is an empty list, not a failed request
  if (!run) {
    api(`/api/runs/?id__in=${id}`).then((page) => {
      const found = page.results?.[0];
      if (found) li.querySelector("a").textContent = `#${id} ${found.kind}`;
    }).catch(() => { /* the label stays "#<id>" */ });
  }
  return li;
}

/** A card's figures (activity's `figures`): the counts, coloured bad when above 0 where the template does, the
 *  drained / maintenance figure shown when there are any, the bisection bandwidth as the server words it. */
function drawFigures(card, f) {
  if (!f) return;
  const values = { ...f, gpus_out: (f.gpus_drained ?? 0) + (f.gpus_maintenance ?? 0) };
  card.querySelectorAll("[data-figure]").forEach((el) => {
    const v = values[el.dataset.figure];
    if (v == null) return;
    el.textContent = typeof v === "number" ? fmt.int(v) : v;
    if (el.dataset.bad) el.classList.toggle("bad", v > 0);
  });
  const out = card.querySelector('[data-figure-box="gpus_out"]');
  if (out) out.hidden = !values.gpus_out;
}

const INVENTORY = { gpus: "GPUs", hosts: "hosts", switches: "switches", links: "links" };
const runLink = (r) => `<a href="/experiments/${r.id}/">#${r.id} ${esc(r.kind)}</a>`;

/** A card's activity section from its cluster's activity (twin/web/activity.py). */
function drawActivity(card, a) {
  const box = card.querySelector(".activity");
  if (!box || !a) return;
  const out = Object.entries(a.not_active).filter(([, n]) => n > 0)
    .map(([k, n]) => `<span class="bad">${fmt.int(n)}</span> ${INVENTORY[k] ?? esc(k)}`);
  const cp = a.checkpoint;
  box.dataset.jobs = String(a.jobs.jobs);
  box.dataset.gpusHeld = String(a.jobs.gpus);
  box.innerHTML = `
    <h3>Training jobs</h3>
    <p class="jobs-held"><b class="job-count">${fmt.int(a.jobs.jobs)}</b> running, holding
      <b class="gpus-held">${fmt.int(a.jobs.gpus)}</b> of ${fmt.int(a.gpus)} GPUs
      · <a href="/clusters/${encodeURIComponent(card.dataset.cluster)}/jobs/">jobs</a></p>
    <h3>Last checkpoint</h3>
    <p class="last-checkpoint">${cp ? `${runLink(cp)} <span class="muted">${esc(fmt.time(cp.finished_at))}</span><br>
      ${cp.headline.map((h) => `${esc(h.label)} <b>${esc(figureText(h.value, h.format))}</b>`).join(" · ")}`
      : '<span class="muted">none yet</span>'}</p>
    <h3>Recent failures</h3>
    <p class="not-active">${out.length ? `not active: ${out.join(", ")}` : '<span class="ok">every item active</span>'}</p>
    <ul class="failed-runs">${a.failed_runs.map((r) => `<li data-run="${r.id}">${runLink(r)}
      <span class="badge failed">failed</span> <span class="muted">${esc(fmt.time(r.finished_at))}</span>
      ${r.error ? `<br><span class="muted">${esc(r.error)}</span>` : ""}</li>`).join("")
      || '<li class="muted">no failed run</li>'}</ul>`;
}

const cards = new Map();                             // cluster name -> its card's live state (follow())

function drawAll(activity) {
  document.querySelectorAll(".cluster-card").forEach((card) => {
    const a = activity[card.dataset.cluster];
    if (!a) return;
    drawFigures(card, a.figures);
    drawActivity(card, a);
    cards.get(card.dataset.cluster)?.syncRuns(a.runs);
  });
}

// the activity read again, at most once at a time and once per second
let lastRead = 0;
const reread = coalesced(async () => {
  const wait = 1000 - (performance.now() - lastRead);
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  lastRead = performance.now();
  try { drawAll(await api("/overview/activity.json")); } catch { /* the cards keep what they show */ }
});

/** The share of `util` (Float32Array 0..1 per backend link) as "mean x %, busiest y %". */
function utilText(util) {
  let sum = 0, max = 0;
  for (const u of util) { sum += u; if (u > max) max = u; }
  return util.length ? `mean ${fmt.pct(sum / util.length, 1)}, busiest ${fmt.pct(max, 0)}` : "idle";
}

function follow(card) {
  const list = card.querySelector("ul.runs"), count = card.querySelector(".run-count");
  const utilCell = card.querySelector(".link-util");
  const refreshCount = () => {
    const n = list.querySelectorAll("li[data-run]").length;
    count.textContent = String(n);
    list.querySelector("li.none").hidden = n > 0;
  };
  const statuses = new Map();                          // run id -> the status its last frame said
  let shown = null;                                    // the newest link utilization a frame brought: {run, status, util}
  const drawUtil = () => {
    utilCell.textContent = shown ? `${utilText(shown.util)} (run #${shown.run}, ${shown.status})`
      : "no run has reported it yet";
  };
  const ending = (li) => {                             // a run seen ending stays 3 s with its last state
    if (li.dataset.ending) return;
    li.dataset.ending = "1";
    setTimeout(() => { li.remove(); refreshCount(); }, 3000);
  };

  cards.set(card.dataset.cluster, {
    /** The runs activity.json says are queued or running: those missing are added, those that ended meanwhile
     *  (their final frame missed during a gap) go. */
    syncRuns(runs) {
      const active = new Map(runs.map((r) => [r.id, r]));
      for (const li of list.querySelectorAll("li[data-run]")) {
        if (!active.has(Number(li.dataset.run))) ending(li);
      }
      for (const r of runs) {
        if (!list.querySelector(`li[data-run="${r.id}"]`)) list.append(runItem(r.id, r));
      }
      refreshCount();
    },
  });

  live(`/ws/clusters/${encodeURIComponent(card.dataset.cluster)}/`, {
    query: { index: "0" },
    onMeta() { reread(); },                            // every (re)connection: what a gap missed, over REST
    onEvent(msg) {                                     // a status changed, a run created or deleted on the cluster
      if (["inventory", "run_created", "run_deleted"].includes(msg.type)) reread();
    },
    onFrame(frame) {
      if (!frame.runId || frame.status == null) return;  // null: an older snapshot filling in sections only
      if (statuses.get(frame.runId) !== frame.status || frame.final || frame.sections.job_stats) reread();
      statuses.set(frame.runId, frame.status);
      timeFrame(() => {
        if (frame.sections.link_util) shown = { run: frame.runId, status: frame.status, util: frame.sections.link_util };
        else if (shown?.run === frame.runId) shown.status = frame.status;
        drawUtil();
        let li = list.querySelector(`li[data-run="${frame.runId}"]`);
        if (!li && ACTIVE.has(frame.status) && !frame.final) {      // a run not listed yet
          li = runItem(frame.runId);
          list.prepend(li);
        }
        if (!li) return;
        li.querySelector(".progress > span").style.width = `${frame.progress}%`;
        const badge = li.querySelector(".badge");
        badge.className = `badge ${frame.status}`;
        badge.textContent = frame.status;
        if (frame.final) ending(li);
        refreshCount();
      });
    },
  });
}

// The clusters being built (the launcher builds the default ones once the web answers): their progress read every
// BUILD_POLL_MS while there are any; when one is done the page is loaded again to show its card.
const BUILD_POLL_MS = 1000;
const building = document.getElementById("building");

function drawBuilding(list) {
  building.querySelector("ul").innerHTML = list.map((b) => `<li data-building="${esc(b.name)}">
    <code>${esc(b.name)}</code> <span class="phase muted">${esc(b.phase)}</span>
    <span class="progress"><span style="width: ${b.percent}%"></span></span>
    <span class="percent">${b.percent} %</span></li>`).join("");
}

async function followBuilds() {
  const shown = new Set([...building.querySelectorAll("li[data-building]")].map((li) => li.dataset.building));
  try {
    const { building: list } = await api("/overview/building.json");
    if ([...shown].some((name) => !list.some((b) => b.name === name))) { location.reload(); return; }  // its card
    drawBuilding(list);
  } catch { /* the next poll tries again */ }
  setTimeout(followBuilds, BUILD_POLL_MS);
}
if (!building.hidden) setTimeout(followBuilds, BUILD_POLL_MS);

const initial = document.getElementById("cluster-activity");
if (initial) drawAll(JSON.parse(initial.textContent));
document.querySelectorAll(".cluster-card").forEach(follow);
markReady();
