// Downloads of what a page shows, the same on every page: CSV and JSON of a result table, PNG of a chart. One module
// that tables and charts register with (exportable(el)); it puts a small bar of download buttons above each one.
//   - tables: every <table class="data"> of a page registers by itself (found when it enters the page, however the
//     page drew it), except the inventory's lists (.inv-table: the API lists them whole) and tables marked
//     data-export="no". The CSV's header is the table's header as shown (rowspan/colspan spread over the columns);
//     the JSON is one object per row keyed by that header, numbers as numbers. A cell's data-value, when set, is
//     its value in place of the text shown.
//   - charts: chart.js's line and bar charts register in lineChart/barChart; a page's own SVG or canvas drawing
//     calls exportable(el) once (el: the svg, the canvas, or a box holding one). An SVG is drawn onto a canvas
//     with its computed styles inlined (so the PNG looks as the page does); a canvas is copied as it is.
// Nothing here names a page: a page gets the buttons by drawing a data table or registering its chart.

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
const cellText = (c) => c.dataset.value ?? c.textContent.replace(/\s+/g, " ").trim();

/** Rows of cells as text, a cell spanning several rows or columns repeated in each (the table as a grid). */
function grid(rows) {
  const out = [];
  rows.forEach((tr, r) => {
    const line = (out[r] ??= []);
    let c = 0;
    for (const cell of tr.cells) {
      while (line[c] !== undefined) c += 1;
      const text = cellText(cell), cs = Math.max(1, cell.colSpan), rs = Math.max(1, Math.min(cell.rowSpan || 1,
                                                                                               rows.length - r));
      for (let i = 0; i < rs; i++) for (let j = 0; j < cs; j++) (out[r + i] ??= [])[c + j] = text;
      c += cs;
    }
  });
  return out.map((line) => Array.from(line, (v) => v ?? ""));
}

/** A table as {header: [column names], rows: [[text]]}: the header from <thead> (its rows joined per column), else
 *  the first row when it is all <th>; hidden rows and a lone row spanning the table ("none", "loading…") left out. */
export function tableData(table) {
  let head = table.tHead ? [...table.tHead.rows] : [];
  let body = [...table.tBodies].flatMap((b) => [...b.rows]);
  if (!table.tHead && !table.tBodies.length) body = [...table.rows];
  if (!head.length && body.length && [...body[0].cells].every((c) => c.tagName === "TH") && body[0].cells.length > 1) {
    head = [body.shift()];
  }
  const hg = grid(head);
  const width = Math.max(0, ...hg.map((l) => l.length));
  const header = Array.from({ length: width }, (_, c) =>
    [...new Set(hg.map((l) => l[c]).filter(Boolean))].join(" ") || `column ${c + 1}`);
  const shown = body.filter((tr) => !tr.hidden && !(tr.cells.length === 1 && tr.cells[0].colSpan > 1));
  return { header, rows: grid(shown) };
}

/** A CSV field: quoted when it holds a separator, a quote or a line break; text that a spreadsheet would run as a
 *  formula (=, +, -, @ not starting a number) is prefixed with a quote mark. */
