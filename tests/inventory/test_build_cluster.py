"""build_cluster: exact counts in the database, idempotent, --replace, atomic, and refused specs write nothing."""
import io
import tomllib

import pytest
from django.core.management import CommandError, call_command

from sim.fabric.layout import expand
from sim.fabric.spec import PRESETS_DIR, load_spec
from twin.inventory.builder import build_cluster, total_rows
from twin.inventory.models import (
    GPU, NIC, SSD, Cluster, Fabric, Host, Link, Port, Rack, StorageServer, Switch, Zone,
)

pytestmark = pytest.mark.django_db

TABLES = {"zones": Zone, "racks": Rack, "hosts": Host, "gpus": GPU, "storage_servers": StorageServer, "ssds": SSD,
          "nics": NIC, "switches": Switch, "ports": Port, "links": Link}


def db_counts(cluster):
    counts = {key: model.objects.filter(cluster=cluster).count() for key, model in TABLES.items()}
    for role, tier, name in Switch.objects.filter(cluster=cluster).values_list("fabric__role", "tier", "role") \
            .distinct():
        counts[f"switches.{name}"] = Switch.objects.filter(cluster=cluster, fabric__role=role, tier=tier).count()
    return counts


def build(name, **kwargs):
    out = io.StringIO()
    call_command("build_cluster", name, "--no-progress", stdout=out, **kwargs)
    return out.getvalue()


def test_demo_cluster_rows_equal_its_expansion():
    # given the demo spec, when it is built, then every table holds exactly the expansion's items
    build("demo-256")
    cluster = Cluster.objects.get(name="demo-256")
    want = expand(load_spec("demo-256")).counts()
    got = db_counts(cluster)
    assert {k: want[k] for k in got} == got
    assert got["gpus"] == 256 and got["switches.rtsw"] == 16 and got["switches.atsw"] == 8
    assert Fabric.objects.get(cluster=cluster, role=0).kind == "backend-roce"


def test_every_item_has_a_unique_name_and_serial_and_starts_active():
    build("demo-256")
    for model in (Rack, Host, GPU, NIC, Switch, Link, StorageServer, SSD):
        rows = model.objects.values_list("name", "serial", "status")
        names, serials, statuses = zip(*rows)
        assert len(set(names)) == len(names) and len(set(serials)) == len(serials)
        assert set(statuses) == {"active"}


def test_gpu_index_and_nic_rail_follow_the_host():
    build("demo-256")
    gpu = GPU.objects.select_related("host", "nic").get(index=13)
    assert gpu.slot == 5 and gpu.host.slot == 1 and gpu.nic.slot == 5 and gpu.nic.host_id == gpu.host_id


def test_meta_roce_24k_builds_with_exact_counts():
    build("meta-roce-24k")
    got = db_counts(Cluster.objects.get(name="meta-roce-24k"))
    assert (got["gpus"], got["hosts"], got["switches.rtsw"], got["switches.ctsw"], got["switches.atsw"]) == \
        (24576, 3072, 1536, 144, 72)
    assert got["links"] == 24576 + 27648 + 4032 + 9934 + 6752 + 2112


def test_a_second_build_duplicates_nothing():
    build("demo-256")
    first = db_counts(Cluster.objects.get(name="demo-256"))
    assert "already built, nothing to do" in build("demo-256")
    assert db_counts(Cluster.objects.get(name="demo-256")) == first
    assert Cluster.objects.count() == 1


def test_a_changed_spec_is_reported_and_replace_rebuilds(tmp_path):
    build("demo-256")
    old_gpu_ids = set(GPU.objects.values_list("id", flat=True))
    spec_text = (PRESETS_DIR / "demo-256.toml").read_text().replace("racks_per_zone = 8", "racks_per_zone = 4", 1)
    changed = tmp_path / "demo.toml"
    changed.write_text(spec_text)
    assert "differs" in build(str(changed))
    assert GPU.objects.count() == 256
    build(str(changed), replace=True)
    assert GPU.objects.count() == 128 and not old_gpu_ids & set(GPU.objects.values_list("id", flat=True))
    assert Cluster.objects.get(name="demo-256").spec["layout"]["racks_per_zone"] == 4


