"""``python -m hermes_nb.emulator [flags]`` = ``hermes-nb emulator [flags]``."""

from __future__ import annotations

import sys

from ..cli import main

if __name__ == "__main__":
    sys.exit(main(["emulator", *sys.argv[1:]]))
