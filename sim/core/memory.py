"""Process memory settings for large runs: keep freed arrays in the process, and fault memory in as small pages.

A 600k-GPU collective allocates and frees arrays of hundreds of MB many times over. Two defaults make that cost as
much system time as the computation itself on the 2-core virtual machine the benchmarks run on (docs/scale.md):

- glibc's malloc serves each large array from a fresh ``mmap`` and unmaps it when freed, so every reuse
  page-faults its memory in again. Raising the mmap and trim thresholds (``mallopt``) lets freed blocks be reused.
  The peak resident memory is not raised by it (blocks are reused, not added); what changes is that a long-lived
  process keeps up to ``REUSE_BYTES`` of freed memory until it exits.
- numpy asks the kernel for transparent huge pages on every array of 4 MB or more (``madvise(MADV_HUGEPAGE)``).
  Where the kernel's THP ``defrag`` setting is ``madvise`` (the default of most distributions), each 2 MB fault
  then compacts memory synchronously: measured on the benchmark machine, touching 4 GB of fresh memory cost 7 s of
  system time with huge pages and 2 s without. :func:`reuse_freed_memory` turns numpy's hint off
  (``numpy._core.multiarray._set_madvise_hugepage``, the switch behind ``NUMPY_MADVISE_HUGEPAGE=0``).

Called by ``python -m sim``, the benchmarks and every Celery worker process (twin/celery.py); each part is a no-op where it does not apply (no glibc, an older
numpy).
"""
from __future__ import annotations

import ctypes

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3     # glibc <malloc.h>
REUSE_BYTES = 2**31 - 1                         # mallopt takes a C int: the largest threshold it can set


def reuse_freed_memory() -> bool:
    """Raise glibc's mmap and trim thresholds to :data:`REUSE_BYTES` and stop numpy's huge-page hint; True if the
    C library took both thresholds."""
    _no_hugepage_hint()
    try:
        # the process's own symbols hold glibc's: no library search (ctypes.util.find_library runs ldconfig, a
        # subprocess that cost a one-shot command a noticeable part of its start-up)
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, REUSE_BYTES)) and bool(mallopt(M_TRIM_THRESHOLD, REUSE_BYTES))


def _no_hugepage_hint() -> None:
    """Stop numpy from asking for transparent huge pages on large arrays (see the module docstring)."""
    import numpy as np
    core = getattr(np, "_core", None) or getattr(np, "core", None)
    setter = getattr(getattr(core, "multiarray", None), "_set_madvise_hugepage", None)
    if setter is not None:
        setter(False)
