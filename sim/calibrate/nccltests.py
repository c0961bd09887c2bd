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
GB = 1e9                          # nccl-tests' GB/s: 1e9 bytes per second
HALVES = ("out-of-place", "in-place")
_BINARY = re.compile(r"\b([a-z_]+)_perf(?:_mpi)?\b")
_RANK = re.compile(r"^#\s*Rank\s+(\d+)\s+Group\s+(\d+)\s+Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)")
_NGPUS = re.compile(r"^#\s*nThread\s+(\d+)\s+nGpus\s+(\d+)")


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
    list (host name and device of each, in rank order), ``nGpus`` and ``nThread`` of its header, the data rows."""

    collective: str | None
    rows: list[Row]
    ranks: list[tuple[str, int]] = field(default_factory=list)
    n_gpus: int | None = None
    n_threads: int | None = None
    columns: tuple[str, ...] = ()


def parse_log(text: str) -> NcclLog:
    """The rows and header of nccl-tests output ``text``; :class:`LogError` naming the line when it does not parse
    (no column header, a row whose fields do not match it, a size or time that is not a positive number, more than
    :data:`MAX_LOG_ROWS` rows, a binary that is not one of the collectives the twin models)."""
    if not isinstance(text, str) or not text.strip():
        raise LogError("is empty: give the output exactly as nccl-tests prints it")
    collective, columns, ranks, rows = None, None, [], []
    n_gpus = n_threads = None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if collective is None and (m := _BINARY.search(line)) and (line.startswith("#") or not rows):
            try:
                collective = canonical(m.group(1))
            except CollectiveError:
                raise LogError(f"{m.group(0)} is not a collective the twin models (all_gather, reduce_scatter, "
                               f"all_reduce, alltoall, broadcast, reduce)", number) from None
        if line.startswith("#"):
            if m := _RANK.match(line):
                ranks.append((m.group(4), int(m.group(5))))
            elif m := _NGPUS.match(line):
                n_threads, n_gpus = int(m.group(1)), int(m.group(2))
            elif _is_header(line):
                columns = _header(line, number)
            continue
        if columns is None:
            if rows or _looks_like_row(line):
                raise LogError("a data row before the column header (#  size  count  type ...)", number)
            continue                    # a shell prompt, a command line, NCCL INFO lines: not nccl-tests' table
        if not _looks_like_row(line):
            continue                    # NCCL INFO/WARN lines interleaved with the table
        rows.append(_row(line, number, columns))
        if len(rows) > MAX_LOG_ROWS:
            raise LogError(f"more than {MAX_LOG_ROWS} data rows (one run of the twin takes at most {MAX_LOG_ROWS} "
                           f"sizes): split the log", number)
    if columns is None:
        raise LogError("has no column header (#  size  count  type  redop ...  time  algbw  busbw ...): give the "
                       "output exactly as nccl-tests prints it")
    if not rows:
        raise LogError("has a column header but no data rows")
    return NcclLog(collective, rows, ranks, n_gpus, n_threads, columns)


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
