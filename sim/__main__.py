"""``python -m sim``: the engine's command line (see :mod:`sim.cli`)."""
import sys

from sim.cli import main

sys.exit(main())
