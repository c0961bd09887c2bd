"""A run's statuses, declared once: the live frames' status byte (:data:`twin.live.frames.STATUS_CODES`, code 0
"unknown", then these in order) and the runs' model field (:class:`twin.runs.choices.RunStatus`, built from these)
read the same list. The live layer sits below the runs app, so the list lives here."""

# (value, label), in the order of their codes 1, 2, ... on the wire
RUN_STATUSES = (("queued", "Queued"), ("running", "Running"), ("succeeded", "Succeeded"), ("failed", "Failed"),
                ("cancelled", "Cancelled"))
