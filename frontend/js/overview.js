// Overview: each cluster card's list of running simulations follows the cluster's live stream (docs/live.md):
// a frame from an unknown run adds it, progress and status update in place, a final frame removes it. Below it,
// what else runs on the cluster (twin/web/activity.py: jobs and the GPUs they hold, the last checkpoint, recent
// failures), drawn from the page's #cluster-activity and read again (overview/activity.json) when a run starts,
// changes status or ends, or a frame carries the jobs' rows. Above them, the clusters being built, with their progress.
import { api, coalesced, esc, fmt, live, markReady, timeFrame } from "./twin.js";
import { figureText } from "./run_results.js";

const ACTIVE = new Set(["queued", "running"]);

/** A run's list item as the template draws it; its kind is filled in when the API has answered. */
function runItem(id) {
  const li = document.createElement("li");
  li.dataset.run = id;
  li.innerHTML = `<a href="/experiments/${id}/">#${id}</a> <span class="badge"></span>
    <span class="progress"><span></span></span>`;
  // a list query, not /api/runs/<id>/: a run deleted since it published is an empty list, not a failed request
  api(`/api/runs/?id__in=${id}`).then((page) => {
    const run = page.results?.[0];
    if (run) li.querySelector("a").textContent = `#${id} ${run.kind}`;
  }).catch(() => { /* the label stays "#<id>" */ });
  return li;
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

function drawAll(activity) {
  document.querySelectorAll(".cluster-card").forEach((card) => drawActivity(card, activity[card.dataset.cluster]));
}

// the activity read again, at most once at a time and once per second
let lastRead = 0;
const reread = coalesced(async () => {
  const wait = 1000 - (performance.now() - lastRead);
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  lastRead = performance.now();
  try { drawAll(await api("/overview/activity.json")); } catch { /* the cards keep what they show */ }
});

function follow(card) {
  const list = card.querySelector("ul.runs"), count = card.querySelector(".run-count");
  const refreshCount = () => {
    const n = list.querySelectorAll("li[data-run]").length;
    count.textContent = String(n);
    list.querySelector("li.none").hidden = n > 0;
  };
  const known = new Set([...list.querySelectorAll("li[data-run]")].map((li) => Number(li.dataset.run)));
  const statuses = new Map();                          // run id -> the status its last frame said

  live(`/ws/clusters/${encodeURIComponent(card.dataset.cluster)}/`, {
    query: { index: "0" },
    onFrame(frame) {
      if (!frame.runId || frame.status == null) return;  // null: an older snapshot filling in sections only
      if (statuses.get(frame.runId) !== frame.status || frame.final || frame.sections.job_stats) reread();
      statuses.set(frame.runId, frame.status);
      timeFrame(() => {
        let li = list.querySelector(`li[data-run="${frame.runId}"]`);
        if (!li && ACTIVE.has(frame.status) && !known.has(frame.runId)) {
          known.add(frame.runId);
          li = runItem(frame.runId);
          list.prepend(li);
        }
        if (!li) return;
        li.querySelector(".progress > span").style.width = `${frame.progress}%`;
        const badge = li.querySelector(".badge");
        badge.className = `badge ${frame.status}`;
        badge.textContent = frame.status;
        if (frame.final) setTimeout(() => { li.remove(); refreshCount(); }, 3000);
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
