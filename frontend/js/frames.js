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
// Every code (magic, version, frame types, flags, sections, dtypes and their item sizes, statuses, GPU states, the
// link_util scale) comes from the server's tables (twin/live/frames.py tables()): embedded in each page
// (#live-protocol, web/base.html) and sent again in every stream's meta message. Nothing here repeats them.
// link_util as Uint8 is utilization * link_util_scale; as Float16 it is 0..1. The sections named in util_sections
// (link_util, frontend_util) are decoded to Float32Array 0..1; host_progress stays Uint8 (share x progress_scale,
// host_not_in_job outside the job); server_write/server_read are Float16 GB/s; checkpoint_phase is one code of
// checkpoint_phases. gpu_job (Uint16 per GPU) is 0 or the
// 1-based row of job_stats (Float32, rows of job_fields per training job: jobRows()). failure_state (one Float32 row
// of failure_fields: failureState()) and failure_events (rows of failure_event_fields: failureEvents()) follow a
// long job's timeline under failures, their codes in failure_states, failure_categories, item_kinds and
// failure_consequences. debug_progress is one Float32 row of debug_fields (debugRow()); debug_stop a
// Uint8 per GPU: lag 0..debug_lag_max, debug_culprit, debug_not_in_job.
// A section missing from a frame means "unchanged". seq jumping by more than 1 means frames were lost: fetch the
// REST snapshot (JSON with `frame_b64`, or `?binary=1`) and decode it with this same function.

const HEADER_BYTES = 32, SECTION_HEADER_BYTES = 8;     // the layout above
let tables = null;                                     // the protocol tables in use (useProtocol)

/** Take the server's protocol tables (a stream's meta message, or the page's #live-protocol): codes become Maps
 *  both ways. Returns them (as protocol() does). */
