"""Calibration: the ``calibrate`` run kind (measurements against the twin's predictions and a fit of named
parameters, :mod:`sim.calibrate`) and the Calibration page, which saves a fit as a calibration profile."""

# Its browser modules (static paths): the ``calibration`` result view, registered by name with
# frontend/js/registry.js (twin.web.capabilities.browser_modules embeds them in every page).
BROWSER = ("js/capabilities/calibration.js",)
