"""Server paths are kept out of what the runs API sends: a worker's temporary folder (a debug rehearsal's
``/tmp/twin-debug-<run>-...``), the run files' folder, the code's and the Python environment's folders are of no use
to a user and tell an attacker the layout of the server. :func:`scrub` rewrites such a path to its last component
(``/tmp/twin-debug-7-x1/nccl_trace_rank_3: not a dump`` -> ``nccl_trace_rank_3: not a dump``), in any string of a
summary, an error or a note, whoever reads it."""
from __future__ import annotations

import functools
import re
import sys
import tempfile

from django.conf import settings

from twin.runs.constants import setting


@functools.cache
def _pattern(roots: tuple[str, ...]) -> re.Pattern:
    alternatives = "|".join(re.escape(r.rstrip("/")) for r in sorted(roots, key=len, reverse=True))
    stop = r"\s'\",:;()\[\]{}"
    return re.compile(rf"(?<![\w./-])(?:{alternatives})(?=/|[{stop}]|$)(?:/[^{stop}]*)?")


def _roots() -> tuple[str, ...]:
    roots = {tempfile.gettempdir(), "/tmp", "/var/tmp", str(setting("TWIN_RUN_FILES_DIR")), str(settings.BASE_DIR),
             sys.prefix}
    return tuple(sorted(r for r in roots if r and r != "/"))


def _last(match: re.Match) -> str:
    return match.group(0).rstrip("/").rsplit("/", 1)[-1] or "(server folder)"


def scrub(value):
    """``value`` (a string, or JSON made of dicts, lists and strings) with every server path replaced by its last
    component; other values as they are."""
    if isinstance(value, str):
        return _pattern(_roots()).sub(_last, value) if "/" in value else value
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    return value
