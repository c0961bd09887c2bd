// Live frames of the twin (twin/live/frames.py is the reference; docs/live.md the contract). Native ES module.
//
// A WebSocket on /ws/runs/<id>/ or /ws/clusters/<name>/ first sends ONE text message (JSON metadata: the stream,
// its last sequence number `seq`, the snapshot URL, the index tables), then only binary frames. Set
// `ws.binaryType = "arraybuffer"`. All numbers little-endian.
//
// Header, 32 bytes:
//   0  2  magic "TW"            4  u32 seq (per stream)      16 f32 progress 0..100     22 u16 section count
//   2  u8 version (1)           8  u32 run id (0: none)      20 u8  status code         24 f64 publish time (ms, epoch)
//   3  u8 type 1 run, 2 cluster 12 u32 cluster id            21 u8  flags (bit 0 final)
// Then `section count` sections, each an 8-byte header
//   0 u8 section id (1 link_util, 2 gpu_state)   1 u8 dtype (1 Uint8, 2 Float16)   2 u16 reserved   4 u32 count
// then count * itemsize bytes, zero-padded to a multiple of 4 (every section starts 4-byte aligned).
// link_util as Uint8 is utilization * 255 (0..255 of the link's capacity); as Float16 it is 0..1.
// A section missing from a frame means "unchanged". seq jumping by more than 1 means frames were lost: fetch the
// REST snapshot (JSON with `frame_b64`, or `?binary=1`) and decode it with this same function.

export const STATUS = ["unknown", "queued", "running", "succeeded", "failed", "cancelled"];
export const SECTION = { 1: "link_util", 2: "gpu_state" };
export const FRAME_TYPE = { 1: "run", 2: "cluster" };

