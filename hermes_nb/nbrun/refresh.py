"""Refresh the committed notebooks: regenerate from the templates, execute against the emulator, store outputs.

``make notebooks`` → ``hermes-nb notebooks refresh``. The stored outputs are
what nbval compares (``pytest --nbval notebooks/``); they must come from a
passing run against the deterministic emulator, so a notebook that does not
pass is not written. Papermill's per-run metadata (timings, status) is
stripped, and the stored outputs are normalised with the nbval sanitize rules
(ports, run ids, timestamps, durations, temp paths → placeholders; artifact
digests in the verdict's machine summary → ``<sha256>``, its stream timeline → ``<timeline>``, a load report's
figures → ``<load>``), so that refreshing
twice writes byte-identical files and ``git diff notebooks/`` shows only real
changes.
"""

from __future__ import annotations

import configparser
import json
import re
import shutil
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import nbformat

from hermes_nb.core.errors import ConfigError, NotebookFailed, UsageError
from hermes_nb.core.facts import TEMPLATED_NOTEBOOKS, sanitize_file
from hermes_nb.nbrun.execute import NotebookRun, execute_notebook
from hermes_nb.nbrun.kernels import KernelPool
from hermes_nb.nbrun.templates import build
from hermes_nb.receipts.verdict import VERDICT_MIME

__all__ = ["SANITIZE_FILE", "strip_run_metadata", "sanitize_rules", "sanitize_outputs", "refresh_notebooks"]

SANITIZE_FILE = "nbval-sanitize.cfg"


def strip_run_metadata(nb: Any) -> Any:
    """Drop papermill's and nbclient's per-run metadata (the outputs stay)."""
    nb.metadata.pop("papermill", None)
    for cell in nb.cells:
        cell.metadata.pop("papermill", None)
        cell.metadata.pop("execution", None)
    return nb


def sanitize_rules(path: Path) -> list[tuple[re.Pattern[str], str]]:
    """The ``regex``/``replace`` pairs of an nbval sanitize file, read with :mod:`configparser` as nbval does."""
    parser = configparser.ConfigParser()
    try:
        with open(path, encoding="utf-8") as fh:
            parser.read_file(fh)
    except (OSError, configparser.Error) as exc:
        raise ConfigError(f"{path}: not a readable sanitize file: {exc}") from None
    rules: list[tuple[re.Pattern[str], str]] = []
    for section in parser.sections():
        pattern = parser.get(section, "regex", fallback=None)
        replacement = parser.get(section, "replace", fallback=None)
        if pattern is None or replacement is None:
            raise ConfigError(f"{path}: section [{section}] needs both regex and replace")
        try:
            rules.append((re.compile(pattern), replacement))
        except re.error as exc:
            raise ConfigError(f"{path}: bad regex {pattern!r} in [{section}]: {exc}") from None
    return rules


def _sanitize(value: Any, rules: Sequence[tuple[re.Pattern[str], str]]) -> Any:
    if isinstance(value, str):
        for regex, replacement in rules:
            value = regex.sub(replacement, value)
        return value
    if isinstance(value, list):
        return [_sanitize(v, rules) for v in value]
    if isinstance(value, dict):
        return {k: _sanitize(v, rules) for k, v in value.items()}
    return value


def sanitize_outputs(nb: Any, rules: Sequence[tuple[re.Pattern[str], str]]) -> Any:
    """Apply the sanitize rules to every string of every output (data, text, metadata); digests → ``<sha256>``."""
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        outputs = []
        for output in cell.outputs:
            clean = _sanitize(json.loads(json.dumps(output)), rules)
            summary = (clean.get("metadata") or {}).get(VERDICT_MIME)
            if isinstance(summary, dict) and isinstance(summary.get("artifacts"), dict):
                summary["artifacts"] = {name: "<sha256>" for name in summary["artifacts"]}
            details = summary.get("details") if isinstance(summary, dict) else None
            for key in ("timeline", "load"):  # stream timings and load figures vary run to run
                if isinstance(details, dict) and key in details:
                    details[key] = f"<{key}>"
            outputs.append(nbformat.from_dict(clean))
        cell.outputs = outputs
    return nb


def refresh_notebooks(directory: Path, *, names: Sequence[str] | None = None, timeout_s: float = 120.0,
                      progress: Callable[[str], None] | None = None) -> list[NotebookRun]:
    """Write each template to ``directory``, execute it there (cwd = directory), store it with outputs."""
    if timeout_s <= 0:
        raise UsageError(f"--timeout must be > 0, got {timeout_s:g}")
    directory = Path(directory).resolve()
    directory.mkdir(parents=True, exist_ok=True)
    say = progress or (lambda _msg: None)
    runs = []
    for name in names or TEMPLATED_NOTEBOOKS:
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
        first = next((r for r in failed if r.ename is not None), failed[0])
        raise NotebookFailed("; ".join(f"{r.name}: {r.verdict} ({r.reason})" for r in failed),
                             notebook=first.name, cell=first.cell, ename=first.ename)
    cfg = directory / SANITIZE_FILE
    if not cfg.is_file():  # nbval in that directory needs the rules the outputs were stored with
        shutil.copyfile(sanitize_file(), cfg)
    rules = sanitize_rules(cfg)
    for r in runs:
        nb = sanitize_outputs(strip_run_metadata(r.nb), rules)
        for cell, ref in zip(nb.cells, build(r.name).cells, strict=False):
            cell["id"] = ref["id"]
        nbformat.write(nb, str(directory / f"{r.name}.ipynb"))
        say(f"{r.name}: refreshed ({r.duration_s:.2f} s)")
    return runs
