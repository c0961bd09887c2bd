// The one place numbers become text for a person: counts, shares, rates, bytes and durations. Every page imports
// `fmt` (re-exported by twin.js); no page formats a byte count or a duration its own way.
//
// - Bytes are in binary units, said in the name (KiB, MiB, GiB, TiB: powers of 1024), as the forms read sizes
//   ("4G" is 4 GiB = 4,294,967,296 bytes); three significant digits.
// - A duration picks its unit (ms, s, min, h, d) from its size, with three significant digits. An axis picks ONE
//   unit for all its ticks from the largest (`fmt.durationAxis`), so an axis never reads "40 h, 2.5 d".

export const INT_FORMAT = new Intl.NumberFormat("en-US");

/** `x` with about three significant digits, no trailing zeros beyond them (1.23, 12.3, 123, 1,234). */
function sig(x) {
  const a = Math.abs(x);
  if (a >= 1000) return INT_FORMAT.format(Math.round(x));
  const digits = a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3;
  return String(Number(x.toFixed(digits)));
}

const BYTE_UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
// Duration units, largest first: [name, seconds]. A value takes the largest unit it reaches at least once of.
const DURATION_UNITS = [["d", 86400], ["h", 3600], ["min", 60], ["s", 1], ["ms", 1e-3], ["µs", 1e-6]];

const unitOf = (seconds, least = 1) => DURATION_UNITS.find(([, s]) => Math.abs(seconds) >= least * s)
  ?? DURATION_UNITS.at(-1);

export const fmt = {
  int: (n) => (n == null ? "–" : INT_FORMAT.format(Number(n))),
  pct: (x, digits = 0) => (x == null ? "–" : `${(100 * x).toFixed(digits)} %`),
  GBps: (x) => (x == null ? "–" : `${Number(x).toFixed(x >= 100 ? 0 : 1)} GB/s`),
  TBps: (bps) => (bps == null ? "–" : `${(Number(bps) / 1e12).toFixed(bps >= 1e13 ? 1 : 2)} TB/s`),   // bytes/s in
  /** Seconds, in the unit their size calls for (ms, s, min, h, d). */
  s: (x) => fmt.duration(x),
  duration(seconds) {
    if (seconds == null || !Number.isFinite(Number(seconds))) return "–";
    const x = Number(seconds);
    if (x === 0) return "0 s";
    const [name, size] = unitOf(x);
    return `${sig(x / size)} ${name}`;
  },
  /** A formatter of seconds for every tick of an axis whose largest value is `maxSeconds`: one unit for all, the
   *  largest the axis spans three of (ticks of 20 h up to 60 h stay in hours: 0 h, 20 h, 40 h, 60 h). */
  durationAxis(maxSeconds) {
    const [name, size] = unitOf(Number(maxSeconds) || 1, 3);
    return (x) => (x == null ? "–" : `${sig(Number(x) / size)} ${name}`);
  },
  /** Bytes in binary units: 4294967296 -> "4 GiB", 801266158 -> "764 MiB". */
  bytes(n) {
    if (n == null || !Number.isFinite(Number(n))) return "–";
    let x = Number(n), i = 0;
    while (Math.abs(x) >= 1024 && i < BYTE_UNITS.length - 1) { x /= 1024; i += 1; }
    return `${sig(x)} ${BYTE_UNITS[i]}`;
  },
  time(iso) { return iso ? new Date(iso).toLocaleString() : "–"; },
  /** An empty table's one row: "none" across its `columns` (a colspan past the last column is clamped). */
  noneRow: (columns = 99, text = "none") => `<tr class="none"><td colspan="${columns}" class="muted">${text}</td></tr>`,
  /** A table body's rows (HTML strings) joined, or the "none" row when there are none. */
  rows: (rows) => (rows.length ? rows.join("") : fmt.noneRow()),
};
