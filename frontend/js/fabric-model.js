// The fabric page's model: fabric.json (twin/web/fabric_data.py) as typed arrays in live link order, and the
// per-frame statistics (per tier, per zone and tier, per switch up and down, the hottest links), each one pass over
// the links. No DOM here.

export const LINK_NIC_LEAF = 0;
const HOTTEST = 20;

/** fabric.json -> the model: links and switches as typed arrays, names as plain arrays. */
export function buildModel(doc) {
  const L = doc.links.count, S = doc.switches.count, sw = doc.switches;
  const linkId = new Int32Array(L);
  let k = 0;
  for (const [first, count] of doc.links.id_runs) for (let j = 0; j < count; j++) linkId[k++] = first + j;
  const tier = Uint8Array.from(doc.links.tier), a = Int32Array.from(doc.links.a), b = Int32Array.from(doc.links.b);
  const col = Uint16Array.from(doc.links.col), row = new Int32Array(L);
  const zone = Int32Array.from(sw.zone), Z = doc.zones.length;
  // The zone a link is counted in: its row switch's (NONE_ZONE = Z for switches outside zones).
  const linkZone = new Int32Array(L);
  for (let i = 0; i < L; i++) {
    row[i] = tier[i] === LINK_NIC_LEAF ? b[i] : a[i];
    const z = zone[row[i]];
    linkZone[i] = z < 0 ? Z : z;
  }
  const prefix = `${doc.fabric.name}.`, clusterPrefix = `${doc.cluster.name}.`;
  const model = {
    doc, L, S, Z, linkId, tier, a, b, col, row, linkZone, tiers: doc.link_tiers,
    linkStatus: new Uint8Array(L), status: new Uint8Array(L), statusNames: doc.status_names,
    sw: { id: Int32Array.from(sw.id), name: sw.name, tier: Uint8Array.from(sw.tier), zone,
          group: Int32Array.from(sw.group), rack: Int32Array.from(sw.rack), model: Int32Array.from(sw.model),
          status: new Uint8Array(S) },
    /** A name without the fabric's or the cluster's prefix ("rtsw.z03.017", "z03.r017"). */
    short(name) {
      if (name.startsWith(prefix)) return name.slice(prefix.length);
      return name.startsWith(clusterPrefix) ? name.slice(clusterPrefix.length) : name;
    },
  };
  applyStatus(model, doc);
  return model;
}

/** Statuses from fabric.json or status.json (sparse: positions and codes of the non-active items).
 *  linkStatus is each link's own; status, what counts for traffic: the link's own, else that of a non-active
 *  switch at either end (a failed leaf takes its host links and uplinks down with it). */
export function applyStatus(model, { link_status: links, switch_status: switches }) {
  const { linkStatus, status, a, b, sw } = model;
  linkStatus.fill(0);
  links.index.forEach((i, k) => { linkStatus[i] = links.code[k]; });
  sw.status.fill(0);
  switches.index.forEach((i, k) => { sw.status[i] = switches.code[k]; });
  for (let i = 0; i < model.L; i++) {
    status[i] = linkStatus[i] || sw.status[b[i]] || (a[i] >= 0 ? sw.status[a[i]] : 0);
  }
}

/** The position of a link id in the live order, -1 if it is not a backend link of this fabric. */
export function linkIndex(model, id) {
  const ids = model.linkId;
  let lo = 0, hi = ids.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (ids[mid] === id) return mid;
    if (ids[mid] < id) lo = mid + 1; else hi = mid - 1;
  }
  return -1;
}

/** The switches of a switch tier in blocks by zone, each ordered by group then index (the heatmap rows). */
export function rowBlocks(model, switchTier) {
  const byZone = new Map();
  for (let s = 0; s < model.S; s++) {
    if (model.sw.tier[s] !== switchTier) continue;
    const z = model.sw.zone[s];
    if (!byZone.has(z)) byZone.set(z, []);
    byZone.get(z).push(s);
  }
  return [...byZone.keys()].sort((x, y) => (x < 0) - (y < 0) || x - y).map((z) => ({
    zone: z, label: z < 0 ? "no zone" : model.short(model.doc.zones[z]),
    rows: Int32Array.from(byZone.get(z).sort((s, t) => model.sw.group[s] - model.sw.group[t] || s - t)),
  }));
}

