"""A long job's timeline under failures, live: its state (``failure_state``, one row) and its failures so far
(``failure_events``), sent by the ``failures`` kind (:mod:`twin.capabilities.failures.kinds`). The code tables are
the engine's own."""
from __future__ import annotations

from sim.failures.inject import ITEM_KINDS
from sim.failures.rates import CONSEQUENCES, NAMES
from sim.failures.timeline import STATES, WHILE_DOWN
from twin.live.sections import Section, register

# A long job's timeline (failure_state, one row): its state (failure_states(), the engine's segment states), the
# simulated time reached and the run's length (hours), productive training so far (hours) and its share of the time
# reached, interruptions and lost hours so far, the seed simulated, seeds done and seeds of this run.
FAILURE_FIELDS = ("state", "t_hours", "hours", "productive_hours", "effective_ratio", "interruptions",
                  "lost_hours", "seed", "seeds_done", "seeds")
# One failure (failure_events row): when (hours), its category (failure_categories()), the kind of item it hit
# (item_kinds()) and that item's position (GPU: GPU.index; host: Host rows by id; link: backend Link rows by id, the
# link_util order; switch: Switch rows by id; -1 for the job itself), its consequence (failure_consequences()) and
# the work it cost (hours of training progress to recompute).
FAILURE_EVENT_FIELDS = ("t_hours", "category", "item_kind", "item", "consequence", "lost_hours")
FAILURE_EVENTS_SENT = 1024     # rows at most in one frame (24 KB): the newest


def failure_states() -> dict[int, str]:
    """The timeline's states (code -> name), declared once in the engine: :data:`sim.failures.timeline.STATES`."""
    return dict(enumerate(STATES))


def failure_categories() -> dict[int, str]:
    """The failure categories of Meta's table, in its order: :data:`sim.failures.rates.NAMES`."""
    return dict(enumerate(NAMES))


def failure_consequences() -> dict[int, str]:
    """What a failure does (:data:`sim.failures.rates.CONSEQUENCES`), and one that arrived while the job was
    already down (:data:`sim.failures.timeline.WHILE_DOWN`)."""
    return dict(enumerate(CONSEQUENCES + (WHILE_DOWN,)))


def item_kinds() -> dict[int, str]:
    """The kinds of item a failure hits: :data:`sim.failures.inject.ITEM_KINDS`."""
    return dict(enumerate(ITEM_KINDS))


def _event_codes() -> dict[str, dict[int, str]]:
    return {"category": failure_categories(), "item_kind": item_kinds(), "consequence": failure_consequences()}


FAILURE_STATE = register(Section(
    10, "failure_state", "float32", "rows", fields=FAILURE_FIELDS, codes=lambda: {"state": failure_states()},
    ints=("interruptions", "seed", "seeds_done", "seeds"),
    doc="one row: the timeline's state and figures so far"))
FAILURE_EVENTS = register(Section(
    11, "failure_events", "float32", "rows", fields=FAILURE_EVENT_FIELDS, codes=_event_codes, ints=("item",),
    max_rows=FAILURE_EVENTS_SENT, doc="one row per failure so far (the newest max_rows)"))
