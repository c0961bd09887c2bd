"""Training jobs: the job, jobs and schedule run kinds (a job's step, jobs sharing the fabric, a queue over time),
the Jobs page."""

# Its browser modules (static paths): result views and GPU colour modes, registered by name with
# frontend/js/registry.js (twin.web.capabilities.browser_modules embeds them in every page).
BROWSER = ("js/capabilities/jobs.js",)