function csvField(v) {
  let s = String(v ?? "");
  if (/^[=+\-@]/.test(s) && !/^[+-]?[\d.,]+(e[+-]?\d+)?$/i.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export function toCsv({ header, rows }) {
  const lines = header.length ? [header, ...rows] : rows;
  return lines.map((l) => l.map(csvField).join(",")).join("\r\n") + "\r\n";
}

/** A cell's text as JSON: a plain number ("1,024", "-3.5", "2e9") as a number, anything else as the text. */
const jsonValue = (s) => (/^-?(\d{1,3}(,\d{3})+|\d+)?(\.\d+)?(e[+-]?\d+)?$/i.test(s) && /\d/.test(s)
  ? Number(s.replace(/,/g, "")) : s);

export function toJson({ header, rows }) {
  const out = header.length
    ? rows.map((r) => Object.fromEntries(header.map((h, i) => [h, jsonValue(r[i] ?? "")])))
    : rows.map((r) => r.map(jsonValue));
  return JSON.stringify(out, null, 1);
}

// ------------------------------------------------------------------------------------------------------ charts
/** The page's background colour, for the PNG (a chart is drawn on it, its text in light colours). */
function background(el) {
  for (let e = el; e; e = e.parentElement) {
    const c = getComputedStyle(e).backgroundColor;
    if (c && c !== "transparent" && !/rgba\(.*,\s*0\)$/.test(c)) return c;
  }
  return "#ffffff";
}

/** A canvas as PNG on the page's background, at least at the size the page shows it (a canvas of one pixel per
 *  GPU is scaled up, its pixels kept sharp). */
function canvasPng(src, bg) {
  const box = src.getBoundingClientRect?.() ?? { width: 0, height: 0 };
  const k = Math.max(1, Math.floor(Math.min(box.width / (src.width || 1), box.height / (src.height || 1))));
  const c = Object.assign(document.createElement("canvas"), { width: src.width * k, height: src.height * k });
  const ctx = c.getContext("2d");
  ctx.fillStyle = bg;
  ctx.fillRect(0, 0, c.width, c.height);
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(src, 0, 0, c.width, c.height);
  return new Promise((resolve, reject) => c.toBlob((b) => (b ? resolve(b) : reject(new Error("no PNG"))), "image/png"));
}

/** An SVG as PNG (twice its CSS size): a copy with its computed styles inlined, drawn on a canvas. */
async function svgPng(svg, bg) {
  const { width, height } = svg.getBoundingClientRect();
  const copy = svg.cloneNode(true), from = [svg, ...svg.querySelectorAll("*")], to = [copy, ...copy.querySelectorAll("*")];
  from.forEach((e, i) => {
    const cs = getComputedStyle(e);
    to[i].setAttribute("style", SVG_STYLE.map((p) => `${p}:${cs.getPropertyValue(p)}`).join(";"));
  });
  copy.setAttribute("xmlns", SVG_NS);
  copy.setAttribute("width", width);
  copy.setAttribute("height", height);
  const url = URL.createObjectURL(new Blob([new XMLSerializer().serializeToString(copy)], { type: "image/svg+xml" }));
  try {
    const img = new Image();
    img.src = url;
    await img.decode();
    const k = 2, c = Object.assign(document.createElement("canvas"), { width: Math.ceil(width * k),
                                                                        height: Math.ceil(height * k) });
    const ctx = c.getContext("2d");
    ctx.scale(k, k);
    ctx.drawImage(img, 0, 0, width, height);
    return await canvasPng(c, bg);
  } finally {
    URL.revokeObjectURL(url);
  }
}

/** The PNG of a chart: its svg or canvas (the element itself or the first inside it). */
export function chartPng(el) {
  const target = el.matches("svg, canvas") ? el : el.querySelector("svg, canvas");
  if (!target) return Promise.reject(new Error("nothing drawn yet"));
  const bg = background(el);
  return target.tagName.toLowerCase() === "canvas" ? canvasPng(target, bg) : svgPng(target, bg);
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

/** A new bar of buttons for a table or a chart; its buttons act on `bar.target`. */
function makeBar(table, name) {
  const bar = Object.assign(document.createElement("div"), { className: "export-bar" });
  bar.setAttribute("role", "group");
  bar.setAttribute("aria-label", "download");
  bar.dataset.kind = table ? "table" : "chart";
  bar.append(Object.assign(document.createElement("span"), { className: "muted", textContent: "download" }));
  if (table) {
    bar.append(button(bar, "csv", "download this table as CSV", (el) =>
      save(new Blob([toCsv(tableData(el))], { type: "text/csv" }), fileName(el, name, "csv"))),
    button(bar, "json", "download this table as JSON", (el) =>
      save(new Blob([toJson(tableData(el))], { type: "application/json" }), fileName(el, name, "json"))));
  } else {
    bar.append(button(bar, "png", "download this chart as PNG", async (el) =>
      save(await chartPng(el), fileName(el, name, "png"))));
  }
  return bar;
}

/**
 * Register `el` (a table, or a chart: an svg, a canvas, or a box holding one) for downloads: a bar of buttons above
 * it (CSV and JSON of a table, PNG of a chart), made once per element; a bar left above the same place by an
 * element the page has since replaced is taken over. opts: {name (the file's), kind ("table" | "chart", default
 * from the element)}. Returns the bar.
 */
export function exportable(el, { name, kind } = {}) {
  if (!el?.parentNode) return null;
  const known = bars.get(el);
  if (known?.isConnected) return known;
  const table = (kind ?? (el.tagName === "TABLE" ? "table" : "chart")) === "table";
  // above the table's scrolling box when it has one, so the bar stays in view
  const anchor = table && el.parentElement?.matches(".scroll, .table-scroll") ? el.parentElement : el;
  const before = anchor.previousElementSibling;
  const reuse = before?.classList.contains("export-bar") && before.dataset.kind === (table ? "table" : "chart")
    && !before.target?.isConnected;
  const bar = reuse ? before : makeBar(table, name);
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
