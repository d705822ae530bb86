"""``hermes-nb notebooks refresh``: regenerate the notebooks and store the outputs nbval compares."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any



def register(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser("notebooks", parents=[parent], help="maintain the committed notebooks")
    action = p.add_subparsers(dest="action", metavar="ACTION")
    r = action.add_parser("refresh", parents=[parent],
                          help="regenerate from the templates, execute against the emulator, store outputs (make notebooks)")
    r.add_argument("--dir", metavar="DIR", help="notebooks directory (default: the repository's notebooks/)")
    r.add_argument("--timeout", type=float, default=120.0, metavar="S", help="execution timeout per cell")
    r.set_defaults(handler=handle_refresh)
    p.set_defaults(handler=lambda args, out: _usage(p))


def _usage(p: argparse.ArgumentParser) -> int:
    from ..errors import UsageError

    raise UsageError("notebooks: choose an action: refresh")


def handle_refresh(args: argparse.Namespace, out: Any) -> int:
    from ..refresh import refresh_notebooks
    from ..smoke import notebooks_dir

    for name in ("papermill", "nbclient", "traitlets"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    directory = Path(args.dir) if args.dir else notebooks_dir()
    runs = refresh_notebooks(directory, timeout_s=args.timeout, progress=None if out.json_mode else out.info)
    for r in runs:
        out.line(f"refreshed {directory / (r.name + '.ipynb')}")
    out.emit({"refreshed": [str(directory / f"{r.name}.ipynb") for r in runs], "verdict": "passed"})
    return 0
