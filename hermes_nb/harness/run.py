"""Plan, dry-run and run a mission against the proxy, writing UH's artifact tree (uh-contract §3). A run keeps the
prompt once, in ``prompt.md``; every other record carries ``<prompt.md: N bytes, sha256:…>`` instead. It works in
the project or a throwaway copy (UH's ``directory`` sandbox); what changed is diffed as git trees written through a
temporary index (the user's untouched)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from pydantic import BaseModel, Field

from hermes_nb.core.config import HermesProxyRuntimeConfig
from hermes_nb.core.errors import ArtifactError, HermesError
from hermes_nb.core.facts import (
    CONNECT_TIMEOUT_S,
    ERROR_PREFIX,
    HARNESS_DIR,
    PROMPT_FILE,
    RUN_ARTIFACTS,
    RUNTIME,
    exit_code_for,
    plain_http_warning,
)
from hermes_nb.core.io import iso_now, new_run_id, sha256_file, utf8_pieces, validate_run_id
from hermes_nb.core.model import Shown
from hermes_nb.core.providers import provider_in_text
from hermes_nb.core.records import Exchange, Outcome, SSEEventRecord
from hermes_nb.core.redaction import Redactor, StreamRedactor, redact_headers
from hermes_nb.harness.artifacts import HermesRuntimeResult, MissionArtifacts, RuntimeSession, uh_document
from hermes_nb.harness.mission import Mission, Workflow, harness_root_of, render_prompt
from hermes_nb.harness.signals import SIGNAL_NAMES, Cancelled, SignalGuard
from hermes_nb.wire.client import HermesClient
from hermes_nb.wire.payloads import chat_request_body
from hermes_nb.wire.reading import classify
from hermes_nb.wire.sentinel import extract_final_message

#: directory names never copied into a sandbox
SKIP_NAMES = frozenset({HARNESS_DIR, ".venv", ".venv-hermes", "venv", "node_modules", "__pycache__", ".mypy_cache",
                        ".pytest_cache", ".ruff_cache", ".tox", ".ipynb_checkpoints"})
#: a project with more entries is not copied (``--no-sandbox`` runs in place)
MAX_SANDBOX_ENTRIES = 50_000
MAX_DIFF_BYTES = 50 * 1024 * 1024
_GIT_TIMEOUT_S = 120.0


@contextlib.contextmanager
def workdir(project: str | Path, *, sandbox: bool, max_entries: int | None = None) -> Iterator[Path]:
    """``project`` itself, or a copy of it (``.git`` kept, :data:`SKIP_NAMES` skipped) removed afterwards."""
    source = Path(project)
    if not sandbox:
        yield source
        return
    if not source.is_dir():
        raise ArtifactError(f"sandbox source {source} is not a directory")
    limit, count = max_entries or MAX_SANDBOX_ENTRIES, 0

    def ignore(directory: str, names: list[str]) -> set[str]:
        nonlocal count
        skipped = set(SKIP_NAMES.intersection(names))
        count += len(names) - len(skipped)
        if count > limit:
            raise ArtifactError(f"project {directory} has more than {limit} entries: too large for a sandbox copy "
                                "(use --no-sandbox)")
        return skipped

    parent = Path(tempfile.mkdtemp(prefix="hermes-nb-sandbox-"))
    target = parent / (source.resolve().name or "project")
    try:
        try:
            shutil.copytree(source, target, symlinks=True, ignore=ignore)
        except (shutil.Error, OSError) as exc:
            raise ArtifactError(f"cannot copy {source} into a sandbox: {exc}") from None
        yield target
    finally:
        shutil.rmtree(parent, ignore_errors=True)


class _GitFailed(Exception):
    pass


@dataclass
class Diff:
    cwd: Path
    #: the working tree at the start, as a git tree (None: not a git work tree, or git failed)
    tree: str | None = None
    commit: str | None = None
    patch: bytes = b""
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _git(cwd: Path, *args: str, index: Path | None = None, check: bool = True) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({"GIT_OPTIONAL_LOCKS": "0", "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"})
    if index is not None:
        env["GIT_INDEX_FILE"] = str(index)
    try:
        proc = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, timeout=_GIT_TIMEOUT_S,
                              check=False)
    except FileNotFoundError:
        raise _GitFailed("git executable not found") from None
    except subprocess.TimeoutExpired:
        raise _GitFailed(f"git {args[0]} timed out after {_GIT_TIMEOUT_S:.0f} s") from None
    if check and proc.returncode != 0:
        message = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise _GitFailed(f"git {args[0]} failed: {message[-1] if message else f'exit {proc.returncode}'}")
    return proc


def _tree_of_worktree(cwd: Path) -> str:
    git_index = _git(cwd, "rev-parse", "--git-path", "index").stdout.decode().strip()
    with tempfile.TemporaryDirectory(prefix="hermes-nb-index-") as tmp:
        index = Path(tmp) / "index"
        if (cwd / git_index).is_file():  # (an absolute git_index stays itself)
            shutil.copyfile(cwd / git_index, index)  # keeps the stat cache: add -A stays fast
        else:
            _git(cwd, "read-tree", "--empty", index=index)
        _git(cwd, "add", "-A", "--", ".", f":(exclude){HARNESS_DIR}", index=index)
        return _git(cwd, "write-tree", index=index).stdout.decode().strip()


def snapshot(cwd: str | Path) -> Diff:
    """The base commit (if any) and the working-tree snapshot at the start of a run."""
    path = Path(cwd)
    try:
        inside = _git(path, "rev-parse", "--is-inside-work-tree", check=False)
    except _GitFailed as exc:
        return Diff(path, notes=[f"diff capture skipped: {exc}"])
    if inside.returncode != 0 or inside.stdout.strip() != b"true":
        return Diff(path, notes=[f"diff capture skipped: {path} is not a git work tree"])
    head = _git(path, "rev-parse", "--verify", "-q", "HEAD^{commit}", check=False)
    commit = head.stdout.decode().strip() if head.returncode == 0 else None
    try:
        return Diff(path, tree=_tree_of_worktree(path), commit=commit)
    except _GitFailed as exc:
        return Diff(path, commit=commit, errors=[f"Diff capture failed: {exc}"])


def capture(diff: Diff) -> Diff:
    """``diff`` with the binary-safe patch of what changed since :func:`snapshot`."""
    if diff.tree is None:
        return diff
    try:
        tree = _tree_of_worktree(diff.cwd)
        if tree != diff.tree:
            diff.patch = _git(diff.cwd, "diff", "--binary", "--no-color", "--no-ext-diff", diff.tree, tree).stdout
    except _GitFailed as exc:
        diff.errors.append(f"Diff capture failed: {exc}")
    if len(diff.patch) > MAX_DIFF_BYTES:
        diff.patch = diff.patch[:MAX_DIFF_BYTES]
        diff.errors.append(f"Diff capture truncated at {MAX_DIFF_BYTES} bytes")
    return diff


def artifact_digests(run_dir: Any, names: tuple[str, ...] = RUN_ARTIFACTS) -> dict[str, str]:
    if run_dir is None:
        return {}
    return {name: sha256_file(Path(run_dir) / name) for name in names if (Path(run_dir) / name).is_file()}


class RunPlan(BaseModel):
    """What a run will send, with no secret and no copy of the prompt (``prompt_reference`` in its place);
    ``request_prompt`` (never dumped) is the prompt as sent."""

    mission_id: str
    runtime: str = RUNTIME
    endpoint: str
    url: str
    method: str = "POST"
    command: str
    args: list[str]
    headers: dict[str, str]
    body: dict[str, Any]
    prompt: dict[str, Any]
    timeouts: dict[str, int | float]
    warnings: list[str] = Field(default_factory=list)
    request_prompt: str = Field(exclude=True, repr=False)
    prompt_reference: str = Field(exclude=True)

    def request(self) -> dict[str, Any]:
        """``request.json`` before the call (the client's record replaces it after)."""
        return {"method": self.method, "url": self.url, "headers": dict(self.headers), "body": self.body}

    def session(self, status: str, **fields: Any) -> dict[str, Any]:
        return uh_document(RuntimeSession, schema_version="uh.runtime-session.v0", mission_id=self.mission_id,
                           runtime=self.runtime, status=status, command=self.command, args=self.args, **fields)


@dataclass
class RunResult(Shown):

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
        return {**self.result, "run_dir": str(self.run_dir)}

    def _repr_text_(self) -> str:
        reason = self.result.get("reason") or (self.outcome.reason if self.outcome else None)
        took = f", {self.exchange.timings.total_s:.3f} s" if self.exchange is not None else ""
        return Redactor().text(f"RunResult({self.status}{f' ({reason})' if reason else ''}, "
                               f"mission {self.result.get('mission_id')}, exit {self.exit_code}{took}, "
                               f"{len(self.text)} chars of assistant text)")

    __repr__ = _repr_text_  # one safe line, not the dataclass's dump of the whole document and text


@dataclass
class DryRunResult:
    plan: RunPlan
    run_dir: Path
    run_id: str
    session: dict[str, Any]
    exit_code: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"dry_run": True, "run_id": self.run_id, "run_dir": str(self.run_dir), "session": self.session,
                "plan": self.plan.model_dump(mode="json")}


