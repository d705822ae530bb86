"""Guided notebooks (not part of the smoke, not shipped in the wheel): ``notebooks/probe_console.ipynb``.

Generated like the smoke notebooks and, by ``make notebooks``, executed against the embedded emulator in a
fresh kernel, so the stored guide shows what each cell gives; its outputs are normalised with the nbval
sanitize rules (ports, durations, timelines…) plus the widgets' model ids, and the widget state is not
stored. Every code cell is tagged ``nbval-ignore-output``: ``make test`` runs the guide under nbval (every
cell must run without an error) but does not compare its outputs (widgets, stream timings).

    python -m hermes_nb.nbrun.guides notebooks    # (re)write and execute the guides into ./notebooks
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

from hermes_nb.nbrun.templates import KERNELSPEC

__all__ = ["GUIDES", "probe_console", "write_guides"]

_IGNORE = ["nbval-ignore-output"]


def _md(text: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_markdown_cell(text.strip())


def _code(source: str) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell(source.strip())
    cell.metadata["tags"] = list(_IGNORE)
    return cell


def probe_console() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        _md("""
# Probing a Hermes proxy from Jupyter

A short tour of the exploratory face of hermes_nb: the **probe console** (widgets) and the **magics**.
Nothing here needs a proxy: with no endpoint (and no `HERMES_NB_ENDPOINT`) everything talks to an
**embedded emulator** started for this session. Point it at `http://127.0.0.1:8645/v1` to probe a real
`hermes proxy start`. The bearer, if any, comes from `HERMES_NB_AUTH_TOKEN` in the kernel or the console's
password field; it is never shown, stored in widget state or written into this notebook.
"""),
        _md("""
## The console

Pick a route (chat streamed, chat, models, health, or any forwarded path), edit the prompt or a JSON body,
press **Send**: deltas appear as they arrive (the stream runs off the kernel's main thread), **Stop** cuts it
and keeps the partial text. The response panel shows status, error envelope, the verdict with its hint,
the time to headers / first delta / total and the stream's timeline. Every exchange lands in the
**history**; *export selected* gives it as JSON with secrets masked. The `slow` scenario makes streaming
visible (a pause before each delta).
"""),
        _code('from hermes_nb import ProbeConsole\n\n'
              'console = ProbeConsole(scenario="slow", delay_s=0.2)\nconsole'),
        _md("""
The console can be driven from code too (the same calls its buttons make); `wait()` is for scripts,
a cell never needs it.
"""),
        _code("console.send()\nconsole.wait()\nconsole.session.history[-1].exchange"),
        _md("""
## The magics

`%load_ext hermes_nb` registers `%hermes_check`, `%hermes_probe [--compare NAME]` and the cell magic
`%%hermes_chat [--endpoint URL] [--model M] [--scenario S]`. They resolve their config the way the CLI does
(flags over `HERMES_NB_*` over a manifest over the defaults). Each result is the cell's value, so the next
cell has it as `_`.
"""),
        _code("%load_ext hermes_nb"),
        _code("%hermes_check"),
        _code("%hermes_probe --compare hermes-agent-0.19.0"),
        _md("The cell body is the prompt; the answer streams into the output, then the verdict:"),
        _code("%%hermes_chat --scenario slow\nIn one sentence: what does a smoke test prove?"),
        _code("chat = _\nchat.exchange"),
        _md("## Clean up\n\nStops the console's emulator and the ones the magics started."),
        _code("console.close()\n%unload_ext hermes_nb"),
    ]
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata["language_info"] = {"name": "python"}
    nb.metadata["hermes_nb"] = {"guide": "probe_console"}
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"probe-console-{i:02d}"
    return nb


GUIDES = {"probe_console": probe_console}


_WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def execute_guide(nb: nbformat.NotebookNode, directory: Path, *, timeout_s: float = 120.0) -> nbformat.NotebookNode:
    """Run ``nb`` in a fresh kernel (cwd ``directory``) and normalise its outputs for storing (see the module doc)."""
    from nbclient import NotebookClient

    from hermes_nb.core.resources import sanitize_file
    from hermes_nb.nbrun.kernels import KERNEL_NAME, KernelPool
    from hermes_nb.nbrun.refresh import sanitize_outputs, sanitize_rules

    with KernelPool() as pool:
        NotebookClient(nb, timeout=timeout_s, kernel_name=KERNEL_NAME, kernel_manager_class=pool.manager_class(),
                       resources={"metadata": {"path": str(directory)}}).execute()
    nb.metadata.pop("widgets", None)  # the widgets' live state: session noise, never evidence
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata["language_info"] = {"name": "python"}
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        for output in cell.get("outputs", []):
            view = output.get("data", {}).get(_WIDGET_VIEW)
            if view is not None:
                view["model_id"] = "<model-id>"
    return sanitize_outputs(nb, sanitize_rules(sanitize_file()))


def write_guides(directory: Path, *, execute: bool = False) -> list[Path]:
    """Write every guide into ``directory``: without outputs, or ``execute``-d with normalised outputs."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, build in GUIDES.items():
        path = directory / f"{name}.ipynb"
        nb = build()
        if execute:
            nb = execute_guide(nb, directory.resolve())
        nbformat.write(nb, str(path))
        paths.append(path)
    return paths


if __name__ == "__main__":  # pragma: no cover - the Makefile's entry point
    for written in write_guides(Path(sys.argv[1] if len(sys.argv) > 1 else "notebooks"), execute=True):
        print(f"wrote {written}")
