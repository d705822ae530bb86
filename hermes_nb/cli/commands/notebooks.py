"""``hermes-nb notebooks list|export|refresh``: the notebooks shipped with hermes_nb, and their stored outputs.

``list`` names the shipped notebooks: the three ``hermes-nb smoke`` executes, and the guide
(``probe_console``: the console and the magics; never run by the smoke); ``export DIR`` copies them and
the nbval sanitize rules into ``DIR`` to open in Jupyter or check with nbval; ``refresh`` (``make notebooks``)
regenerates them from the templates, executes them against the emulator and stores the outputs nbval compares.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from hermes_nb.cli.output import Output
from hermes_nb.core.errors import UsageError

DEFAULT_DIR = "notebooks"


def register(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser("notebooks", parents=[parent], help="the shipped notebooks: list, export, refresh")
    action = p.add_subparsers(dest="action", metavar="ACTION")
    ls = action.add_parser("list", parents=[parent],
                           help="the notebooks shipped with hermes_nb (the three smoke runs, and the guide)")
    ls.set_defaults(handler=handle_list)
    ex = action.add_parser("export", parents=[parent],
                           help="copy the shipped notebooks and nbval-sanitize.cfg into DIR")
    ex.add_argument("dir", metavar="DIR")
    ex.add_argument("--force", action="store_true", help="overwrite files that exist")
    ex.set_defaults(handler=handle_export)
    r = action.add_parser("refresh", parents=[parent],
                          help="regenerate from the templates, execute against the emulator, store outputs "
                               "(make notebooks)")
    r.add_argument("--dir", metavar="DIR", default=DEFAULT_DIR,
                   help=f"notebooks directory (default: ./{DEFAULT_DIR})")
    r.add_argument("--timeout", type=float, default=120.0, metavar="S", help="execution timeout per cell")
    r.set_defaults(handler=handle_refresh)
    p.set_defaults(handler=_usage)


def _usage(args: argparse.Namespace, out: Output) -> int:
    raise UsageError("notebooks: choose an action: list | export DIR | refresh [--dir DIR]")


def handle_list(args: argparse.Namespace, out: Output) -> int:
    from hermes_nb.core.digests import sha256_file
    from hermes_nb.core.facts import GUIDES, LOAD_NOTEBOOK, SHIPPED_NOTEBOOKS
    from hermes_nb.core.resources import notebook_path

    def kind(name: str) -> str:
        return "guide" if name in GUIDES else "load" if name == LOAD_NOTEBOOK else "smoke"

    rows = [{"name": name, "kind": kind(name), "path": str(notebook_path(name)),
             "sha256": sha256_file(notebook_path(name))} for name in SHIPPED_NOTEBOOKS]
    for row in rows:
        out.line(f"{row['name']:18} {row['kind']:6} {row['path']}")
    out.emit({"notebooks": rows})
    return 0


def handle_export(args: argparse.Namespace, out: Output) -> int:
    import shutil

    from hermes_nb.core.errors import ArtifactError
    from hermes_nb.core.facts import SHIPPED_NOTEBOOKS
    from hermes_nb.core.resources import notebook_path, sanitize_file

    target = Path(args.dir)
    sources = [notebook_path(name) for name in SHIPPED_NOTEBOOKS] + [sanitize_file()]
    clashes = [target / src.name for src in sources if (target / src.name).exists()]
    if clashes and not args.force:
        raise UsageError(f"{clashes[0]} exists (use --force to overwrite)")
    try:
        target.mkdir(parents=True, exist_ok=True)
        written = [Path(shutil.copyfile(src, target / src.name)) for src in sources]
    except OSError as exc:
        raise ArtifactError(f"cannot export into {target}: {exc.strerror or exc}") from None
    for path in written:
        out.line(f"exported {path}")
    out.emit({"exported": [str(p) for p in written]})
    return 0


def handle_refresh(args: argparse.Namespace, out: Output) -> int:
    from hermes_nb.nbrun.refresh import refresh_notebooks

    for name in ("papermill", "nbclient", "traitlets"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    directory = Path(args.dir)
    runs = refresh_notebooks(directory, timeout_s=args.timeout, progress=None if out.json_mode else out.info)
    for r in runs:
        out.line(f"refreshed {directory / (r.name + '.ipynb')}")
    out.emit({"refreshed": [str(directory / f"{r.name}.ipynb") for r in runs], "verdict": "passed"})
    return 0
