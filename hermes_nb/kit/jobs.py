"""A mission run from a kernel (the e2e notebook, the console's Run button): prepared the way the CLI prepares it.

:func:`prepare_job` is :func:`hermes_nb.harness.prepare.prepare_mission` with a notebook's parameters
(``request_timeout_s`` in seconds; ``root`` None: the mission's harness root, else a temporary directory
given by the target at run time); its config then chooses the target (:func:`hermes_nb.kit.target.start_target`),
and :func:`run_job` runs it there. One resolution, the same layers as ``hermes-nb run``::

    job = kit.prepare_job(mission, prompt, endpoint=endpoint, model=model)
    target = kit.start_target(job.config, profile=profile, scenario=scenario)
    result = kit.run_job(job, target)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_nb.kit.target import Target, timeout_ms

if TYPE_CHECKING:
    from hermes_nb.harness.prepare import PreparedMission
    from hermes_nb.harness.results import RunResult

__all__ = ["prepare_job", "run_job"]


def prepare_job(mission: str | os.PathLike[str] | None = None, prompt: str | None = None, *,
                root: str | os.PathLike[str] | None = None, manifest: str | None = None,
                endpoint: str | None = None, model: str | None = None, request_timeout_s: float | None = None,
                auth_token: str | None = None, environ: Mapping[str, str] | None = None) -> PreparedMission:
    """The mission at ``mission`` (a mission.yaml), else an ad-hoc mission from ``prompt``, prepared."""
    from hermes_nb.harness.prepare import prepare_mission

    return prepare_mission(mission or None, prompt=None if mission else prompt, root=root or None,
                           fallback_root=None, manifest=manifest or None, environ=environ,
                           endpoint=endpoint or None, model=model or None,
                           request_timeout_ms=timeout_ms(request_timeout_s), auth_token=auth_token or None)


def run_job(job: PreparedMission, target: Target, **options: Any) -> RunResult:
    """Run ``job`` against ``target`` (its root, else a temporary directory the target removes on close).

    ``options``: :func:`hermes_nb.harness.run.run`'s; signals are left to the kernel unless asked.
    """
    root = job.root if job.root is not None else Path(target.temp_dir("hermes-nb-run-"))
    options.setdefault("handle_signals", False)
    return job.replace(config=target.point(job.config), root=root).run(**options)
