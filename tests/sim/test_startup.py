"""The process-group start-up model (sim/debug/startup.py): grows with ranks; each optimization lowers it."""
import pytest

from sim.core.errors import ParamError
from sim.debug.params import STARTUP
from sim.debug.startup import model


def test_startup_grows_with_ranks_and_each_change_lowers_it():
    d = model(STARTUP.validate({"gpus": "1024:32768", "split": False, "creation": "eager"}))
    totals = [r["total_s"] for r in d["rows"]]
    assert totals == sorted(totals) and totals[0] < totals[-1]
    for r in d["rows"]:
        opts = [o["total_s"] for o in r["optimizations"]]
        assert all(b <= a for a, b in zip(opts, opts[1:]))
        assert all(o["removes_s"] > 0 for o in r["optimizations"][1:4])


def test_global_barriers_grow_with_world_times_groups():
    # without local sync every rank joins every group's barrier: 2 x world x groups requests at the store's rate
    d = model(STARTUP.validate({"gpus": "1024,2048", "local_sync": False, "store_ops_per_s": 1000.0}))
    for r in d["rows"]:
        assert r["terms"]["barrier"] == pytest.approx(2 * r["gpus"] * r["groups"]["total"] / 1000.0)


def test_bad_sizes_name_the_field():
    for g in ("x", "4096:1024", "1000:2000"):
        with pytest.raises(ParamError) as e:
            STARTUP.validate({"gpus": g})
        assert "gpus" in e.value.errors
