"""A twin cluster written into a real NetBox and read back (issue 28): the imported cluster simulates as the
original, a cable failed in NetBox fails in the twin through the change log, and bad data is refused with the
NetBox object named and nothing built."""
import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from tests.netbox import seeds
from tests.netbox.checks import collective_result
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
    assert collective_result(imported) == collective_result(original)
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


def _refused(server, match):
    """The import is refused (exit 2) with ``match`` in its message, and the twin has no new cluster nor change."""
    changes = ObjectChange.objects.count()
    with pytest.raises(CommandError, match=match) as e:
        _import(server)
    assert e.value.returncode == 2
    assert not Cluster.objects.filter(name="demo-nb").exists() and ObjectChange.objects.count() == changes


def _site(nb, slug="demo-256"):
    return nb.list("dcim/sites/", slug=slug)[0]["id"]


def _spare_interfaces(nb, device_name, *names):
    """New uncabled interfaces on a device of demo-256 (deleted by the caller)."""
    [dev] = nb.list("dcim/devices/", site="demo-256", name=device_name)
    return nb.create("dcim/interfaces/", [{"device": dev["id"], "name": n, "type": "400gbase-x-osfp"} for n in names])


def _cable(nb, a, b, b_type="dcim.interface"):
    body = {"a_terminations": [{"object_type": "dcim.interface", "object_id": a}],
            "b_terminations": [{"object_type": b_type, "object_id": b}], "label": "odd"}
    return nb.create("dcim/cables/", [body])[0]


LEAF = "demo-256.be.rtsw.z00.000"


def test_a_cable_to_a_device_outside_the_site_is_refused_naming_the_cable(exported):
    server, nb, _ = exported
    [other] = nb.create("dcim/sites/", [{"name": "elsewhere", "slug": "elsewhere"}])
    dtype = nb.list("dcim/device-types/", slug="minipack2")[0]["id"]
    role = nb.list("dcim/device-roles/", slug="rtsw")[0]["id"]
    [dev] = nb.create("dcim/devices/", [{"name": "far-away", "site": other["id"], "role": role, "device_type": dtype}])
    [far] = nb.create("dcim/interfaces/", [{"device": dev["id"], "name": "eth0", "type": "400gbase-x-osfp"}])
    [near] = _spare_interfaces(nb, LEAF, "spare0")
    cable = _cable(nb, near["id"], far["id"])
    try:
        _refused(server, rf"cable #{cable['id']} \(odd\): a cable to nowhere: its [AB] end is not one interface of a "
                         rf"device in site 'demo-256'")
    finally:
        nb.delete("dcim/cables/", [cable["id"]])
        nb.delete("dcim/interfaces/", [near["id"]])
        nb.delete("dcim/devices/", [dev["id"]])
        nb.delete("dcim/sites/", [other["id"]])


def test_a_cable_to_a_circuit_or_to_nothing_is_refused_naming_the_cable(exported):
    server, nb, _ = exported
    [provider] = nb.create("circuits/providers/", [{"name": "carrier", "slug": "carrier"}])
    [ctype] = nb.create("circuits/circuit-types/", [{"name": "wan", "slug": "wan"}])
    [circuit] = nb.create("circuits/circuits/", [{"cid": "c-1", "provider": provider["id"], "type": ctype["id"]}])
    [term] = nb.create("circuits/circuit-terminations/", [{"circuit": circuit["id"], "term_side": "A",
                                                           "termination_type": "dcim.site",
                                                           "termination_id": _site(nb)}])
    a, b = _spare_interfaces(nb, LEAF, "spare0", "spare1")
    to_circuit = _cable(nb, a["id"], term["id"], "circuits.circuittermination")
    try:
        _refused(server, rf"cable #{to_circuit['id']} \(odd\): a cable to nowhere")
        nb.delete("dcim/cables/", [to_circuit["id"]])
        # NetBox creates a cable with both ends only; deleting the device at one end leaves it with none there
        dtype = nb.list("dcim/device-types/", slug="minipack2")[0]["id"]
        role = nb.list("dcim/device-roles/", slug="rtsw")[0]["id"]
        [doomed] = nb.create("dcim/devices/", [{"name": "doomed", "site": _site(nb), "device_type": dtype,
                                                "role": role}])
        [far] = nb.create("dcim/interfaces/", [{"device": doomed["id"], "name": "eth0", "type": "400gbase-x-osfp"}])
        dangling = _cable(nb, b["id"], far["id"])
        nb.delete("dcim/devices/", [doomed["id"]])
        _refused(server, rf"cable #{dangling['id']} \(odd\): a cable to nowhere: its B end")
    finally:
        nb.delete("dcim/cables/", [c["id"] for c in nb.list("dcim/cables/", label="odd")])
        nb.delete("dcim/interfaces/", [a["id"], b["id"]])
        nb.delete("circuits/circuits/", [circuit["id"]])
        nb.delete("circuits/circuit-types/", [ctype["id"]])
        nb.delete("circuits/providers/", [provider["id"]])


