"""NetBox transfers in the background (the admin's "Export to NetBox" action and "Import from NetBox" form):
:func:`start` records a :class:`NetBoxTransfer` with its token sealed and sends the Celery task by name;
:func:`run` (the task's body, twin/inventory/tasks.py) does the export or import, counting objects written or read
into the row (the admin's progress bar), and erases the token when it ends, whatever the outcome; while it runs, a
thread beats the row's ``heartbeat_at`` so that :func:`sweep_lost_transfers` (Celery beat's sweeper) fails, and erases
the token of, a transfer whose worker died, instead of leaving it running forever."""
from __future__ import annotations

import logging
import threading
import time
from datetime import timedelta

from django.db import connection, transaction
from django.utils import timezone

from twin.inventory.choices import TransferDirection, TransferStatus
from twin.inventory.models import Cluster, NetBoxTransfer
from twin.inventory.netbox import sealing
from twin.inventory.netbox.client import NetBox, NetBoxError

TASK = "twin.inventory.tasks.netbox_transfer"
PROGRESS_INTERVAL_S = 0.5          # the row's progress is written at most this often
HEARTBEAT_S = 5.0                  # a running transfer's heartbeat_at is written this often
log = logging.getLogger("twin.inventory.netbox")


def start(direction: str, url: str, token: str, site: str, name: str = "", cluster: Cluster | None = None,
          user=None) -> NetBoxTransfer:
    """Record a transfer and queue its task once the row is committed."""
    transfer = NetBoxTransfer.objects.create(direction=direction, url=url, site=site, name=name, cluster=cluster,
                                             token_sealed=sealing.seal(token),
                                             created_by=user if user and user.is_authenticated else None)
    pk = transfer.pk

    def send():
        from twin.celery import app
        app.send_task(TASK, args=(pk,))

    transaction.on_commit(send)
    return transfer


def run(transfer_id: int) -> None:
    """The task's body: never raises (the outcome goes on the row)."""
    rows = NetBoxTransfer.objects.filter(pk=transfer_id, status=TransferStatus.QUEUED)
    now = timezone.now()
    if not rows.update(status=TransferStatus.RUNNING, started_at=now, heartbeat_at=now):
        return                                     # already run (a redelivered message) or gone
    stop = threading.Event()
    beat = threading.Thread(target=_heartbeat, args=(transfer_id, stop), daemon=True,
                            name=f"netbox-transfer-{transfer_id}-heartbeat")
    beat.start()
    try:
        _run(transfer_id)
    finally:
        stop.set()
        beat.join()


def _heartbeat(transfer_id: int, stop: threading.Event) -> None:
    """Beat the running row every HEARTBEAT_S, on this thread's own database connection (closed at the end)."""
    try:
        while not stop.wait(HEARTBEAT_S):
            NetBoxTransfer.objects.filter(pk=transfer_id, status=TransferStatus.RUNNING).update(
                heartbeat_at=timezone.now())
    except Exception:  # noqa: BLE001 - a missed beat (database away) is the sweeper's to judge, never the transfer's
        log.exception("NetBox transfer %s: heartbeat failed", transfer_id)
    finally:
        connection.close()


def sweep_lost_transfers(stale_after: float, now=None) -> list[dict]:
    """Transfers whose worker died: running with no heartbeat for ``stale_after`` seconds are failed with the
    reason, and their token erased. Returns what it did, one dict per transfer."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=stale_after)
    done = []
    for t in NetBoxTransfer.objects.filter(status=TransferStatus.RUNNING, heartbeat_at__lt=cutoff):
        reason = f"worker lost (no heartbeat since {t.heartbeat_at:%Y-%m-%d %H:%M:%S} UTC)"
        if NetBoxTransfer.objects.filter(pk=t.pk, status=TransferStatus.RUNNING, heartbeat_at__lt=cutoff).update(
                status=TransferStatus.FAILED, error=reason, finished_at=now, token_sealed=b""):
            log.warning("NetBox transfer %s: %s: failed", t.pk, reason)
            done.append({"netbox_transfer": t.pk, "outcome": "failed", "reason": reason})
    return done


def _run(transfer_id: int) -> None:
    t = NetBoxTransfer.objects.get(pk=transfer_id)
    counted = {"done": 0, "last": 0.0}

    def progress(what: str, n: int) -> None:
        counted["done"] += n
        now = time.monotonic()
        if now - counted["last"] >= PROGRESS_INTERVAL_S:
            counted["last"] = now
            NetBoxTransfer.objects.filter(pk=transfer_id).update(done=counted["done"], step=what[:100])

    try:
        nb = NetBox(t.url, sealing.unseal(t.token_sealed))
        version = nb.status()["netbox-version"]
        if t.direction == TransferDirection.EXPORT:
            outcome = _export(t, nb, version, progress)
        else:
            outcome = _import(t, nb, progress)
        NetBoxTransfer.objects.filter(pk=transfer_id).update(
            status=TransferStatus.SUCCEEDED, outcome=outcome, done=counted["done"], step="",
            finished_at=timezone.now(), token_sealed=b"")
    except Exception as e:  # noqa: BLE001 - the reason goes on the row, the token is erased in any case
        from twin.inventory.netbox.importer import ImportRefused
        option = getattr(e, "option", None)
        if isinstance(e, (NetBoxError, ImportRefused, ValueError)):
            reason = f"{option + ': ' if option else ''}{e}"
        else:
            log.exception("NetBox transfer %s failed", transfer_id)
            reason = f"{type(e).__name__}: {e}"
        NetBoxTransfer.objects.filter(pk=transfer_id).update(
            status=TransferStatus.FAILED, error=reason, done=counted["done"], finished_at=timezone.now(),
            token_sealed=b"")


def _export(t: NetBoxTransfer, nb: NetBox, version: str, progress) -> str:
    from twin.inventory.netbox.export import export_cluster, planned_objects
    if t.cluster is None:
        raise ValueError("cluster: the cluster to export was deleted")
    NetBoxTransfer.objects.filter(pk=t.pk).update(total=planned_objects(t.cluster))
    r = export_cluster(t.cluster, nb, progress)
    made = ", ".join(f"{n:,} {k}" for k, n in r.created.items()) or "nothing"
    changed = ", ".join(f"{n:,} {k}" for k, n in r.updated.items()) or "nothing"
    return (f"{t.cluster.name} -> NetBox {version} site {t.site}: created {made}; updated {changed}; "
            f"{r.seconds:.1f} s ({r.netbox_seconds:.1f} s waiting for NetBox)")


def _import(t: NetBoxTransfer, nb: NetBox, progress) -> str:
    from twin.inventory.netbox.importer import import_site, planned_reads
    NetBoxTransfer.objects.filter(pk=t.pk).update(total=planned_reads(nb, t.site))
    r = import_site(nb, t.site, t.name, user=t.created_by, progress=progress)
    NetBoxTransfer.objects.filter(pk=t.pk).update(cluster=r.cluster)
    changed = ", ".join(f"{n:,} {k}" for k, n in r.statuses_changed.items()) or "none"
    return (f"{t.name}: {'built' if r.created else 'updated'} from NetBox site {t.site}; statuses changed: "
            f"{changed}; {r.seconds:.1f} s ({r.netbox_seconds:.1f} s waiting for NetBox)")
