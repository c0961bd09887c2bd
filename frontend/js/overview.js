// Overview: each cluster card's list of running simulations follows the cluster's live stream (docs/live.md):
// a frame from an unknown run adds it, progress and status update in place, a final frame removes it.
import { api, esc, live, timeFrame } from "./twin.js";

const ACTIVE = new Set(["queued", "running"]);

function runItem(id, kind, status, progress) {
  const li = document.createElement("li");
  li.dataset.run = id;
  li.innerHTML = `<a href="/experiments/${id}/">#${id} ${esc(kind)}</a> <span class="badge ${esc(status)}">${esc(status)}</span>
    <span class="progress"><span style="width:${progress}%"></span></span>`;
  return li;
}

function follow(card) {
  const list = card.querySelector("ul.runs"), count = card.querySelector(".run-count");
  const refreshCount = () => {
    const n = list.querySelectorAll("li[data-run]").length;
    count.textContent = String(n);
    list.querySelector("li.none")?.toggleAttribute("hidden", n > 0);
  };
  const known = new Set([...list.querySelectorAll("li[data-run]")].map((li) => Number(li.dataset.run)));
  if (!list.querySelector("li.none")) list.insertAdjacentHTML("beforeend", '<li class="muted none" hidden>none</li>');

  live(`/ws/clusters/${encodeURIComponent(card.dataset.cluster)}/`, {
    query: { index: "0" },
    onFrame(frame) {
      if (!frame.runId || frame.status == null) return;
      timeFrame(() => {
        let li = list.querySelector(`li[data-run="${frame.runId}"]`);
        if (!li && ACTIVE.has(frame.status) && !known.has(frame.runId)) {
          known.add(frame.runId);
          li = runItem(frame.runId, "", frame.status, frame.progress);
          list.prepend(li);
          api(`/api/runs/${frame.runId}/`).then((run) => {
            li.querySelector("a").textContent = `#${run.id} ${run.kind}`;
          }).catch(() => {});
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
