"""Dry-run and run a mission against the proxy, writing UH's artifact tree.

* :func:`dry_run` writes ``prompt.md`` and ``runtime-session.yaml`` (status
  ``planned``) and sends nothing.
* :func:`run` executes the plan (:mod:`hermes_nb.harness.plan`): the life cycle
  is :class:`hermes_nb.harness.runner.Runner` (streaming logs, signals, the
  guarantee that a started run always ends with its result document).

``dry_run`` and ``run`` take a mission and its resolved config; the faces get both from
:func:`~hermes_nb.harness.prepare.prepare_mission` (:meth:`PreparedMission.run` calls :func:`run`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from hermes_nb.core.config import HermesProxyRuntimeConfig
from hermes_nb.core.errors import ArtifactError
from hermes_nb.core.facts import PROMPT_FILE
from hermes_nb.core.io import iso_now
from hermes_nb.core.records import SSEEventRecord
from hermes_nb.harness.mission import Mission, Workflow
from hermes_nb.harness.plan import in_harness, prepare
from hermes_nb.harness.results import DryRunResult, RunResult
from hermes_nb.harness.runner import Runner, request_document, session_document
from hermes_nb.harness.sandbox import workdir

if TYPE_CHECKING:
    import httpx

__all__ = ["dry_run", "run"]


def dry_run(mission: Mission, config: HermesProxyRuntimeConfig, *, root: str | Path, run_id: str | None = None,
            workflow: Workflow | None = None, warnings: list[str] | tuple[str, ...] = ()) -> DryRunResult:
    """Write ``prompt.md`` and a ``planned`` session under ``<mission dir>/dry-runs/<run_id>/``; send nothing.
    (The prompt is in prompt.md only; the session, request.json and the result refer to it by digest and size.)

    Not under ``runs/``: UH lists every ``runs/<id>/`` in ``runs/index.json`` (a strict document with no
    ``planned`` status) and its drift checker flags any other directory there as an orphan.
    """
    plan, artifacts, rid, _ = prepare(mission, config, root, run_id, workflow, warnings)
    run_dir = artifacts.dry_run_dir(rid)
    if run_dir.exists():
        raise ArtifactError(f"dry-run directory {run_dir} already exists (choose another --run-id)")
    session = session_document(plan, artifacts, run_dir, status="planned", started_at=iso_now())
    prompt_path = artifacts.write_text(run_dir / PROMPT_FILE, plan.request_prompt)  # redacted as it is written
    session_path = artifacts.write_yaml(run_dir / "runtime-session.yaml", session)
    request_path = artifacts.write_json(run_dir / "request.json", request_document(plan))
    return DryRunResult(plan=plan, run_dir=run_dir, run_id=rid, session=session,
                        files=[artifacts.relative(prompt_path), artifacts.relative(session_path),
                               artifacts.relative(request_path)])


def run(mission: Mission, config: HermesProxyRuntimeConfig, *, root: str | Path, sandbox: bool = True,
        transport: httpx.BaseTransport | None = None, on_delta: Callable[[str], None] | None = None,
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
    plan, artifacts, rid, run_dir = prepare(mission, config, root, run_id, workflow, warnings)
    source = Path(project) if project is not None else artifacts.root
    with workdir(source, sandbox=sandbox) as wd:  # a failed copy leaves nothing behind
        rid = artifacts.claim_run_id(rid, explicit=run_id is not None)  # concurrent runs: one directory each
        runner = Runner(mission=mission, config=config, plan=plan, artifacts=artifacts, run_id=rid, workdir=wd,
                        sandbox=sandbox, transport=transport, on_delta=on_delta, on_event=on_event,
                        handle_signals=handle_signals)
        if mission.source_path is not None and not in_harness(mission, artifacts.root):
            runner.notes.append(f"mission file {mission.source_path} is not <root>/.harness/missions/<dir>/"
                                f"mission.yaml; artifacts written under {artifacts.relative(artifacts.mission_dir)}/ "
                                "by mission id (UH would write none)")
        return runner.execute()
