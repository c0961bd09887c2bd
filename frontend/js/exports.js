// Downloads of what a page shows, the same on every page: CSV and JSON of a result table, PNG of a chart. One module
// that tables and charts register with (exportable(el)); it puts a small bar of download buttons above each one.
//   - tables: every <table class="data"> of a page registers by itself (found when it enters the page, however the
//     page drew it), except the inventory's lists (.inv-table: the API lists them whole) and tables marked
//     data-export="no". Values, not display strings: see "tables" below.
//   - charts: chart.js's line and bar charts register in lineChart/barChart (with their title, units and picture:
//     the plot and its legend); a page's own SVG or canvas drawing calls exportable(el) once (el: the svg, the
//     canvas, or a box holding one). An SVG is copied with its computed styles inlined (so it looks as the page
//     does) and also downloads as SVG; a canvas is copied as it is. Every chart download carries a title band: the
//     chart's title, the cluster and run it shows, its units and the date (caption()).
// Nothing here names a page: a page gets the buttons by drawing a data table or registering its chart.

import { DISPLAY, fmt } from "./fmt.js";

const SVG_NS = "http://www.w3.org/2000/svg";
const TABLES = "table.data:not(.inv-table):not([data-export=no])";
const SVG_STYLE = ["fill", "fill-opacity", "stroke", "stroke-width", "stroke-dasharray", "stroke-opacity", "opacity",
                   "font-family", "font-size", "font-weight", "text-anchor", "dominant-baseline", "visibility"];
const bars = new WeakMap();                         // element -> its button bar

/** Text to a file name part: "Zone table" -> "zone-table". */
function slug(s) {
  return String(s ?? "").toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-|-$/g, "").slice(0, 60);
}

/** What a download of `el` is called: the page, then the element's name (data-export-name, its id, the heading
 *  above it), e.g. "run-12-results-table". */
function fileName(el, name, ext) {
  const heading = el.closest("section, .panel")?.querySelector("h2, h3")?.textContent;
  const part = slug(name ?? el.dataset.exportName ?? el.id ?? "") || slug(heading) || (ext === "png" ? "chart" : "table");
  const page = slug(document.title.split("·")[0]) || "twin";
  return `${page}-${part}.${ext}`;
}

/** Hand a blob to the browser as a download named `name`. */
export function save(blob, name) {
  const a = Object.assign(document.createElement("a"), { href: URL.createObjectURL(blob), download: name });
  a.hidden = true;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 30000);
}

// ------------------------------------------------------------------------------------------------------ tables
// A download carries values, not the text shown: numbers in the file unit of their quantity (the server's table,
// sim/core/display.py: bytes, GBps, s, W...) with that unit in the column's name (`busbw_GBps`, `time_s`), moments
// as ISO 8601 UTC, and who made it (the twin's version, the cluster, the run and its parameters, when it was made).
// A cell's value is, in order: its data-value (in the unit its column's th names with data-quantity, else as it
// is), the datetime of a <time> in it, the value of a <data> in it, else its text read back through the table
// ("1.2 GB/s" -> 1.2 in GBps, "764 MiB" -> 801112064 bytes, "3 min" -> 180 s, "40 %" -> 40 pct).

/** Every label people read -> [quantity, its size in the quantity's file unit], from the server's table. */
const LABELS = new Map(Object.entries(DISPLAY.quantities).flatMap(([name, q]) =>
  q.ladder.map(([label, size]) => [label, [name, size]])));
const NUMBER = /^[-+]?(\d{1,3}(,\d{3})+|\d+)?(\.\d+)?(e[+-]?\d+)?$/i;

/** Text as a number when it is one ("1,024", "-3.5", "2e9"), else null. */
const numberOf = (s) => (NUMBER.test(s) && /\d/.test(s) ? Number(s.replace(/,/g, "")) : null);

/** A cell as {value, quantity}: quantity (a name of the table) when the value is in its file unit. */
function cellValue(c, quantity) {
  if (c.dataset.value !== undefined) {
    const n = numberOf(c.dataset.value);
    return { value: n ?? c.dataset.value, quantity: n == null ? null : quantity };
  }
  const time = c.querySelector("time[datetime]");
  if (time) return { value: new Date(time.dateTime).toISOString().replace(/\.000Z$/, "Z"), quantity: "moment" };
  const data = c.querySelector("data[value]");
  if (data) return { value: numberOf(data.value) ?? data.value, quantity };
  const text = c.textContent.replace(/\s+/g, " ").trim();
  const n = numberOf(text);
  if (n != null) return { value: n, quantity: null };
  const m = text.match(/^([-+]?[\d,]*\.?\d+(?:e[+-]?\d+)?)\s*(\S+)$/i);
  const unit = m && LABELS.get(m[2]);
  if (unit && numberOf(m[1]) != null) return { value: +(numberOf(m[1]) * unit[1]).toPrecision(12), quantity: unit[0] };
  return { value: text === "–" ? null : text, quantity: null };
}

