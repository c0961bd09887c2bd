"""Failures over time: the failures run kind (a long job's timeline) and the Reliability page."""

# Its browser modules (static paths): result views and GPU colour modes, registered by name with
# frontend/js/registry.js (twin.web.capabilities.browser_modules embeds them in every page).
BROWSER = ("js/capabilities/failures.js",)
