// Live frames of the twin (twin/live/frames.py is the reference; docs/live.md the contract). Native ES module.
//
// A WebSocket on /ws/runs/<id>/ or /ws/clusters/<name>/ first sends ONE text message (JSON metadata: the stream,
// its last sequence number `seq`, the snapshot URL, counts and the URL of the link index tables), then binary
// frames (and, on a cluster stream, JSON events). Set `ws.binaryType = "arraybuffer"`. All numbers little-endian.
//
// Header, 32 bytes:
//   0  2  magic                 4  u32 seq (per stream)      16 f32 progress 0..100     22 u16 section count
//   2  u8 version               8  u32 run id (0: none)      20 u8  status code         24 f64 publish time (ms, epoch)
//   3  u8 frame type            12 u32 cluster id            21 u8  flags
// Then `section count` sections, each an 8-byte header
//   0 u8 section id   1 u8 dtype code   2 u16 reserved   4 u32 count
// then count * itemsize bytes, zero-padded to a multiple of 4 (every section starts 4-byte aligned).
// Every code (magic, version, frame types, flags, sections, dtypes and their item sizes, statuses) and every
// section's spec (section_specs: id, dtype, codec, fields, code tables, constants, per) comes from the server's tables
// (twin/live/frames.py tables(), the sections registered in twin/live/sections.py and the capabilities' live.py):
// embedded in each page (#live-protocol, web/base.html) and sent again in every stream's meta message. Nothing here
// repeats them, nor names a section. Sections of codec "util" (Uint8 = utilization x constants.scale) are decoded
// to Float32Array 0..1 (as Float16 they are 0..1 already); the others stay as their typed arrays: read "rows"
// sections with sectionRows()/sectionRow(), a "code" section with sectionCodeName(), a section's code table with
// sectionCodes() and its constants with sectionConstants().
// A section missing from a frame means "unchanged". seq jumping by more than 1 means frames were lost: fetch the
// REST snapshot (JSON with `frame_b64`, or `?binary=1`) and decode it with this same function.

const HEADER_BYTES = 32, SECTION_HEADER_BYTES = 8;     // the layout above
let tables = null;                                     // the protocol tables in use (useProtocol)

/** Take the server's protocol tables (a stream's meta message, or the page's #live-protocol): codes become Maps
 *  both ways; `specs` maps each section's name to its spec (section_specs), its code tables as Maps (`codeMaps`:
 *  field -> Map of code -> name). Returns them (as protocol() does). */
export function useProtocol(info) {
  const byCode = (t) => new Map(Object.entries(t ?? {}).map(([code, v]) => [Number(code), v]));
  const byName = (t) => Object.fromEntries(Object.entries(t ?? {}).map(([code, name]) => [name, Number(code)]));
  const specs = new Map(Object.entries(info.section_specs ?? {}).map(([name, spec]) => [name, {
    ...spec, name,
    codeMaps: Object.fromEntries(Object.entries(spec.codes ?? {}).map(([field, t]) => [field, byCode(t)])),
  }]));
  tables = {
    protocol: info.protocol, magic: Array.from(info.magic, (c) => c.charCodeAt(0)),
    frameType: byCode(info.frame_types), flag: byName(info.flags), section: byCode(info.sections),
    dtype: byCode(info.dtypes), itemSize: byCode(info.dtype_sizes),
    status: new Map(Object.entries(info.status_codes).map(([name, code]) => [code, name])),
    closeReason: byCode(info.close_reasons), finalClose: new Set(info.final_closes ?? []),
    specs,
  };
  return tables;
}

/** The protocol tables in use: the last meta message's, else the page's own (json_script #live-protocol). */
export function protocol() {
  if (tables) return tables;
  const el = globalThis.document?.getElementById("live-protocol");
  if (!el) throw new Error("no live protocol tables: the page has no #live-protocol (web/base.html)");
  return useProtocol(JSON.parse(el.textContent));
}

