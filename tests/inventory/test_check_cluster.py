"""check_cluster on a sound cluster and on one broken on purpose: each fault is listed and the command fails."""
import io

import pytest
from django.core.management import CommandError, call_command

from twin.inventory.builder import delete_cluster
from twin.inventory.checks import check_cluster
from twin.inventory.models import GPU, NIC, Cluster, Link, Port, Switch

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo():
    call_command("build_cluster", "demo-256", "--no-progress", stdout=io.StringIO())
    return Cluster.objects.get(name="demo-256")


def test_a_sound_cluster_passes(demo):
    out = io.StringIO()
    call_command("check_cluster", "demo-256", stdout=out)
    assert "sound, no violations" in out.getvalue()


def test_failed_links_are_not_violations(demo):
    ids = list(Link.objects.filter(cluster=demo, tier=1).values_list("id", flat=True)[:5])
    assert Link.objects.filter(id__in=ids).update(status="failed") == 5
    assert check_cluster(demo) == []


def test_every_fault_is_listed(demo):
    # a GPU whose NIC lost it
    gpu = GPU.objects.get(cluster=demo, index=7)
    NIC.objects.filter(gpu=gpu).update(gpu=None)
    # a NIC-to-RTSW cable pulled
    pulled = Link.objects.filter(cluster=demo, tier=0, fabric__role=0).order_by("id")[10]
    pulled_nic_port, pulled_switch = pulled.a_port.name, pulled.b_port.switch.name
    pulled.delete()
    # a port slowed to 100G under a 400G link
    slowed = Link.objects.filter(cluster=demo, tier=1).order_by("id")[0]
    Port.objects.filter(id=slowed.b_port_id).update(speed_gbps=100)
    # a port beyond the Minipack2's 64, and a port cabled twice (the a-end of one link, the b-end of another)
    rtsw = Switch.objects.filter(cluster=demo, role="rtsw").order_by("id")[0]
    Port.objects.create(cluster=demo, name="extra:64", switch=rtsw, slot=64, speed_gbps=400)
    reused = Link.objects.filter(cluster=demo, tier=2).order_by("id")[0].a_port
    free_spine_port = Port.objects.create(cluster=demo, name="spare", switch=reused.switch, slot=200, speed_gbps=400)
    Link.objects.create(cluster=demo, fabric=reused.switch.fabric, tier=2, a_port=free_spine_port, b_port=reused,
                        speed_gbps=400, cable_id=Link.objects.first().cable_id, name="bad", serial="BAD-1")

    violations = check_cluster(demo)
    by_check = {}
    for v in violations:
        by_check.setdefault(v.check, []).append(v)
    assert [v.item for v in by_check["gpu-nic"]] == [gpu.name]
    assert [v.item for v in by_check["nic-cabled"]] == [pulled_nic_port]
    assert any(v.item == slowed.name for v in by_check["link-speed"])
    assert [v.item for v in by_check["port-range"]] == ["extra:64"]
    assert [v.item for v in by_check["port-reuse"]] == [reused.name]
    assert any(v.item == pulled_switch and "15 downlinks" in v.message for v in by_check["switch-links"])
    assert any(v.item == "bad" for v in by_check["switch-links"])  # spine to spine is not a tier the spec joins
    assert {"links.nic-rtsw", "links.ctsw-atsw", "ports"} <= {v.item for v in by_check["counts"]}

    out = io.StringIO()
    with pytest.raises(CommandError) as info:
        call_command("check_cluster", "demo-256", stdout=out)
    assert info.value.returncode == 1 and f"{len(violations)} violation(s)" in str(info.value)
    assert out.getvalue().count("\n") == len(violations)


def test_an_unknown_cluster_is_refused(demo):
    with pytest.raises(CommandError, match="no cluster named 'nope'.*demo-256"):
        call_command("check_cluster", "nope")


def test_delete_cluster_removes_every_row(demo):
    delete_cluster(demo)
    from twin.inventory.builder import CLUSTER_TABLES
    assert not Cluster.objects.exists()
    assert all(model.objects.count() == 0 for model in CLUSTER_TABLES)
