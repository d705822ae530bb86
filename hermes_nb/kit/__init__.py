"""Layer 6, the kernel-side kit: what notebook cells, the console and the magics call.

``from hermes_nb import kit`` stays light; the names load on first use::

    target = kit.start_target(kit.runtime_config(endpoint, model))  # resolved once; no endpoint: an emulator
    config = target.config                                          # the same config, aimed at the target
    kit.record_verdict(kit.wire_summary(report, drift, target=target, model=config.model, contract=name))

    job = kit.prepare_job(mission, prompt, endpoint=endpoint)       # a mission, prepared as `hermes-nb run` does
    result = kit.run_job(job, kit.start_target(job.config))

A sibling of :mod:`hermes_nb.nbrun`, which it never imports.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "Target": "target", "start_target": "target", "runtime_config": "target",
    "prepare_job": "jobs", "run_job": "jobs",
    "artifact_digests": "verdicts", "record_verdict": "verdicts",
    "wire_summary": "verdicts", "check_summary": "verdicts", "run_summary": "verdicts",
    "ModelPreflight": "preflight", "model_preflight": "preflight",
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
