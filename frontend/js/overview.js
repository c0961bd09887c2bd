// Overview: each cluster card's list of running simulations follows the cluster's live stream (docs/live.md):
// a frame from an unknown run adds it, progress and status update in place, a final frame removes it.
import { api, live, timeFrame } from "./twin.js";

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

function follow(card) {
  const list = card.querySelector("ul.runs"), count = card.querySelector(".run-count");
  const refreshCount = () => {
    const n = list.querySelectorAll("li[data-run]").length;
    count.textContent = String(n);
    list.querySelector("li.none").hidden = n > 0;
  };
  const known = new Set([...list.querySelectorAll("li[data-run]")].map((li) => Number(li.dataset.run)));

  live(`/ws/clusters/${encodeURIComponent(card.dataset.cluster)}/`, {
    query: { index: "0" },
    onFrame(frame) {
      if (!frame.runId || frame.status == null) return;  // null: an older snapshot filling in sections only
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

document.querySelectorAll(".cluster-card").forEach(follow);
