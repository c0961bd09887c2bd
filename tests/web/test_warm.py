"""The warming thread of the web processes (twin/web/warm.py): the large clusters' zone arrays and fingerprints read
before the first visit, kept on disk for the processes that start later."""
import pytest

from twin.inventory import structure_cache as sc
from twin.inventory import zones as zone_arrays
from twin.web import fabric_data, warm
from twin.inventory import gpu_grid

pytestmark = pytest.mark.django_db


@pytest.fixture
def slow(monkeypatch, settings, tmp_path):
    settings.TWIN_STRUCTURE_CACHE_DIR = tmp_path
    monkeypatch.setattr(sc, "SLOW_S", -1.0)
    return tmp_path


def test_a_large_cluster_is_warmed(slow, demo, monkeypatch):
    # given the 256-GPU demo counted as large
    monkeypatch.setattr(warm, "OVERVIEW_ABOVE_GPUS", 255)
    monkeypatch.setattr(zone_arrays, "_zones", sc.StructureCache(name="zones"))
    assert warm.warm_once() == 1
    # then its zone arrays are in this process and on disk, and so are both fingerprints
    assert demo.id in zone_arrays._zones._entries
    assert len(list(slow.rglob("zones-*.pickle"))) == 1 and len(list(slow.rglob("fingerprint-*.pickle"))) == 2


def test_a_cluster_below_the_overview_is_not(slow, demo, monkeypatch):
    monkeypatch.setattr(warm, "OVERVIEW_ABOVE_GPUS", 256)
    monkeypatch.setattr(zone_arrays, "_zones", sc.StructureCache(name="zones"))
    assert warm.warm_once() == 0
    assert not zone_arrays._zones._entries and not list(slow.rglob("*.pickle"))


def test_the_thread_is_off_when_the_setting_says_so(settings):
    settings.TWIN_WARM_STRUCTURES = False
    assert warm.start() is False


def fresh_caches(monkeypatch):
    monkeypatch.setattr(gpu_grid, "_structures", sc.StructureCache(size=32, name="grid"))
    monkeypatch.setattr(fabric_data, "_structures", sc.StructureCache(size=32, name="fabric"))


def test_every_building_and_zone_is_built_onto_disk_once(slow, demo, monkeypatch, client):
    monkeypatch.setattr(warm, "OVERVIEW_ABOVE_GPUS", 255)
    fresh_caches(monkeypatch)
    warm.warm_once()
    zones = zone_arrays.cluster_zones(demo)
    places = warm.places(zones)
    # the demo cluster: one building (no buildings in its spec), and its zones holding GPUs
    assert [p.name for p in places][0] == "building 0" and len(places) == 1 + len(set(zones.gpu_zone.tolist()))
    assert len(list(slow.rglob("grid-*.pickle"))) == len(places) == len(list(slow.rglob("fabric-*.pickle")))
    assert not gpu_grid._structures._entries and not fabric_data._structures._entries  # not kept in memory
    # and the next round, in this process or another, does not go over them again (nor builds them)
    monkeypatch.setattr(gpu_grid, "build_structure", lambda *a: pytest.fail("built again"))
    monkeypatch.setattr(fabric_data, "_build", lambda *a: pytest.fail("built again"))
    monkeypatch.setattr(sc.StructureCache, "keep_on_disk", lambda *a: pytest.fail("gone over again"))
    warm.warm_once()
    fresh_caches(monkeypatch)       # another process
    sc.forget()
    warm.warm_once()
    # and a page zoomed into a zone reads its file
    zone = places[1].name
    assert client.get(f"/clusters/demo-256/gpus.json?zone={zone}").status_code == 200
    assert client.get(f"/clusters/demo-256/fabric.json?zone={zone}").status_code == 200


def test_what_a_gone_cluster_left_on_disk_is_removed(slow, demo, monkeypatch):
    monkeypatch.setattr(warm, "OVERVIEW_ABOVE_GPUS", 255)
    monkeypatch.setattr(zone_arrays, "_zones", sc.StructureCache(name="zones"))
    warm.warm_once()
    [mine] = {p.parent for p in slow.rglob("zones-*.pickle")}
    assert mine.name == f"c{demo.id}"
    gone = mine.parent / f"c{demo.id + 1}"
    gone.mkdir()
    (gone / "zones-x.pickle").write_bytes(b"")
    # when the next round runs, the directory of a cluster that does not exist is removed, the demo's kept
    warm.warm_once(zoom=False)
    assert not gone.exists() and list(mine.glob("zones-*.pickle"))


def test_a_build_puts_a_large_clusters_structures_on_disk(slow, db, monkeypatch, settings,
                                                          django_capture_on_commit_callbacks):
    # given the warming on, and the 256-GPU demo counted as large
    settings.TWIN_WARM_STRUCTURES = True
    monkeypatch.setattr(warm, "OVERVIEW_ABOVE_GPUS", 255)
    monkeypatch.setattr(zone_arrays, "_zones", sc.StructureCache(name="zones"))
    # when it is built, as a user builds it
    from tests.module_db import build
    with django_capture_on_commit_callbacks(execute=True):
        build()
    # then its zone arrays and fingerprints are on disk before any page asked for them
    assert len(list(slow.rglob("zones-*.pickle"))) == 1 and len(list(slow.rglob("fingerprint-*.pickle"))) == 2


def test_a_build_with_the_warming_off_writes_nothing(slow, db, monkeypatch, django_capture_on_commit_callbacks):
    monkeypatch.setattr(warm, "OVERVIEW_ABOVE_GPUS", 255)
    from tests.module_db import build
    with django_capture_on_commit_callbacks(execute=True):
        build()
    assert not list(slow.rglob("*.pickle"))
