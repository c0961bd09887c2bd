"""Validation: the twin's predictions held against a public corpus of measurements of real clusters
(collectives, training throughput, checkpoints, failures, power), with the error per kind and overall, the fitted
factors fitted across the whole corpus, cross-validation and the thresholds CI holds (docs/validation.md).
"""

# The package's commands (python -m sim COMMAND): name -> one-line help; implemented in its cli module.
COMMANDS = {
    'validate': "the twin against the public validation corpus: error per kind and overall, thresholds",
}