def test_a_build_that_fails_midway_leaves_nothing_behind(tmp_path):
    # given another cluster holding a rack under a name the demo build will need
    other = (PRESETS_DIR / "demo-256.toml").read_text().replace('name = "demo-256"', 'name = "other"')
    (tmp_path / "other.toml").write_text(other)
    build(str(tmp_path / "other.toml"))
    Rack.objects.filter(name="other.z01.r003").update(name="demo-256.z01.r003")
    before = {key: model.objects.count() for key, model in TABLES.items()}
    # when the demo build reaches the racks, the unique name fails
    with pytest.raises(Exception, match="(?i)unique|duplicate"):
        build("demo-256")
    # then no row of it remains: not the cluster, not the zones written before the racks
    assert not Cluster.objects.filter(name="demo-256").exists()
    assert {key: model.objects.count() for key, model in TABLES.items()} == before


def test_a_bulk_load_refuses_a_key_that_names_no_row_of_the_load_and_writes_nothing():
    # given a built cluster, and a bulk load that knows only that cluster and the zones it writes itself
    from django.db import IntegrityError, transaction

    from twin.inventory.bulk import BulkLoad
    build("demo-256")
    cluster = Cluster.objects.get(name="demo-256")
    zones = Zone.objects.count()
    foreign_zone = Zone.objects.filter(cluster=cluster).first().id
    # when it writes a rack whose zone is neither (a zone of the built cluster: not written by this load)
    with pytest.raises(IntegrityError, match=r"Rack\.zone: 1 row\(s\) name a Zone that this build did not write"):
        with transaction.atomic():
            load = BulkLoad({Cluster: [cluster.id]})
            base = load.write(Zone, 1, {"cluster_id": [cluster.id], "name": ["t.z"], "kind": [0], "number": [99],
                                          "status": ["active"]})
            load.write(Rack, 2, {"cluster_id": [cluster.id, cluster.id], "zone_id": [base, foreign_zone],
                                 "name": ["t.r0", "t.r1"], "serial": ["T0", "T1"], "number": [0, 1],
                                 "status": ["active", "active"]})
    # then nothing of the load remains
    assert Zone.objects.count() == zones and not Rack.objects.filter(name__startswith="t.").exists()


@pytest.mark.parametrize("edit, field", [
    (lambda d: d["layout"].update(racks_per_zone=0), "layout.racks_per_zone"),
    (lambda d: d["backend"]["spine"].update(model="arista-9999"), "backend.spine.model"),
    (lambda d: d["backend"]["leaf"].update(uplinks=60), "backend.leaf.uplinks"),
    (lambda d: d["backend"]["spine"].update(oversubscription=5), "backend.spine.oversubscription"),
])
def test_a_refused_spec_names_the_field_and_writes_nothing(tmp_path, edit, field):
    import json
    data = tomllib.loads((PRESETS_DIR / "demo-256.toml").read_text())
    edit(data)
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(data))
    with pytest.raises(CommandError, match=f"spec refused: {field}"):
        build(str(path))
    assert Cluster.objects.count() == 0 and Zone.objects.count() == 0


def test_progress_reports_every_row():
    seen = []
    spec = load_spec("demo-256")
    result = build_cluster(spec, progress=lambda table, rows: seen.append(rows))
    assert sum(seen) == result.rows == total_rows(expand(spec))


def test_build_defaults_builds_the_configured_clusters(settings):
    settings.TWIN_DEFAULT_CLUSTERS = ["demo-256"]
    out = io.StringIO()
    call_command("build_cluster", "--defaults", "--no-progress", stdout=out)
    assert Cluster.objects.filter(name="demo-256").exists()
    call_command("build_cluster", "--defaults", "--no-progress", stdout=out)
    assert "already built" in out.getvalue()


