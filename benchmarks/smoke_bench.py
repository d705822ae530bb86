"""P4 benchmark: `hermes-nb smoke` vs one papermill CLI run of a trivial notebook, paired A B C A B C.

Baseline (A): one papermill CLI run of a trivial notebook (``x = 1`` tagged parameters,
``y = x * 2``, ``print(y)``). B: ``hermes-nb smoke`` (three notebooks, receipts, HTML, index) on the
default launch (each kernel its own ``python -m ipykernel_launcher``; ``HERMES_NB_KERNEL_FORK`` unset).
C: the same with the opt-in kernel fork server (``HERMES_NB_KERNEL_FORK=1``; left out by ``--no-fork``).
Whole-process wall times (perf_counter around subprocess.run); one warm-up of each, then
``--pairs`` rounds run A B C A B C..., so all see the same machine load; each figure is the median of
the per-round ratios B/A and C/A (and the medians of A, B and C). ``--full`` adds the older rows (the
three notebooks one after another through the papermill CLI, ``smoke --no-html``), not paired.

    .venv/bin/python benchmarks/smoke_bench.py [--pairs 7] [--no-fork] [--full]

Targets (issue 21): the default launch <= 1.40x one trivial papermill CLI run, the fork server <= 1.15x.
The last lines read ``P4 default launch / papermill (paired) = <x> (target <= 1.40)`` and
``P4 fork server / papermill (paired) = <y> (target <= 1.15)``.
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


FORK_ENV = "HERMES_NB_KERNEL_FORK"
DEFAULT_ENV = {k: v for k, v in os.environ.items() if k != FORK_ENV}
FORK = {**DEFAULT_ENV, FORK_ENV: "1"}


def _time(cmds: list[list[str]], env: dict[str, str] = DEFAULT_ENV) -> float:
    t0 = time.perf_counter()
    for cmd in cmds:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
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
    parser.add_argument("--no-fork", action="store_true", help="leave out the fork-server rounds (C)")
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

        variants = [("B hermes-nb smoke, default launch", DEFAULT_ENV)]
        if not args.no_fork:
            variants.append(("C hermes-nb smoke, HERMES_NB_KERNEL_FORK=1", FORK))
        _time(baseline())  # warm-ups
        for _, env in variants:
            _time(smoke(), env)
        a_times: list[float] = []
        times: dict[str, list[float]] = {label: [] for label, _ in variants}
        ratios: dict[str, list[float]] = {label: [] for label, _ in variants}
        for _ in range(args.pairs):
            a = _time(baseline())
            a_times.append(a)
            for label, env in variants:
                b = _time(smoke(), env)
                times[label].append(b)
                ratios[label].append(b / a)
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
    for label, _ in variants:
        med = statistics.median(times[label])
        print(f"{label:52} {med:7.3f}s [{min(times[label]):6.3f}-{max(times[label]):6.3f}] {med / base:9.2f}x")
    for label, med, lo, hi in rows:
        print(f"{label:52} {med:7.3f}s [{lo:6.3f}-{hi:6.3f}] {med / base:9.2f}x")
    targets = {"B": ("default launch", 1.40), "C": ("fork server", 1.15)}
    for label, _ in variants:
        print(f"per-round ratios {label[0]}/A: " + " ".join(f"{r:.2f}" for r in ratios[label]))
    for label, _ in variants:
        name, target = targets[label[0]]
        print(f"P4 {name} / papermill (paired) = {statistics.median(ratios[label]):.2f} (target <= {target:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
