"""Process memory setting for large runs: keep freed arrays in the process instead of returning them to the kernel.

A 600k-GPU collective allocates and frees arrays of hundreds of MB many times over. glibc's malloc serves each from
a fresh ``mmap`` and unmaps it when freed, so every reuse page-faults its memory in again: on the 2-core machine
the benchmarks run on, that system time was as large as the computation itself (docs/scale.md). Raising the mmap
and trim thresholds (``mallopt``) lets freed blocks be reused. The peak resident memory is not raised by it (blocks
are reused, not added); what changes is that a long-lived process keeps up to ``REUSE_BYTES`` of freed memory until
it exits. Called by ``python -m sim`` and the benchmarks; a no-op where the C library is not glibc.
"""
from __future__ import annotations

import ctypes
import ctypes.util

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3     # glibc <malloc.h>
REUSE_BYTES = 2**31 - 1                         # mallopt takes a C int: the largest threshold it can set


def reuse_freed_memory() -> bool:
    """Raise glibc's mmap and trim thresholds to :data:`REUSE_BYTES`; True if the C library took both."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, REUSE_BYTES)) and bool(mallopt(M_TRIM_THRESHOLD, REUSE_BYTES))
