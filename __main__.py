"""``python -m tiersweep``: the command line (see :mod:`tiersweep.cli`)."""

import sys

from .cli import main

sys.exit(main())
