"""Storage and checkpoints: the frontend fabric with storage racks, servers and SSDs as resources, the
stores' models (Tectonic, Hammerspace), a checkpoint's write and restore, and the many-client fan-out.
"""

# The package's commands (python -m sim COMMAND): name -> one-line help; implemented in its cli module.
COMMANDS = {
    'checkpoint': 'simulate a checkpoint or restore on the frontend fabric and storage',
    'storage-fanout': 'N clients opening and reading the same small files',
}
