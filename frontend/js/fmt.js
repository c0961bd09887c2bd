// The one place numbers become text for a person: counts, shares, rates, bytes, powers, durations and dates. Every
// page imports `fmt` (re-exported by twin.js); no page formats a byte count, a power or a date its own way.
//
// The units are not declared here: the server's table (sim/core/display.py, QUANTITIES) comes with every page as
// JSON (#twin-display), and each formatter below is built from it, as the exports' column names are (exports.js).
// - A value takes the largest unit of its quantity's ladder it reaches once of, three significant digits (bytes in
//   binary units, KiB, MiB, GiB, as the forms read sizes). An axis picks ONE unit for all its ticks from the largest
//   (`fmt.axis`, `fmt.durationAxis`), so an axis never reads "40 h, 2.5 d".
// - Dates: one format, in UTC ("2026-12-07 22:31:05 UTC"); `fmt.when` adds the time relative to now on hover.

/** The server's table of quantities (sim/core/display.py), read once from the page. */
export const DISPLAY = JSON.parse(globalThis.document?.getElementById("twin-display")?.textContent ?? "null") ?? {
  quantities: {}, significant: 3 };
const Q = DISPLAY.quantities;

export const INT_FORMAT = new Intl.NumberFormat("en-US");

/** `x` with about three significant digits, no trailing zeros beyond them (1.23, 12.3, 123, 1,234). */
function sig(x) {
  const a = Math.abs(x);
  if (a >= 1000) return INT_FORMAT.format(Math.round(x));
  const digits = a >= 100 ? 0 : a >= 10 ? 1 : a >= 1 ? 2 : 3;
  return String(Number(x.toFixed(digits)));
}

/** The step of quantity `name`'s ladder that `value` (in the quantity's file unit) is read in: [label, size]. */
function stepOf(name, value, least = 1) {
  const ladder = Q[name]?.ladder ?? [["", 1]];
  let step = ladder[0];
  for (const s of ladder) if (Math.abs(value) >= least * s[1]) step = s;
  return step;
}

/** `value` of quantity `name` (in its file unit: bytes, GBps, s, W, Wh...) as a person reads it: "4 GiB". */
function quantity(name, value) {
  if (value == null || !Number.isFinite(Number(value))) return "–";
  const x = Number(value);
  if (x === 0) return `0 ${stepOf(name, 1)[0]}`;
  const [label, size] = stepOf(name, x);
  return `${sig(x / size)} ${label}`;
}

/** A formatter for every tick of an axis of quantity `name` whose largest value is `max`: one unit for all, the
 *  largest the axis spans `least` of. */
function axis(name, max, least = 1) {
  const [label, size] = stepOf(name, Number(max) || 1, least);
  return (x) => (x == null ? "–" : `${sig(Number(x) / size)} ${label}`);
}

const pad = (n) => String(n).padStart(2, "0");
/** A moment (ISO text, ms since 1970 or a Date) in the pages' one date format, UTC. */
function date(t) {
  if (t == null || t === "") return "–";
  const d = t instanceof Date ? t : new Date(t);
  if (Number.isNaN(d.getTime())) return "–";
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:`
    + `${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())} UTC`;
}

/** How long ago (or from now) a moment is: "3 min ago", "in 2 h". */
function ago(t, now = Date.now()) {
  const d = new Date(t).getTime();
  if (!Number.isFinite(d)) return "";
  const s = (now - d) / 1000;
  const text = quantity("duration", Math.max(1, Math.round(Math.abs(s))));
  return s >= 0 ? `${text} ago` : `in ${text}`;
}

export const fmt = {
  int: (n) => (n == null ? "–" : INT_FORMAT.format(Number(n))),
  /** A number whose unit is said beside it (an axis' title): about three significant digits (0.0123, 1.23, 123,
   *  1,234); the charts' default tick and readout format. */
  num(x) {
    if (x == null || !Number.isFinite(Number(x))) return "–";
    const v = Number(x);
    return Math.abs(v) >= 1 || v === 0 ? sig(v) : String(Number(v.toPrecision(3)));
  },
  pct: (x, digits = 0) => (x == null ? "–" : `${(100 * x).toFixed(digits)} %`),
  /** A rate in GB/s (10^9 bytes/s, as nccl-tests prints it). */
  GBps: (x) => quantity("rate", x),
  /** A rate given in bytes/s. */
  TBps: (bps) => (bps == null ? "–" : quantity("rate", Number(bps) / 1e9)),
  /** Watts, in W, kW or MW. */
  W: (x) => quantity("power", x),
  /** Megawatts (the power pages' unit of a cluster), in W, kW or MW as their size calls for. */
  MW: (x) => (x == null ? "–" : quantity("power", Number(x) * 1e6)),
  /** Watt-hours given in MWh. */
  MWh: (x) => (x == null ? "–" : quantity("energy", Number(x) * 1e6)),
  /** Any quantity of the server's table by name, in its file unit. */
  quantity,
  axis,
  /** Seconds, in the unit their size calls for (ms, s, min, h, d). */
  s: (x) => fmt.duration(x),
  duration: (seconds) => (Number(seconds) === 0 ? "0 s" : quantity("duration", seconds)),
  /** A formatter of seconds for every tick of an axis whose largest value is `maxSeconds`: one unit for all, the
   *  largest the axis spans three of (ticks of 20 h up to 60 h stay in hours: 0 h, 20 h, 40 h, 60 h). */
  durationAxis: (maxSeconds) => axis("duration", maxSeconds, 3),
  /** Bytes in binary units: 4294967296 -> "4 GiB", 801266158 -> "764 MiB". */
  bytes: (n) => quantity("bytes", n),
  /** A moment in the one date format (UTC), as text. */
  time: date,
  /** How long ago a moment is ("3 min ago"). */
  ago,
  /** A moment as HTML for a page: the date in the one format, the time relative to now on hover, the ISO moment
   *  in datetime= (what a download of the table carries). */
  when: (t) => (t == null || t === "" ? "–"
    : `<time datetime="${new Date(t).toISOString()}" title="${ago(t)}">${date(t)}</time>`),
  /** An empty table's one row: "none" across its `columns` (a colspan past the last column is clamped). */
  noneRow: (columns = 99, text = "none") => `<tr class="none"><td colspan="${columns}" class="muted">${text}</td></tr>`,
  /** A table body's rows (HTML strings) joined, or the "none" row when there are none. */
  rows: (rows) => (rows.length ? rows.join("") : fmt.noneRow()),
};
