"""How many bytes a rehearsal's dumps take, the most it may write, and whether a folder can take them.

Why a module: the parameter check (:func:`sim.debug.recorder.check_debug`: the CLI's exit 2 and the API's 400), the
command line's ``--dump`` folder and the twin's debug kind (its temporary folder) ask the same questions with the
same estimate (:func:`dump_bytes`), declared once here.
"""
from __future__ import annotations

import os
import shutil
import tempfile

from sim.core.errors import ParamError, UsageError
from sim.debug.dumpformat import ENTRY_KEYS, record_dtype

# Bytes of one entry in our fixed layout: the writer's numpy record (145 bytes), so the estimate follows the writer.
ENTRY_BYTES = record_dtype({k: i for i, k in enumerate(ENTRY_KEYS)})[0].itemsize
# A dump's header: the memo's strings, pg_config, pg_status. Measured 2.4 kB at 16,384 ranks (TP 8 x PP 16 x DP 128,
# bench/bench_debug.py: 4.79 GB for 16,384 x 2,000 entries); bounded by 4 kB plus 8 bytes per member of the rank's
# groups (their ranks as text).
HEADER_BYTES = 4096
MEMBER_BYTES = 8
# The most one rehearsal may write (the sum over its ranks): 32 GB. The default 2,000 entries fit at up to about
# 110,000 ranks, TWIN_DEBUG_MAX_RANKS' 32,768 ranks up to about 6,700 entries; 16,384 ranks x 100,000 entries (about
# 238 GB) do not.
MAX_DUMPS_BYTES = 32 * 10**9
# A folder must have the estimate times this, plus DISK_RESERVE_BYTES, free before the dumps are written.
DISK_MARGIN = 1.1
DISK_RESERVE_BYTES = 1 << 30


def dump_bytes(values: dict) -> int:
    """The bytes of every rank's dump of the rehearsal ``values`` (validated job: ``gpus``, ``entries``, ``tp``,
    ``cp``, ``pp``, ``dp``): ranks x (entries x ENTRY_BYTES + the header). An upper bound: a rank records at most
    ``entries`` entries."""
    ranks = int(values["gpus"])
    members = sum(int(values.get(d) or 1) for d in ("tp", "cp", "pp", "dp"))
    return ranks * (int(values["entries"]) * ENTRY_BYTES + HEADER_BYTES + MEMBER_BYTES * members)


def check_dump_bytes(values: dict) -> None:
    """ParamError naming ``entries`` when the dumps would be over MAX_DUMPS_BYTES."""
    need = dump_bytes(values)
    if need > MAX_DUMPS_BYTES:
        raise ParamError("entries", f"{int(values['gpus']):,} ranks x {int(values['entries']):,} entries would write "
                                    f"about {need / 1e9:,.1f} GB of dumps, over the {MAX_DUMPS_BYTES / 1e9:,.0f} GB a "
                                    f"rehearsal may write (MAX_DUMPS_BYTES): fewer entries or ranks")


def check_room(folder, need: int) -> None:
    """UsageError naming ``folder`` unless its file system has ``need`` x DISK_MARGIN + DISK_RESERVE_BYTES free."""
    want = int(need * DISK_MARGIN) + DISK_RESERVE_BYTES
    free = shutil.disk_usage(folder).free
    if free < want:
        raise UsageError(f"{folder}: {free / 1e9:,.1f} GB free, the dumps need about {need / 1e9:,.1f} GB (with a "
                         f"{DISK_MARGIN:.0%} margin and {DISK_RESERVE_BYTES / 2**30:.0f} GiB kept free: "
                         f"{want / 1e9:,.1f} GB)")


def prepare_folder(folder, need: int = 0) -> None:
    """Make ``folder`` (created if missing) ready for the dumps before anything is simulated: a directory (not a
    file, not a device such as /dev/null) in which a file can be created, with room for ``need`` bytes
    (:func:`check_room`); UsageError naming the folder and the reason otherwise."""
    folder = os.fspath(folder)
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise UsageError(f"{folder}: exists and is not a folder")
    try:
        os.makedirs(folder, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as e:
        raise UsageError(f"{folder}: cannot write dumps there ({e.strerror or e})") from None
    if need:
        check_room(folder, need)
