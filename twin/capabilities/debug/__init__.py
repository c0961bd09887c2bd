"""Debugging rehearsals: the debug and startup run kinds and the Debug page."""

# Its browser modules (static paths): result views and GPU colour modes, registered by name with
# frontend/js/registry.js (twin.web.capabilities.browser_modules embeds them in every page).
BROWSER = ("js/capabilities/debug.js",)
