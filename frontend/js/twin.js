// Shared by every page of the twin: API calls with the session's CSRF token, errors shown as a toast, number
// formats, the utilization colour scale, the live-connection indicator, and the page's timing figures
// (window.twin: what the end-to-end tests and bench/bench_ui.py read).
import { openLive } from "./frames.js";
import "./exports.js";                 // download buttons on every data table and registered chart

export const twin = (window.twin ??= { ready: false, firstPaintMs: null, frameApplyMs: [], framesApplied: 0 });

/** Mark the page's first complete paint (its main view drawn with data). */
export function markReady(extra = {}) {
  if (!twin.ready) {
    twin.firstPaintMs = performance.now();
    Object.assign(twin, extra, { ready: true });
    document.body.dataset.ready = "1";
    showLive();                       // a page with no stream of its own says so now, not "connecting"
  }
}

/** Time one live frame's application (decode excluded): fn runs now; the figure is kept for the tests. */
export function timeFrame(fn) {
  const t0 = performance.now();
  fn();
  const ms = performance.now() - t0;
  twin.frameApplyMs.push(ms);
  if (twin.frameApplyMs.length > 1000) twin.frameApplyMs.shift();
  twin.framesApplied += 1;
  document.body.dataset.frames = String(twin.framesApplied);
  return ms;
}

/** ``fn`` (async) made safe to call often: a call while it runs makes it run once more after it, never twice at
 *  once (a reload asked by a live frame while the last one is still reading). */
export function coalesced(fn) {
  let running = null, again = false;
  const call = () => {
    if (running) { again = true; return running; }
    running = (async () => {
      try { await fn(); } finally { running = null; }
      if (again) { again = false; await call(); }
    })();
    return running;
  };
  return call;
}

function csrfToken() {
  const m = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
  return m ? decodeURIComponent(m[1]) : "";
}

/** A DRF error body as one readable line: "gpus: 99999 GPUs asked, demo-256 has 256; sizes: ...". */
export function errorText(body, status) {
  if (body == null) return `HTTP ${status}`;
  if (typeof body === "string") return body;
  if (Array.isArray(body)) return body.map((b) => errorText(b, status)).filter(Boolean).join("; ");
  if (body.detail && Object.keys(body).length === 1) return String(body.detail);
  return Object.entries(body).map(([k, v]) =>
    typeof v === "object" && v !== null ? `${k}: ${errorText(v, status)}` : `${k}: ${v}`).join("; ");
}

export class ApiError extends Error {
  constructor(status, body) { super(errorText(body, status)); this.status = status; this.body = body; }
}

