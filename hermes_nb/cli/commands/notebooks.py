"""list names the shipped notebooks: the three `hermes-nb smoke` executes, the load receipt's, and the guide
(probe_console: the console and the magics; never run by the smoke); export DIR copies them and the nbval
sanitize rules into DIR to open in Jupyter or check with nbval; refresh (make notebooks) regenerates them from
the templates, executes them against the emulator and stores the outputs nbval compares."""

import shutil
from pathlib import Path
from typing import Annotated

from pydantic import Field

from hermes_nb.cli.app import Output
from hermes_nb.core.errors import ArtifactError, UsageError
from hermes_nb.core.facts import GUIDES, LOAD_NOTEBOOK, SHIPPED_NOTEBOOKS, notebook_path, sanitize_file
from hermes_nb.core.io import sha256_file
from hermes_nb.core.spec import Opt, Spec

HELP = "the shipped notebooks: list, export, refresh"


class ExportSpec(Spec):
    dir: Annotated[str | None, Opt(positional=True, metavar="DIR")] = Field(None, description="where to copy them")
    force: bool = Field(False, description="overwrite files that exist")


class RefreshSpec(Spec):
    dir: str = Field("notebooks", description="the notebooks directory")
    cell_timeout_s: float = Field(120.0, gt=0, description="the longest run of one cell")


def handle_list(spec: Spec, out: Output) -> int:
    rows = []
    for name in SHIPPED_NOTEBOOKS:
        path, kind = notebook_path(name), "guide" if name in GUIDES else "load" if name == LOAD_NOTEBOOK else "smoke"
        rows.append({"name": name, "kind": kind, "path": str(path), "sha256": sha256_file(path)})
        out.line(f"{name:18} {kind:6} {path}")
    out.emit({"notebooks": rows})
    return 0


def handle_export(spec: ExportSpec, out: Output) -> int:
    if spec.dir is None:
        raise UsageError("notebooks export: give the directory to export into (DIR)")
    target = Path(spec.dir)
    sources = [notebook_path(name) for name in SHIPPED_NOTEBOOKS] + [sanitize_file()]
    clashes = [target / src.name for src in sources if (target / src.name).exists()]
    if clashes and not spec.force:
        raise UsageError(f"{clashes[0]} exists (use --force to overwrite)")
    try:
        target.mkdir(parents=True, exist_ok=True)
        written = [str(shutil.copyfile(src, target / src.name)) for src in sources]
    except OSError as exc:
        raise ArtifactError(f"cannot export into {target}: {exc.strerror or exc}") from None
    for path in written:
        out.line(f"exported {path}")
    out.emit({"exported": written})
    return 0


def handle_refresh(spec: RefreshSpec, out: Output) -> int:
    from hermes_nb.nbrun.refresh import refresh_notebooks  # CLI start-up: the runner, for this action only

    progress = None if out.json_mode else out.info
    runs = refresh_notebooks(Path(spec.dir), timeout_s=spec.cell_timeout_s, progress=progress)
    refreshed = [str(Path(spec.dir) / f"{r.name}.ipynb") for r in runs]
    for path in refreshed:
        out.line(f"refreshed {path}")
    out.emit({"refreshed": refreshed, "verdict": "passed"})
    return 0


ACTIONS = {"list": (Spec, handle_list, "the notebooks shipped with hermes_nb (the smoke's three, load, guide)"),
           "export": (ExportSpec, handle_export, "copy the shipped notebooks and nbval-sanitize.cfg into DIR"),
           "refresh": (RefreshSpec, handle_refresh, "regenerate from the templates, execute against the emulator, "
                                                    "store outputs (make notebooks)")}
