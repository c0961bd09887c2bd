"""The engine's tests check each mechanism on its own terms: with every fitted factor at its prior (the model as
the documented facts give it, without the public corpus), so an analytic case does not move when the corpus is
refitted. The fitted values are the validation's business (tests/sim/test_validation*.py set their own). Session
scope: module fixtures that generate measurements run before any function's fixture."""
import pytest

from sim.core import fitted


@pytest.fixture(autouse=True, scope="session")
def fitted_factors_at_their_priors(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fitted, "FITTED_PATH", tmp_path_factory.getbasetemp() / "no-fitted-factors.toml")
        fitted.fitted_file.cache_clear()
        yield
    fitted.fitted_file.cache_clear()
