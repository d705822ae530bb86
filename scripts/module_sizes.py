#!/usr/bin/env python3
"""Module sizes, a review flag and never a rule: the package's modules over ``--flag`` lines (default 400).

A module over the flag is worth a look in review: is it still one job? Split it by job when it is not;
never inline or squeeze code to get under the mark. The report always exits 0 (``make sizes``;
docs/architecture/layers.md, "Module size").

    .venv/bin/python scripts/module_sizes.py                  # hermes_nb/, flag at 400 lines
    .venv/bin/python scripts/module_sizes.py --flag 350 --all # every module, the flagged ones marked
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

FLAG = 400


def module_sizes(package: Path) -> list[tuple[str, int]]:
    """``(path relative to the package's parent, lines)`` for every module, longest first."""
    sizes = [(p.relative_to(package.parent).as_posix(), len(p.read_text(encoding="utf-8").splitlines()))
             for p in package.rglob("*.py") if "__pycache__" not in p.parts]
    return sorted(sizes, key=lambda item: (-item[1], item[0]))


def report(package: Path, flag: int = FLAG, show_all: bool = False) -> str:
    sizes = module_sizes(package)
    over = [(path, n) for path, n in sizes if n > flag]
    lines = [f"{len(over)} of {len(sizes)} modules over {flag} lines "
             "(a review flag: one job each? never inline to fit)"]
    lines += [f"{n:6d}  {path}{'  <- over' if show_all and n > flag else ''}"
              for path, n in (sizes if show_all else over)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", type=Path, default=Path(__file__).resolve().parent.parent / "hermes_nb",
                        help="the package directory (default: hermes_nb/ of this checkout)")
    parser.add_argument("--flag", type=int, default=FLAG, help=f"lines above which a module is listed (default {FLAG})")
    parser.add_argument("--all", action="store_true", help="list every module, the flagged ones marked")
    args = parser.parse_args(argv)
    print(report(args.package, args.flag, args.all))
    return 0


if __name__ == "__main__":
    sys.exit(main())
