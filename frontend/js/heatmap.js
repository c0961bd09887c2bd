// A canvas heatmap of one link tier: rows are the tier's lower switches, in blocks by zone (blocks wrap into a grid
// to fit the width, each labelled), columns are each row's links of the tier. One canvas pixel per link, scaled by
// CSS (pixelated), so a frame is one typed-array loop and one putImageData. A second canvas on top, at screen
// resolution, rings the non-active links and marks the selected row and the hovered cell; it is redrawn only when
// those change.
import { COLORS, cssPixel, UTIL_PIXEL } from "./twin.js";
import { exportable } from "./exports.js";

const NON_ACTIVE = cssPixel(COLORS.failed), NO_DATA = cssPixel(COLORS.none);
const LABEL_PX = 15, GAP_PX = 6, MAX_CELL_W = 24, MAX_CELL_H = 12, MAX_ASPECT = 4;

/** The grid geometry for blocks of blockRows x cols cells within width x maxHeight: blocks per grid row and the
 *  cell size (at most MAX_ASPECT times wider than tall or the other way round). It maximizes the cell area per grid
 *  row, so zones stay side by side (comparable across tiers) unless wrapping makes the cells much larger. */
function geometry(nBlocks, blockRows, cols, width, maxHeight) {
  let best = null;
  for (let perRow = 1; perRow <= nBlocks; perRow++) {
    const gridRows = Math.ceil(nBlocks / perRow);
    const fitW = Math.min(MAX_CELL_W, Math.floor((width - (perRow - 1) * GAP_PX) / (perRow * cols)));
    const fitH = Math.min(MAX_CELL_H, Math.floor((maxHeight - gridRows * LABEL_PX) / (gridRows * blockRows)));
    if (fitW < 1 || fitH < 1) continue;
    let cellW = Math.min(fitW, MAX_ASPECT * fitH);
    while (cellW > 1 && cellW * (perRow * cols + (perRow - 1) * Math.ceil(GAP_PX / cellW)) > width) cellW--;
    const cellH = Math.min(fitH, MAX_ASPECT * cellW);
    const score = (cellW * cellH) / gridRows;
    if (!best || score > best.score) best = { perRow, gridRows, cellW, cellH, score };
  }
  // Nothing fits (a huge tier): one pixel per cell, the blocks in as few grid rows as the width allows.
  if (!best) {
    const perRow = Math.max(1, Math.min(nBlocks, Math.floor(width / (cols + GAP_PX))));
    best = { perRow, gridRows: Math.ceil(nBlocks / perRow), cellW: 1, cellH: 1 };
  }
  best.gapCols = Math.ceil(GAP_PX / best.cellW);
  best.labelRows = Math.ceil(LABEL_PX / best.cellH);
  return best;
}

export class TierHeatmap {
  /** host: the element to draw into. blocks: [{label, rows: switch indexes in display order}]. links: this tier's
   *  link indexes; rowOf/colOf: per link (all links), its row switch and its column. onHover(link, event) (-1 when
   *  leaving), onClick(link, switchIndex). */
  constructor(host, { tier, blocks, cols, links, rowOf, colOf, onHover, onClick }) {
    Object.assign(this, { host, tier, blocks, cols, links, rowOf, colOf });
    this.blockRows = Math.max(1, ...blocks.map((b) => b.rows.length));
    this.rowBlock = new Map();                   // switch index -> [block, row in block]
    blocks.forEach((b, k) => b.rows.forEach((s, r) => this.rowBlock.set(s, [k, r])));
    this.selected = -1;
    this.hover = -1;
    this.nonActive = [];

    host.classList.add("heatmap-wrap");
    this.canvas = document.createElement("canvas");
    this.canvas.className = "heatmap";
    this.canvas.dataset.tier = tier.name;
    this.canvas.dataset.links = String(links.length);
    this.canvas.setAttribute("role", "img");
    this.canvas.setAttribute("aria-label", `utilization of the ${links.length} ${tier.name} links`);
    this.overlay = document.createElement("canvas");
    this.overlay.className = "heatmap-overlay";
    this.labels = document.createElement("div");
    this.labels.className = "heatmap-labels";
    host.append(this.canvas, this.overlay, this.labels);
    exportable(host, { name: `${tier.name} utilization` });

    const linkAt = (ev) => {
      const g = this.g, x = Math.floor(ev.offsetX / g.cellW), y = Math.floor(ev.offsetY / g.cellH);
      return x >= 0 && y >= 0 && x < g.width && y < g.height ? this.cellLink[y * g.width + x] : -1;
    };
    this.overlay.addEventListener("mousemove", (ev) => {
      const link = linkAt(ev);
      if (link !== this.hover) { this.hover = link; this.drawOverlay(); }
      onHover(link, ev);
    });
    this.overlay.addEventListener("mouseleave", (ev) => { this.hover = -1; this.drawOverlay(); onHover(-1, ev); });
    this.overlay.addEventListener("click", (ev) => {
      const link = linkAt(ev);
      if (link >= 0) onClick(link, rowOf[link]);
    });
  }

