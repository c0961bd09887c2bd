"""The warming thread of the web processes (twin/web/warm.py): the large clusters' zone arrays and fingerprints read
before the first visit, kept on disk for the processes that start later."""
import pytest

from twin.inventory import structure_cache as sc
from twin.live import scope
from twin.web import warm

pytestmark = pytest.mark.django_db


@pytest.fixture
def slow(monkeypatch, settings, tmp_path):
    settings.TWIN_STRUCTURE_CACHE_DIR = tmp_path
    monkeypatch.setattr(sc, "SLOW_S", -1.0)
    return tmp_path


def test_a_large_cluster_is_warmed(slow, demo, monkeypatch):
    # given the 256-GPU demo counted as large
    monkeypatch.setattr(warm, "OVERVIEW_ABOVE_GPUS", 255)
    monkeypatch.setattr(scope, "_zones", sc.StructureCache(name="zones"))
    assert warm.warm_once() == 1
    # then its zone arrays are in this process and on disk, and so are both fingerprints
    assert demo.id in scope._zones._entries
    assert len(list(slow.glob("zones-*.pickle"))) == 1 and len(list(slow.glob("fingerprint-*.pickle"))) == 2


def test_a_cluster_below_the_overview_is_not(slow, demo, monkeypatch):
    monkeypatch.setattr(warm, "OVERVIEW_ABOVE_GPUS", 256)
    monkeypatch.setattr(scope, "_zones", sc.StructureCache(name="zones"))
    assert warm.warm_once() == 0
    assert not scope._zones._entries and not list(slow.glob("*.pickle"))


def test_the_thread_is_off_when_the_setting_says_so(settings):
    settings.TWIN_WARM_STRUCTURES = False
    assert warm.start() is False
