"""Calibration: measurements of a real cluster (nccl-tests logs, job step times, checkpoint and restore times,
failure counts) against the twin's predictions, and a least-squares fit of named parameters (docs/calibration.md).
"""

# The package's commands (python -m sim COMMAND): name -> one-line help; implemented in its cli module.
COMMANDS = {
    'calibrate': "measured results against the twin's predictions, and a fit of named parameters",
}
