"""``make notebooks``: build each shipped notebook, execute it against the emulator and store it, if it passed, with
its outputs normalised by the nbval sanitize rules (refreshing twice writes the same bytes).
``python -m hermes_nb.nbrun.refresh notebooks`` refreshes the guides; ``hermes-nb notebooks refresh`` the others."""

from __future__ import annotations

import configparser
import json
import re
import shutil
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import nbformat

from hermes_nb.core.errors import ConfigError, NotebookFailed
from hermes_nb.core.facts import GUIDES, TEMPLATED_NOTEBOOKS, sanitize_file
from hermes_nb.nbrun.smoke import KernelPool, NotebookRun, execute_notebook, quiet_notebook_loggers
from hermes_nb.nbrun.templates import build
from hermes_nb.receipts.verdict import VERDICT_MIME

SANITIZE_FILE = "nbval-sanitize.cfg"
#: what a guide does not store: the widget view (its state is not stored) and the console's page script
_LIVE_ONLY = ("application/vnd.jupyter.widget-view+json", "application/javascript")


def sanitize_rules(path: Path) -> list[tuple[re.Pattern[str], str]]:
    """The ``regex``/``replace`` pairs of an nbval sanitize file, read as nbval does."""
    parser = configparser.ConfigParser()
    try:
        with open(path, encoding="utf-8") as fh:
            parser.read_file(fh)
        return [(re.compile(parser[s]["regex"]), parser[s]["replace"]) for s in parser.sections()]
    except (OSError, configparser.Error, KeyError, re.error) as exc:
        raise ConfigError(f"{path}: not a usable sanitize file ({type(exc).__name__}: {exc})") from None


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
            for key in ("timeline", "load", "measured_s"):  # stream timings and load figures vary run to run
                if isinstance(details, dict) and key in details:
                    details[key] = f"<{key}>"
            outputs.append(nbformat.from_dict(clean))
        cell.outputs = outputs
    return nb


def _guide_outputs(nb: Any, rules: Sequence[tuple[re.Pattern[str], str]]) -> None:
    """A guide's outputs, read unrun: no live-only data, the placeholders visible in HTML (``&lt;port&gt;``)."""
    names = sorted({m for _, replacement in rules for m in re.findall(r"<[a-z0-9.-]+>", replacement)}, key=len)
    placeholders = re.compile("|".join(re.escape(n) for n in reversed(names)))
    for cell in (c for c in nb.cells if c.cell_type == "code"):
        kept = []
        for output in cell.outputs:
            data = output.get("data")
            if data is not None:
                for mime in _LIVE_ONLY:
                    data.pop(mime, None)
                if not data:
                    continue
                if "text/html" in data:
                    data["text/html"] = placeholders.sub(lambda m: m[0].replace("<", "&lt;").replace(">", "&gt;"),
                                                         "".join(data["text/html"]))
            kept.append(output)
        cell.outputs = kept


def refresh_notebooks(directory: Path, *, names: Sequence[str] | None = None, timeout_s: float = 120.0,
                      progress: Callable[[str], None] | None = None) -> list[NotebookRun]:
    """Build each notebook (default: the templated ones), execute it in ``directory`` and store it there."""
    quiet_notebook_loggers()
    directory = Path(directory).resolve()
    directory.mkdir(parents=True, exist_ok=True)
    runs = [NotebookRun(name=name, template=build(name), parameters={}) for name in names or TEMPLATED_NOTEBOOKS]
    with KernelPool() as pool, ThreadPoolExecutor(max_workers=len(runs)) as ex:
        runs = list(ex.map(lambda r: execute_notebook(r, pool, timeout_s=timeout_s, cwd=directory), runs))
    failed = [r for r in runs if (r.status != "completed" if r.name in GUIDES else r.verdict != "passed")]
    if failed:
        first = next((r for r in failed if r.ename is not None), failed[0])
        raise NotebookFailed("; ".join(f"{r.name}: {r.verdict} ({r.reason})" for r in failed),
                             notebook=first.name, cell=first.cell, ename=first.ename)
    cfg = directory / SANITIZE_FILE
    if not cfg.is_file():  # nbval in that directory needs the rules the outputs were stored with
        shutil.copyfile(sanitize_file(), cfg)
    rules = sanitize_rules(cfg)
    for r in runs:
        nb = build(r.name)  # the template's cells and metadata, with the outputs they gave
        for cell, ran in zip(nb.cells, r.nb.cells, strict=True):
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = ran.outputs, ran.execution_count
        sanitize_outputs(nb, rules)
        if r.name in GUIDES:
            _guide_outputs(nb, rules)
        nbformat.write(nb, str(directory / f"{r.name}.ipynb"))
        if progress is not None:
            progress(f"{r.name}: refreshed ({r.duration_s:.2f} s)")
    return runs


if __name__ == "__main__":  # pragma: no cover - the Makefile's entry point for the guides
    refresh_notebooks(Path(sys.argv[1] if len(sys.argv) > 1 else "notebooks"), names=GUIDES, progress=print)