/** Rows of cells (their {value, quantity}), a cell spanning several rows or columns repeated in each (the table
 *  as a grid); `read(cell, column)` reads a cell. */
function grid(rows, read) {
  const out = [];
  rows.forEach((tr, r) => {
    const line = (out[r] ??= []);
    let c = 0;
    for (const cell of tr.cells) {
      while (line[c] !== undefined) c += 1;
      const v = read(cell, c), cs = Math.max(1, cell.colSpan), rs = Math.max(1, Math.min(cell.rowSpan || 1,
                                                                                         rows.length - r));
      for (let i = 0; i < rs; i++) for (let j = 0; j < cs; j++) (out[r + i] ??= [])[c + j] = v;
      c += cs;
    }
  });
  return out.map((line) => Array.from(line, (v) => v ?? { value: null, quantity: null }));
}

/** The unit a header names at its end, in parentheses ("time (us)" -> "us"), or undefined. */
const headerUnit = (header) => header.match(/\(([^)]*)\)\s*$/)?.[1];

/** A column's name in a file: the header as shown, in snake case, its unit in parentheses dropped, the unit of its
 *  values' quantity added ("busbw (GB/s)" of rates -> "busbw_GBps"; "finished" of moments -> "finished_utc"). */
function columnName(header, quantity) {
  const base = header.replace(/\(([^)]*)\)\s*$/, "").trim().toLowerCase().replace(/[^a-z0-9]+/g, "_")
    .replace(/^_|_$/g, "") || "column";
  if (quantity === "moment") return `${base}_utc`;
  const unit = DISPLAY.quantities[quantity]?.unit
    ?? headerUnit(header)?.replace(/%/g, "pct").replace(/\//g, "p").replace(/[^A-Za-z0-9]+/g, "_");
  return unit && !base.endsWith(`_${unit.toLowerCase()}`) ? `${base}_${unit}` : base;
}

/** A table as {header (as shown), columns (names in files), quantities, rows: [[value]]}: the header from <thead>
 *  (its rows joined per column), else the first row when it is all <th>; hidden rows and a lone row spanning the
 *  table ("none", "loading…") left out. A column whose header ends in a unit people read ("time (ms)") and whose
 *  cells are plain numbers is read in that unit. */
export function tableData(table) {
  let head = table.tHead ? [...table.tHead.rows] : [];
  let body = [...table.tBodies].flatMap((b) => [...b.rows]);
  if (!table.tHead && !table.tBodies.length) body = [...table.rows];
  if (!head.length && body.length && [...body[0].cells].every((c) => c.tagName === "TH") && body[0].cells.length > 1) {
    head = [body.shift()];
  }
  const hg = grid(head, (c) => ({ value: c.textContent.replace(/\s+/g, " ").trim(), quantity: c.dataset.quantity }));
  const width = Math.max(0, ...hg.map((l) => l.length));
  const header = Array.from({ length: width }, (_, c) =>
    [...new Set(hg.map((l) => l[c]?.value).filter(Boolean))].join(" ") || `column ${c + 1}`);
  const declared = Array.from({ length: width }, (_, c) => hg.map((l) => l[c]?.quantity).find(Boolean) ?? null);
  const shown = body.filter((tr) => !tr.hidden && !(tr.cells.length === 1 && tr.cells[0].colSpan > 1));
  const cells = grid(shown, (cell, c) => cellValue(cell, declared[c]));
  const quantities = header.map((h, c) => {
    const found = new Set(cells.map((r) => r[c]).filter((v) => v.value != null && v.value !== "").map((v) => v.quantity));
    if (found.size === 1 && [...found][0]) return [...found][0];
    const unit = LABELS.get(headerUnit(h));
    if (unit && found.size === 1 && found.has(null)) {             // plain numbers in a unit the header names
      cells.forEach((r) => { if (typeof r[c].value === "number") r[c].value = +(r[c].value * unit[1]).toPrecision(12); });
      return unit[0];
    }
    return null;
  });
  return { header, columns: header.map((h, c) => columnName(h, quantities[c])), quantities,
           rows: cells.map((r) => r.map((v) => v.value)) };
}

