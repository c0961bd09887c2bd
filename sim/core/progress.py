"""Progress of long engine work as the share of the work actually done.

A progress callback is ``progress(fraction, message="")``: ``fraction`` is the share of the whole call done so far
(0..1, never decreasing), counted in the units of work the engine really performs (flows routed, solver rounds,
phases, simulated runs), and ``message`` says what is being done. The CLI draws it as a bar (:class:`Bar`); a run on
Celery turns the same numbers into its live percentage, so both show the same progress.

>>> seen = []
>>> report = span(lambda f, m="": seen.append(round(f, 2)), 0.5, 1.0)
>>> report(0.0); report(0.5); report(1.0)
>>> seen
[0.5, 0.75, 1.0]
"""
from __future__ import annotations

import sys
import time
from typing import Callable, TextIO

Progress = Callable[..., None]


def silent(fraction: float, message: str = "") -> None:
    """A progress callback that reports nothing."""


def span(progress: Progress | None, lo: float, hi: float) -> Progress:
    """A callback for a sub-task that makes up ``lo..hi`` of its caller's work: its 0..1 maps into that range."""
    if progress is None:
        return silent
    width = hi - lo

    def report(fraction: float, message: str = "") -> None:
        progress(lo + width * min(1.0, max(0.0, float(fraction))), message)
    return report


def fractions_only(progress: Progress | None) -> Progress:
    """A callback passing on ``progress``'s fractions without the messages: for sub-tasks repeated many times (the
    runs of a figure) whose own messages would bury the caller's."""
    if progress is None:
        return silent

    def report(fraction: float, message: str = "") -> None:
        progress(fraction)
    return report


def weighted(progress: Progress | None, weights) -> list[Progress]:
    """Callbacks for consecutive sub-tasks whose shares of the work are proportional to ``weights``."""
    weights = [max(0.0, float(w)) for w in weights]
    total = sum(weights) or 1.0
    out, lo = [], 0.0
    for w in weights:
        out.append(span(progress, lo, lo + w / total))
        lo += w / total
    return out


class Bar:
    """A progress bar on stderr for the CLI: redrawn in place on a terminal (at most 10 times a second), one line
    per message elsewhere (logs, CI). Messages without a fraction change are printed as they come."""

    def __init__(self, stream: TextIO | None = None, width: int = 30, enabled: bool = True):
        self.stream = stream or sys.stderr
        self.width, self.enabled = width, enabled
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.fraction, self.message, self._drawn = 0.0, "", 0.0

    def __call__(self, fraction: float | None = None, message: str = "") -> None:
        if not self.enabled:
            return
        if fraction is not None:
            self.fraction = max(self.fraction, min(1.0, float(fraction)))
        changed = bool(message) and message != self.message
        if message:
            self.message = message
        now = time.monotonic()
        if self.tty:
            if changed or now - self._drawn >= 0.1 or self.fraction >= 1.0:
                self._drawn = now
                self.stream.write("\r\033[K" + self.line())
                self.stream.flush()
        elif changed:
            self.stream.write(self.line() + "\n")
            self.stream.flush()

    def line(self) -> str:
        done = int(round(self.fraction * self.width))
        return f"[{'#' * done}{'.' * (self.width - done)}] {100 * self.fraction:5.1f} %  {self.message}"

    def close(self) -> None:
        """End the bar's line on a terminal (if it drew one)."""
        if self.enabled and self.tty and self._drawn:
            self.stream.write("\n")
            self.stream.flush()
