"""``python -m sim``: the engine's command line (see :mod:`sim.cli`)."""
import sys

from sim.cli import main
from sim.core.memory import reuse_freed_memory

reuse_freed_memory()            # a one-shot process: freed arrays are reused, not page-faulted in again
sys.exit(main())
