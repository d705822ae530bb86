"""What a run will send, decided before anything is written: the plan (pure) and the preflight.

:func:`plan_run` builds the request (``POST <endpoint>/chat/completions``,
the pretty-printed body as the single arg, redacted headers, timeouts).
:func:`prepare` checks everything that can be checked before the first write
(run id, artifact paths, symlinks, writable root), so bad input never leaves a
half-written run.

Where the artifacts go: a mission read from ``<root>/.harness/missions/<dir>/mission.yaml``
writes under that ``<dir>`` (as UH does). Any other mission — a file elsewhere, or
``--prompt`` (id ``adhoc``) — writes under ``<root>/.harness/missions/<mission id>/``,
``<root>`` being ``--root`` or the current directory; the mission id must then be a
safe path component (else exit 2, nothing written). UH writes nothing for such a
mission; we keep the evidence, and the result's ``notes`` say where it went.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, PrivateAttr

from hermes_nb.core.config import HermesProxyRuntimeConfig
from hermes_nb.core.facts import CONNECT_TIMEOUT_S, RUNTIME, plain_http_warning
from hermes_nb.core.io import new_run_id, validate_run_id
from hermes_nb.core.redaction import Redactor, redact_headers
from hermes_nb.harness.artifacts import MissionArtifacts
from hermes_nb.harness.mission import Mission, Workflow, harness_root_of
from hermes_nb.harness.prompt import prompt_digest, prompt_reference, render_prompt

__all__ = ["RunPlan", "plan_run", "prepare", "mission_dir_name", "in_harness"]


class RunPlan(BaseModel):
    """What a run will send. Holds no secret and no copy of the prompt: ``body`` and ``args`` carry
    :func:`~hermes_nb.harness.prompt.prompt_reference` where the user message goes, ``prompt`` is the digest and
    size of what ``prompt.md`` holds (redacted), headers are redacted; the prompt actually sent is
    :attr:`request_prompt` (never dumped)."""

    mission_id: str
    runtime: str = RUNTIME
    endpoint: str
    url: str
    method: str = "POST"
    command: str
    args: list[str]
    headers: dict[str, str]
    body: dict[str, Any]
    #: ``{"file": "prompt.md", "bytes": N, "sha256": …}``: the prompt is stored once, in that file
    prompt: dict[str, Any]
    timeouts: dict[str, float]
    warnings: list[str] = Field(default_factory=list)
    _request_prompt: str | None = PrivateAttr(None)

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", []))

    @property
    def request_prompt(self) -> str:
        """The user message as sent (unredacted: the user's own words go to the proxy as written)."""
        if self._request_prompt is None:
            raise ValueError("this plan was loaded from a document: it has the prompt's digest, not the prompt")
        return self._request_prompt

    @property
    def prompt_reference(self) -> str:
        """``<prompt.md: N bytes, sha256:…>``: what records hold instead of the prompt."""
        return prompt_reference(self.prompt)


def mission_dir_name(mission: Mission, root: str | Path) -> str:
    """``<dir>`` of ``<root>/.harness/missions/<dir>/mission.yaml``, else the mission id."""
    if in_harness(mission, root) and mission.source_path is not None:
        return mission.source_path.parent.name
    return mission.id


def in_harness(mission: Mission, root: str | Path) -> bool:
    """Was the mission read from ``<root>/.harness/missions/<dir>/mission.yaml``?"""
    home = harness_root_of(mission)
    return home is not None and home.resolve() == Path(root).resolve()


def plan_run(mission: Mission, config: HermesProxyRuntimeConfig, *, workflow: Workflow | None = None,
             warnings: list[str] | tuple[str, ...] = ()) -> RunPlan:
    """The request a run will send (no IO)."""
    from hermes_nb.wire.client import HermesClient
    from hermes_nb.wire.payloads import chat_request_body

    prompt = render_prompt(mission, workflow)
    redactor = Redactor(config.secrets())
    digest = prompt_digest(redactor.text(prompt))  # of prompt.md's bytes: the one copy a run keeps
    body = chat_request_body(config, [{"role": "user", "content": prompt_reference(digest)}])
    with HermesClient(config) as client:
        request = client.build_request("POST", "/chat/completions", json=body, sse=bool(body.get("stream")))
    headers = {k: v for k, v in redact_headers(dict(request.headers)).items() if k != "content-length"}
    overall = config.request_timeout_ms / 1000.0
    plan = RunPlan(
        mission_id=mission.id,
        endpoint=config.endpoint,
        url=str(request.url),
        command=f"POST {config.endpoint}/chat/completions",
        args=[redactor.text(json.dumps(body, indent=2, ensure_ascii=False))],
        headers=headers,  # content-length: of the body as sent, which request.json records after the call
        body=redactor.data(body),
        prompt=digest,
        timeouts={
            "request_timeout_ms": float(config.request_timeout_ms),
            "connect_timeout_s": CONNECT_TIMEOUT_S,
            "idle_timeout_s": overall,
            **({"max_duration_ms": float(config.max_duration_ms)} if config.max_duration_ms is not None else {}),
        },
        warnings=[*warnings, *filter(None, [plain_http_warning(config.endpoint)])],
    )
    plan._request_prompt = prompt
    return plan


def prepare(mission: Mission, config: HermesProxyRuntimeConfig, root: str | Path, run_id: str | None,
            workflow: Workflow | None, warnings: list[str] | tuple[str, ...]
            ) -> tuple[RunPlan, MissionArtifacts, str, Path]:
    """The plan, the artifact writer, the run id and the run directory, after every preflight check."""
    rid = validate_run_id(run_id) if run_id else new_run_id()
    plan = plan_run(mission, config, workflow=workflow, warnings=warnings)
    artifacts = MissionArtifacts(root, mission_dir_name(mission, root), redactor=Redactor(config.secrets()))
    for _ in range(64):  # a generated id already taken (same second, same 6 hex digits) is drawn again
        if run_id or not artifacts.run_dir(rid).exists():
            break
        rid = new_run_id()
    artifacts.preflight(rid)
    return plan, artifacts, rid, artifacts.run_dir(rid)