def plan_run(mission: Mission, config: HermesProxyRuntimeConfig, *, workflow: Workflow | None = None,
             warnings: list[str] | tuple[str, ...] = ()) -> RunPlan:
    prompt = render_prompt(mission, workflow)
    redactor = Redactor(config.secrets())
    stored, sha, size = redactor.text(prompt), hashlib.sha256(), 0  # prompt.md's text
    for piece in utf8_pieces(stored, "surrogatepass"):
        sha.update(piece)
        size += len(piece)
    digest = {"file": PROMPT_FILE, "bytes": size, "sha256": sha.hexdigest()}
    reference = f"<{PROMPT_FILE}: {size} bytes, sha256:{digest['sha256']}>"
    body = chat_request_body(config, [{"role": "user", "content": reference}])
    with HermesClient(config) as client:
        request = client.build_request("POST", "/chat/completions", json=body, sse=bool(body.get("stream")))
    max_duration = {} if config.max_duration_ms is None else {"max_duration_ms": float(config.max_duration_ms)}
    return RunPlan(
        mission_id=mission.id, endpoint=config.endpoint, url=str(request.url),
        command=f"POST {config.endpoint}/chat/completions",
        args=[redactor.text(json.dumps(body, indent=2, ensure_ascii=False))],
        # content-length: of the body as sent, which request.json records after the call
        headers={k: v for k, v in redact_headers(dict(request.headers)).items() if k != "content-length"},
        body=redactor.data(body), prompt=digest,
        timeouts={"request_timeout_ms": int(config.request_timeout_ms), "connect_timeout_s": CONNECT_TIMEOUT_S,
                  "idle_timeout_s": config.request_timeout_ms / 1000.0, **max_duration},
        warnings=[*warnings, *filter(None, [plain_http_warning(config.endpoint)])],
        request_prompt=prompt, prompt_reference=reference)


