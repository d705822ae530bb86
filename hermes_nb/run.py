"""Plan, dry-run and run a mission against the proxy, writing UH's artifact tree.

* :func:`plan_run` is pure: the request (``POST <endpoint>/chat/completions``,
  the pretty-printed body as the single arg, redacted headers, timeouts).
* :func:`dry_run` writes ``prompt.md`` and ``runtime-session.yaml`` (status
  ``planned``) and sends nothing.
* :func:`run` executes the plan with :class:`hermes_nb.client.HermesClient`,
  classifies the exchange and writes every artifact (see
  :mod:`hermes_nb.runner` for the life cycle: streaming logs, signals, the
  guarantee that a started run always ends with its result document).

Everything that can be checked before the first write is checked first
(run id, artifact paths, symlinks, writable root), so bad input never leaves
a half-written run.

Where the artifacts go: a mission read from ``<root>/.harness/missions/<dir>/mission.yaml``
writes under that ``<dir>`` (as UH does). Any other mission — a file elsewhere, or
``--prompt`` (id ``adhoc``) — writes under ``<root>/.harness/missions/<mission id>/``,
``<root>`` being ``--root`` or the current directory; the mission id must then be a
safe path component (else exit 2, nothing written). UH writes nothing for such a
mission; we keep the evidence, and the result's ``notes`` say where it went.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel, Field, PrivateAttr

from .artifacts import RUNTIME, MissionArtifacts, iso_now, new_run_id, validate_run_id
from .config import HermesProxyRuntimeConfig
from .mission import Mission, Workflow, harness_root_of, render_prompt
from .records import Exchange, Outcome, SSEEventRecord
from .redact import Redactor, redact_headers

__all__ = [
    "RunPlan",
    "RunResult",
    "DryRunResult",
    "plan_run",
    "dry_run",
    "run",
    "run_mission",
    "mission_dir_name",
    "STATUS_EXIT",
    "CONNECT_TIMEOUT_S",
]

#: run status -> CLI exit code (a non-passed run never exits 0)
STATUS_EXIT = {"passed": 0, "failed": 1, "blocked": 3, "cancelled": 1}
CONNECT_TIMEOUT_S = 5.0
IDLE_TIMEOUT_CAP_S = 300.0


class RunPlan(BaseModel):
    """What a run will send. Holds no secret: headers, body, args and ``prompt`` are redacted;
    the prompt actually sent is :attr:`request_prompt` (never dumped)."""

    mission_id: str
    runtime: str = RUNTIME
    endpoint: str
    url: str
    method: str = "POST"
    command: str
    args: list[str]
    headers: dict[str, str]
    body: dict[str, Any]
    prompt: str
    timeouts: dict[str, float]
    warnings: list[str] = Field(default_factory=list)
    _request_prompt: str | None = PrivateAttr(None)

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", []))

    @property
    def request_prompt(self) -> str:
        """The user message as sent (unredacted: the user's own words go to the proxy as written)."""
        return self.prompt if self._request_prompt is None else self._request_prompt


@dataclass
class RunResult:
    """A finished run: the runtime-result document and where it lives."""

    result: dict[str, Any]
    run_dir: Path
    run_id: str
    exit_code: int
    plan: RunPlan
    outcome: Outcome | None = None
    exchange: Exchange | None = None
    text: str = ""

    @property
    def status(self) -> str:
        return str(self.result["status"])

    def to_json(self) -> dict[str, Any]:
        """The runtime-result document plus ``run_dir`` (absolute) for ``--json``."""
        return {**self.result, "run_dir": str(self.run_dir)}


@dataclass
class DryRunResult:
    plan: RunPlan
    run_dir: Path
    run_id: str
    session: dict[str, Any]
    exit_code: int = 0
    files: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "dry_run": True,
            "run_id": self.run_id,
            "run_dir": str(self.run_dir),
            "session": self.session,
            "plan": self.plan.model_dump(mode="json"),
        }


def mission_dir_name(mission: Mission, root: str | Path) -> str:
    """``<dir>`` of ``<root>/.harness/missions/<dir>/mission.yaml``, else the mission id."""
    if _in_harness(mission, root) and mission.source_path is not None:
        return mission.source_path.parent.name
    return mission.id


def _in_harness(mission: Mission, root: str | Path) -> bool:
    home = harness_root_of(mission)
    return home is not None and home.resolve() == Path(root).resolve()


def plan_run(mission: Mission, config: HermesProxyRuntimeConfig, *, workflow: Workflow | None = None,
             warnings: list[str] | tuple[str, ...] = ()) -> RunPlan:
    """The request a run will send (no IO)."""
    from .client import HermesClient
    from .wire import chat_request_body

    prompt = render_prompt(mission, workflow)
    body = chat_request_body(config, [{"role": "user", "content": prompt}])
    with HermesClient(config) as client:
        request = client.build_request("POST", "/chat/completions", json=body, sse=bool(body.get("stream")))
    redactor = Redactor(config.secrets())
    overall = config.request_timeout_ms / 1000.0
    plan = RunPlan(
        mission_id=mission.id,
        endpoint=config.endpoint,
        url=str(request.url),
        command=f"POST {config.endpoint}/chat/completions",
        args=[redactor.text(json.dumps(body, indent=2, ensure_ascii=False))],
        headers=redact_headers(dict(request.headers)),
        body=redactor.data(body),
        prompt=redactor.text(prompt),
        timeouts={
            "request_timeout_ms": float(config.request_timeout_ms),
            "connect_timeout_s": CONNECT_TIMEOUT_S,
            "idle_timeout_s": min(IDLE_TIMEOUT_CAP_S, overall),
        },
        warnings=list(warnings),
    )
    plan._request_prompt = prompt
    return plan


