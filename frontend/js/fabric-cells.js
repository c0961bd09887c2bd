// Table rows of the fabric page whose cells follow the live data. A live cell is a function of its <td> that returns
// the cell's updater. Rows of long tables ("lazy") update on each frame only while on screen (a zone's 192 racks
// would otherwise cost more than the rest of a frame) and at once when they scroll into view; others always.
import { COLORS, fmt, utilCss } from "./twin.js";

const always = new Set(), onScreen = new Set();
const observer = new IntersectionObserver((entries) => {
  for (const e of entries) {
    const row = e.target.liveRow;
    if (e.isIntersecting) { onScreen.add(row); row.update(); } else onScreen.delete(row);
  }
});

/** A utilization as text: "–" without data, one decimal under 10 %. */
export const pct = (u, hasData = true) => (hasData ? fmt.pct(u, u < 0.1 ? 1 : 0) : "–");

/** Rows built from [{key, title, cells}], a cell being HTML or a live cell; onClick(key) makes them clickable. */
export class LiveRows {
  constructor(tbody, rows, { onClick = null, lazy = false } = {}) {
    this.rows = rows.map(({ cells, key, title }) => {
      const tr = tbody.insertRow(), updaters = [];
      if (onClick) { tr.className = "clickable"; tr.addEventListener("click", () => onClick(key)); }
      if (title) tr.title = title;
      tr.dataset.key = key;
      for (const c of cells) {
        const td = tr.insertCell();
        if (typeof c === "function") updaters.push(c(td));
        else td.innerHTML = c;
      }
      const row = { tr, update: () => updaters.forEach((u) => u()) };
      tr.liveRow = row;
      row.update();
      if (lazy) observer.observe(tr); else always.add(row);
      return row;
    });
  }

  /** Stop following these rows (before they are replaced). */
  drop() {
    for (const row of this.rows) { observer.unobserve(row.tr); onScreen.delete(row); always.delete(row); }
    this.rows = [];
  }
}

/** Update the live rows: all of the short tables, those on screen of the long ones. */
export function updateRows() {
  for (const row of always) row.update();
  for (const row of onScreen) row.update();
}

/** A utilization cell: a colour swatch and the percentage of value(); dim without data (hasData()). */
export const utilCell = (value, hasData) => (td) => {
  td.classList.add("num", "util");
  td.innerHTML = '<i class="swatch"></i><span></span>';
  const [swatch, text] = td.children;
  return () => {
    const u = value(), data = hasData();
    swatch.style.background = data ? utilCss(u) : COLORS.none;
    text.textContent = pct(u, data);
  };
};

/** A count of non-active links ("down" or "down / all" from counts()), red when any; formatted only on a
 *  change (number formatting costs more than the rest of a row). */
export const countCell = (counts) => (td) => {
  td.className = "num";
  let last = "";
  return () => {
    const c = counts(), key = c.join("/");
    if (key === last) return;
    last = key;
    td.textContent = c.map((n) => fmt.int(n)).join(" / ");
    td.classList.toggle("bad", c[0] > 0);
  };
};
