"""The backend fabric and collectives: cluster specs and the hardware catalog, the layout and topology as
arrays, routing (ECMP hashes, E-ECMP, D-mod-k, pinning, traffic engineering), NCCL's channels, QPs and
tuning, collectives as flows, and the published figures reproduced from them.
"""

# The package's commands (python -m sim COMMAND): name -> one-line help; implemented in its cli module.
COMMANDS = {
    'collective': 'simulate a collective over the fabric (nccl-tests style output)',
    'figure': 'reproduce a published figure, or a preset\'s page of figures, from simulations',
}
