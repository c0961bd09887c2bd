"""Debugging rehearsals: a fault injected into a simulated job, the per-rank flight-recorder dumps PyTorch
would write, the analyzer that names the culprit, and the process-group start-up model.
"""

# The package's commands (python -m sim COMMAND): name -> one-line help; implemented in its cli module.
COMMANDS = {
    'debug': 'rehearse a fault in a training job: flight recorder dumps (debug analyze DIR reads them)',
    'debug-analyze': '(python -m sim debug analyze DIR) name the culprit in a folder of flight recorder dumps',
    'debug-unpack': '(python -m sim debug unpack ARCHIVE DIR) a legacy debug run\'s dumps archive (byte columns) back into its folder',
    'startup': 'process-group start-up time over job size',
}
