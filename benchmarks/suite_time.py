"""P9 benchmark: how long ``make test``'s pytest takes, against its 300 s target, with the collection as the floor.

Both runs go through ``make test`` itself (its pytest line and flags live in the Makefile only; ``PYTEST_ARGS`` is
appended to them), one after the other so both see the same machine: A, the floor: ``PYTEST_ARGS=--collect-only``
(start-up, imports, collecting every test and notebook cell, nothing run); B: the whole suite, ``--durations``
added. The figure is pytest's own session time of B (its summary line) against the target: under 1.00 meets it.
Printed beside it: the floor's share of B, the whole ``make`` wall times, the CPU seconds of B (user + sys, every
child process included: B's CPU / B's wall is how many cores it kept busy), the load average before and after,
and B's slowest tests. The machine is shared with other work unless it is not: read the figure with the load.

    .venv/bin/python benchmarks/suite_time.py [--durations 15] [--pytest-args "-k smoke"]

The last line reads ``P9 make test: pytest <s> s / 300 s target = <x> (target < 1.00)``.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 300.0
#: pytest's summary line: "1650 passed, 12 skipped in 263.12s (0:04:23)"
SUMMARY = re.compile(r"^=*\s*(?P<counts>.*?) in (?P<seconds>[\d.]+)s\b", re.M)


def make_test(pytest_args: str) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds of the children, output) of ``make -s test PYTEST_ARGS=…``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(["make", "-s", "test", f"PYTEST_ARGS={pytest_args}"], cwd=ROOT, capture_output=True,
                          text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.stdout + proc.stderr


def session(output: str) -> tuple[str, float]:
    """(the counts, pytest's session seconds) from pytest's last summary line."""
    found = list(SUMMARY.finditer(output))
    if not found:
        raise SystemExit(f"no pytest summary line in the output:\n{output[-3000:]}")
    return found[-1]["counts"].strip("= "), float(found[-1]["seconds"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--durations", type=int, default=15, help="the slowest tests to list")
    parser.add_argument("--pytest-args", default="", help="more pytest arguments for both runs, split on spaces by "
                                                          "make's shell (a subset: -k smoke)")
    args = parser.parse_args()
    load = [os.getloadavg()]
    floor_wall, _, floor_out = make_test(f"--collect-only {args.pytest_args}".strip())
    floor_counts, floor_s = session(floor_out)
    load.append(os.getloadavg())
    wall, cpu, out = make_test(f"--durations={args.durations} {args.pytest_args}".strip())
    load.append(os.getloadavg())
    counts, pytest_s = session(out)
    if not pytest_s:
        raise SystemExit(f"nothing ran ({counts})")
    slowest = out.split("slowest", 1)[1].splitlines()[1:args.durations + 1] if "slowest" in out else []
    print(f"{'run':64} {'pytest':>9} {'make wall':>10}")
    print(f"{'A floor: --collect-only (' + floor_counts + ')':64} {floor_s:8.1f}s {floor_wall:9.1f}s")
    print(f"{'B the suite (' + counts + ')':64} {pytest_s:8.1f}s {wall:9.1f}s")
    print(f"floor / suite = {floor_s / pytest_s:.2f}; CPU of B {cpu:.0f} s = {cpu / wall:.2f} cores busy on average")
    print("load average (1, 5, 15 min) before A, after A, after B: "
          + "; ".join(", ".join(f"{x:.2f}" for x in one) for one in load))
    print("slowest of B:")
    print("\n".join(f"  {line.strip()}" for line in slowest if line.strip()))
    ratio = pytest_s / TARGET_S
    print(f"P9 make test: pytest {pytest_s:.1f} s / {TARGET_S:.0f} s target = {ratio:.2f} (target < 1.00)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
