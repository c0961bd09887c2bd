"""A run's live publisher, one per run in this process: the task's progress reports and the action that ends the
run use the same :class:`twin.live.publish.RunPublisher` (so the final frame carries the run's last arrays), found
by the run's id instead of being handed from function to function. A failure to build or send a frame is logged,
never raised: a live view must not fail a run.
"""
from __future__ import annotations

import logging

from twin.live import store
from twin.live.publish import RunPublisher, send_event

log = logging.getLogger("twin.runs")
_publishers: dict[int, RunPublisher] = {}


def _publisher(run) -> RunPublisher:
    p = _publishers.get(run.pk)
    if p is None:
        p = _publishers[run.pk] = RunPublisher(run)
    p.run = run
    return p


def progress(run, percent: float, *, force: bool = False, **sections) -> None:
    """Publish ``run``'s progress (percent) and sections by name (throttled by the publisher; any registered
    section, :func:`twin.live.frames.build_sections`)."""
    try:
        _publisher(run).progress(percent, force=force, **sections)
    except Exception:  # noqa: BLE001
        log.exception("live publisher of run %s failed", run.pk)


def progress_once(run, percent: float) -> None:
    """Publish a parent run's progress (a sweep, a fanned-out run: it has no arrays of its own) from whichever
    process its child reports in, without keeping a publisher for it there (its final frame is sent where it
    ends)."""
    try:
        RunPublisher(run).progress(percent, force=True)
    except Exception:  # noqa: BLE001
        log.exception("live publisher of run %s failed", run.pk)


def finished(run) -> None:
    """Publish ``run``'s final frame (its status as saved) and forget its publisher."""
    try:
        _publisher(run).finished()
    except Exception:  # noqa: BLE001
        log.exception("live publisher of run %s failed", run.pk)
    finally:
        _publishers.pop(run.pk, None)


def created(run) -> None:
    """Say ``{"type": "run_created", "run": id, "cluster": id, "kind": ..., "parent": id or null, "schedule": id or
    null}`` on the runs stream and the run's cluster's (the runs list, the Schedules page and the pages of that
    cluster list it again), however the run was made (the API, a form, a schedule, a sweep)."""
    message = {"type": "run_created", "run": run.pk, "cluster": run.cluster_id, "kind": run.kind,
               "parent": run.parent_id, "schedule": run.schedule_id}
    try:
        for stream in _streams(store.RUNS_STREAM, run.cluster_id):
            send_event(stream, message)
    except Exception:  # noqa: BLE001
        log.exception("live: could not publish the creation of run %s", run.pk)


def _streams(first: str, cluster_id: int | None, *rest: str) -> list[str]:
    """``first``, the cluster's stream when the run has a cluster (a cluster's build has none until it is built),
    then ``rest``."""
    return [first, *([store.cluster_stream(cluster_id)] if cluster_id else []), *rest]


def deleted(run_id: int, cluster_id: int | None) -> None:
    """Say ``{"type": "run_deleted", "run": id}`` on the run's stream, its cluster's and the runs stream (the runs
    list drops the row)."""
    _publishers.pop(run_id, None)
    message = {"type": "run_deleted", "run": run_id}
    try:
        for stream in _streams(store.run_stream(run_id), cluster_id, store.RUNS_STREAM):
            send_event(stream, message)
    except Exception:  # noqa: BLE001
        log.exception("live: could not publish the deletion of run %s", run_id)
