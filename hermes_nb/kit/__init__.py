"""What notebook cells, the console and the magics call (the kernel side).

``from hermes_nb import kit`` stays light; the names load on first use::

    job = kit.open_job("adapter_check", target=target, config=config, budget_s=budget_s)  # a job notebook's setup
    result = job.check()
    job.finish(result)
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "Job": "job", "open_job": "job",
    "artifact_digests": "verdicts", "record_verdict": "verdicts",
    "wire_summary": "verdicts", "check_summary": "verdicts", "run_summary": "verdicts",
    "ConsoleActions": "session", "ProbeConsole": "console", "ConsoleSession": "session",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'hermes_nb.kit' has no attribute {name!r}")
    return getattr(importlib.import_module(f"hermes_nb.kit.{module}"), name)


def __dir__() -> list[str]:
    return sorted(__all__)
