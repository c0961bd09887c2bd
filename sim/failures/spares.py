"""The hot spare hosts of a failures timeline (docs/reliability.md, "Consequences"): a pool of ``free`` hosts and
the times the lent ones come back. A crash that needs a healthy host in place of the failed one takes a free spare
at once, and the spare returns to the pool when the failed host is repaired (it then becomes the spare); with no
free spare the job waits for the first spare to come back or for the failed host's repair, whichever comes first.
Kept apart from :mod:`sim.failures.timeline` so that the timeline holds the events and this the pool's arithmetic.
"""
from __future__ import annotations

import heapq
import math


class SparePool:
    """``free`` spare hosts now; ``back``: a heap of the times lent spares come back (their failed host repaired)."""

    def __init__(self, free: int):
        self.free = free
        self.back: list[float] = []

    def release(self, at: float) -> None:
        """Spares whose failed host is repaired by ``at`` are free again."""
        while self.back and self.back[0] <= at:
            heapq.heappop(self.back)
            self.free += 1

    def lend(self, repaired: float) -> bool:
        """One free spare, lent until ``repaired``; False when none is free."""
        if self.free <= 0:
            return False
        self.free -= 1
        heapq.heappush(self.back, repaired)
        return True

    def wait(self, at: float, need: int, repaired: float) -> float:
        """Seconds from ``at`` until ``need`` healthy hosts replace failed ones repaired at ``repaired``: free
        spares at once, else the first spares back or the repair, whichever first (the spares taken are lent until
        ``repaired``)."""
        self.release(at)
        if self.free >= need:
            for _ in range(need):
                self.lend(repaired)
            return 0.0
        short = need - self.free
        back = sorted(self.back)
        via_spares = back[short - 1] if len(back) >= short else math.inf
        if via_spares < repaired:
            for _ in range(short):
                heapq.heappop(self.back)
            self.free = 0
            for _ in range(need):
                heapq.heappush(self.back, repaired)
            return via_spares - at
        return max(0.0, repaired - at)
