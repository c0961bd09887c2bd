"""Failures over time: Meta's interruption table as rates, and a training job's timeline over days
(failures, detection, restarts, re-routing, checkpoints, effective training time).
"""

# The package's commands (python -m sim COMMAND): name -> one-line help; implemented in its cli module.
COMMANDS = {
    'failures': "a training job's wall clock over days: failures, restarts, re-routing",
}
