"""Storage and checkpoints: the checkpoint and storage fan-out run kinds and the Storage page."""

# Its browser modules (static paths): result views and GPU colour modes, registered by name with
# frontend/js/registry.js (twin.web.capabilities.browser_modules embeds them in every page).
BROWSER = ("js/capabilities/storage.js",)
