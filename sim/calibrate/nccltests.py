"""nccl-tests output as its binaries print it (NVIDIA/nccl-tests, ``src/util.cu``: ``writeDeviceReport``,
``writeResultHeader``, ``writeBenchmarkLinePreamble``, ``writeBenchmarkLineBody``, ``writeResultFooter``)::

    # nccl-tests version 2.17.1 nccl-headers=22703 nccl-library=22703
    # Collective test starting: all_reduce_perf
    # nThread 1 nGpus 1 minBytes 1048576 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 ...
    #
    # Using devices
    #  Rank  0 Group  0 Pid  41311 on   node0001 device  0 [0000:18:00] NVIDIA H100 80GB HBM3
    ...
    #
    #                                                              out-of-place                       in-place
    #       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
    #        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
         1048576        262144     float     sum      -1    61.32   17.10   33.66      0    60.90   17.22   33.89      0
    ...
    # Out of bounds values : 0 OK
    # Avg bus bandwidth    : 183.4
    #
    # Collective test concluded: all_reduce_perf

Each data row: the preamble ``%12li %12li %8s %6s %6s`` (size in bytes, count in elements, type, redop, root: -1
when the collective has none), then the out-of-place and the in-place halves, each ``time`` (us; ``cputime`` with
``-C``), ``algbw`` and ``busbw`` (GB/s = 1e9 bytes/s) and ``#wrong`` (``N/A`` without checking), each followed by
``i_min i_max i_p99 i_cv%`` with per-iteration timing (``-I 1``), and a timestamp with ``-Z``. Older releases have
no ``root`` column and call ``#wrong`` ``error``. The row is read by the column header's names, so any of these
layouts parses. The collective comes from the binary's name (``all_reduce_perf`` -> allreduce), wherever the text
names it (the ``Collective test starting`` line, or a command line pasted above the output).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from sim.core.errors import UsageError
from sim.core.units import MAX_SIZES
from sim.fabric.collectives import CollectiveError, canonical

MAX_LOG_ROWS = MAX_SIZES          # data rows one log may hold: the sizes one collective run may ask for
MAX_LOGS = 64                     # logs one paste may hold
GB = 1e9                          # nccl-tests' GB/s: 1e9 bytes per second
HALVES = ("out-of-place", "in-place")
_BINARY = re.compile(r"\b([a-z_]+)_perf(?:_mpi)?\b")
_RANK = re.compile(r"^#\s*Rank\s+(\d+)\s+Group\s+(\d+)\s+Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)"
                   r"(?:\s+\[[^\]]*\])?\s*(.*)$")
_NGPUS = re.compile(r"^#\s*nThread\s+(\d+)\s+nGpus\s+(\d+)")
_LAUNCH = re.compile(r"\b(?:mpirun|mpiexec|orterun)\b.*?\s(?:-np|-n|--np)\s+(\d+)\b")
# A new log begins at one of these when the current one already has rows (nccl-tests prints them first).
_STARTS = (re.compile(r"^#\s*nccl-tests version\b"), re.compile(r"^#\s*Collective test starting\b"), _NGPUS)
# The footer nccl-tests prints once every size has run (writeResultFooter; "Collective test concluded" in newer
# releases): a log without it was cut off.
_FOOTER = re.compile(r"^#\s*(Avg bus bandwidth|Collective test concluded)\b")

# The GPU a Rank line names (CUDA's device name, cudaDeviceProp.name: "NVIDIA H100 80GB HBM3") -> the catalog's GPU
# slugs it may be (sim/presets/catalog.toml): the model, and the memory when the name states it. A name that
# states no memory may be any of its model's parts; a part the catalog lacks (PCIe, NVL) maps to none.
DEVICE_GPUS = {("a100", 40): ("a100-sxm-40gb",), ("a100", 80): ("a100-sxm-80gb",),
               ("a100", None): ("a100-sxm-40gb", "a100-sxm-80gb"),
               ("h100", 80): ("h100-sxm-80gb",), ("h100", 96): ("h100-sxm-96gb",),
               ("h100", None): ("h100-sxm-80gb", "h100-sxm-96gb"),
               ("h800", 80): ("h800-sxm-80gb",), ("h800", None): ("h800-sxm-80gb",),
               ("h200", 141): ("h200-sxm-141gb",), ("h200", None): ("h200-sxm-141gb",)}
_DEVICE = re.compile(r"\b([ABH]\d00)\b", re.I)
_MEMORY = re.compile(r"(\d+)\s*GB\b", re.I)
_NOT_SXM = re.compile(r"\b(PCIe|NVL)\b", re.I)


def gpu_slugs(name: str) -> tuple[str, ...]:
    """The catalog GPU slugs a CUDA device name may be (:data:`DEVICE_GPUS`); () for one the catalog lacks."""
    if _NOT_SXM.search(name):
        return ()
    m = _DEVICE.search(name)
    if m is None:
        return ()
    mem = _MEMORY.search(name)
    return DEVICE_GPUS.get((m.group(1).lower(), int(mem.group(1)) if mem else None), ())


class LogError(UsageError):
    """A log that does not parse: ``line`` the 1-based line (None: the whole log), ``reason`` why."""

    def __init__(self, reason: str, line: int | None = None):
        self.line, self.reason = line, reason
        super().__init__(f"line {line}: {reason}" if line else reason)


@dataclass
class Row:
    """One data row: ``size`` bytes, ``count`` elements, ``type``, ``redop``, ``root`` (None: no root column, -1:
    none), and per half (out-of-place, in-place) ``time`` seconds, ``algbw`` and ``busbw`` bytes/s."""

    line: int
    size: int
    count: int
    type: str
    redop: str
    root: int | None
    time: dict
    algbw: dict
    busbw: dict


@dataclass
class NcclLog:
    """A parsed log: the collective its binary names (None if the text does not say), the ranks its ``Rank`` lines
    list (host name and device of each, in rank order), ``nGpus`` and ``nThread`` of its header, the data rows;
    ``binary`` (``all_reduce_perf``), ``gpu`` (the device name the Rank lines give, None without them) and its
    catalog slugs (``gpu_slugs``), ``launched`` (the ranks a pasted ``mpirun -np N`` line starts), ``first`` and
    ``last`` (its lines in the text it came from) and ``gpu_line`` (its first Rank line)."""

    collective: str | None
    rows: list[Row]
    ranks: list[tuple[str, int]] = field(default_factory=list)
    n_gpus: int | None = None
    n_threads: int | None = None
    columns: tuple[str, ...] = ()
    binary: str | None = None
    gpu: str | None = None
    gpu_slugs: tuple[str, ...] = ()
    gpu_line: int | None = None
    launched: int | None = None
    first: int = 1
    last: int = 1

    @property
    def n_ranks(self) -> int:
        """The ranks the log ran: its Rank lines, else nThread x nGpus when above 1, else a pasted ``mpirun -np``
        (0: the log does not say)."""
        threads = (self.n_gpus or 0) * (self.n_threads or 0)
        return len(self.ranks) or (threads if threads > 1 else 0) or (self.launched or 0)


class _Open:
    """The log being read."""

    def __init__(self, first: int):
        self.first = self.last = first
        self.collective = self.binary = self.columns = self.gpu = self.gpu_line = self.launched = None
        self.n_gpus = self.n_threads = None
        self.ranks, self.rows, self.footer = [], [], None

    def close(self) -> NcclLog:
        if self.columns is None:
            raise LogError(f"the log from line {self.first} has no column header (#  size  count  type  redop ...  "
                           f"time  algbw  busbw ...): give the output exactly as nccl-tests prints it", self.first)
        if not self.rows:
            raise LogError(f"the log from line {self.first} has a column header but no data rows", self.first)
        if self.footer is None:
            raise LogError(f"truncated after line {self.last}: the log from line {self.first} ends without nccl-tests' "
                           f"footer (# Avg bus bandwidth, # Collective test concluded): give the whole output",
                           self.last)
        return NcclLog(self.collective, self.rows, self.ranks, self.n_gpus, self.n_threads, self.columns,
                       self.binary, self.gpu, gpu_slugs(self.gpu) if self.gpu else (), self.gpu_line, self.launched,
                       self.first, self.last)


def parse_log(text: str) -> NcclLog:
    """The one log of nccl-tests output ``text`` (:func:`parse_logs`); LogError when it holds several."""
    logs = parse_logs(text)
    if len(logs) > 1:
        raise LogError(f"holds {len(logs)} logs (the second from line {logs[1].first}): give one log here, or paste "
                       f"them whole as the measurements", logs[1].first)
    return logs[0]


def parse_logs(text: str) -> list[NcclLog]:
    """The logs of nccl-tests output ``text``, one or several as the binaries print them one after the other (a
    new log begins at a header line, ``# nccl-tests version``, ``# Collective test starting`` or ``# nThread``, or
    at a command line naming a binary, once the log before has its rows); line numbers count from the text's
    first line. :class:`LogError` naming the line when one does not parse (no column header, a row whose fields do
    not match it, a size or time that is not a positive number, more than :data:`MAX_LOG_ROWS` rows, a binary that
    is not one of the collectives the twin models, no footer: cut off)."""
    if not isinstance(text, str) or not text.strip():
        raise LogError("is empty: give the output exactly as nccl-tests prints it")
    logs: list[NcclLog] = []
    cur: _Open | None = None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        binary = _BINARY.search(line)
        starts = any(p.match(line) for p in _STARTS) or (binary is not None and not line.startswith("#")
                                                          and "NCCL" not in line.split())
        if cur is not None and starts and (cur.rows or cur.footer is not None):
            logs.append(cur.close())
            if len(logs) >= MAX_LOGS:
                raise LogError(f"more than {MAX_LOGS} logs in one text: split it", number)
            cur = None
        if cur is None:
            cur = _Open(number)
        _read(cur, line, number, binary)
    if cur is None:
        raise LogError("is empty: give the output exactly as nccl-tests prints it")
    logs.append(cur.close())
    return logs


def _read(cur: _Open, line: int, number: int, binary) -> None:
    """One non-empty line of the log being read."""
    cur.last = number
    if cur.binary is None and binary and (line.startswith("#") or not cur.rows):
        name = binary.group(1)
        if name == "sendrecv":
            raise LogError("sendrecv_perf (point-to-point send/receive between neighbouring ranks) is not modelled "
                           "by the twin's collective engine: give all_reduce_perf, all_gather_perf, "
                           "reduce_scatter_perf, alltoall_perf, broadcast_perf or reduce_perf logs", number)
        try:
            cur.collective = canonical(name)
        except CollectiveError:
            raise LogError(f"{binary.group(0)} is not a collective the twin models (all_gather, reduce_scatter, "
                           f"all_reduce, alltoall, broadcast, reduce)", number) from None
        cur.binary = f"{name}_perf"
    if not line.startswith("#") and (m := _LAUNCH.search(line)):
        cur.launched = int(m.group(1))
    if line.startswith("#"):
        if _FOOTER.match(line):
            cur.footer = number
        elif m := _RANK.match(line):
            _rank(cur, m, number)
        elif m := _NGPUS.match(line):
            cur.n_threads, cur.n_gpus = int(m.group(1)), int(m.group(2))
        elif _is_header(line):
            if cur.rows:
                raise LogError(f"a second column header in the log from line {cur.first}, after its rows: a log "
                               f"before it was cut off, or two logs were run together", number)
            cur.columns = _header(line, number)
        return
    if cur.columns is None:
        if _looks_like_row(line):
            raise LogError("a data row before the column header (#  size  count  type ...)", number)
        return                          # a shell prompt, a command line, NCCL INFO lines: not nccl-tests' table
    if not _looks_like_row(line):
        return                          # NCCL INFO/WARN lines interleaved with the table
    if cur.footer is not None:
        raise LogError(f"a data row after the footer of the log from line {cur.first}", number)
    cur.rows.append(_row(line, number, cur.columns))
    if len(cur.rows) > MAX_LOG_ROWS:
        raise LogError(f"more than {MAX_LOG_ROWS} data rows (one run of the twin takes at most {MAX_LOG_ROWS} "
                       f"sizes): split the log", number)


def _rank(cur: _Open, m, number: int) -> None:
    cur.ranks.append((m.group(4), int(m.group(5))))
    name = " ".join(m.group(6).split())
    if not name:
        return
    if cur.gpu is None:
        cur.gpu, cur.gpu_line = name, number
    elif name != cur.gpu:
        raise LogError(f"rank {m.group(1)} runs on {name[:60]!r} but line {cur.gpu_line}'s rank on {cur.gpu[:60]!r}: "
                       f"the twin models one GPU model per cluster", number)


def is_log(text: str) -> bool:
    """Whether ``text`` looks like raw nccl-tests output: a line of its header (``# nThread``, ``# Collective test
    starting``) or its column header (``#  size  count  type ...  busbw``)."""
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("#") and (_is_header(line) or any(p.match(line) for p in _STARTS)):
            return True
    return False


def _is_header(line: str) -> bool:
    words = line.lstrip("#").split()
    return bool(words) and words[0] == "size" and "count" in words and "busbw" in words


def _header(line: str, number: int) -> tuple[str, ...]:
    words = tuple("time" if w == "cputime" else w for w in line.lstrip("#").split())
    if words.count("time") != 2 or words.count("busbw") != 2 or words.count("algbw") != 2:
        raise LogError("the column header must have the out-of-place and in-place time, algbw and busbw", number)
    return words


def _looks_like_row(line: str) -> bool:
    first = line.split(maxsplit=1)[0]
    return first.isdigit()


def _row(line: str, number: int, columns: tuple[str, ...]) -> Row:
    words = line.split()
    n = len(columns) - (1 if columns[-1] == "timestamp" else 0)
    stamped = columns[-1] == "timestamp"
    if len(words) != n and not (stamped and len(words) == n + 2):
        raise LogError(f"{len(words)} fields where the column header has {n}", number)
    at = {}
    for i, name in enumerate(columns[:n]):
        at.setdefault(name, []).append(words[i])
    size, count = _whole(at["size"][0], "size", number), _whole(at["count"][0], "count", number)
    if size < 1:
        raise LogError(f"size {size} must be at least 1 byte", number)
    root = None
    if "root" in at:
        try:
            root = int(at["root"][0])
        except ValueError:
            raise LogError(f"root {at['root'][0]!r} is not a whole number", number) from None
    time, algbw, busbw = {}, {}, {}
    for h, half in enumerate(HALVES):
        t = _positive(at["time"][h], "time", number)
        time[half] = t * 1e-6
        algbw[half] = _number(at["algbw"][h], "algbw", number) * GB
        busbw[half] = _number(at["busbw"][h], "busbw", number) * GB
    return Row(number, size, count, at.get("type", ["?"])[0], at.get("redop", ["?"])[0], root, time, algbw, busbw)


def _whole(text: str, what: str, number: int) -> int:
    if not text.isdigit() or len(text) > 20:
        raise LogError(f"{what} {text!r} is not a whole number", number)
    return int(text)


def _number(text: str, what: str, number: int) -> float:
    try:
        v = float(text)
    except ValueError:
        raise LogError(f"{what} {text!r} is not a number", number) from None
    if not v == v or v in (float("inf"), float("-inf")) or v < 0:
        raise LogError(f"{what} {text!r} must be a finite number of at least 0", number)
    return v


def _positive(text: str, what: str, number: int) -> float:
    v = _number(text, what, number)
    if v <= 0:
        raise LogError(f"{what} {text!r} must be above 0", number)
    return v