function float16(bits) {
  const s = bits & 0x8000 ? -1 : 1, e = (bits >> 10) & 0x1f, m = bits & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

/** Decode one frame (ArrayBuffer) into {seq, runId, clusterId, progress, status, final, timeMs, sections}.
 *  sections.link_util is a Float32Array in 0..1 whatever the wire dtype; sections.gpu_state a Uint8Array. */
export function decodeFrame(buffer) {
  const v = new DataView(buffer);
  if (buffer.byteLength < 32 || v.getUint8(0) !== 0x54 || v.getUint8(1) !== 0x57) throw new Error("not a live frame");
  if (v.getUint8(2) !== 1) throw new Error(`unsupported frame version ${v.getUint8(2)}`);
  const frame = {
    type: FRAME_TYPE[v.getUint8(3)], seq: v.getUint32(4, true), runId: v.getUint32(8, true),
    clusterId: v.getUint32(12, true), progress: v.getFloat32(16, true), status: STATUS[v.getUint8(20)] ?? "unknown",
    final: (v.getUint8(21) & 1) === 1, timeMs: v.getFloat64(24, true), sections: {},
  };
  let off = 32;
  for (let i = 0, n = v.getUint16(22, true); i < n; i++) {
    const id = v.getUint8(off), dtype = v.getUint8(off + 1), count = v.getUint32(off + 4, true);
    off += 8;
    const size = count * (dtype === 2 ? 2 : 1);
    if (off + size > buffer.byteLength) throw new Error("truncated live frame");
    let data;
    if (dtype === 1) {
      data = new Uint8Array(buffer, off, count);
      if (id === 1) {                                   // a plain loop: Float32Array.from with a map is ~20x slower
        const u = new Float32Array(count);
        for (let j = 0; j < count; j++) u[j] = data[j] / 255;
        data = u;
      }
    } else if (dtype === 2) {
      data = new Float32Array(count);
      for (let j = 0; j < count; j++) data[j] = float16(v.getUint16(off + 2 * j, true));
    } else throw new Error(`unknown dtype ${dtype}`);
    frame.sections[SECTION[id] ?? String(id)] = data;
    off += size + ((4 - (size % 4)) % 4);
  }
  return frame;
}

/** The last frame of a stream from its REST snapshot (asked as `?binary=1`); null when nothing was published yet (seq 0).
 *  Throws on an HTTP error. */
export async function fetchSnapshot(url) {
  const binary = /[?&]binary=1/.test(url) ? url : `${url}${url.includes("?") ? "&" : "?"}binary=1`;
  const r = await fetch(binary, { credentials: "same-origin" });
  if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
  const f = decodeFrame(await r.arrayBuffer());
  return f.seq > 0 ? f : null;
}

/** Open a live stream and keep it open: calls onMeta(json) on every (re)connection, onEvent(json) for every other
 *  JSON message of the stream (e.g. {type: "inventory", ...}: docs/live.md), onFrame(frame, merged) per
 *  applied frame (a snapshot older than the last frame fills in sections only: its progress and status are null),
 *  onState("connecting" | "live" | "reconnecting" | "closed") as the connection changes.
 *  `merged` holds the latest of every section. A gap in sequence numbers, and every reconnection, fetch the REST
 *  snapshot; its sections are applied where no newer frame has already brought them (per-section sequence numbers),
 *  so a frame that overtakes the snapshot is never undone. After a dropped socket it reconnects with backoff
 *  (0.5 s doubling to 5 s). `seq`: the sequence number of a snapshot the page already applied (no second
 *  fetch when the stream has not moved on). Returns a controller: {close(), socket()}. */
export function openLive(path, { onMeta = () => {}, onEvent = () => {}, onFrame = () => {}, onState = () => {}, token = null,
                                 query = {}, reconnect = true, seq = 0 } = {}) {
  const proto = location.protocol === "https:" ? "wss:" : "ws:";
  const params = new URLSearchParams(query);
  if (token) params.set("token", token);
  const url = `${proto}//${location.host}${path}${params.toString() ? `?${params}` : ""}`;
  const merged = {}, sectionSeq = {};
  let ws = null, meta = null, lastSeq = seq, closed = false, delay = 500, timer = null;

  const apply = (f, fromSnapshot = false) => {
    for (const [name, data] of Object.entries(f.sections)) {
      if (fromSnapshot && (sectionSeq[name] ?? -1) > f.seq) continue;   // a newer frame already brought it
      merged[name] = data;
      sectionSeq[name] = f.seq;
    }
    const newer = f.seq >= lastSeq;
    if (newer) lastSeq = f.seq;
    onFrame(newer ? f : { ...f, progress: null, status: null }, merged);
  };
  async function resync() {
    if (!meta) return;
    try {
      const f = await fetchSnapshot(meta.snapshot);
      if (f) apply(f, true);
    } catch (e) { /* the next gap or reconnection tries again */ }
  }
  function connect() {
    onState(meta ? "reconnecting" : "connecting");      // meta: connected before
    ws = new WebSocket(url);
    ws.binaryType = "arraybuffer";
    ws.onopen = () => { delay = 500; };
    ws.onmessage = (ev) => {
      if (typeof ev.data === "string") {
        const msg = JSON.parse(ev.data);
        if (msg.type === "meta") {
          meta = msg; onState("live"); onMeta(msg);
          if (msg.seq !== lastSeq) { if (msg.seq < lastSeq) lastSeq = 0; resync(); }   // moved on, or reset
        } else onEvent(msg);
        return;
      }
      const f = decodeFrame(ev.data);
      if (f.seq <= lastSeq) return;                      // stale or already covered by a snapshot
      const gap = lastSeq && f.seq !== lastSeq + 1;
      apply(f);
      if (gap) resync();
    };
    ws.onclose = () => {
      if (closed || !reconnect) { onState("closed"); return; }
      onState("reconnecting");
      timer = setTimeout(connect, delay);
      delay = Math.min(delay * 2, 5000);
    };
  }
  connect();
  return {
    close() { closed = true; clearTimeout(timer); if (ws) ws.close(); },
    socket() { return ws; },
  };
}
