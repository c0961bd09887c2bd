"""Power and heat: what a training job draws from the GPU to the rack, zone, building and cluster over its step
and over days under failures, what a GPU power cap costs in step time and saves in energy, and which racks and
buildings exceed their power and cooling budgets.
"""

# The package's commands (python -m sim COMMAND): name -> one-line help; implemented in its cli module.
COMMANDS = {
    'power': "a training job's power from GPU to building over its step (and over days), caps and budgets",
    'power-schedule': "the cluster's power over a job queue's schedule, as jobs come and go",
}