/** Who made a download and of what: the twin's version, the page, the cluster, the run (its kind and parameters,
 *  asked of the API) and when. */
export async function metadata() {
  const meta = { twin_version: document.body.dataset.version || null, page: document.title.split("·")[0].trim(),
                 url: location.href, cluster: document.body.dataset.cluster || null,
                 exported_utc: new Date().toISOString().replace(/\.\d+Z$/, "Z") };
  const runId = document.querySelector("[data-run-id]")?.dataset.runId;
  if (runId) {
    meta.run_id = Number(runId);
    try {
      const run = await (await fetch(`/api/runs/${runId}/`, { headers: { Accept: "application/json" } })).json();
      Object.assign(meta, { run_kind: run.kind, run_params: run.params });
    } catch { /* the download goes on with what the page knows */ }
  }
  return meta;
}

/** A CSV field: quoted when it holds a separator, a quote or a line break; text that a spreadsheet would run as a
 *  formula (=, +, -, @ not starting a number) is prefixed with a quote mark. */
function csvField(v) {
  let s = v == null ? "" : typeof v === "object" ? JSON.stringify(v) : String(v);
  if (/^[=+\-@]/.test(s) && !/^[+-]?[\d.,]+(e[+-]?\d+)?$/i.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

const CSV_LEFT_OUT = new Set(["page", "url"]);        // the file's name says them; the JSON's metadata has them

/** The CSV of a table: one header line of column names (units in them), one line per row, and the metadata as
 *  columns of their own on every row (so a file read alone, or many concatenated, still says what made each row);
 *  pandas' read_csv reads it as it is. */
export function toCsv({ columns, rows }, meta = {}) {
  const extra = Object.entries(meta).filter(([k]) => !columns.includes(k) && !CSV_LEFT_OUT.has(k));
  const lines = [[...columns, ...extra.map(([k]) => k)], ...rows.map((r) => [...r, ...extra.map(([, v]) => v)])];
  return lines.map((l) => l.map(csvField).join(",")).join("\r\n") + "\r\n";
}

/** The JSON of a table: {metadata, columns: [{name, header (as shown), unit}], rows: [{name: value}]}. */
export function toJson({ header, columns, quantities, rows }, meta = {}) {
  return JSON.stringify({
    metadata: meta,
    columns: columns.map((name, i) => ({ name, header: header[i],
      unit: quantities[i] === "moment" ? "ISO 8601 UTC" : DISPLAY.quantities[quantities[i]]?.unit ?? null })),
    rows: rows.map((r) => Object.fromEntries(columns.map((c, i) => [c, r[i] ?? null]))),
  }, null, 1);
}

// ------------------------------------------------------------------------------------------------------ charts
const meta = new WeakMap();                         // chart element -> {title, units, picture} (exportable's opts)

/** The page's background colour, for the PNG (a chart is drawn on it, its text in light colours). */
function background(el) {
  for (let e = el; e; e = e.parentElement) {
    const c = getComputedStyle(e).backgroundColor;
    if (c && c !== "transparent" && !/rgba\(.*,\s*0\)$/.test(c)) return c;
  }
  return "#ffffff";
}

/** What a chart's download says above it: its title (the chart's own, else the heading above it), then the cluster
 *  and the run it shows (the nearest data-cluster / data-run around it: a run's panel, the page's body; else a run
 *  page's data-run-id), its units (the axes' titles) and the date it was taken (fmt.time). Returns {title,
 *  details: [text], at (ISO 8601)}. */
export function caption(el) {
  const m = meta.get(el) ?? {};
  const heading = el.closest("section, .panel")?.querySelector("h2, h3")?.textContent.replace(/\s+/g, " ").trim();
  const title = m.title || heading || document.title.split("·")[0].trim() || "chart";
  const cluster = el.closest("[data-cluster]:not([data-cluster=''])")?.dataset.cluster;
  const run = el.closest("[data-run]:not([data-run=''])")?.dataset.run
    ?? document.querySelector("[data-run-id]")?.dataset.runId;      // a run's page
  const units = (typeof m.units === "function" ? m.units() : [m.units]).filter(Boolean);
  const runs = run?.split(",").map((r) => `#${r.trim()}`) ?? [];
  const runText = runs.length > 3 ? `${runs.length} runs, ${runs[0]} to ${runs.at(-1)}`
    : runs.length ? `${runs.length > 1 ? "runs" : "run"} ${runs.join(", ")}` : "";
  const at = new Date().toISOString();
  return { title, at, details: [cluster && `cluster ${cluster}`, runText, ...units, fmt.time(at)].filter(Boolean) };
}

/** The caption's details in lines that fit `width` px in `font` (items joined by " · ", never split). */
function captionLines(details, width, font) {
  const ctx = document.createElement("canvas").getContext("2d");
  ctx.font = font;
  const lines = [];
  for (const d of details) {
    const line = lines.length ? `${lines.at(-1)} · ${d}` : d;
    if (lines.length && ctx.measureText(line).width <= width) lines[lines.length - 1] = line;
    else lines.push(d);
  }
  return lines;
}

// The title band (CSS px): its padding, the title's size, each detail line's height; detailY(i): line i's top.
const BAND = { pad: 10, title: 15, line: 16, detail: 12 };
const detailY = (i) => BAND.pad + BAND.title + 6 + i * BAND.line;
const bandHeight = (lines) => detailY(lines.length) + BAND.pad;
const family = () => getComputedStyle(document.body).fontFamily || "sans-serif";
const cssVar = (name, fallback) => getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;

/** A chart's canvas `src` with the title band above it (`k`: canvas pixels per CSS pixel), on `bg`. */
function withBand(src, cap, k, bg) {
  const detailFont = `${BAND.detail * k}px ${family()}`;
  const lines = captionLines(cap.details, src.width - 2 * BAND.pad * k, detailFont);
  const bandH = Math.ceil(bandHeight(lines) * k);
  const c = Object.assign(document.createElement("canvas"), { width: src.width, height: src.height + bandH });
  const ctx = c.getContext("2d");
  ctx.fillStyle = bg;
  ctx.fillRect(0, 0, c.width, c.height);
  ctx.textBaseline = "top";
  ctx.fillStyle = cssVar("--text", "#000");
  ctx.font = `600 ${BAND.title * k}px ${family()}`;
  ctx.fillText(cap.title, BAND.pad * k, BAND.pad * k, src.width - 2 * BAND.pad * k);
  ctx.fillStyle = cssVar("--muted", "#555");
  ctx.font = detailFont;
  lines.forEach((l, i) => ctx.fillText(l, BAND.pad * k, detailY(i) * k));
  ctx.drawImage(src, 0, bandH);
  return c;
}

let crcTable = null;
/** CRC-32 of bytes (a PNG chunk's check). */
function crc32(bytes) {
  crcTable ??= Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  let c = 0xffffffff;
  for (const b of bytes) c = crcTable[(c ^ b) & 255] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** A PNG iTXt chunk (UTF-8 text, uncompressed) `keyword`: `text`. */
function textChunk(keyword, text) {
  const enc = new TextEncoder(), data = [...enc.encode(keyword), 0, 0, 0, 0, 0, ...enc.encode(text)];
  const out = new Uint8Array(12 + data.length), dv = new DataView(out.buffer);
  dv.setUint32(0, data.length);
  out.set(enc.encode("iTXt"), 4);
  out.set(data, 8);
  dv.setUint32(8 + data.length, crc32(out.subarray(4, 8 + data.length)));
  return out;
}

const PNG_HEADER = 33;                              // the signature (8 bytes) and the IHDR chunk (25)

/** A canvas as PNG, the caption also written in it as text (Title, Description, Creation Time, Software: PNG's
 *  keywords), for a program that reads the file. */
async function toPng(c, cap) {
  const blob = await new Promise((resolve, reject) => c.toBlob((b) => (b ? resolve(b) : reject(new Error("no PNG"))),
                                                               "image/png"));
  const bytes = new Uint8Array(await blob.arrayBuffer());
  const text = [["Title", cap.title], ["Description", cap.details.join(" · ")],
                ["Creation Time", cap.at], ["Software", "cluster twin"]].map(([k, v]) => textChunk(k, v));
  return new Blob([bytes.subarray(0, PNG_HEADER), ...text, bytes.subarray(PNG_HEADER)], { type: "image/png" });
}

/** A canvas on the page's background, at least at the size the page shows it (a canvas of one pixel per GPU is
 *  scaled up, its pixels kept sharp). */
function canvasCopy(src, bg) {
  const box = src.getBoundingClientRect?.() ?? { width: 0, height: 0 };
  const k = Math.max(1, Math.floor(Math.min(box.width / (src.width || 1), box.height / (src.height || 1))));
  const c = Object.assign(document.createElement("canvas"), { width: src.width * k, height: src.height * k });
  const ctx = c.getContext("2d");
  ctx.fillStyle = bg;
  ctx.fillRect(0, 0, c.width, c.height);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(src, 0, 0, c.width, c.height);
  return c;
}

/** An SVG chart as a standalone SVG document with the title band above it: a copy with its computed styles inlined
 *  (so it looks as the page does), on the page's background. Returns {text, width, height}. */
export function svgDocument(svg, cap, bg) {
  const { width, height } = svg.getBoundingClientRect();
  const copy = svg.cloneNode(true), from = [svg, ...svg.querySelectorAll("*")], to = [copy, ...copy.querySelectorAll("*")];
  from.forEach((e, i) => {
    const cs = getComputedStyle(e);
    to[i].setAttribute("style", SVG_STYLE.map((p) => `${p}:${cs.getPropertyValue(p)}`).join(";"));
  });
  const lines = captionLines(cap.details, width - 2 * BAND.pad, `${BAND.detail}px ${family()}`);
  const bandH = Math.ceil(bandHeight(lines)), H = height + bandH;
  const el = (tag, attrs, text) => {
    const e = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text != null) e.textContent = text;
    return e;
  };
  const font = `font-family:${family()};dominant-baseline:hanging`;
  const out = el("svg", { xmlns: SVG_NS, width, height: H, viewBox: `0 0 ${width} ${H}` });
  out.append(el("rect", { width, height: H, fill: bg }),
             el("text", { x: BAND.pad, y: BAND.pad, class: "export-title",
                          style: `${font};font-size:${BAND.title}px;font-weight:600;fill:${cssVar("--text", "#000")}` },
                cap.title),
             ...lines.map((l, i) => el("text", { x: BAND.pad, y: detailY(i), class: "export-detail",
                                                 style: `${font};font-size:${BAND.detail}px;`
                                                   + `fill:${cssVar("--muted", "#555")}` }, l)));
  Object.entries({ x: 0, y: bandH, width, height }).forEach(([k, v]) => copy.setAttribute(k, v));
  out.append(copy);
  return { text: new XMLSerializer().serializeToString(out), width, height: H };
}

/** An SVG drawn on a canvas, twice its CSS size (its band included). */
async function svgCanvas(doc) {
  const url = URL.createObjectURL(new Blob([doc.text], { type: "image/svg+xml" }));
  try {
    const img = new Image();
    img.src = url;
    await img.decode();
    const k = 2, c = Object.assign(document.createElement("canvas"), { width: Math.ceil(doc.width * k),
                                                                        height: Math.ceil(doc.height * k) });
    c.getContext("2d").drawImage(img, 0, 0, c.width, c.height);
    return c;
  } finally {
    URL.revokeObjectURL(url);
  }
}

/** The drawing a chart's download takes: its own picture (a chart that registered one: chart.js), else its svg or
 *  canvas (the element itself or the first inside it). */
function drawing(el) {
  const target = el.matches("svg, canvas") ? el : el.querySelector("svg, canvas");
  if (!meta.get(el)?.picture && !target) throw new Error("nothing drawn yet");
  return target;
}

/** The PNG of a chart, its title band above it (caption: title, cluster, run, units, date). */
export async function chartPng(el) {
  const target = drawing(el), bg = background(el), cap = caption(el), pic = meta.get(el)?.picture;
  if (!pic && target.tagName.toLowerCase() === "svg") return toPng(await svgCanvas(svgDocument(target, cap, bg)), cap);
  const c = pic ? pic() : canvasCopy(target, bg);
  const k = Math.max(1, c.width / Math.max(1, el.getBoundingClientRect().width));
  return toPng(withBand(c, cap, k, bg), cap);
}

/** The SVG file of an SVG chart, its title band above it. */
export function chartSvg(el) {
  const svg = el.matches("svg") ? el : el.querySelector("svg");
  if (!svg) throw new Error("nothing drawn yet");
  return new Blob([svgDocument(svg, caption(el), background(el)).text], { type: "image/svg+xml" });
}

// ------------------------------------------------------------------------------------------------ the buttons
function button(bar, format, title, run) {
  const b = Object.assign(document.createElement("button"), { type: "button", className: "link",
                                                              textContent: format.toUpperCase(), title });
  b.dataset.export = format;
  b.addEventListener("click", () => Promise.resolve().then(() => run(bar.target)).catch((e) => {
    console.warn(`download ${format}: ${e.message}`);
    b.title = `${title}: ${e.message}`;
  }));
  return b;
}

/** A new bar of buttons for a table or a chart (`svg`: drawn as SVG, which it also downloads as); its buttons act on
 *  `bar.target`. */
function makeBar(table, name, svg) {
  const bar = Object.assign(document.createElement("div"), { className: "export-bar" });
  bar.setAttribute("role", "group");
  bar.setAttribute("aria-label", "download");
  bar.dataset.kind = table ? "table" : "chart";
  bar.append(Object.assign(document.createElement("span"), { className: "muted", textContent: "download" }));
  if (table) {
    bar.append(button(bar, "csv", "download this table as CSV", async (el) =>
      save(new Blob([toCsv(tableData(el), await metadata())], { type: "text/csv" }), fileName(el, name, "csv"))),
    button(bar, "json", "download this table as JSON", async (el) =>
      save(new Blob([toJson(tableData(el), await metadata())], { type: "application/json" }),
           fileName(el, name, "json"))));
  } else {
    bar.append(button(bar, "png", "download this chart as PNG (a title band says what, where and when)",
                      async (el) => save(await chartPng(el), fileName(el, name, "png"))));
    if (svg) {
      bar.append(button(bar, "svg", "download this chart as SVG (a title band says what, where and when)",
                        (el) => save(chartSvg(el), fileName(el, name, "svg"))));
    }
  }
  return bar;
}

/**
 * Register `el` (a table, or a chart: an svg, a canvas, or a box holding one) for downloads: a bar of buttons above
 * it (CSV and JSON of a table; PNG of a chart, and SVG of an SVG chart, each with a title band), made once per
 * element; a bar left above the same place by an element the page has since replaced is taken over. opts: {name
 * (the file's), kind ("table" | "chart", default from the element), and for a chart: title (default: the heading
 * above it), units (text, or a function giving a list: the axes' titles), picture (a function giving the canvas to
 * download, e.g. the plot with its legend: chart.js)}. Returns the bar.
 */
export function exportable(el, { name, kind, title, units, picture } = {}) {
  if (!el?.parentNode) return null;
  meta.set(el, { title, units, picture });
  const known = bars.get(el);
  if (known?.isConnected) return known;
  const table = (kind ?? (el.tagName === "TABLE" ? "table" : "chart")) === "table";
  const svg = !table && !picture
    && (el.matches("svg") || (!el.matches("canvas") && !!el.querySelector(":scope > svg")));
  // above the table's scrolling box when it has one, so the bar stays in view
  const anchor = table && el.parentElement?.matches(".scroll, .table-scroll") ? el.parentElement : el;
  const before = anchor.previousElementSibling;
  const reuse = before?.classList.contains("export-bar") && before.dataset.kind === (table ? "table" : "chart")
    && !before.target?.isConnected && !!before.querySelector("[data-export=svg]") === svg;
  const bar = reuse ? before : makeBar(table, name, svg);
  bar.target = el;
  if (el.id) bar.dataset.exportFor = el.id; else delete bar.dataset.exportFor;
  if (!reuse && /grid|flex/.test(getComputedStyle(anchor.parentElement).display)) {
    // in a grid or a row, the bar and its element share the element's cell
    const cell = Object.assign(document.createElement("div"), { className: "export-cell" });
    anchor.before(cell);
    cell.append(bar, anchor);
  } else if (!reuse) anchor.before(bar);
  bars.set(el, bar);
  el.dataset.exportable = table ? "table" : "chart";
  return bar;
}

/** Register every data table under `root` (and root itself). */
function scan(root) {
  if (root.matches?.(TABLES)) exportable(root);
  for (const t of root.querySelectorAll?.(TABLES) ?? []) exportable(t);
}

if (globalThis.document?.body) {
  scan(document.body);
  new MutationObserver((records) => {
    for (const r of records) for (const n of r.addedNodes) if (n.nodeType === 1 && n.className !== "export-bar") scan(n);
  }).observe(document.body, { childList: true, subtree: true });
}
