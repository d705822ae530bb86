"""``python -m hermes_nb.cli …`` = ``hermes-nb …``."""

import sys

from hermes_nb.cli import main

sys.exit(main())