/** fetch JSON from the twin's API; throws ApiError naming the fields on a 4xx/5xx. */
export async function api(path, { method = "GET", body, signal } = {}) {
  const headers = { Accept: "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (method !== "GET" && method !== "HEAD") headers["X-CSRFToken"] = csrfToken();
  const r = await fetch(path, { method, headers, signal, credentials: "same-origin",
                                body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await r.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = text; }
  if (!r.ok) throw new ApiError(r.status, data);
  return data;
}

/** Show a message at the top of the page (errors the user must see); hides after a while. */
export function toast(message, { kind = "error", ms = 8000 } = {}) {
  const el = document.getElementById("toast");
  if (!el) return;
  el.textContent = message;
  el.dataset.kind = kind;
  el.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { el.hidden = true; }, ms);
}

export { fmt } from "./fmt.js";         // the one formatting module: bytes, durations, counts

/** Utilization colour scale (0..1 -> RGBA), a perceptual dark-blue-to-yellow-to-red ramp, as a 256-entry table
 *  of packed 32-bit pixels for canvas ImageData (little-endian ABGR), plus CSS strings. */
const STOPS = [[0, [22, 32, 64]], [0.25, [33, 102, 172]], [0.5, [67, 170, 139]], [0.75, [240, 200, 60]],
               [0.9, [240, 120, 40]], [1, [200, 30, 30]]];
export const UTIL_RGB = Array.from({ length: 256 }, (_, i) => {
  const x = i / 255;
  let k = 0;
  while (k < STOPS.length - 2 && x > STOPS[k + 1][0]) k += 1;
  const [x0, c0] = STOPS[k], [x1, c1] = STOPS[k + 1], t = (x - x0) / (x1 - x0);
  return c0.map((c, j) => Math.round(c + t * (c1[j] - c)));
});
export const UTIL_PIXEL = new Uint32Array(UTIL_RGB.map(([r, g, b]) => (255 << 24) | (b << 16) | (g << 8) | r));
/** "#rrggbb" -> the packed pixel of a Uint32Array view over ImageData (little-endian ABGR), as UTIL_PIXEL. */
export function cssPixel(hex) {
  const v = parseInt(hex.slice(1), 16);
  return ((255 << 24) | ((v & 0xff) << 16) | (v & 0xff00) | (v >>> 16)) >>> 0;
}
/** The utilization scale as a CSS background, for legends. */
export const UTIL_GRADIENT = `linear-gradient(90deg,${STOPS.map(([x, [r, g, b]]) => `rgb(${r},${g},${b}) ${x * 100}%`)
  .join(",")})`;
export const utilCss = (u) => { const [r, g, b] = UTIL_RGB[Math.max(0, Math.min(255, Math.round(u * 255)))];
                                return `rgb(${r},${g},${b})`; };
export const COLORS = { failed: "#e5484d", drained: "#f5a524", idle: "#3a4252", unusable: "#e5484d",
                        none: "#262b36" };

const LIVE_LABEL = { off: "live: off", connecting: "live: connecting", live: "live", reconnecting: "live: reconnecting" };
const streams = new Map();        // the page's live streams: {state, why, at}; the indicator sums them up
let streamCount = 0, idleReason = "nothing on this page follows a live stream", countdown = null;

/** Why nothing is live on this page when no stream is open (e.g. "run #12 succeeded: nothing more to follow"). */
export function liveIdle(reason) { idleReason = reason; showLive(); }

/** The header's indicator: "live" while any stream is, else the first reconnecting stream ("live: reconnecting in
 *  3 s · the server is unreachable", counting down), else connecting, else off with the reason (a refusal's,
 *  4401/4404, or liveIdle's). The reason is also in data-reason and the title. */
function showLive() {
  const all = [...streams.values()], find = (state) => all.find((s) => s.state === state);
  const shown = find("live") ?? find("reconnecting") ?? find("connecting") ?? find("closed") ?? { state: "off" };
  const state = shown.state === "closed" ? "off" : shown.state;
  let reason = "";
  if (state === "reconnecting" && shown.why) {
    const left = Math.max(0, Math.ceil((shown.at + (shown.why.retryMs ?? 0) - Date.now()) / 1000));
    reason = `${left ? `in ${left} s` : "now"} · ${shown.why.reason}`;
  } else if (state === "off") reason = shown.why?.reason ?? idleReason;
  const el = document.getElementById("live-status");
  if (el) {
    el.dataset.state = state;
    el.dataset.reason = reason;
    el.textContent = reason ? `${LIVE_LABEL[state]} (${reason})` : LIVE_LABEL[state];
    el.title = state === "live" ? "live connection open" : reason || LIVE_LABEL[state];
  }
  clearTimeout(countdown);
  if (state === "reconnecting") countdown = setTimeout(showLive, 1000);
}

function setLiveState(stream, state, why) {
  if (state === "closed" && !why) streams.delete(stream);           // closed by the page: not a problem
  else streams.set(stream, { state, why, at: Date.now() });
  showLive();
}

/** A live stream (docs/live.md) counted in the header's indicator ("live" while any of the page's streams is);
 *  see openLive for the handlers. */
export function live(path, handlers = {}) {
  const stream = ++streamCount;
  return openLive(path, { ...handlers, onState(state, why) { setLiveState(stream, state, why); handlers.onState?.(state, why); } });
}

/** Escape text for innerHTML templates. */
export function esc(s) {
  return String(s ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;",
                                                       "'": "&#39;" }[c]));
}

// The cluster picker: on a cluster's page, the same page of the chosen cluster; elsewhere, remember the choice.
document.getElementById("cluster-picker")?.addEventListener("change", (ev) => {
  const name = ev.target.value, current = ev.target.dataset.current;
  document.cookie = `twin_cluster=${encodeURIComponent(name)}; path=/; SameSite=Lax`;
  const seg = `/clusters/${encodeURIComponent(current)}/`;
  if (location.pathname.includes(seg)) location.pathname = location.pathname.replace(seg, `/clusters/${encodeURIComponent(name)}/`);
  else location.reload();
});

// Pages whose main view is drawn from data set {% block wait_ready %}1{% endblock %} and call markReady() themselves;
// the others are ready once loaded.
if (document.body.dataset.waitReady !== "1") {
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", () => markReady());
  else markReady();
}