  /** Fit the grid to `width` x `maxHeight` CSS pixels; every link's pixel is computed here, once per size. */
  layout(width, maxHeight) {
    const { blocks, blockRows, cols, links, rowOf, colOf } = this;
    const g = geometry(blocks.length, blockRows, cols, width, maxHeight);
    g.width = g.perRow * cols + (g.perRow - 1) * g.gapCols;
    g.height = g.gridRows * (g.labelRows + blockRows);
    this.g = g;
    // The first pixel of each row switch's row, then of each link.
    this.rowStart = new Int32Array(Math.max(0, ...this.rowBlock.keys()) + 1).fill(-1);
    for (const [s, [block, r]] of this.rowBlock) {
      const [x0, y0] = this.origin(block);
      this.rowStart[s] = (y0 + r) * g.width + x0;
    }
    this.pix = new Int32Array(links.length);
    this.cellLink = new Int32Array(g.width * g.height).fill(-1);
    for (let k = 0; k < links.length; k++) {
      const i = links[k], p = this.rowStart[rowOf[i]] + colOf[i];
      this.pix[k] = p;
      this.cellLink[p] = i;
    }
    this.canvas.width = g.width;
    this.canvas.height = g.height;
    const css = { width: `${g.width * g.cellW}px`, height: `${g.height * g.cellH}px` };
    Object.assign(this.canvas.style, css);
    Object.assign(this.overlay.style, css);
    const dpr = window.devicePixelRatio || 1;
    this.overlay.width = Math.round(g.width * g.cellW * dpr);
    this.overlay.height = Math.round(g.height * g.cellH * dpr);
    this.ctx = this.canvas.getContext("2d");
    this.image = this.ctx.createImageData(g.width, g.height);
    this.buf = new Uint32Array(this.image.data.buffer);
    this.labels.replaceChildren(...blocks.map((b, k) => {
      const [x0, y0] = this.origin(k), span = document.createElement("span");
      span.textContent = b.label;
      span.title = b.label;
      span.style.maxWidth = `${Math.max(1, this.cols * g.cellW + (g.perRow > 1 ? g.gapCols * g.cellW - 4 : 0))}px`;
      span.style.left = `${x0 * g.cellW}px`;
      span.style.top = `${(y0 - g.labelRows) * g.cellH}px`;
      return span;
    }));
  }

  /** The canvas pixel (x, y) of a block's first row and column. */
  origin(block) {
    const g = this.g;
    return [(block % g.perRow) * (this.cols + g.gapCols),
            Math.floor(block / g.perRow) * (g.labelRows + this.blockRows) + g.labelRows];
  }

  /** The CSS pixel (x, y) of a link's cell. */
  cellOf(i) {
    const g = this.g, p = this.rowStart[this.rowOf[i]] + this.colOf[i];
    return [(p % g.width) * g.cellW, Math.floor(p / g.width) * g.cellH];
  }

  /** Paint every link: non-active ones in the failed colour whatever their load, all others dim without data. */
  draw(util, status, hasData) {
    const { links, pix, buf } = this;
    for (let k = 0; k < links.length; k++) {
      const i = links[k];
      let px;
      if (status[i] !== 0) px = NON_ACTIVE;
      else if (!hasData) px = NO_DATA;
      else {
        const v = (util[i] * 255 + 0.5) | 0;
        px = UTIL_PIXEL[v > 255 ? 255 : v < 0 ? 0 : v];
      }
      buf[pix[k]] = px;
    }
    this.ctx.putImageData(this.image, 0, 0);
  }

  /** Remember the non-active links (to ring them) and the selected switch, then redraw the overlay. */
  mark(status, selectedSwitch) {
    this.nonActive = this.links.filter((i) => status[i] !== 0);
    this.selected = selectedSwitch;
    this.drawOverlay();
  }

  drawOverlay() {
    const g = this.g, ctx = this.overlay.getContext("2d"), dpr = window.devicePixelRatio || 1;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, g.width * g.cellW, g.height * g.cellH);
    ctx.lineWidth = 1;
    ctx.strokeStyle = "#ffffff";
    for (const i of this.nonActive) {
      const [x, y] = this.cellOf(i);
      ctx.strokeRect(x - 1.5, y - 1.5, g.cellW + 3, g.cellH + 3);
    }
    const row = this.rowBlock.get(this.selected);
    if (row) {
      const [x0, y0] = this.origin(row[0]);
      ctx.strokeStyle = "#4aa3ff";
      ctx.lineWidth = 2;
      ctx.strokeRect(x0 * g.cellW - 2, (y0 + row[1]) * g.cellH - 2, this.cols * g.cellW + 4, g.cellH + 4);
    }
    if (this.hover >= 0) {
      const [x, y] = this.cellOf(this.hover);
      ctx.strokeStyle = "#ffffff";
      ctx.lineWidth = 1;
      ctx.strokeRect(x - 0.5, y - 0.5, g.cellW + 1, g.cellH + 1);
    }
  }
}
