"""Guided notebooks: ``notebooks/probe_console.ipynb``, shipped in the wheel and exported with the three jobs
(``hermes-nb notebooks list|export``), never run by the smoke.

Generated like the smoke notebooks and, by ``make notebooks``, executed against the embedded emulator in a
fresh kernel, so the stored guide shows what each cell gives even opened without running it: its outputs
are normalised with the nbval sanitize rules (ports, durations, timelines…), whose placeholders are escaped
in the HTML so they stay visible (``<n.nnn> s``, not an empty tag); the console shows as its static
picture (its ``text/html``: the widget view and its page script are not stored, nor is the widget state).
The guide ends with the console shown again, live after Run All. Every code cell is tagged
``nbval-ignore-output``: ``make test`` runs the guide under nbval (every cell must run without an error)
but does not compare its outputs (widgets, stream timings).

    python -m hermes_nb.nbrun.guides notebooks    # (re)write and execute the guides into ./notebooks
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import nbformat

from hermes_nb.core.facts import GUIDES as GUIDE_NAMES
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

Opened without running, each output below is what the cell showed when the guide was made (the console as
a static picture); **Run All** brings the live console back at the top and at the bottom.
"""),
        _md("""
## The console

Pick a route (chat streamed, chat, models, health, or any forwarded path), edit the prompt or a JSON body,
press **Send** — or **Ctrl+Enter** / **Shift+Enter** in the prompt (Enter is a new line, **Esc** stops).
Deltas appear as they arrive (the stream runs off the kernel's main thread), rendered as Markdown (the
*raw* toggle shows the text as sent; nothing in an answer runs). **Stop** cuts the stream and keeps the
partial text. The status names the verdict (`done: passed (ok)`, `failed: unreachable`, `blocked: auth`),
with the token usage and output tokens/s. The response panel shows status, error envelope, hint, the time
to headers / first delta / total and the stream's timeline. Once the proxy's `/models` answered, the model
field offers the listed models and flags an unlisted one.

Every exchange lands in the **history**: pick one to see its own answer and table, copy it as curl or
Python (httpx, openai) — the bearer as `$HERMES_NB_AUTH_TOKEN`, never its value — or export it as JSON.
`ProbeConsole(history="probe.jsonl")` keeps the history in a file and reloads it, so it survives a kernel
restart (after one, the console says to run its cell again). The `slow` scenario makes streaming visible
(a pause before each delta).
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
`%%hermes_chat [--endpoint URL] [--model M] [--scenario S] [--format markdown|text|code|json]`. They resolve
their config the way the CLI does (flags over `HERMES_NB_*` over a manifest over the defaults). Each result
is the cell's value, so the next cell has it as `_`.
"""),
        _code("%load_ext hermes_nb"),
        _code("%hermes_check"),
        _code("%hermes_probe --compare hermes-agent-0.19.0"),
        _md("The cell body is the prompt; the answer streams into the output as Markdown, then the verdict and "
            "the token usage:"),
        _code("%%hermes_chat --scenario slow\nIn one sentence: what does a smoke test prove?"),
        _code("chat = _\nchat.exchange"),
        _md("""
## Back to the console

The same console, with what it did above in its history. When you are done, `console.close()` stops its
emulator and `%unload_ext hermes_nb` the ones the magics started (restarting the kernel does both).
"""),
        _code("console"),
    ]
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata["language_info"] = {"name": "python"}
    nb.metadata["hermes_nb"] = {"guide": "probe_console"}
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"probe-console-{i:02d}"
    return nb


GUIDES = {"probe_console": probe_console}
assert tuple(GUIDES) == GUIDE_NAMES, "core.facts.GUIDES names the guides built here"


_WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
_PAGE_SCRIPT = "application/javascript"


def _stored(outputs: list[Any], placeholders: re.Pattern[str]) -> list[Any]:
    """What a guide keeps of a cell's outputs: no widget view (its state is not stored) or page script, and
    placeholders escaped in HTML."""
    kept = []
    for output in outputs:
        data = output.get("data")
        if data is not None:
            data.pop(_WIDGET_VIEW, None)
            data.pop(_PAGE_SCRIPT, None)
            if not data:
                continue
            if "text/html" in data:
                data["text/html"] = placeholders.sub(lambda m: m[0].replace("<", "&lt;").replace(">", "&gt;"),
                                                     "".join(data["text/html"]))
        kept.append(output)
    return kept


def execute_guide(nb: nbformat.NotebookNode, directory: Path, *, timeout_s: float = 120.0) -> nbformat.NotebookNode:
    """Run ``nb`` in a fresh kernel (cwd ``directory``) and normalise its outputs for storing (see the module doc)."""
    from nbclient import NotebookClient

    from hermes_nb.core.facts import sanitize_file
    from hermes_nb.nbrun.kernels import KERNEL_NAME, KernelPool
    from hermes_nb.nbrun.refresh import sanitize_outputs, sanitize_rules

    with KernelPool() as pool:
        km = pool.start(directory)
        try:
            NotebookClient(nb, km=km, timeout=timeout_s, kernel_name=KERNEL_NAME).execute()
        finally:
            pool.stop(km)
    nb.metadata.pop("widgets", None)  # the widgets' live state: session noise, never evidence
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    nb.metadata["language_info"] = {"name": "python"}
    rules = sanitize_rules(sanitize_file())
    # the sanitize rules' own placeholders (<port>, <n.nnn>, …): kept visible in HTML
    names = sorted({m for _, replacement in rules for m in re.findall(r"<[a-z0-9.-]+>", replacement)}, key=len)
    placeholders = re.compile("|".join(re.escape(n) for n in reversed(names)))
    nb = sanitize_outputs(nb, rules)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type == "code":
            cell.outputs = _stored(cell.outputs, placeholders)
    return nb


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
