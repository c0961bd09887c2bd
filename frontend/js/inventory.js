// The inventory pages are drawn by the server; this adds the status change (PATCH through the REST API, with the
// session's CSRF token, shown on top of the item's change list) and "/" to jump to the search box.
import { api, esc, toast } from "./twin.js";

const form = document.getElementById("status-form");
if (form) {
  const select = form.elements.status;
  const button = form.querySelector("button[type=submit]");
  const error = form.querySelector("[data-role=error]");
  let current = select.value;                       // the stored status, for the change-log line
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const status = select.value;
    button.disabled = true;
    error.hidden = true;
    try {
      const item = await api(form.dataset.api, { method: "PATCH", body: { status } });
      const badge = document.getElementById("item-status");
      badge.className = `badge ${item.status}`;
      badge.textContent = item.status;
      if (item.status !== current) logChange(`status ${current} → ${item.status}`);
      current = item.status;
      toast(`${item.display ?? item.name}: status set to ${item.status}`, { kind: "info", ms: 4000 });
    } catch (e) {
      // The API names the field and the reason ({"status": ["..."]}); show it beside the form and as a toast.
      error.textContent = e.message;
      error.hidden = false;
      toast(`Status not changed: ${e.message}`);
    } finally {
      button.disabled = false;
    }
  });
}

/** A line on top of the item's change list for a change just made here (the server logged it the same way). */
function logChange(text) {
  const body = document.querySelector("#change-list tbody");
  if (!body) return;
  body.querySelector("tr.none")?.remove();
  const row = body.insertRow(0), now = new Date();
  row.dataset.action = "update";
  const who = document.querySelector("header .user")?.textContent.trim() || "you";
  row.innerHTML = `<td><time datetime="${now.toISOString()}">${now.toISOString().slice(0, 19).replace("T", " ")}</time></td>
    <td>${esc(who)}</td><td>${esc(text)}</td>`;
}

document.addEventListener("keydown", (ev) => {
  const typing = /^(INPUT|SELECT|TEXTAREA)$/.test(document.activeElement?.tagName ?? "");
  if (ev.key === "/" && !typing && !ev.ctrlKey && !ev.metaKey && !ev.altKey) {
    ev.preventDefault();
    document.querySelector("#inventory-search input[name=q]")?.focus();
  }
});
