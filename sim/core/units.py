"""The engine's units (bytes, GB, Gb/s, the index dtype) and byte sizes as people write them (``64M``, ``1G``, ``1M:1G``): the one parser behind the CLI, the API and specs."""
from __future__ import annotations

import re

import numpy as np

from sim.core.errors import UsageError

# The engine's units and index width, declared once (every module imports these, none redefines them).
IDX = np.int64                    # the dtype of every index array (flows, links, GPUs, hosts)
GB = 1e9                          # bytes in a GB, as nccl-tests prints GB/s (10^9, not 2^30)
GiB = 1 << 30                     # bytes in a GiB
GBPS = 1e9 / 8                    # bytes/s in one Gb/s (link and NIC speeds)
US = 1e-6                         # seconds in a microsecond

UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:I?B)?\s*$", re.IGNORECASE)
MAX_SIZES = 64                    # message sizes one run may ask for
MAX_SIZE = 1 << 40                # bytes: the largest message size (1 TiB)


def parse_size(text: str) -> int:
    """Bytes in ``text``: a number with an optional K, M, G or T suffix (powers of 1024, as nccl-tests; ``KB``,
    ``KiB`` and ``B`` are accepted too). At least 1 byte and at most :data:`MAX_SIZE`.

    >>> parse_size("64M"), parse_size("1G"), parse_size("1.5K"), parse_size("4096")
    (67108864, 1073741824, 1536, 4096)
    """
    m = _SIZE.match(str(text))
    if not m:
        raise UsageError(f"bad size {text!r}: use a number with an optional K, M, G or T suffix "
                         f"(powers of 1024), e.g. 64M or 1G")
    value = float(m.group(1)) * UNITS[m.group(2).upper()]
    if value != int(value):
        raise UsageError(f"bad size {text!r}: not a whole number of bytes")
    if not 1 <= value <= MAX_SIZE:
        raise UsageError(f"bad size {text!r}: must be from 1 byte to 1T")
    return int(value)


def size_text(n: int) -> str:
    """A size as :func:`parse_size` reads it back, in the largest of K, M, G, T it is a whole or tenths number of
    (powers of 1024): ``4G``, ``16M``, ``1.5K``, ``1000``.

    >>> size_text(4 << 30), size_text(16 << 20), size_text(1536), size_text(1000)
    ('4G', '16M', '1.5K', '1000')
    """
    for suffix in "TGMK":
        x = n / UNITS[suffix]
        if x >= 1 and round(x, 1) * UNITS[suffix] == n:
            return f"{x:g}{suffix}"
    return str(n)


def parse_sizes(text: str) -> list[int]:
    """Message sizes: a list ``8M,64M,1G``, or a range ``MIN:MAX`` doubling from MIN up to MAX (inclusive), or
    ``MIN:MAX:F`` multiplying by F (nccl-tests' ``-b -e -f``).

    >>> parse_sizes("1M:8M"), parse_sizes("1K:1M:32"), parse_sizes("8M,64M")
    ([1048576, 2097152, 4194304, 8388608], [1024, 32768, 1048576], [8388608, 67108864])
    """
    text = str(text).strip()
    if not text:
        raise UsageError("bad sizes '': give a list like 8M,64M,1G or a range like 1M:1G")
    if ":" in text:
        parts = text.split(":")
        if len(parts) not in (2, 3):
            raise UsageError(f"bad size range {text!r}: use MIN:MAX or MIN:MAX:FACTOR, e.g. 1M:1G")
        lo, hi = parse_size(parts[0]), parse_size(parts[1])
        factor = 2
        if len(parts) == 3:
            if not parts[2].strip().isdigit() or int(parts[2]) < 2:
                raise UsageError(f"bad size range {text!r}: the factor must be a whole number of at least 2")
            factor = int(parts[2])
        if hi < lo:
            raise UsageError(f"bad size range {text!r}: need MIN <= MAX")
        sizes = [lo]
        while sizes[-1] * factor <= hi and len(sizes) <= MAX_SIZES:
            sizes.append(sizes[-1] * factor)
    else:
        sizes = [parse_size(p) for p in text.split(",")]
    if len(sizes) > MAX_SIZES:
        raise UsageError(f"bad sizes {text[:40]!r}: {len(sizes)} sizes, at most {MAX_SIZES}")
    return sizes


DURATION_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?(?:e[+-]?\d+)?)\s*(s|m|min|h|d)?\s*$", re.IGNORECASE)
MAX_DURATION_POINTS = 64          # intervals one sweep may ask for


def parse_duration(text) -> float:
    """Seconds in ``text``: a number with an optional s, m (min), h or d suffix (plain numbers are seconds).

    >>> parse_duration("30m"), parse_duration("4h"), parse_duration("90"), parse_duration("1.5d")
    (1800.0, 14400.0, 90.0, 129600.0)
    """
    m = _DURATION.match(str(text))
    if not m:
        raise UsageError(f"bad duration {text!r}: use a number with an optional s, m, h or d suffix, e.g. 30m or 4h")
    value = float(m.group(1)) * DURATION_UNITS[(m.group(2) or "").lower()]
    if not value > 0:
        raise UsageError(f"bad duration {text!r}: must be more than 0")
    return value


def parse_durations(text: str, points: int = 12) -> list[float]:
    """Durations: a list ``10m,30m,1h``, or a range ``MIN:MAX`` of ``points`` values spaced evenly on a log scale
    (both ends included), or ``MIN:MAX:N`` with N values.

    >>> parse_durations("1h:4h:3")
    [3600.0, 7200.0, 14400.0]
    """
    text = str(text).strip()
    if ":" in text:
        parts = text.split(":")
        if len(parts) not in (2, 3):
            raise UsageError(f"bad duration range {text!r}: use MIN:MAX or MIN:MAX:N, e.g. 5m:4h")
        lo, hi = parse_duration(parts[0]), parse_duration(parts[1])
        if len(parts) == 3:
            if not parts[2].strip().isdigit() or not 2 <= int(parts[2]) <= MAX_DURATION_POINTS:
                raise UsageError(f"bad duration range {text!r}: N must be a whole number from 2 to "
                                 f"{MAX_DURATION_POINTS}")
            points = int(parts[2])
        if hi <= lo:
            raise UsageError(f"bad duration range {text!r}: need MIN < MAX")
        ratio = (hi / lo) ** (1.0 / (points - 1))
        out = [lo * ratio ** i for i in range(points)]
        out[-1] = hi
        return [round(x, 6) for x in out]
    out = [parse_duration(p) for p in text.split(",") if p.strip()]
    if not out:
        raise UsageError("bad durations '': give a list like 10m,30m,1h or a range like 5m:4h")
    if len(out) > MAX_DURATION_POINTS:
        raise UsageError(f"bad durations: {len(out)} values, at most {MAX_DURATION_POINTS}")
    return sorted(set(out))