def _prepare(mission: Mission, config: HermesProxyRuntimeConfig, root: str | Path, run_id: str | None,
             workflow: Workflow | None, warnings: list[str] | tuple[str, ...]
             ) -> tuple[RunPlan, MissionArtifacts, str, bool]:
    """The plan, the artifact writer, the run id and whether the mission is placed under ``root`` (its artifacts
    under its directory's name, else its id), after every check before the first write."""
    plan = plan_run(mission, config, workflow=workflow, warnings=warnings)
    home = harness_root_of(mission)
    placed = home is not None and mission.source_path is not None and home.resolve() == Path(root).resolve()
    artifacts = MissionArtifacts(root, mission.source_path.parent.name if placed and mission.source_path
                                 else mission.id, redactor=Redactor(config.secrets()))
    rid = validate_run_id(run_id) if run_id else new_run_id()
    artifacts.preflight(rid)
    return plan, artifacts, rid, placed


def dry_run(mission: Mission, config: HermesProxyRuntimeConfig, *, root: str | Path, run_id: str | None = None,
            workflow: Workflow | None = None, warnings: list[str] | tuple[str, ...] = ()) -> DryRunResult:
    """Write ``prompt.md``, a ``planned`` session and ``request.json`` under ``<mission dir>/dry-runs/<run_id>/``
    (outside ``runs/``, which UH's strict index lists whole); send nothing."""
    plan, artifacts, rid, _ = _prepare(mission, config, root, run_id, workflow, warnings)
    run_dir = artifacts.path("dry-runs", rid)
    if run_dir.exists():
        raise ArtifactError(f"dry-run directory {run_dir} already exists (choose another --run-id)")
    session = plan.session("planned", started_at=iso_now())
    artifacts.write_text(run_dir / PROMPT_FILE, plan.request_prompt)
    artifacts.write_yaml(run_dir / "runtime-session.yaml", session)
    artifacts.write_json(run_dir / "request.json", plan.request())
    return DryRunResult(plan=plan, run_dir=run_dir, run_id=rid, session=session)


