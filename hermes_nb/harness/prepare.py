"""The one way a run is prepared, whoever launches it, so the same mission sends the same request from every face."""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field, model_validator

from hermes_nb.core.config import HermesProxyRuntimeConfig
from hermes_nb.core.errors import ConfigError
from hermes_nb.core.facts import MAX_PROMPT_BYTES
from hermes_nb.core.manifest import AdapterManifest
from hermes_nb.core.resolve import ConfigOptions, resolve_runtime_config
from hermes_nb.core.spec import Opt, conflict
from hermes_nb.core.yamlio import decode_utf8, read_bytes_file, read_limited
from hermes_nb.harness.mission import Mission, Workflow, harness_root_of, load_mission, load_workflow, mission_warnings
from hermes_nb.harness.run import DryRunResult, RunResult, dry_run, run

_CLI = frozenset({"cli"})
PathLike = str | os.PathLike[str]


class RunSpec(ConfigOptions):
    """A run's options (``hermes-nb run``; :func:`run_mission` takes the same)."""

    root: Annotated[str | None, Opt(faces=frozenset({"cli", "notebook"}))] = Field(
        None, description="project root holding .harness/; the run's artifacts go under it (default: the mission's "
                          "harness root, else the current directory; in a notebook, a temporary directory)")
    mission: Annotated[str | None, Opt(positional=True, faces=frozenset({"cli", "notebook"}))] = Field(
        None, description="mission.yaml (or its directory); <R>/.harness/missions/<dir>/mission.yaml defaults "
                          "--root to R")
    prompt: Annotated[str | None, Opt(faces=frozenset({"cli", "notebook"}))] = Field(
        None, description="run a plain prompt as mission 'adhoc' ('-': read it from stdin)")
    prompt_file: Annotated[str | None, Opt(faces=_CLI)] = Field(
        None, description="run the prompt in this UTF-8 file as mission 'adhoc'")
    max_prompt_bytes: Annotated[int, Opt(faces=_CLI)] = Field(
        MAX_PROMPT_BYTES, gt=0, description="refuse a --prompt-file or --prompt - larger than this many bytes "
                                            "(just above the proxy's 10 MB body cap)")
    dry_run: Annotated[bool, Opt(faces=_CLI)] = Field(
        False, description="write prompt.md and a planned runtime-session.yaml under <mission dir>/dry-runs/<id>/ "
                           "(outside runs/); send nothing")
    sandbox: Annotated[bool, Opt(faces=_CLI)] = Field(True, description="work in a throwaway copy of the project")
    run_id: Annotated[str | None, Opt(faces=_CLI)] = Field(
        None, description="explicit run id (^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$)")

    @model_validator(mode="after")
    def _one_source(self) -> RunSpec:
        if sum(x is not None for x in (self.mission, self.prompt, self.prompt_file)) > 1:
            raise conflict("mission", "prompt", "prompt_file", why="exclude each other: give exactly one")
        return self

    def source(self) -> Mission | str:
        """The mission file, or an ad-hoc mission made from the prompt (a file or stdin read up to the limit)."""
        if self.mission is not None:
            return self.mission
        if self.prompt is not None and self.prompt != "-":
            return Mission.adhoc(self.prompt)
        if self.prompt_file is not None:
            what = f"--prompt-file {self.prompt_file}: prompt file"
            data = read_bytes_file(self.prompt_file, what, max_bytes=self.max_prompt_bytes)
        elif self.prompt == "-":
            what = "--prompt - (stdin)"
            try:
                data = read_limited(sys.stdin.buffer, self.max_prompt_bytes, what)
            except OSError as exc:
                raise ConfigError(f"{what}: cannot read: {exc.strerror or exc}") from None
        else:
            raise ConfigError("give exactly one of MISSION, --prompt TEXT (- for stdin) or --prompt-file PATH")
        start, end = 0, len(data)  # the whitespace around it dropped on a view: a big prompt is not copied for it
        while start < end and data[start] in b" \t\n\r\x0b\x0c":
            start += 1
        while end > start and data[end - 1] in b" \t\n\r\x0b\x0c":
            end -= 1
        text = decode_utf8(memoryview(data)[start:end], what, offset=start)
        if not text or text.isspace():
            raise ConfigError(f"{what}: the prompt is empty")
        return Mission.adhoc(text)


@dataclass(frozen=True)
class PreparedMission:
    mission: Mission
    config: HermesProxyRuntimeConfig
    #: the project root; None: none yet (the kit gives one before running)
    root: Path | None
    workflow: Workflow | None = None
    warnings: tuple[str, ...] = ()

    def replace(self, **changes: Any) -> PreparedMission:
        return dataclasses.replace(self, **changes)

    def _root(self) -> Path:
        if self.root is None:
            raise ConfigError(f"mission {self.mission.id}: no root to write the run under (give root=)")
        return self.root

    def run(self, **options: Any) -> RunResult:
        return run(self.mission, self.config, root=self._root(), workflow=self.workflow, warnings=self.warnings,
                   **options)

    def dry_run(self, *, run_id: str | None = None) -> DryRunResult:
        return dry_run(self.mission, self.config, root=self._root(), run_id=run_id, workflow=self.workflow,
                       warnings=self.warnings)


def prepare_mission(source: Mission | PathLike | None = None, *, prompt: str | None = None,
                    root: PathLike | None = None, fallback_root: PathLike | None = ".",
                    manifest: AdapterManifest | PathLike | None = None,
                    overrides: Mapping[str, Any] | str | None = None, environ: Mapping[str, str] | None = None,
                    **explicit: Any) -> PreparedMission:
    """The mission (a mission.yaml, a :class:`Mission` or ``prompt``), its root (``root``, else ``R`` for
    ``R/.harness/missions/<dir>/mission.yaml``, else ``fallback_root``), its config resolved once (``explicit``:
    runtime_config keys, the highest layer), workflow and warnings; :class:`ConfigError` before anything is written."""
    if source is not None and prompt is not None:
        raise ConfigError("give a mission or a prompt, not both")
    if isinstance(source, Mission):
        mission = source
    elif source is not None:
        mission = load_mission(source)
    elif prompt is not None:
        mission = Mission.adhoc(prompt)
    else:
        raise ConfigError("give a mission (a mission.yaml) or a prompt")
    if root is None:
        root = harness_root_of(mission) or fallback_root
    project = Path(root).absolute() if root is not None else None
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


def run_mission(source: Mission | PathLike | None = None, *, prompt: str | None = None,
                spec: RunSpec | None = None, environ: Mapping[str, str] | None = None,
                on_delta: Callable[[str], None] | None = None, **options: Any) -> RunResult:
    """Prepare ``source`` or ``prompt`` and run it as ``hermes-nb run`` does. ``options``: :class:`RunSpec`'s fields,
    plus :func:`hermes_nb.harness.run.run`'s ``transport``, ``on_event``, ``handle_signals`` and ``project``."""
    hooks = {k: options.pop(k) for k in ("transport", "on_event", "handle_signals", "project") if k in options}
    spec = spec or RunSpec.build(**options)
    prepared = prepare_mission(source if source is not None or prompt is not None else spec.source(),
                               prompt=prompt, root=spec.root, manifest=spec.manifest,
                               overrides=spec.runtime_config_overrides, environ=environ, endpoint=spec.endpoint,
                               model=spec.model, provider=spec.provider)
    return prepared.run(sandbox=spec.sandbox, run_id=spec.run_id, on_delta=on_delta, **hooks)
