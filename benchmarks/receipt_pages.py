"""Receipt pages: how long the HTML render of a real e2e_smoke receipt, the run index.html and one timeline take.

    .venv/bin/python benchmarks/receipt_pages.py

Runs one smoke against the embedded emulator into a temp dir, then times (median of 50, after a warm-up)
``render_html`` on the e2e_smoke receipt notebook, ``render_index_html`` on its index, and ``timeline_svg``.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import nbformat

from hermes_nb.core.records import StreamTimeline
from hermes_nb.core.resolve import resolve_runtime_config
from hermes_nb.nbrun.smoke import run_smoke
from hermes_nb.receipts.index import load_index, render_index_html
from hermes_nb.receipts.write import render_html
from hermes_nb.target import establish
from hermes_nb.views.htmlkit import timeline_svg


def _median_ms(fn, n: int = 50) -> float:
    fn()
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        target, config = establish(resolve_runtime_config(environ={}), stack, ask_emulator=True)  # the emulator
        result = run_smoke(target, config, out_dir=Path(tmp))
        e2e = next(r for r in result.runs if r.name == "e2e_smoke")
        nb = nbformat.read(str(e2e.receipt_path), as_version=4)
        index = load_index(Path(tmp))
        marks = nb.metadata.receipt["summary"]["details"]["timeline"]
        print(f"render_html(e2e_smoke receipt): {_median_ms(lambda: render_html(nb)):.2f} ms")
        print(f"render_index_html(3 receipts):  {_median_ms(lambda: render_index_html(index)):.3f} ms")
        tl = StreamTimeline.from_dict(marks)
        print(f"timeline_svg({len(tl.deltas)} deltas):          {_median_ms(lambda: timeline_svg(tl)):.3f} ms")


if __name__ == "__main__":
    main()
