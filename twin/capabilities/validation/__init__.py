"""Validation: the ``validate`` run kind (the twin against the public validation corpus, ``sim/validation/corpus/``,
every observation run through the capability a user would run: :mod:`sim.validation`), its live section (the
run's phase and its errors once known) and the Validation page (``/validation/``): the error by kind before and after
the fitted factors, predicted against measured with each point's source, the factors and the sources; and the same
for a user's own measurements against a calibration profile (a ``calibrate`` run's observations)."""

# Its browser modules (static paths): the ``validation`` result view (the run's page and the Validation page draw it),
# registered by name with frontend/js/registry.js (twin.web.capabilities.browser_modules embeds them in every page).
BROWSER = ("js/capabilities/validation.js",)
