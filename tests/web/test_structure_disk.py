"""Structures and fingerprints of a large cluster kept on disk (twin/inventory/structure_cache.py): a web process
that starts reads them instead of the database, and never a stale one. "Large" is SLOW_S, set below zero here so
that the 256-GPU demo cluster counts as large; "another process" is a cache with nothing in memory."""
import json

import numpy as np
import pytest

from twin.inventory import models as m
from twin.inventory import structure_cache as sc
from twin.inventory.actions import delete_items, set_status
from twin.inventory.structure_cache import StructureCache
from twin.inventory import zones as zone_arrays
from twin.inventory import gpu_grid
from twin.web import fabric_data

ZONE = "demo-256.z00"


@pytest.fixture
def slow(monkeypatch, settings, tmp_path):
    """Every read counts as slow (kept on disk, in a directory of this test's own)."""
    settings.TWIN_STRUCTURE_CACHE_DIR = tmp_path
    monkeypatch.setattr(sc, "SLOW_S", -1.0)
    return tmp_path


def another_process(monkeypatch):
    """Nothing kept in memory: the structure caches of the pages and the zone arrays start empty."""
    sc.forget()
    monkeypatch.setattr(zone_arrays, "_zones", StructureCache(name="zones"))
    monkeypatch.setattr(gpu_grid, "_structures", StructureCache(size=32, name="grid"))
    monkeypatch.setattr(fabric_data, "_structures", StructureCache(size=32, name="fabric"))


def test_a_slow_structure_is_read_from_disk_by_another_process(slow):
    StructureCache(name="t").get(7, ("fp", 1), lambda: {"a": np.arange(3)})
    # then another process reads it without building it
    got = StructureCache(name="t").get(7, ("fp", 1), lambda: pytest.fail("built again"))
    assert np.array_equal(got["a"], np.arange(3))
    # and under another fingerprint (the rows changed) it is built afresh, and kept in its place
    assert StructureCache(name="t").get(7, ("fp", 2), lambda: "new") == "new"
    assert StructureCache(name="t").get(7, ("fp", 2), lambda: pytest.fail("built again")) == "new"
    assert StructureCache(name="t").get(7, ("fp", 1), lambda: "old again") == "old again"


def test_a_torn_file_is_built_again(slow):
    StructureCache(name="t").get(7, "fp", lambda: "value")
    [kept] = slow.rglob("t-*.pickle")
    kept.write_bytes(kept.read_bytes()[:10])
    assert StructureCache(name="t").get(7, "fp", lambda: "rebuilt") == "rebuilt"


def test_a_fast_structure_stays_in_memory(settings, tmp_path):
    settings.TWIN_STRUCTURE_CACHE_DIR = tmp_path
    StructureCache(name="t").get(7, "fp", lambda: "value")
    assert not list(tmp_path.rglob("t-*.pickle"))


@pytest.mark.django_db
def test_a_slow_fingerprint_holds_while_only_statuses_change(slow, demo):
    reads = []

    def read():
        reads.append(1)
        return (len(reads),)

    key = ("test", demo.id)
    assert sc.trusted_fingerprint(key, read, demo.id) == (1,)
    sc.forget()             # another process: from disk, the inventory unchanged
    assert sc.trusted_fingerprint(key, read, demo.id) == (1,) and len(reads) == 1
    # when links fail (logged status updates), it still holds, in this process and another
    set_status(m.Link, list(m.Link.objects.filter(cluster=demo).values_list("id", flat=True)[:3]), "failed")
    assert sc.trusted_fingerprint(key, read, demo.id) == (1,)
    sc.forget()
    assert sc.trusted_fingerprint(key, read, demo.id) == (1,) and len(reads) == 1
    # but a deleted link (a logged change of the rows) has it read again
    delete_items(m.Link, [m.Link.objects.filter(cluster=demo).order_by("id").last()])
    assert sc.trusted_fingerprint(key, read, demo.id) == (2,)
    # and a change of another cluster's rows does not
    assert sc.trusted_fingerprint(("test", demo.id + 1), read, demo.id + 1) == (3,)
    delete_items(m.Link, [m.Link.objects.filter(cluster=demo).order_by("id").last()])
    assert sc.trusted_fingerprint(key, read, demo.id) == (4,)
    assert sc.trusted_fingerprint(("test", demo.id + 1), read, demo.id + 1) == (3,)


@pytest.mark.django_db
def test_pages_from_disk_show_fresh_statuses_and_changed_rows(slow, demo, client, monkeypatch):
    def get(path):
        response = client.get(f"/clusters/demo-256/{path}")
        assert response.status_code == 200, response.content
        return json.loads(response.content)

    paths = ("fabric/zones.json", "gpus/zones.json", f"fabric.json?zone={ZONE}", f"gpus.json?zone={ZONE}",
             "fabric.json?building=0", "gpus.json?building=0")
    before = {p: get(p) for p in paths}
    assert list(slow.rglob("zones-*.pickle")) and list(slow.rglob("grid-*.pickle"))
    # another process serves the same pages from disk, without reading the zone arrays from the database
    another_process(monkeypatch)
    monkeypatch.setattr(zone_arrays, "_build", lambda *a: pytest.fail("zone arrays read from the database"))
    assert {p: get(p) for p in paths} == before
    monkeypatch.undo()
    # when a link of the zone fails, another process shows it failed (the statuses are read fresh)
    part = before[f"fabric.json?zone={ZONE}"]
    ids = [first + k for first, count in part["links"]["id_runs"] for k in range(count)]
    set_status(m.Link, [ids[7]], "failed")
    another_process(monkeypatch)
    assert get(f"fabric.json?zone={ZONE}")["link_status"]["index"] == [7]
    tier = part["links"]["tier"][7]
    overview = get("fabric/zones.json")
    zone_at = overview["zones"].index(ZONE)
    [row] = [t for t in overview["tiers"] if t["code"] == tier]
    assert row["down"][zone_at] == 1
    # and when it is deleted (a logged change of the rows), its zone's arrays no longer hold it
    delete_items(m.Link, m.Link.objects.filter(id=ids[7]))
    another_process(monkeypatch)
    after = get(f"fabric.json?zone={ZONE}")
    assert after["links"]["count"] == part["links"]["count"] - 1 and after["link_status"]["index"] == []
    [row] = [t for t in get("fabric/zones.json")["tiers"] if t["code"] == tier]
    assert row["links"][zone_at] == [t for t in overview["tiers"] if t["code"] == tier][0]["links"][zone_at] - 1
