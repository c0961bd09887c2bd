"""Power and heat: the ``power`` run kind (a training job's draw from each GPU to its rack, zone, building and the
cluster over its step and over days, caps and budgets: :mod:`sim.power`), its live sections (each GPU's draw and
its rack's peak against the rack budget, which the GPU page colours by) and the Power page."""

# Its browser modules (static paths): the power result view and the GPU page's power colour modes, registered by
# name with frontend/js/registry.js (twin.web.capabilities.browser_modules embeds them in every page).
BROWSER = ("js/capabilities/power.js",)