@pytest.mark.django_db(transaction=True)  # foreign keys are checked at COMMIT where the triggers run
def test_a_cluster_named_from_outside_is_not_deleted(tmp_path):
    # given two clusters, and a link of the other cluster that names a switch of demo-256 (as a hand edit could)
    from django.db import IntegrityError

    from twin.inventory.builder import delete_cluster
    build("demo-256")
    other = (PRESETS_DIR / "demo-256.toml").read_text().replace('name = "demo-256"', 'name = "other"')
    (tmp_path / "other.toml").write_text(other)
    build(str(tmp_path / "other.toml"))
    demo, theirs = Cluster.objects.get(name="demo-256"), Cluster.objects.get(name="other")
    switch = Switch.objects.filter(cluster=demo).order_by("id").first()
    Link.objects.filter(pk=Link.objects.filter(cluster=theirs).order_by("id").first().pk).update(a_switch_id=switch.id)
    rows = {key: model.objects.count() for key, model in TABLES.items()}
    # when demo-256 is deleted, then it is refused, naming the key, and nothing is deleted
    with pytest.raises(IntegrityError, match="inventory_link.a_switch_id|FOREIGN KEY constraint failed"):
        delete_cluster(demo)
    assert {key: model.objects.count() for key, model in TABLES.items()} == rows


def test_a_rail_optimized_preset_builds_and_reads_back_as_the_same_fabric():
    # given the rail-optimized DGX H100 SuperPOD preset, when it is built, then every table holds its expansion and
    # the engine's topology read from the database cables NIC k of every host to the same rail leaf as the spec's
    from sim.fabric.topology import topology_from_layout
    from twin.inventory.adapter import layout_from_db
    build("dgx-h100-superpod")
    cluster = Cluster.objects.get(name="dgx-h100-superpod")
    spec = load_spec("dgx-h100-superpod")
    want = expand(spec).counts()
    got = db_counts(cluster)
    assert {k: want[k] for k in got} == got
    ours, theirs = topology_from_layout(expand(spec)), topology_from_layout(layout_from_db(cluster))
    for name in ("gpu_leaf", "gpu_leaf_port", "gpu_leaf_group", "link_tail", "link_head"):
        assert (getattr(ours, name) == getattr(theirs, name)).all(), name


def test_a_multi_plane_preset_builds_and_reads_back_as_the_same_fabric():
    # given the multiplane-4 preset (4 planes, 4 ports per NIC), when it is built, then the database holds every NIC
    # port and cable, and the topology read back puts every port of every NIC on the same leaf, in the same plane
    from sim.fabric.topology import topology_from_layout
    from twin.inventory.adapter import layout_from_db
    build("multiplane-4")
    cluster = Cluster.objects.get(name="multiplane-4")
    spec = load_spec("multiplane-4")
    want = expand(spec).counts()
    got = db_counts(cluster)
    assert {k: want[k] for k in got} == got
    ours, theirs = topology_from_layout(expand(spec)), topology_from_layout(layout_from_db(cluster))
    for name in ("gpu_port_leaf", "gpu_port_uplink", "link_tail", "link_head"):
        assert (getattr(ours, name) == getattr(theirs, name)).all(), name
    for mine, read in zip(ours.port_views, theirs.port_views):
        for name in ("leaves", "spines", "leaf_up", "spine_at", "gpu_leaf", "gpu_leaf_port"):
            assert (getattr(mine, name) == getattr(read, name)).all(), name


@pytest.mark.parametrize("name, gpu, nic", [("aws-p4d-pod", "a100-sxm-40gb", "efa-p4d-50g"),
                                            ("hgx-h200-pod", "h200-sxm-141gb", "cx7-400g")])
def test_a_generation_preset_builds_with_its_models_specs_in_the_catalog_tables(name, gpu, nic):
    # given a preset of another GPU generation, when it is built, then its GPUs and backend NICs point at catalog rows
    # holding the generation's specs as sim/presets/catalog.toml gives them
    from sim.fabric.catalog import load_catalog
    build(name)
    cluster = Cluster.objects.get(name=name)
    want, got = expand(load_spec(name)).counts(), db_counts(cluster)
    assert {k: want[k] for k in got} == got
    g = GPU.objects.filter(cluster=cluster).select_related("model").first().model
    want = load_catalog().models["gpu"][gpu].specs
    assert g.slug == gpu and {k: getattr(g, k) for k in want} == want
    models = set(NIC.objects.filter(cluster=cluster, gpu__isnull=False).values_list("model__slug", flat=True))
    assert models == {nic}
    row = NIC.objects.filter(cluster=cluster, gpu__isnull=False).select_related("model").first().model
    assert {k: getattr(row, k) for k in load_catalog().models["nic"][nic].specs} == \
        load_catalog().models["nic"][nic].specs