def session_document(plan: RunPlan, artifacts: MissionArtifacts, run_dir: Path, *, status: str,
                     started_at: str | None = None, finished_at: str | None = None,
                     exit_code: int | None = None) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "schema_version": "uh.runtime-session.v0",
        "mission_id": plan.mission_id,
        "runtime": plan.runtime,
        "status": status,
        "command": plan.command,
        "args": plan.args,
    }
    if status != "planned":  # a dry run writes no logs: list only files that exist
        doc["stdout_path"] = artifacts.relative(run_dir / "runtime.stdout.log")
        doc["stderr_path"] = artifacts.relative(run_dir / "runtime.stderr.log")
    if exit_code is not None:
        doc["exit_code"] = exit_code
    if started_at is not None:
        doc["started_at"] = started_at
    if finished_at is not None:
        doc["finished_at"] = finished_at
    return doc


def _prepare(mission: Mission, config: HermesProxyRuntimeConfig, root: str | Path, run_id: str | None,
             workflow: Workflow | None, warnings: list[str] | tuple[str, ...]
             ) -> tuple[RunPlan, MissionArtifacts, str, Path]:
    rid = validate_run_id(run_id) if run_id else new_run_id()
    plan = plan_run(mission, config, workflow=workflow, warnings=warnings)
    artifacts = MissionArtifacts(root, mission_dir_name(mission, root), redactor=Redactor(config.secrets()))
    artifacts.preflight(rid)
    return plan, artifacts, rid, artifacts.run_dir(rid)


def dry_run(mission: Mission, config: HermesProxyRuntimeConfig, *, root: str | Path, run_id: str | None = None,
            workflow: Workflow | None = None, warnings: list[str] | tuple[str, ...] = ()) -> DryRunResult:
    """Write ``prompt.md`` and a ``planned`` session; send nothing."""
    plan, artifacts, rid, run_dir = _prepare(mission, config, root, run_id, workflow, warnings)
    session = session_document(plan, artifacts, run_dir, status="planned", started_at=iso_now())
    prompt_path = artifacts.write_text(artifacts.path("runs", rid, "prompt.md"), plan.prompt)
    session_path = artifacts.write_yaml(artifacts.path("runs", rid, "runtime-session.yaml"), session)
    return DryRunResult(plan=plan, run_dir=run_dir, run_id=rid, session=session,
                        files=[artifacts.relative(prompt_path), artifacts.relative(session_path)])


def run(mission: Mission, config: HermesProxyRuntimeConfig, *, root: str | Path, sandbox: bool = True,
        transport: Any = None, on_delta: Callable[[str], None] | None = None,
        on_event: Callable[[SSEEventRecord], None] | None = None, run_id: str | None = None,
        workflow: Workflow | None = None, warnings: list[str] | tuple[str, ...] = (),
        handle_signals: bool = True, project: str | Path | None = None) -> RunResult:
    """Execute ``mission``; always ends with the runtime-result document written.

    ``on_delta``/``on_event`` are called *after* the delta/event was appended to
    ``runtime.stdout.log``/``events.ndjson``. ``on_delta`` gets exactly the redacted text
    the log gets (a tail that could still become a secret is held back until the next
    delta settles it; a non-streamed answer arrives as one piece); ``on_event`` gets each
    SSE record once its piece is settled, its share of a split secret masked. A hook that raises is not called
    again and the run goes on (the error becomes a warning of the result);
    ``KeyboardInterrupt`` from a hook cancels the run. SIGINT/SIGTERM/SIGHUP (main thread only,
    ``handle_signals``) end the run as ``cancelled`` with the partial text kept.
    """
    from .runner import Runner
    from .sandbox import workdir

    plan, artifacts, rid, run_dir = _prepare(mission, config, root, run_id, workflow, warnings)
    source = Path(project) if project is not None else artifacts.root
    with workdir(source, sandbox=sandbox) as wd:  # a failed copy leaves nothing behind
        runner = Runner(mission=mission, config=config, plan=plan, artifacts=artifacts, run_id=rid, workdir=wd,
                        sandbox=sandbox, transport=transport, on_delta=on_delta, on_event=on_event,
                        handle_signals=handle_signals)
        if mission.source_path is not None and not _in_harness(mission, artifacts.root):
            runner.notes.append(f"mission file {mission.source_path} is not <root>/.harness/missions/<dir>/"
                                f"mission.yaml; artifacts written under {artifacts.relative(artifacts.mission_dir)}/ "
                                "by mission id (UH would write none)")
        return runner.execute()


#: ``hermes_nb.run_mission`` (``hermes_nb.run`` is this module's name).
run_mission = run
