"""The admin's NetBox forms without a NetBox: bad input is refused naming the field and queues nothing; the token
is sealed in the database and erased when the transfer ends (the real round trip: tests/netbox)."""
import io

import pytest
from django.core.management import call_command
from django.urls import reverse

from twin.inventory import models as m
from twin.inventory.netbox import sealing, transfers
from twin.redis_server import free_port

pytestmark = pytest.mark.django_db
ADD = "admin:inventory_netboxtransfer_add"


def _errors(response) -> dict:
    form = response.context["adminform"].form if "adminform" in response.context else response.context["form"]
    return {k: " ".join(v) for k, v in form.errors.items()}


@pytest.mark.parametrize("field, data, reason", [
    ("url", {"url": "ftp://netbox.example"}, "over http or https"),
    ("url", {"url": "not a url"}, "Enter a valid URL"),
    ("url", {"url": "http://127.0.0.1:{port}"}, "cannot reach NetBox"),
    ("site", {"site": "not a slug"}, "Enter a valid"),
    ("name", {"name": ""}, "required"),
    ("token", {"token": ""}, "required"),
])
def test_the_import_form_refuses_bad_input_naming_the_field(admin_client, field, data, reason):
    post = {"url": "http://127.0.0.1:{port}", "token": "nbt_x.y", "site": "demo-256", "name": "demo-nb", **data}
    post["url"] = post["url"].format(port=free_port())
    response = admin_client.post(reverse(ADD), post)
    assert response.status_code == 200
    assert reason in _errors(response).get(field, ""), _errors(response)
    assert not m.NetBoxTransfer.objects.exists()


def test_the_export_action_asks_for_netbox_first_and_refuses_an_unreachable_one(admin_client):
    call_command("build_cluster", "demo-256", "--no-progress", stdout=io.StringIO())
    cluster = m.Cluster.objects.get()
    url = reverse("admin:inventory_cluster_changelist")
    form = admin_client.post(url, {"action": "export_to_netbox", "_selected_action": [cluster.pk]})
    assert form.status_code == 200 and b"Export to NetBox" in form.content
    refused = admin_client.post(url, {"action": "export_to_netbox", "_selected_action": [cluster.pk],
                                      "netbox_export": "1", "url": f"http://127.0.0.1:{free_port()}", "token": "t"})
    assert "cannot reach NetBox" in _errors(refused)["url"]
    assert not m.NetBoxTransfer.objects.exists()


def test_the_token_is_sealed_and_erased_when_the_transfer_ends(django_capture_on_commit_callbacks, monkeypatch):
    sent = []
    monkeypatch.setattr("twin.celery.app.send_task", lambda name, args: sent.append((name, args)))
    secret = "nbt_abcdef.0123456789secret"
    with django_capture_on_commit_callbacks(execute=True):
        t = transfers.start("import", f"http://127.0.0.1:{free_port()}", secret, site="s", name="n")
    stored = bytes(m.NetBoxTransfer.objects.get(pk=t.pk).token_sealed)
    assert secret.encode() not in stored and sealing.unseal(stored) == secret
    assert sent == [(transfers.TASK, (t.pk,))]          # the message carries the id only
    transfers.run(t.pk)                                   # nothing answers there: the transfer fails
    t.refresh_from_db()
    assert t.status == "failed" and t.error.startswith("--url: cannot reach NetBox")
    assert bytes(t.token_sealed) == b"" and t.finished_at is not None


def test_the_transfers_list_shows_progress_and_refreshes_while_one_runs(admin_client):
    m.NetBoxTransfer.objects.create(direction="export", url="http://nb.invalid", site="demo-256", status="running",
                                    done=250, total=1000, step="interfaces")
    page = admin_client.get(reverse("admin:inventory_netboxtransfer_changelist")).content.decode()
    assert '<progress value="25.0" max="100"' in page and "25 % · interfaces" in page
    assert 'http-equiv="refresh"' in page
    m.NetBoxTransfer.objects.update(status="succeeded")
    page = admin_client.get(reverse("admin:inventory_netboxtransfer_changelist")).content.decode()
    assert '<progress value="100.0"' in page and 'http-equiv="refresh"' not in page


def test_deleting_a_cluster_keeps_its_netbox_transfers_without_it(admin_client):
    call_command("build_cluster", "demo-256", "--no-progress", stdout=io.StringIO())
    cluster = m.Cluster.objects.get()
    t = m.NetBoxTransfer.objects.create(direction="export", url="http://nb.invalid", site="demo-256", cluster=cluster,
                                        status="succeeded")
    call_command("build_cluster", "demo-256", "--replace", "--no-progress", stdout=io.StringIO())
    t.refresh_from_db()
    assert t.cluster is None and m.Cluster.objects.filter(name="demo-256").exists()


def test_the_sweeper_fails_a_transfer_whose_worker_died_and_erases_its_token():
    from datetime import timedelta

    from django.utils import timezone

    from twin.inventory.choices import TransferDirection, TransferStatus
    now = timezone.now()

    def transfer(beat_seconds_ago):
        return m.NetBoxTransfer.objects.create(
            direction=TransferDirection.IMPORT, url="http://netbox.example", site="s", name="n",
            token_sealed=sealing.seal("nbt_x.y"), status=TransferStatus.RUNNING, started_at=now,
            heartbeat_at=now - timedelta(seconds=beat_seconds_ago))

    lost, alive = transfer(120), transfer(1)
    out = io.StringIO()
    call_command("sweep_runs", "--stale-after", "30", stdout=out)
    lost.refresh_from_db()
    alive.refresh_from_db()
    assert lost.status == TransferStatus.FAILED and lost.token_sealed == b"" and lost.finished_at is not None
    assert lost.error.startswith("worker lost (no heartbeat since")
    assert f"NetBox transfer {lost.pk}: failed" in out.getvalue()
    assert alive.status == TransferStatus.RUNNING and sealing.unseal(alive.token_sealed) == "nbt_x.y"