function float16(bits) {
  const s = bits & 0x8000 ? -1 : 1, e = (bits >> 10) & 0x1f, m = bits & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

/** Section data by dtype name: (buffer, DataView, offset, count, section spec or undefined) -> typed array. */
const READ = {
  uint8(buffer, v, off, count, spec) {
    const data = new Uint8Array(buffer, off, count);
    if (spec?.codec !== "util") return data;           // quantized utilization: x / constants.scale
    const scale = spec.constants.scale, u = new Float32Array(count);
    // a plain loop: Float32Array.from with a map is ~20x slower
    for (let j = 0; j < count; j++) u[j] = data[j] / scale;
    return u;
  },
  float16(buffer, v, off, count) {
    const data = new Float32Array(count);
    for (let j = 0; j < count; j++) data[j] = float16(v.getUint16(off + 2 * j, true));
    return data;
  },
  // sections start 4-aligned, so typed-array views on the buffer are aligned (hosts are little-endian)
  uint16(buffer, v, off, count) { return new Uint16Array(buffer.slice(off, off + 2 * count)); },
  float32(buffer, v, off, count) { return new Float32Array(buffer.slice(off, off + 4 * count)); },
};

/** The rows of a Float32 section of rows (`fields` per row) as objects; the fields of `codes` (field -> Map of
 *  code -> name) by name ("unknown" for a code the table lacks); NaN becomes null. */
export function rowsOf(data, fields, codes = {}) {
  const n = fields.length, rows = [];
  for (let i = 0; n && i + n <= (data?.length ?? 0); i += n) {
    const r = {};
    fields.forEach((name, j) => { const x = data[i + j]; r[name] = Number.isNaN(x) ? null : x; });
    for (const [name, table] of Object.entries(codes)) if (r[name] != null) r[name] = table.get(r[name]) ?? "unknown";
    rows.push(r);
  }
  return rows;
}

/** The spec of the section `name` (section_specs: id, dtype, codec, fields, codes, constants, per, and codeMaps),
 *  or null when the server has no such section. */
export function sectionSpec(name, p = protocol()) {
  return p.specs.get(name) ?? null;
}

/** A "rows" section's data (Float32Array) as objects of its fields: codes by name, NaN as null ([] without data). */
export function sectionRows(name, data, p = protocol()) {
  const spec = sectionSpec(name, p);
  return spec && data ? rowsOf(data, spec.fields, spec.codeMaps) : [];
}

/** The first row of a "rows" section (sectionRows), or null. */
export function sectionRow(name, data, p = protocol()) {
  return sectionRows(name, data, p)[0] ?? null;
}

/** A "code" section's one code by its name (the code as text when the table lacks it), or null without data. */
export function sectionCodeName(name, data, p = protocol()) {
  if (!data || !data.length) return null;
  return sectionSpec(name, p)?.codeMaps.value?.get(data[0]) ?? String(data[0]);
}

/** A section's code table for `field` ("value": the codes of a per-item or "code" section) both ways:
 *  {byCode: Map of code -> name, byName: {name: code}}. */
export function sectionCodes(name, field = "value", p = protocol()) {
  const byCode = sectionSpec(name, p)?.codeMaps[field] ?? new Map();
  return { byCode, byName: Object.fromEntries([...byCode].map(([code, n]) => [n, code])) };
}

/** A section's constants (e.g. {scale: 255} of a "util" section); {} for none. */
export function sectionConstants(name, p = protocol()) {
  return sectionSpec(name, p)?.constants ?? {};
}

/** Decode one frame (ArrayBuffer) into {type, seq, runId, clusterId, progress, status, final, timeMs, sections}
 *  with the protocol tables `p` (default: protocol()). sections holds each section by its name (its id as text for
 *  a section the tables lack): a "util" section as a Float32Array in 0..1 whatever the wire dtype, the others as
 *  their wire dtype's typed array (Float16 read into a Float32Array). */
export function decodeFrame(buffer, p = protocol()) {
  const v = new DataView(buffer);
  if (buffer.byteLength < HEADER_BYTES || p.magic.some((c, i) => v.getUint8(i) !== c)) {
    throw new Error("not a live frame");
  }
  if (v.getUint8(2) !== p.protocol) throw new Error(`unsupported frame version ${v.getUint8(2)}`);
  const frame = {
    type: p.frameType.get(v.getUint8(3)), seq: v.getUint32(4, true), runId: v.getUint32(8, true),
    clusterId: v.getUint32(12, true), progress: v.getFloat32(16, true),
    status: p.status.get(v.getUint8(20)) ?? "unknown",
    final: (v.getUint8(21) & p.flag.final) !== 0, scoped: (v.getUint8(21) & (p.flag.scoped ?? 0)) !== 0,
    timeMs: v.getFloat64(24, true), sections: {},
  };
  let off = HEADER_BYTES;
  for (let i = 0, n = v.getUint16(22, true); i < n; i++) {
    const id = v.getUint8(off), code = v.getUint8(off + 1), count = v.getUint32(off + 4, true);
    off += SECTION_HEADER_BYTES;
    const read = READ[p.dtype.get(code)];
    if (!read) throw new Error(`unknown dtype ${code}`);
    const size = count * p.itemSize.get(code), name = p.section.get(id) ?? String(id);
    if (off + size > buffer.byteLength) throw new Error("truncated live frame");
    frame.sections[name] = read(buffer, v, off, count, p.specs.get(name));
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

/** What a close code means when the server said nothing (the server's table: twin/live/frames.py CLOSE_REASONS). */
export function closeReason(code) {
  return protocol().closeReason.get(code) ?? `closed (code ${code})`;
}

/** The longest wait between two tries to reopen a dropped socket: TWIN_LIVE_RETRY_MAX_MS, which every page carries
 *  (web/base.html). */
function retryMaxMs() {
  return Number(document.body.dataset.liveRetryMaxMs);
}

/** Open a live stream and keep it open: calls onMeta(json) on every (re)connection, onEvent(json) for every other
 *  JSON message of the stream (e.g. {type: "inventory", ...}: docs/live.md), onFrame(frame, merged) per
 *  applied frame (a snapshot older than the last frame fills in sections only: its progress and status are null),
 *  onState(state, why) as the connection changes: state "connecting", "live", "reconnecting" (why: {code, reason,
 *  retryMs}: the close code, the server's reason or what it means, the wait before the next try) or "closed" (why:
 *  {code, reason} when the server refused the stream, 4401 not authenticated or too many wrong tokens, 4404 no such
 *  run or cluster: not tried again; null when the page closed it).
 *  `merged` holds the latest of every section. A gap in sequence numbers, and every reconnection, fetch the REST
 *  snapshot; its sections are applied where no newer frame has already brought them (per-section sequence numbers),
 *  so a frame that overtakes the snapshot is never undone. After a dropped socket it reconnects with backoff
 *  (0.5 s doubling to retryMaxMs()). `seq`: the sequence number of a snapshot the page already applied (no second
 *  fetch when the stream has not moved on). `quietMs`: after that long without a frame, fetch the snapshot (a run's
 *  stream: its final frame lost on the way, with no later frame to show the gap, would leave the page waiting).
 *  Returns a controller: {close(), socket()}. */
export function openLive(path, { onMeta = () => {}, onEvent = () => {}, onFrame = () => {}, onState = () => {}, token = null,
                                 query = {}, reconnect = true, seq = 0, quietMs = 0 } = {}) {
  const proto = location.protocol === "https:" ? "wss:" : "ws:";
  const params = new URLSearchParams(query);
  if (token) params.set("token", token);
  const url = `${proto}//${location.host}${path}${params.toString() ? `?${params}` : ""}`;
  const merged = {}, sectionSeq = {};
  let ws = null, meta = null, lastSeq = seq, closed = false, delay = 500, timer = null, refusal = null;
  let lastFrameAt = Date.now();
  const quiet = quietMs > 0 ? setInterval(() => {
    if (ws?.readyState === WebSocket.OPEN && Date.now() - lastFrameAt >= quietMs) { lastFrameAt = Date.now(); resync(); }
  }, Math.min(quietMs, 1000)) : null;

  const apply = (f, fromSnapshot = false) => {
    for (const [name, data] of Object.entries(f.sections)) {
      if (fromSnapshot && (sectionSeq[name] ?? -1) > f.seq) continue;   // a newer frame already brought it
      merged[name] = data;
      sectionSeq[name] = f.seq;
    }
    const newer = f.seq >= lastSeq;
    if (newer) lastSeq = f.seq;
    lastFrameAt = Date.now();
    onFrame(newer ? f : { ...f, progress: null, status: null }, merged);
  };
  async function resync() {
    if (!meta?.snapshot) return;                         // an events-only stream (ws/runs/) keeps none
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
        if (msg.type === "error") { refusal = msg; return; }   // the server says why, then closes
        if (msg.type === "meta") {
          meta = msg; useProtocol(msg); onState("live"); onMeta(msg);
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
    ws.onclose = (ev) => {
      const why = { code: ev.code, reason: refusal?.detail || ev.reason || closeReason(ev.code) };
      refusal = null;
      if (closed) { onState("closed", null); return; }
      if (!reconnect || protocol().finalClose.has(ev.code)) { clearInterval(quiet); onState("closed", why); return; }
      onState("reconnecting", { ...why, retryMs: delay });
      timer = setTimeout(connect, delay);
      delay = Math.min(delay * 2, retryMaxMs());
    };
  }
  connect();
  return {
    close() { closed = true; clearTimeout(timer); clearInterval(quiet); if (ws) ws.close(); },
    socket() { return ws; },
  };
}
