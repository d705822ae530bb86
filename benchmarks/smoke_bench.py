"""P4 benchmark: `hermes-nb smoke` vs one papermill CLI run of a trivial notebook, paired A B A B.

Baseline (A): one papermill CLI run of a trivial notebook (``x = 1`` tagged parameters,
``y = x * 2``, ``print(y)``). B: ``hermes-nb smoke`` (three notebooks, each on its own fresh kernel,
receipts, HTML, index). Whole-process wall times (perf_counter around subprocess.run); one warm-up of
each (which also caches the bytecode of what each imports: PYTHONDONTWRITEBYTECODE is dropped for the
commands, as ``make`` does), then ``--pairs`` rounds run A B A B..., so both see the same machine load;
the figure is the median of the per-round ratios B/A (and the medians of A and B). ``--full`` adds the
older rows (the three notebooks one after another through the papermill CLI, ``smoke --no-html``), not
paired.

    .venv/bin/python benchmarks/smoke_bench.py [--pairs 7] [--full]

Target: ``hermes-nb smoke`` <= 1.40x one trivial papermill CLI run. The last line reads
``P4 hermes-nb smoke / papermill (paired) = <x> (target <= 1.40)``.
"""

from __future__ import annotations

import argparse
import os
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


ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _time(cmds: list[list[str]]) -> float:
    t0 = time.perf_counter()
    for cmd in cmds:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=ENV)
        if proc.returncode != 0:
            raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-1500:]}")
    return time.perf_counter() - t0


def _measure(label: str, make, runs: int) -> tuple[str, float, float, float]:
    _time(make())  # warm-up
    values = [_time(make()) for _ in range(runs)]
    return label, statistics.median(values), min(values), max(values)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--full", action="store_true", help="also the unpaired rows of earlier issues")
    parser.add_argument("--runs", type=int, default=5, help="runs of each --full row")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hermes-nb-bench-") as tmp:
        work = Path(tmp)
        trivial = work / "trivial.ipynb"
        _trivial(trivial)

        def baseline() -> list[list[str]]:
            return [_papermill(trivial, work / "t.out.ipynb", "-p", "x", "21")]

        def smoke() -> list[list[str]]:
            return [[str(BIN / "hermes-nb"), "smoke", "--out", str(work / "receipts"), "--json"]]

        _time(baseline())  # warm-ups
        _time(smoke())
        a_times: list[float] = []
        b_times: list[float] = []
        ratios: list[float] = []
        for _ in range(args.pairs):
            a = _time(baseline())
            b = _time(smoke())
            a_times.append(a)
            b_times.append(b)
            ratios.append(b / a)
        rows = []
        if args.full:
            rows = [
                _measure("papermill CLI x3, one after another", lambda: [
                    _papermill(ROOT / "notebooks" / f"{n}.ipynb", work / f"{n}.out.ipynb") for n in NOTEBOOKS],
                    args.runs),
                _measure("hermes-nb smoke --no-html", lambda: [
                    [str(BIN / "hermes-nb"), "smoke", "--out", str(work / "receipts"), "--json", "--no-html"]],
                    args.runs),
            ]
    base = statistics.median(a_times)
    print(f"{'command':52} {'median':>8} {'range':>17} {'x baseline':>10}")
    print(f"{'A baseline: papermill CLI, trivial notebook':52} {base:7.3f}s [{min(a_times):6.3f}-{max(a_times):6.3f}]"
          f" {1:9.2f}x")
    med = statistics.median(b_times)
    print(f"{'B hermes-nb smoke':52} {med:7.3f}s [{min(b_times):6.3f}-{max(b_times):6.3f}] {med / base:9.2f}x")
    for label, med, lo, hi in rows:
        print(f"{label:52} {med:7.3f}s [{lo:6.3f}-{hi:6.3f}] {med / base:9.2f}x")
    print("per-round ratios B/A: " + " ".join(f"{r:.2f}" for r in ratios))
    print(f"P4 hermes-nb smoke / papermill (paired) = {statistics.median(ratios):.2f} (target <= 1.40)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
