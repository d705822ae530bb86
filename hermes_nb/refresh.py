"""Refresh the committed notebooks: regenerate from the templates, execute against the emulator, store outputs.

``make notebooks`` → ``hermes-nb notebooks refresh``. The stored outputs are
what nbval compares (``pytest --nbval notebooks/``); they must come from a
passing run against the deterministic emulator, so a notebook that does not
pass is not written. Papermill's per-run metadata (timings, status) is
stripped so that refreshes diff cleanly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import nbformat

from .errors import NotebookFailed
from .kernels import KernelPool
from .notebook_templates import NAMES, build
from .nbexec import NotebookRun, execute_notebook

__all__ = ["strip_run_metadata", "refresh_notebooks"]


def strip_run_metadata(nb: Any) -> Any:
    """Drop papermill's and nbclient's per-run metadata (the outputs stay)."""
    nb.metadata.pop("papermill", None)
    for cell in nb.cells:
        cell.metadata.pop("papermill", None)
        cell.metadata.pop("execution", None)
    return nb


def refresh_notebooks(directory: Path, *, names: Sequence[str] | None = None, timeout_s: float = 120.0,
                      progress: Callable[[str], None] | None = None) -> list[NotebookRun]:
    """Write each template to ``directory``, execute it there (cwd = directory), store it with outputs."""
    directory = Path(directory).resolve()
    directory.mkdir(parents=True, exist_ok=True)
    say = progress or (lambda _msg: None)
    runs = []
    for name in names or NAMES:
        path = directory / f"{name}.ipynb"
        template = build(name)
        tmp = directory / f".{name}.template.ipynb"
        nbformat.write(template, str(tmp))
        runs.append(NotebookRun(name=name, template=tmp, parameters={}))
    try:
        with KernelPool() as pool, ThreadPoolExecutor(max_workers=len(runs)) as ex:
            runs = list(ex.map(lambda r: execute_notebook(r, pool, timeout_s=timeout_s, cwd=directory), runs))
    finally:
        for r in runs:
            r.template.unlink(missing_ok=True)
    failed = [r for r in runs if r.verdict != "passed"]
    if failed:
        raise NotebookFailed("; ".join(f"{r.name}: {r.verdict} ({r.reason})" for r in failed))
    for r in runs:
        nb = strip_run_metadata(r.nb)
        for cell, ref in zip(nb.cells, build(r.name).cells):
            cell["id"] = ref["id"]
        nbformat.write(nb, str(directory / f"{r.name}.ipynb"))
        say(f"{r.name}: refreshed ({r.duration_s:.2f} s)")
    return runs