def test_a_loop_is_refused_naming_the_cable_and_the_device(exported):
    server, nb, _ = exported
    a, b = _spare_interfaces(nb, LEAF, "spare0", "spare1")
    cable = _cable(nb, a["id"], b["id"])
    try:
        _refused(server, rf"cable #{cable['id']} \(odd\): a loop: both ends are on device '{LEAF}'")
    finally:
        nb.delete("dcim/cables/", [cable["id"]])
        nb.delete("dcim/interfaces/", [a["id"], b["id"]])


def test_a_gpu_host_with_no_fabric_nic_is_refused_naming_it(exported):
    server, nb, _ = exported
    host = "demo-256.z00.r000.h0"
    ifaces = nb.list("dcim/interfaces/", site="demo-256", device=host, name__isw="be")
    # when the host's backend cables are removed in NetBox
    nb.delete("dcim/cables/", [i["cable"]["id"] for i in ifaces if i.get("cable")])
    try:
        _refused(server, rf"device '{host}': a GPU host with no fabric NIC")
    finally:     # an export puts them back
        call_command("netbox_export", "demo-256", "--url", server.url, "--token", server.token, "--no-progress",
                     stdout=io.StringIO())


def test_a_rail_optimized_superpod_round_trip_infers_its_rails(netbox_server, tmp_path):
    """dgx-h100-superpod scaled down to 2 scalable units of 8 DGX H100 (tests/netbox/seeds.py: NIC k of each on rail
    leaf k of its SU; the whole preset is measured by bench/bench_netbox.py --preset dgx-h100-superpod): exported,
    imported back with its rails inferred from the cabling, and simulating as the original."""
    spec = seeds.spec_files(tmp_path)["dgx-small"]
    call_command("build_cluster", spec, "--no-progress", stdout=io.StringIO())
    call_command("netbox_export", "dgx-small", "--url", netbox_server.url, "--token", netbox_server.token,
                 "--no-progress", stdout=io.StringIO())
    call_command("netbox_import", "--url", netbox_server.url, "--token", netbox_server.token, "--site", "dgx-small",
                 "--name", "dgx-nb", "--no-progress", stdout=io.StringIO())
    original, imported = Cluster.objects.get(name="dgx-small"), Cluster.objects.get(name="dgx-nb")
    assert imported.spec["backend"]["leaf"]["rails"] == 8
    assert collective_result(imported) == collective_result(original)


@pytest.mark.django_db(transaction=True)
def test_the_admin_import_runs_as_a_celery_task_counting_objects_read(exported, admin_client):
    server, nb, _ = exported
    from twin.inventory.models import NetBoxTransfer
    from twin.inventory.tasks import netbox_transfer
    from twin.inventory.netbox import transfers
    sent = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("twin.celery.app.send_task", lambda name, args: sent.append(args[0]))
        response = admin_client.post(reverse("admin:inventory_netboxtransfer_add"), {
            "url": server.url, "token": server.token, "site": "demo-256", "name": "demo-nb"})
    assert response.status_code == 302 and len(sent) == 1
    netbox_transfer.apply(args=(sent[0],))         # the task, as a worker runs it
    t = NetBoxTransfer.objects.get(pk=sent[0])
    assert t.status == "succeeded", t.error
    assert t.done == t.total > 0 and t.cluster.name == "demo-nb" and bytes(t.token_sealed) == b""
    assert transfers.TASK == netbox_transfer.name


@pytest.mark.django_db(transaction=True)
def test_the_admin_export_action_runs_as_a_celery_task(exported, admin_client):
    server, nb, _ = exported
    from twin.inventory.models import NetBoxTransfer
    from twin.inventory.tasks import netbox_transfer
    cluster = Cluster.objects.get(name="demo-256")
    sent = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("twin.celery.app.send_task", lambda name, args: sent.append(args[0]))
        response = admin_client.post(reverse("admin:inventory_cluster_changelist"), {
            "action": "export_to_netbox", "_selected_action": [cluster.pk], "netbox_export": "1",
            "url": server.url, "token": server.token})
    assert response.status_code == 302 and len(sent) == 1
    netbox_transfer.apply(args=(sent[0],))
    t = NetBoxTransfer.objects.get(pk=sent[0])
    assert t.status == "succeeded", t.error
    assert "created nothing; updated nothing" in t.outcome and t.percent == 100.0 and bytes(t.token_sealed) == b""
