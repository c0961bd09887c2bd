"""Training jobs: the job, jobs and schedule run kinds (a job's step, jobs sharing the fabric, a queue over time),
the Jobs page."""
