"""The load probe: how many streams one proxy carries (issue 22, docs/load.md).

``run_load`` (:mod:`.run`) measures streamed chat completions at rising concurrency and returns a
:class:`~hermes_nb.proxy.load.report.LoadReport`: TTFT, ITL and E2E percentiles, throughput, errors by class,
where 429s stopped the ramp, the generator's own overhead and, with ``direct``, the proxy's added latency.
The pieces: :mod:`.plan` (caps, loopback), :mod:`.generator` (asyncio + aiohttp), :mod:`.report` (figures,
verdict), :mod:`.views` and :mod:`.plots` (text, HTML, SVG). Importing this package loads none of them.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["run_load", "LoadReport", "plan_load"]

_LAZY = {"run_load": "run", "LoadReport": "report", "plan_load": "plan"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'hermes_nb.proxy.load' has no attribute {name!r}")
    return getattr(importlib.import_module(f"hermes_nb.proxy.load.{module}"), name)
