"""Benchmark: `hermes-nb smoke` vs the three notebooks one after another through the papermill CLI.

Baseline: one papermill CLI run of a trivial notebook (``x = 1`` tagged parameters,
``y = x * 2``, ``print(y)``). Whole-process wall times (perf_counter around
subprocess.run), one warm-up, then the median of ``--runs`` runs (range shown).

    .venv/bin/python benchmarks/smoke_bench.py [--runs 5]

Target (issue 6): the whole smoke <= 1.5x one trivial papermill CLI run.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
NOTEBOOKS = ("wire_format_spike", "adapter_check", "e2e_smoke")


def _trivial(path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    p = nbformat.v4.new_code_cell("x = 1")
    p.metadata["tags"] = ["parameters"]
    nb.cells = [p, nbformat.v4.new_code_cell("y = x * 2\nprint(y)")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(path))


def _papermill(src: Path, dst: Path, *extra: str) -> list[str]:
    return [str(BIN / "papermill"), str(src), str(dst), "-k", "python3", "--no-progress-bar",
            "--execution-timeout", "120", "--cwd", str(dst.parent), *extra]


def _time(cmds: list[list[str]]) -> float:
    t0 = time.perf_counter()
    for cmd in cmds:
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-1500:]}")
    return time.perf_counter() - t0


def _measure(label: str, make, runs: int) -> tuple[str, float, float, float]:
    _time(make())  # warm-up
    values = [_time(make()) for _ in range(runs)]
    return label, statistics.median(values), min(values), max(values)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hermes-nb-bench-") as tmp:
        work = Path(tmp)
        trivial = work / "trivial.ipynb"
        _trivial(trivial)
        rows = [
            _measure("baseline: papermill CLI, trivial notebook",
                     lambda: [_papermill(trivial, work / "t.out.ipynb", "-p", "x", "21")], args.runs),
            _measure("papermill CLI x3, one after another", lambda: [
                _papermill(ROOT / "notebooks" / f"{n}.ipynb", work / f"{n}.out.ipynb") for n in NOTEBOOKS], args.runs),
            _measure("hermes-nb smoke (3 concurrent + receipts + HTML)", lambda: [
                [str(BIN / "hermes-nb"), "smoke", "--out", str(work / "receipts"), "--json"]], args.runs),
            _measure("hermes-nb smoke --no-html", lambda: [
                [str(BIN / "hermes-nb"), "smoke", "--out", str(work / "receipts"), "--json", "--no-html"]], args.runs),
        ]
    base = rows[0][1]
    print(f"{'command':52} {'median':>8} {'range':>17} {'x baseline':>10}")
    for label, med, lo, hi in rows:
        print(f"{label:52} {med:7.3f}s [{lo:6.3f}-{hi:6.3f}] {med / base:9.2f}x")
    print(f"sequential papermill / smoke: {rows[1][1] / rows[2][1]:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
