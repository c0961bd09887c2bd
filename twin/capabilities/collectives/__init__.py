"""Collectives on the backend fabric (nccl-tests style), the fabric's health under the inventory, and the published
AllGather figure: their run kinds."""

# Its browser modules (static paths): result views and GPU colour modes, registered by name with
# frontend/js/registry.js (twin.web.capabilities.browser_modules embeds them in every page).
BROWSER = ("js/capabilities/collectives.js",)
