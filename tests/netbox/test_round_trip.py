"""A twin cluster written into a real NetBox and read back (issue 28): the imported cluster simulates as the
original, a cable failed in NetBox fails in the twin through the change log, and bad data is refused with the
NetBox object named and nothing built."""
import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from sim.fabric.params import COLLECTIVE
from twin.capabilities.collectives import kinds
from twin.inventory.adapter import layout_from_db
from twin.inventory.models import Cluster, Link, ObjectChange
from twin.inventory.netbox.client import NetBox

# one worker runs the package, on its session's NetBox: tests/conftest.py SERVED_PACKAGES
pytestmark = pytest.mark.django_db


@pytest.fixture
def exported(netbox_server):
    call_command("build_cluster", "demo-256", "--no-progress", stdout=io.StringIO())
    out = io.StringIO()
    call_command("netbox_export", "demo-256", "--url", netbox_server.url, "--token", netbox_server.token,
                 "--no-progress", stdout=out)
    return netbox_server, NetBox(netbox_server.url, netbox_server.token), out.getvalue()


def _import(server, name="demo-nb"):
    out = io.StringIO()
    call_command("netbox_import", "--url", server.url, "--token", server.token, "--site", "demo-256", "--name", name,
                 stdout=out)
    return out.getvalue()


def _collective(cluster):
    params = COLLECTIVE.validate({"collective": "allgather", "gpus": 256, "sizes": "1M:64M", "seeds": 1})
    summary, _ = kinds.collective(layout_from_db(cluster), params, lambda *a, **k: None)
    return json.loads(json.dumps(summary, default=str).replace(f"{cluster.name}.", "CLUSTER."))


def test_an_exported_and_reimported_cluster_simulates_as_the_original(exported):
    server, nb, _ = exported
    # when demo-256 is exported again (nothing changed) and imported back under a new name
    again = io.StringIO()
    call_command("netbox_export", "demo-256", "--url", server.url, "--token", server.token, "--no-progress",
                 stdout=again)
    _import(server)
    # then the second export wrote nothing, and the collective's result is the same on both clusters
    assert "created nothing; updated nothing" in again.getvalue()
    original, imported = Cluster.objects.get(name="demo-256"), Cluster.objects.get(name="demo-nb")
    assert _collective(imported) == _collective(original)
    assert Link.objects.filter(cluster=imported).count() == Link.objects.filter(cluster=original).count()


def test_a_cable_failed_in_netbox_fails_in_the_twin_through_the_change_log(exported):
    server, nb, _ = exported
    _import(server)
    imported = Cluster.objects.get(name="demo-nb")
    [cable] = nb.list("dcim/cables/", site="demo-256", label=Link.objects.filter(
        cluster__name="demo-256", tier=1).order_by("id").values_list("serial", flat=True)[0])
    try:
        # when the cable is marked decommissioning (failed) in NetBox and the site is imported again
        nb.update("dcim/cables/", [{"id": cable["id"], "status": "decommissioning"}])
        note = _import(server)
        # then the twin's link is failed, logged as an update, and the re-import changed only it
        failed = Link.objects.get(cluster=imported, status="failed")
        assert failed.tier == 1 and "1 links" in note
        assert ObjectChange.objects.filter(model="link", object_id=failed.id, action="update").exists()
    finally:
        nb.update("dcim/cables/", [{"id": cable["id"], "status": "connected"}])


def test_an_unknown_role_is_refused_naming_the_device_and_nothing_is_built(exported):
    server, nb, _ = exported
    site = nb.list("dcim/sites/", slug="demo-256")[0]["id"]
    [role] = nb.create("dcim/device-roles/", [{"name": "pdu", "slug": "pdu", "color": "000000"}])
    dtype = nb.list("dcim/device-types/", slug="minipack2")[0]["id"]
    [dev] = nb.create("dcim/devices/", [{"name": "odd-pdu", "site": site, "role": role["id"], "device_type": dtype}])
    try:
        with pytest.raises(CommandError, match="device 'odd-pdu': role 'pdu' is not a known role"):
            _import(server)
        assert not Cluster.objects.filter(name="demo-nb").exists()
    finally:
        nb._call("DELETE", f"dcim/devices/{dev['id']}/")
        nb._call("DELETE", f"dcim/device-roles/{role['id']}/")


def test_mixed_speeds_in_a_tier_are_refused_naming_the_interface(exported):
    server, nb, _ = exported
    [iface] = nb.list("dcim/interfaces/", site="demo-256", device="demo-256.be.ctsw.z00.s00", name="eth0")
    try:
        nb.update("dcim/interfaces/", [{"id": iface["id"], "speed": 200_000_000}])
        with pytest.raises(CommandError, match=r"interface demo-256\.be\.\S+: mixed speeds in backend tier"):
            _import(server)
        assert not Cluster.objects.filter(name="demo-nb").exists()
    finally:
        nb.update("dcim/interfaces/", [{"id": iface["id"], "speed": 400_000_000}])


def test_a_bad_url_or_token_exits_2_naming_the_option(exported):
    server, _, _ = exported
    with pytest.raises(CommandError, match="^--token: ") as e:
        call_command("netbox_export", "demo-256", "--url", server.url, "--token", "nbt_nope.nope", "--no-progress")
    assert e.value.returncode == 2
    with pytest.raises(CommandError, match="^--url: ") as e:
        call_command("netbox_export", "demo-256", "--url", "http://127.0.0.1:9", "--token", "x", "--no-progress")
    assert e.value.returncode == 2