def run(mission: Mission, config: HermesProxyRuntimeConfig, *, root: str | Path, sandbox: bool = True,
        transport: httpx.BaseTransport | None = None, on_delta: Callable[[str], None] | None = None,
        on_event: Callable[[SSEEventRecord], None] | None = None, run_id: str | None = None,
        workflow: Workflow | None = None, warnings: list[str] | tuple[str, ...] = (),
        handle_signals: bool = True, project: str | Path | None = None) -> RunResult:
    """Execute ``mission``; a started run always ends with its result document, ``latest.json`` and index entry.
    ``on_delta`` gets the redacted text, ``on_event`` each SSE record once settled (a hook that raises: a warning). A
    signal (``handle_signals``) or a ``KeyboardInterrupt`` from a hook cancels the run, its partial text kept."""
    plan, artifacts, rid, placed = _prepare(mission, config, root, run_id, workflow, warnings)
    with workdir(Path(project) if project is not None else artifacts.root, sandbox=sandbox) as wd:
        rid = artifacts.claim_run_id(rid, explicit=run_id is not None)  # concurrent runs: one directory each
        runner = _Runner(mission, config, plan, artifacts, rid, transport=transport,
                         hooks={"on_delta": on_delta, "on_event": on_event}, handle_signals=handle_signals)
        if mission.source_path is not None and not placed:
            runner.notes.append(f"mission file {mission.source_path} is not <root>/.harness/missions/<dir>/"
                                f"mission.yaml; artifacts written under {artifacts.relative(artifacts.mission_dir)}/ "
                                "by mission id (UH would write none)")
        if sandbox:
            runner.notes.append("ran in a sandbox copy of the project (removed after the run)")
        return runner.execute(wd)


def _set_content(payload: Any, text: str) -> bool:
    """Replace the content of a chat chunk (``choices[0].delta``/``message``); True if it changed."""
    try:
        choice = payload["choices"][0]
        holder = choice["delta"] if isinstance(choice.get("delta"), dict) else choice["message"]
        if not isinstance(holder.get("content"), str) or holder["content"] == text:
            return False
    except (KeyError, IndexError, TypeError, AttributeError):
        return False
    holder["content"] = text
    return True


class RedactedStream:
    """The streamed answer and its SSE events, released in order and redacted: a secret split across deltas never
    reaches the log, and each event waits until its piece is settled, so it is logged with its share masked."""

    def __init__(self, redactor: Redactor, *, write_text: Callable[[str], None],
                 write_event: Callable[[SSEEventRecord, Any], None]) -> None:
        self.text = StreamRedactor(redactor)
        self.write_text, self.write_event = write_text, write_event
        #: events not logged yet, each with its piece's place in the streamed text (None: none yet)
        self._queue: list[tuple[SSEEventRecord, tuple[int, int] | None]] = []
        self._open = False  # the last queued event may still get its piece (it comes before the next event)

    def event(self, record: SSEEventRecord) -> None:
        self._open = False
        self._drain()
        self._queue.append((record, None))
        self._open = True

    def piece(self, text: str) -> None:
        if not text:
            return
        if self._open and self._queue and self._queue[-1][1] is None:
            self._queue[-1] = (self._queue[-1][0], (self.text.length, self.text.length + len(text)))
        self._release(self.text.feed(text))

    def finish(self) -> None:
        self._release(self.text.flush())
        self._open = False
        self._drain()

    def _release(self, safe: str) -> None:
        if safe:
            self._drain()  # the events that carried the text go first (on_delta hooks see them logged)
            self.write_text(safe)

    def _drain(self) -> None:
        while self._queue:
            record, span = self._queue[0]
            if (span is None and self._open and len(self._queue) == 1) or (span and span[1] > self.text.settled):
                break
            self._queue.pop(0)
            try:
                payload: Any = json.loads(record.data)
            except ValueError:
                payload = record.data
            if span is not None and _set_content(payload, self.text.mask(*span)):
                record = record.model_copy(update={"data": json.dumps(payload, ensure_ascii=False)})
            self.write_event(record, payload)
        self.text.forget(min((span[0] for _, span in self._queue if span is not None), default=self.text.settled))