/** Sums, maxima and counts of utilization over active links, and counts of non-active links, for the whole
 *  fabric per tier, per tier and zone, and per switch (links going up from it, links coming down to it; swDown:
 *  its non-active links). */
export class FabricStats {
  constructor(model) {
    this.model = model;
    const T = model.tiers.length, Z1 = model.Z + 1, S = model.S;
    this.tierIndex = new Uint8Array(256);        // tier code -> position in model.tiers
    model.tiers.forEach((t, k) => { this.tierIndex[t.code] = k; });
    const f = (n) => new Float64Array(n), i = (n) => new Int32Array(n);
    this.sums = {
      tierSum: f(T), tierMax: f(T), tierN: i(T), tierDown: i(T),
      zoneSum: f(T * Z1), zoneMax: f(T * Z1), zoneN: i(T * Z1), zoneDown: i(T * Z1),
      upSum: f(S), upMax: f(S), upN: i(S), downSum: f(S), downMax: f(S), downN: i(S), swDown: i(S),
    };
    Object.assign(this, this.sums, { Z1, hotIdx: new Int32Array(HOTTEST), hotVal: new Float64Array(HOTTEST),
                                     hasData: false });
  }

  /** Recompute everything from `util` (Float32Array 0..1 in live order; null: no data, all zero). */
  update(util) {
    const m = this.model, { L, tier, a, b, linkZone, status } = m, Z1 = this.Z1, ti = this.tierIndex;
    for (const arr of Object.values(this.sums)) arr.fill(0);
    this.hotIdx.fill(-1);
    this.hotVal.fill(-1);
    this.hasData = util != null;
    const { tierSum, tierMax, tierN, tierDown, zoneSum, zoneMax, zoneN, zoneDown, upSum, upMax, upN, downSum,
            downMax, downN, swDown, hotIdx, hotVal } = this;
    let floor = -1;                              // the smallest of the hottest so far
    for (let i = 0; i < L; i++) {
      const t = ti[tier[i]], z = t * Z1 + linkZone[i];
      const lo = a[i], hi = b[i];
      if (status[i] !== 0) {
        tierDown[t]++; zoneDown[z]++; swDown[hi]++;
        if (lo >= 0) swDown[lo]++;
        continue;
      }
      const u = util ? util[i] : 0;
      tierSum[t] += u; tierN[t]++; if (u > tierMax[t]) tierMax[t] = u;
      zoneSum[z] += u; zoneN[z]++; if (u > zoneMax[z]) zoneMax[z] = u;
      if (lo >= 0) { upSum[lo] += u; upN[lo]++; if (u > upMax[lo]) upMax[lo] = u; }
      downSum[hi] += u; downN[hi]++; if (u > downMax[hi]) downMax[hi] = u;
      if (util && u > floor && u > 0) {        // insertion into the sorted top list
        let k = HOTTEST - 1;
        while (k > 0 && hotVal[k - 1] < u) { hotVal[k] = hotVal[k - 1]; hotIdx[k] = hotIdx[k - 1]; k--; }
        hotVal[k] = u; hotIdx[k] = i;
        floor = hotVal[HOTTEST - 1];
      }
    }
  }

  /** {mean, max, n, down} of a tier (position in model.tiers), overall or in one zone (Z for "no zone"). */
  tier(t, zone = null) {
    if (zone == null) return summary(this.tierSum[t], this.tierMax[t], this.tierN[t], this.tierDown[t]);
    const k = t * this.Z1 + zone;
    return summary(this.zoneSum[k], this.zoneMax[k], this.zoneN[k], this.zoneDown[k]);
  }

  /** {mean, max, n} of the active links going up from switch s, or coming down to it. */
  up(s) { return summary(this.upSum[s], this.upMax[s], this.upN[s], 0); }
  down(s) { return summary(this.downSum[s], this.downMax[s], this.downN[s], 0); }

  /** The hottest links, hottest first, as link indexes. */
  hottest() { return Array.from(this.hotIdx).filter((i) => i >= 0); }
}

function summary(sum, max, n, down) {
  return { mean: n ? sum / n : 0, max, n, down };
}