export function useProtocol(info) {
  const byCode = (t) => new Map(Object.entries(t).map(([code, v]) => [Number(code), v]));
  const byName = (t) => Object.fromEntries(Object.entries(t).map(([code, name]) => [name, Number(code)]));
  tables = {
    protocol: info.protocol, magic: Array.from(info.magic, (c) => c.charCodeAt(0)),
    frameType: byCode(info.frame_types), flag: byName(info.flags), section: byCode(info.sections),
    dtype: byCode(info.dtypes), itemSize: byCode(info.dtype_sizes),
    status: new Map(Object.entries(info.status_codes).map(([name, code]) => [code, name])),
    gpuState: byName(info.gpu_states),                  // name -> code: {idle, in_job, unusable}
    jobFields: info.job_fields ?? [], jobPhase: byCode(info.job_phases ?? {}),   // job_stats rows (training jobs)
    utilScale: info.link_util_scale, utilSections: new Set(info.util_sections),
    progressScale: info.progress_scale, hostNotInJob: info.host_not_in_job,
    checkpointPhase: byCode(info.checkpoint_phases),    // code -> name: staging, uploading, durable...
    // a long job under failures: failure_state (one row) and failure_events (one row per failure)
    failureFields: info.failure_fields ?? [], failureEventFields: info.failure_event_fields ?? [],
    failureState: byCode(info.failure_states ?? {}), failureCategory: byCode(info.failure_categories ?? {}),
    failureConsequence: byCode(info.failure_consequences ?? {}), itemKind: byCode(info.item_kinds ?? {}),
    debugFields: info.debug_fields ?? [], debugStage: byCode(info.debug_stages ?? {}),   // debug_progress row
    debugLagMax: info.debug_lag_max, debugCulprit: info.debug_culprit, debugNotInJob: info.debug_not_in_job,
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

/** Section data by dtype name: (buffer, DataView, offset, count, section name, tables) -> typed array. */
const READ = {
  uint8(buffer, v, off, count, name, p) {
    const data = new Uint8Array(buffer, off, count);
    if (!p.utilSections.has(name)) return data;       // link_util, frontend_util: quantized utilization
    const u = new Float32Array(count);                 // a plain loop: Float32Array.from with a map is ~20x slower
    for (let j = 0; j < count; j++) u[j] = data[j] / p.utilScale;
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

/** The rows of a job_stats section (Float32Array, one row of p.jobFields per job) as objects: job id, phase (its
 *  name), step_time_s, tokens_per_s, tflops_per_gpu, mfu, gpus; NaN becomes null. */
export function jobRows(stats, p = protocol()) {
  return rowsOf(stats, p.jobFields, { phase: p.jobPhase });
}

/** A failure_state section as one object of p.failureFields (state by name: training, checkpointing, down...),
 *  or null. */
export function failureState(data, p = protocol()) {
  return rowsOf(data, p.failureFields, { state: p.failureState })[0] ?? null;
}

/** A failure_events section as objects of p.failureEventFields: t_hours, category, item_kind and consequence by
 *  name, item (the item's position in its kind's order, -1: none), lost_hours. */
export function failureEvents(data, p = protocol()) {
  return rowsOf(data, p.failureEventFields,
                { category: p.failureCategory, item_kind: p.itemKind, consequence: p.failureConsequence });
}

/** The debug_progress section (Float32Array, one row of p.debugFields) as an object: stage (its name), the shares
 *  done 0..1 of simulating, dumping and analyzing, ranks. null without the section. */
export function debugRow(row, p = protocol()) {
  if (!row || row.length < p.debugFields.length) return null;
  const r = Object.fromEntries(p.debugFields.map((name, j) => [name, row[j]]));
  r.stage = p.debugStage.get(r.stage) ?? "unknown";
  return r;
}

/** Decode one frame (ArrayBuffer) into {type, seq, runId, clusterId, progress, status, final, timeMs, sections}
 *  with the protocol tables `p` (default: protocol()). sections.link_util is a Float32Array in 0..1 whatever the
 *  wire dtype; sections.gpu_state a Uint8Array of the codes of `p.gpuState`. */
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
    frame.sections[name] = read(buffer, v, off, count, name, p);
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

// ---------------------------------------------------------------------------------------------------------------
// adapter until the generic sections land: the generic section API (sectionSpec, sectionRows, sectionRow,
// sectionCodeName, sectionCodes, sectionConstants) over today's per-capability tables of useProtocol(), so that
// code written against it works now. The generic frames.js replaces this whole block.
const ADAPTED = {
  // name: (tables) -> {fields, codes: {field: Map code -> name}, constants}
  gpu_state: (p) => ({ codes: { value: new Map(Object.entries(p.gpuState).map(([k, v]) => [v, k])) } }),
  job_stats: (p) => ({ fields: p.jobFields, codes: { phase: p.jobPhase } }),
  host_progress: (p) => ({ constants: { scale: p.progressScale, not_in_job: p.hostNotInJob } }),
  checkpoint_phase: (p) => ({ codes: { value: p.checkpointPhase } }),
  failure_state: (p) => ({ fields: p.failureFields, codes: { state: p.failureState } }),
  failure_events: (p) => ({ fields: p.failureEventFields, codes: { category: p.failureCategory,
                                                                   item_kind: p.itemKind,
                                                                   consequence: p.failureConsequence } }),
  debug_progress: (p) => ({ fields: p.debugFields, codes: { stage: p.debugStage } }),
  debug_stop: (p) => ({ constants: { lag_max: p.debugLagMax, culprit: p.debugCulprit, not_in_job: p.debugNotInJob } }),
  link_util: (p) => ({ constants: { scale: p.utilScale } }),
};

/** A section's declaration: {name, fields, codes (field -> Map code -> name), constants}. */
export function sectionSpec(name, p = protocol()) {
  const s = ADAPTED[name]?.(p) ?? {};
  return { name, fields: s.fields ?? [], codes: s.codes ?? {}, constants: s.constants ?? {} };
}

/** A Float32 section of rows as objects (codes by name, NaN -> null). */
export function sectionRows(name, data) {
  const s = sectionSpec(name);
  return rowsOf(data, s.fields, s.codes);
}

/** A section of rows' first row, or null. */
export function sectionRow(name, data) { return sectionRows(name, data)[0] ?? null; }

/** A one-code section's code by name (null without the section). */
export function sectionCodeName(name, data) {
  if (!data?.length) return null;
  return sectionSpec(name).codes.value?.get(data[0]) ?? "unknown";
}

/** A section's codes of `field`: {byCode: Map code -> name, byName: {name: code}}. */
export function sectionCodes(name, field = "value") {
  const byCode = sectionSpec(name).codes[field] ?? new Map();
  return { byCode, byName: Object.fromEntries([...byCode].map(([code, n]) => [n, code])) };
}

/** A section's constants, e.g. host_progress {scale, not_in_job}, debug_stop {lag_max, culprit, not_in_job}. */
export function sectionConstants(name) { return sectionSpec(name).constants; }
