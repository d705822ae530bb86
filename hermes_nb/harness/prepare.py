"""THE one way a run is prepared, whoever launches it: the CLI, the e2e notebook, the kit, the console, ``run_mission``.

:func:`prepare_mission` loads the mission (a ``mission.yaml``, a :class:`~hermes_nb.harness.mission.Mission`,
or a plain prompt), finds the project root, resolves the runtime config once through
:func:`hermes_nb.core.resolve.resolve_runtime_config` — the mission's ``runtime_config_overrides``
included — and loads the workflow, collecting the warnings a run reports. The
:class:`PreparedMission` it returns runs (:meth:`PreparedMission.run`) or dry-runs; so the same
mission sends the same request from every face.

The project root: ``root`` when given, else ``R`` for a mission read from
``R/.harness/missions/<dir>/mission.yaml``, else ``fallback_root`` (the current directory for the CLI
and :func:`hermes_nb.harness.run.run_mission`; ``None`` for the kit, whose runs write under a
temporary directory: then only an explicit ``manifest`` is read and no workflow is looked up).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_nb.core.errors import ConfigError
from hermes_nb.harness.mission import Mission, Workflow, harness_root_of, load_mission, load_workflow, mission_warnings

if TYPE_CHECKING:
    from hermes_nb.core.config import HermesProxyRuntimeConfig
    from hermes_nb.core.manifest import AdapterManifest
    from hermes_nb.harness.plan import RunPlan
    from hermes_nb.harness.results import DryRunResult, RunResult

__all__ = ["PreparedMission", "prepare_mission"]

PathLike = str | os.PathLike[str]


@dataclass(frozen=True)
class PreparedMission:
    """A mission ready to run: its resolved config, workflow, warnings and project root."""

    mission: Mission
    config: HermesProxyRuntimeConfig
    #: the project root (manifest, workflows, artifacts); None: none yet (the kit gives one before running)
    root: Path | None
    workflow: Workflow | None = None
    warnings: tuple[str, ...] = ()

    def replace(self, **changes: Any) -> PreparedMission:
        """A copy with ``changes`` (e.g. ``config=`` pointed at an emulator, ``root=`` a temporary directory)."""
        return dataclasses.replace(self, **changes)

    def _root(self) -> Path:
        if self.root is None:
            raise ConfigError(f"mission {self.mission.id}: no root to write the run under (give root=)")
        return self.root

    def plan(self) -> RunPlan:
        """What the run will send (no IO)."""
        from hermes_nb.harness.plan import plan_run

        return plan_run(self.mission, self.config, workflow=self.workflow, warnings=self.warnings)

    def run(self, **options: Any) -> RunResult:
        """:func:`hermes_nb.harness.run.run` with this preparation (``options``: ``sandbox``, ``on_delta``, …)."""
        from hermes_nb.harness.run import run

        return run(self.mission, self.config, root=self._root(), workflow=self.workflow,
                   warnings=list(self.warnings), **options)

    def dry_run(self, *, run_id: str | None = None) -> DryRunResult:
        """:func:`hermes_nb.harness.run.dry_run` with this preparation: writes the plan, sends nothing."""
        from hermes_nb.harness.run import dry_run

        return dry_run(self.mission, self.config, root=self._root(), run_id=run_id, workflow=self.workflow,
                       warnings=list(self.warnings))


def _mission_of(source: Mission | PathLike | None, prompt: str | None) -> Mission:
    if source is not None and prompt is not None:
        raise ConfigError("give a mission or a prompt, not both")
    if isinstance(source, Mission):
        return source
    if source is not None:
        return load_mission(source)
    if prompt is None:
        raise ConfigError("give a mission (a mission.yaml) or a prompt")
    return Mission.adhoc(prompt)


def prepare_mission(
    source: Mission | PathLike | None = None,
    *,
    prompt: str | None = None,
    root: PathLike | None = None,
    fallback_root: PathLike | None = ".",
    manifest: AdapterManifest | PathLike | None = None,
    overrides: Mapping[str, Any] | str | None = None,
    environ: Mapping[str, str] | None = None,
    **explicit: Any,
) -> PreparedMission:
    """Load, resolve and check everything a run needs before its first write (see the module docstring).

    ``explicit``: runtime_config keys given as arguments (``endpoint=``, ``model=``, …; None means "not
    given"), the highest layer. Raises :class:`~hermes_nb.core.errors.ConfigError` for bad input.
    """
    mission = _mission_of(source, prompt)
    if root is None:
        home = harness_root_of(mission)
        root = home if home is not None else fallback_root
    project = Path(root).absolute() if root is not None else None
    from hermes_nb.core.resolve import resolve_runtime_config

    config = resolve_runtime_config(root=project, manifest=manifest, mission_overrides=mission.runtime_config_overrides,
                                    environ=environ, overrides=overrides, **explicit)
    warnings = mission_warnings(mission)
    workflow = None
    if project is not None:
        workflow, found = load_workflow(project, mission)
        warnings += found
    elif mission.workflow_profile:
        warnings.append(f"workflow {mission.workflow_profile!r} not looked up (no project root); "
                        "prompt rendered without it")
    return PreparedMission(mission=mission, config=config, root=project, workflow=workflow, warnings=tuple(warnings))
