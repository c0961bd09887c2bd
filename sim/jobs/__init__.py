"""Training jobs: model shapes, a 4D-parallel job's step on the fabric, several jobs sharing it, and a
scheduler placing a queue of them over simulated time.
"""

# The package's commands (python -m sim COMMAND): name -> one-line help; implemented in its cli module.
COMMANDS = {
    'job': 'one training step of a 4D-parallel job on the fabric',
    'schedule': 'a job queue over simulated time under a placement policy',
    'jobs': "several training jobs sharing the fabric: each one's step together and alone",
}
