"""``python -m hermes_nb.cli …`` = ``hermes-nb …``."""

from hermes_nb.cli import main

raise SystemExit(main())
