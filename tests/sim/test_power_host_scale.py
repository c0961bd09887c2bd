"""The fitted factor ``host_power_scale`` (sim/core/fitted.py; docs/power.md "Hosts"): a GPU host's whole non-GPU
draw, anchored on a rated maximum, times one scale: at its prior every power figure is the model's as it stands,
the non-GPU draw moves linearly with it and the GPUs' not at all, and the power run's parameter is refused out of
its range naming the field."""
import pytest

from sim.calibrate.fittable import factor_bounds, fittable_names, would
from sim.cli import main
from sim.core import fitted
from sim.core.errors import ParamError
from sim.power import devices
from sim.power.params import POWER
from sim.power.places import places
from tests.sim.test_power import JOB, demo, run  # noqa: F401  (demo: the fixture, demo-256's topology)

FIGURES = ("cluster_peak_mw", "cluster_mean_mw", "cluster_swing_mw", "job_peak_mw", "job_mean_mw",
           "energy_per_token_j", "gpu_energy_per_token_j", "step_s")


def test_the_factor_is_declared_for_power_with_its_prior_one_and_fittable_there():
    f = fitted.factor("host_power_scale")
    assert (f.prior, f.kinds) == (1.0, ("power",)) and f.low < 0.5 < f.high >= 1.0
    assert "host_power_scale" in fittable_names(["power"]) and "host_power_scale" not in fittable_names(["job"])
    assert factor_bounds()["host_power_scale"] == (f.low, f.high)
    assert "node_mean_kw" in would("host_power_scale")


def test_at_its_prior_every_power_figure_is_the_unscaled_models(demo, monkeypatch):
    # Given no fitted value (null means the prior) and an explicit 1.0: the same run, figure for figure
    monkeypatch.setattr(fitted, "fitted_file", lambda: {})
    null, one = run(demo), run(demo, host_power_scale=1.0)
    assert null.places.host.scale == one.places.host.scale == 1.0
    for k in FIGURES:
        assert null.case.figures(1)[k] == one.case.figures(1)[k], k
    assert null.hosts() == one.hosts()
    # and the hosts draw what the device table says, unscaled
    lay = demo.layout
    table = devices.host_power(lay.spec.layout.host_platform)
    cpus = lay.spec.layout.cpus_per_host
    nics = int((lay.nic_host == 0).sum())
    assert one.places.host_busy_w[0] == table.watts(cpus, nics, True)
    assert one.places.host_idle_w[0] == table.watts(cpus, nics, False)


def test_a_hosts_non_gpu_draw_scales_linearly_busy_and_idle(demo):
    lay = demo.layout
    base, half = places(lay, 1.0), places(lay, 0.5)
    assert half.host_busy_w == pytest.approx(0.5 * base.host_busy_w, rel=1e-12)
    assert half.host_idle_w == pytest.approx(0.5 * base.host_idle_w, rel=1e-12)
    assert half.host_follow_w == pytest.approx(0.5 * base.host_follow_w, rel=1e-12)
    # every part: CPUs, memory, NICs and the load-following rest, at any load
    h = devices.host_power("dgx-h100")
    s = devices.HostPower(**{**h.__dict__, "scale": 0.37})
    for busy, load in ((True, 1.0), (True, 0.6), (False, 0.0)):
        assert s.watts(2, 10, busy, load) == pytest.approx(0.37 * h.watts(2, 10, busy, load), rel=1e-12)


def test_a_nodes_draw_is_its_gpus_plus_the_scaled_host_and_the_gpus_do_not_move(demo):
    # A node's mean is its GPUs' (unchanged by the scale) plus scale x its host's non-GPU draw: affine in the scale,
    # with the GPUs' draw alone as the intercept
    r = {s: run(demo, host_power_scale=s) for s in (0.25, 0.5, 1.0)}
    m = {s: x.hosts()["mean_kw"] for s, x in r.items()}
    assert m[1.0] - m[0.5] == pytest.approx(2 * (m[0.5] - m[0.25]), rel=1e-9)
    st = r[1.0].to_dict()["stages"][0]
    per_host = demo.layout.spec.layout.gpus_per_host
    assert (m[1.0] - 2 * (m[1.0] - m[0.5])) * 1e3 == pytest.approx(per_host * st["mean_w"], rel=1e-9)
    assert m[0.5] < m[1.0]
    for k in ("step_s", "gpu_energy_per_token_j"):
        assert r[0.5].case.figures(1)[k] == r[1.0].case.figures(1)[k]
    assert r[0.5].case.figures(1)["energy_per_token_j"] < r[1.0].case.figures(1)["energy_per_token_j"]


@pytest.mark.parametrize("bad", [0.0, -1.0, 5.0, "lots"])
def test_a_bad_scale_is_refused_naming_the_field(bad):
    with pytest.raises(ParamError, match="host_power_scale"):
        POWER.validate({**JOB, "host_power_scale": bad})


def test_the_command_line_refuses_a_bad_scale_naming_the_field(capsys):
    code = main(["power", "--preset", "demo-256", "--model", "llama3-8b", "--gpus", "64", "--tp", "1", "--pp", "1",
                 "-q", "--host-power-scale", "0"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and "host_power_scale: " in err