class _Runner:
    """One run's life cycle (uh-contract §3). The signal handlers cover all of it (no ``latest.json`` left running)
    but cancel only while the request is in flight."""

    def __init__(self, mission: Mission, config: HermesProxyRuntimeConfig, plan: RunPlan,
                 artifacts: MissionArtifacts, run_id: str, *, transport: httpx.BaseTransport | None,
                 hooks: dict[str, Callable[[Any], None] | None], handle_signals: bool) -> None:
        self.mission, self.config, self.plan, self.arts, self.run_id = mission, config, plan, artifacts, run_id
        self.transport, self.hooks = transport, hooks  # on_delta, on_event: dropped once one raised
        self.guard = SignalGuard(handle_signals)
        self.run_dir = artifacts.run_dir(run_id)
        self.started_at = iso_now()
        self.notes: list[str] = []
        self.hook_warnings: list[str] = []
        self.result: dict[str, Any] | None = None
        self.diff = Diff(artifacts.root)  # an abort before the snapshot writes an empty patch
        self._stdout: Any = None
        self._events: Any = None
        self._stream = RedactedStream(artifacts.redactor, write_text=self._write_stdout, write_event=self._write_sse)

    def _rel(self, name: str) -> str:
        return self.arts.relative(self.run_dir / name)

    def _event(self, kind: str, **payload: Any) -> None:
        if self._events is None:
            self._events = self.arts.open(self.run_dir / "events.ndjson", "a")
        self.arts.write_line(self._events, {"type": kind, "timestamp": iso_now(), "runtime": self.plan.runtime,
                                            "mission_id": self.mission.id, **payload})

    def _write_stdout(self, safe: str) -> None:
        self._stdout.write(safe)
        self._stdout.flush()
        self._call("on_delta", safe)

    def _write_sse(self, record: SSEEventRecord, payload: Any) -> None:
        extra = {} if record.event == "message" else {"event": record.event}
        self.arts.write_line(self._events, {"type": "hermes-proxy.sse", "timestamp": iso_now(), "payload": payload,
                                            "t": round(record.t, 6), **extra})
        self._call("on_event", record)

    def _call(self, name: str, value: Any) -> None:
        """A caller's hook; one that fails is not called again and the run goes on (it is paid for)."""
        hook = self.hooks.get(name)
        if hook is None:
            return
        try:
            hook(value)
        except Exception as exc:  # process edge: a caller's hook must not wreck the run
            self.hooks.pop(name)
            self.hook_warnings.append(f"{name} callback raised {type(exc).__name__}: {exc}; "
                                      "not called again (the run went on)")

    def execute(self, wd: Path) -> RunResult:
        with self.guard:
            try:
                self.arts.mark(self.run_id, self.started_at, "running", runtime=self.plan.runtime)
                return self._execute(wd)
            except BaseException as exc:  # process edge: the run ends with its documents, then re-raises
                if self.result is None:
                    self._abort(exc)
                if isinstance(exc, OSError):  # disk full, permissions changed mid-run: one line, exit 1
                    raise HermesError(f"run {self.run_id} aborted: {exc.strerror or exc} "
                                      f"(documents under {self.run_dir})") from exc
                raise
            finally:
                for handle in (self._stdout, self._events):
                    if handle is not None:
                        handle.close()

    def _execute(self, wd: Path) -> RunResult:
        self.arts.write_text(self.run_dir / PROMPT_FILE, self.plan.request_prompt)  # the one copy the run keeps
        self.arts.write_json(self.run_dir / "request.json", self.plan.request())
        self.arts.write_yaml(self.run_dir / "runtime-session.yaml", self._session("running"))
        self._event("runtime.started", command=self.plan.command, args=self.plan.args, run_id=self.run_id)
        self.arts.audit("mission.run", {"runtime": self.plan.runtime, "mission_id": self.mission.id,
                                        "mission_name": self.mission.display_name,
                                        "workflow": self.mission.workflow_profile, "run_id": self.run_id})
        self.arts.write_text(self.run_dir / "runtime.stderr.log", "")
        self._stdout = self.arts.open(self.run_dir / "runtime.stdout.log", "w")
        self.diff = snapshot(wd)
        if self.diff.tree is not None:
            self.notes.append(f"diff base: commit {self.diff.commit or '(none yet)'}, "
                              f"working-tree snapshot {self.diff.tree}")
        exchange: Exchange | None = None
        cancelled: Cancelled | None = None
        try:
            self.guard.arm()  # a signal that arrived since the start cancels here
            with HermesClient(self.config, transport=self.transport) as client:
                client.keep_events = False  # events.ndjson has them: the Exchange would hold the answer twice (P5)
                exchange = client.chat([{"role": "user", "content": self.plan.request_prompt}],
                                       on_delta=self._stream.piece, on_event=self._stream.event)
        except Cancelled as exc:
            cancelled = exc
        finally:
            self.guard.armed = False
        capture(self.diff)
        if self.guard.pending is not None and cancelled is None:
            self.notes.append(f"{SIGNAL_NAMES[self.guard.pending]} received after the request finished; "
                              "run completed")
        self.notes += self.diff.notes
        return self._finish(exchange, cancelled)

    def _finish(self, exchange: Exchange | None, cancelled: Cancelled | None,
                outcome: Outcome | None = None) -> RunResult:
        """The logs, diff, final text and request record, then the terminal documents."""
        if outcome is None and exchange is not None and cancelled is None:
            self._stream.text.adopt(exchange.text)  # the same text: one copy, not the pieces and a join (P5)
            outcome = classify(exchange, self.config)
        elif outcome is None:
            name = SIGNAL_NAMES[cancelled.signum] if cancelled else "interrupt"
            size = len(self._stream.text.raw)
            kept = f" ({size} characters of partial text kept)" if size else " (no text had arrived)"
            outcome = Outcome(status="failed", reason="cancelled",
                              errors=[f"{ERROR_PREFIX}run cancelled by {name}{kept}"])
        text = self._stream.text.raw
        if exchange is not None and exchange.text != text:
            if exchange.text.startswith(text):  # e.g. a JSON answer: no deltas were streamed
                self._stream.piece(exchange.text[len(text):])
            text = exchange.text
        self._stream.finish()
        final = outcome.final_message if outcome.final_message is not None else extract_final_message(text)
        errors = outcome.errors + self.diff.errors
        self.arts.write_text(self.run_dir / "runtime.stderr.log", self._stderr_text(exchange, outcome, errors))
        self.arts.write_bytes(self.run_dir / "diff.patch", self.diff.patch)
        self.arts.write_text(self.run_dir / "runtime-final.txt", final or "")
        if exchange is not None:  # the request as the client recorded it, its prompt the reference to prompt.md
            body = exchange.request.body
            if isinstance(body, dict) and isinstance(body.get("messages"), list):
                body = {**body, "messages": [{**m, "content": self.plan.prompt_reference}
                                             if isinstance(m, dict) and m.get("role") == "user" else m
                                             for m in body["messages"]]}
            exchange.request = exchange.request.model_copy(update={"body": body})
            self.arts.write_json(self.run_dir / "request.json", exchange.request.model_dump(mode="json"))
        status = "cancelled" if outcome.reason == "cancelled" else outcome.status
        finished_at, exit_code = iso_now(), exit_code_for(status)
        usage = self._usage(exchange, text)
        envelope = exchange.envelope if exchange is not None else None
        self.result = self.arts.redactor.data(uh_document(
            HermesRuntimeResult, schema_version="uh.runtime-result.v0",
            mission_id=self.mission.id, runtime=self.plan.runtime, status=status, started_at=self.started_at,
            finished_at=finished_at, exit_code=exit_code, prompt_path=self._rel(PROMPT_FILE),
            stdout_path=self._rel("runtime.stdout.log"), stderr_path=self._rel("runtime.stderr.log"),
            diff_path=self._rel("diff.patch"), errors=errors, notes=list(self.notes) or None,
            warnings=[*self.plan.warnings, *outcome.warnings, *self.hook_warnings], reason=outcome.reason,
            hint=outcome.hint, error_type=outcome.error_type, retry_after_s=outcome.retry_after_s,
            http_status=outcome.http_status if outcome.http_status is not None
            else (exchange.status if exchange is not None else None),
            usage=usage if usage["source"] == "runtime" else None, run_id=self.run_id,
            provider=self.config.provider or provider_in_text(envelope.message if envelope is not None else None)))
        self.arts.write_yaml(self.run_dir / "runtime-result.yaml", self.result)
        session_status = "succeeded" if status == "passed" else "failed"
        self.arts.write_yaml(self.run_dir / "runtime-session.yaml", self._session(
            session_status, finished_at=finished_at, exit_code=exit_code))
        if cancelled is not None:
            self._event("runtime.cancelled", signal=SIGNAL_NAMES[cancelled.signum])
        self._event("runtime.finished", exit_code=exit_code, status=session_status)
        self._event("runtime.usage", **usage)
        self.arts.write_yaml(self.arts.path("runtime-result.yaml"), self.result)
        self.arts.mark(self.run_id, self.started_at, status, finished_at)
        return RunResult(result=self.result, run_dir=self.run_dir, run_id=self.run_id, exit_code=exit_code,
                         plan=self.plan, outcome=outcome, exchange=exchange, text=self.arts.redactor.text(text))

    def _stderr_text(self, exchange: Exchange | None, outcome: Outcome, errors: list[str]) -> str:
        lines: list[str] = []
        if exchange is not None:
            if exchange.status is not None and not exchange.ok_status and exchange.body_text:
                lines += [f"HTTP {exchange.status} body:", exchange.body_text]
            elif exchange.in_band_error and exchange.envelope is not None:
                lines.append(f"in-band stream error: {exchange.envelope.model_dump_json(exclude_none=True)}")
            if exchange.transport_error is not None:
                te = exchange.transport_error
                lines.append(f"transport error ({te.kind}, {te.phase}): {te.message}")
            lines += [f"protocol error: {p}" for p in exchange.protocol_errors]
        lines += [f"error: {e}" for e in errors]
        lines += [f"warning: {w}" for w in outcome.warnings + self.hook_warnings]
        lines += [f"note: {n}" for n in self.notes]
        return "".join(line + "\n" for line in lines)

    def _usage(self, exchange: Exchange | None, text: str) -> dict[str, Any]:
        usage = exchange.usage if exchange is not None else None
        if usage:
            doc: dict[str, Any] = {"input_tokens": usage.get("prompt_tokens", usage.get("input_tokens")),
                                   "output_tokens": usage.get("completion_tokens", usage.get("output_tokens")),
                                   "total_tokens": usage.get("total_tokens"), "source": "runtime"}
        else:
            inp, outp = math.ceil(len(self.plan.request_prompt) / 4), math.ceil(len(text) / 4)
            doc = {"input_tokens": inp, "output_tokens": outp, "total_tokens": inp + outp, "source": "estimated"}
        if exchange is not None and exchange.model:
            doc["model"] = exchange.model
        return doc

    def _session(self, status: str, **fields: Any) -> dict[str, Any]:
        return self.plan.session(status, started_at=self.started_at, stdout_path=self._rel("runtime.stdout.log"),
                                 stderr_path=self._rel("runtime.stderr.log"), **fields)

    def _abort(self, exc: BaseException) -> None:
        """Best effort: terminal documents after an unexpected error (which ``execute`` re-raises)."""
        cancelled = isinstance(exc, (KeyboardInterrupt, Cancelled))
        message = "run cancelled" if cancelled else f"run aborted: {type(exc).__name__}: {exc}"
        self.hooks.clear()  # a hook that interrupted once is not called again
        try:
            if self._stdout is None:
                self._stdout = self.arts.open(self.run_dir / "runtime.stdout.log", "a")
            self._finish(None, None, Outcome(status="failed", reason="cancelled" if cancelled else "aborted",
                                             errors=[f"{ERROR_PREFIX}{message}"]))
        except (OSError, HermesError):  # no documents (disk full?): at least a terminal latest.json
            with contextlib.suppress(OSError, HermesError):
                self.arts.mark(self.run_id, self.started_at, "cancelled" if cancelled else "failed", iso_now())
