"""The life cycle of one run (uh-contract §3 sequence), used by :func:`hermes_nb.harness.run.run`.

1. mark ``latest.json`` and the index ``running``; write ``prompt.md``, the
   session and ``runtime.started``; append the audit line;
2. snapshot the work dir (the sandbox copy made by ``run`` before step 1, by default), send the request; each
   delta is appended to ``runtime.stdout.log`` and flushed, each SSE event to
   ``events.ndjson`` with its receive time, as they arrive;
3. classify, capture the diff, write stderr log, diff, final text, result,
   session, ``runtime.finished`` and ``runtime.usage``;
4. copy the result up and mark ``latest.json`` and the index terminal.

SIGINT/SIGTERM/SIGHUP handlers are installed for the whole life cycle (main thread
only; :mod:`hermes_nb.harness.signals`). A signal before or during the request raises
:class:`~hermes_nb.harness.signals.Cancelled` (a ``BaseException``) out of the client call; the run then ends as
``cancelled`` with the partial text kept. A signal after the answer arrived
lets the run finish normally (noted in the result). Whatever happens, a
started run ends with its result document and a terminal ``latest.json``/index.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hermes_nb.core.config import HermesProxyRuntimeConfig
from hermes_nb.core.errors import HermesError
from hermes_nb.core.facts import ERROR_PREFIX, PROMPT_FILE, exit_code_for
from hermes_nb.core.io import iso_now
from hermes_nb.core.providers import provider_in_text
from hermes_nb.core.records import Exchange, Outcome, SSEEventRecord
from hermes_nb.harness import diffcap, documents
from hermes_nb.harness.artifacts import MissionArtifacts
from hermes_nb.harness.mission import Mission
from hermes_nb.harness.plan import RunPlan
from hermes_nb.harness.prompt import refer_to_prompt
from hermes_nb.harness.results import RunResult
from hermes_nb.harness.signals import SIGNAL_NAMES, Cancelled, SignalGuard
from hermes_nb.harness.stream_log import RedactedStream

if TYPE_CHECKING:
    import httpx  # annotations only: the client imports it when a request is made

__all__ = ["Runner", "session_document", "request_document"]


def request_document(plan: RunPlan) -> dict[str, Any]:
    """``request.json``: the request a run sends — method, URL, headers (secrets masked), body — built by the
    client's one request builder; after the call, the client's own record of it replaces this."""
    return {"method": plan.method, "url": plan.url, "headers": dict(plan.headers), "body": plan.body}


def session_document(plan: RunPlan, artifacts: MissionArtifacts, run_dir: Path, *, status: str,
                     started_at: str | None = None, finished_at: str | None = None,
                     exit_code: int | None = None) -> dict[str, Any]:
    """``runtime-session.yaml`` for ``plan`` (a dry run writes no logs: it lists only files that exist)."""
    logs = status != "planned"
    return documents.runtime_session(
        mission_id=plan.mission_id, runtime=plan.runtime, status=status, command=plan.command, args=plan.args,
        exit_code=exit_code, started_at=started_at, finished_at=finished_at,
        stdout_path=artifacts.relative(run_dir / "runtime.stdout.log") if logs else None,
        stderr_path=artifacts.relative(run_dir / "runtime.stderr.log") if logs else None)



class Runner:
    def __init__(self, *, mission: Mission, config: HermesProxyRuntimeConfig, plan: RunPlan,
                 artifacts: MissionArtifacts, run_id: str, workdir: Path, sandbox: bool,
                 transport: httpx.BaseTransport | None,
                 on_delta: Callable[[str], None] | None, on_event: Callable[[SSEEventRecord], None] | None,
                 handle_signals: bool) -> None:
        self.mission, self.config, self.plan, self.arts = mission, config, plan, artifacts
        self.run_id, self.workdir, self.sandbox, self.transport = run_id, workdir, sandbox, transport
        self.user_on_delta, self.user_on_event = on_delta, on_event
        self.guard = SignalGuard(handle_signals)
        self.run_dir = artifacts.run_dir(run_id)
        self.started_at = iso_now()
        self.notes: list[str] = []
        self.callback_warnings: list[str] = []
        self.result: dict[str, Any] | None = None
        self._stdout: Any = None
        self._stream = RedactedStream(artifacts.redactor, write_text=self._write_stdout,
                                      write_event=self._write_sse)
        self._events: Any = None

    # ---------------------------------------------------------------- helpers

    def _file(self, name: str) -> Path:
        return self.arts.path("runs", self.run_id, name)

    def _rel(self, name: str) -> str:
        return self.arts.relative(self._file(name))

    def _event(self, kind: str, **payload: Any) -> None:
        """One events.ndjson line, written and flushed now (the handle stays open for the run)."""
        if self._events is None:
            self._events = self.arts.open(self._file("events.ndjson"), "a")
        self.arts.write_line(self._events, {"type": kind, "timestamp": iso_now(), **payload})

    def _base(self) -> dict[str, Any]:
        return {"runtime": self.plan.runtime, "mission_id": self.mission.id}

    def _on_delta(self, delta: str) -> None:
        self._stream.piece(delta)  # the one record of the streamed text (``.text.raw``)

    def _write_stdout(self, safe: str) -> None:
        """Redacted, settled text: appended to runtime.stdout.log (flushed), then handed to ``on_delta``."""
        self._stdout.write(safe)
        self._stdout.flush()
        if self.user_on_delta is not None:
            self._callback("on_delta", self.user_on_delta, safe)

    def _write_sse(self, record: SSEEventRecord, payload: Any) -> None:
        extra = {} if record.event == "message" else {"event": record.event}
        self._event("hermes-proxy.sse", payload=payload, t=round(record.t, 6), **extra)
        if self.user_on_event is not None:
            self._callback("on_event", self.user_on_event, record)

    def _callback(self, name: str, hook: Callable[[Any], None], value: Any) -> None:
        """Call a caller's display hook; if it fails, warn and stop calling it (the run goes on)."""
        try:
            hook(value)
        except Exception as exc:  # process edge: a caller's hook must not wreck a run already paid for
            setattr(self, f"user_{name}", None)
            self.callback_warnings.append(f"{name} callback raised {type(exc).__name__}: {exc}; "
                                          "not called again (the run went on)")

    # ---------------------------------------------------------------- life cycle

    def execute(self) -> RunResult:
        # the handlers cover the whole life cycle (a SIGTERM while a document is written must not kill
        # the process with latest.json still ``running``); they only cancel while the request is in flight
        with self.guard:
            try:
                self.arts.set_latest(self.run_id, self.started_at, "running")
                self.arts.update_index(self.run_id, started_at=self.started_at, status="running",
                                       runtime=self.plan.runtime)
                return self._execute()
            except BaseException as exc:  # process edge: the run must end with its documents, then re-raise
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

    def _execute(self) -> RunResult:
        self.arts.write_text(self._file(PROMPT_FILE), self.plan.request_prompt)  # the one copy the run keeps
        self.arts.write_json(self._file("request.json"), request_document(self.plan))
        self.arts.write_yaml(self._file("runtime-session.yaml"), session_document(
            self.plan, self.arts, self.run_dir, status="running", started_at=self.started_at))
        self._event("runtime.started", **self._base(), command=self.plan.command, args=self.plan.args,
                    run_id=self.run_id)
        self.arts.audit("mission.run", {**self._base(), "mission_name": self.mission.display_name,
                                        "workflow": self.mission.workflow_profile, "run_id": self.run_id})
        self.arts.write_text(self._file("runtime.stderr.log"), "")
        self._stdout = self.arts.open(self._file("runtime.stdout.log"), "w")
        exchange: Exchange | None = None
        cancelled: Cancelled | None = None
        if self.sandbox:
            self.notes.append("ran in a sandbox copy of the project (removed after the run)")
        base = diffcap.snapshot(self.workdir)
        if base.tree is not None:
            self.notes.append(f"diff base: commit {base.commit or '(none yet)'}, "
                              f"working-tree snapshot {base.tree}")
        try:
            self.guard.arm()  # a signal that arrived since the start cancels here
            exchange = self._send()
        except Cancelled as exc:
            cancelled = exc
        finally:
            self.guard.armed = False
        diff = diffcap.capture(base)
        if self.guard.pending is not None and cancelled is None:
            self.notes.append(f"{SIGNAL_NAMES.get(self.guard.pending, self.guard.pending)} received "
                              "after the request finished; run completed")
        return self._finish(exchange, cancelled, diff)

    def _send(self) -> Exchange:
        from hermes_nb.wire.client import HermesClient

        with HermesClient(self.config, transport=self.transport) as client:
            client.keep_events = False  # events.ndjson has them; the Exchange would hold the answer twice (P5)
            messages = [{"role": "user", "content": self.plan.request_prompt}]
            return client.chat(messages, on_delta=self._on_delta, on_event=self._stream.event)

    def _outcome(self, exchange: Exchange | None, cancelled: Cancelled | None) -> Outcome:
        if cancelled is not None or exchange is None:
            name = SIGNAL_NAMES.get(cancelled.signum, str(cancelled.signum)) if cancelled else "interrupt"
            size = len(self._stream.text.raw)
            kept = f" ({size} characters of partial text kept)" if size else " (no text had arrived)"
            return Outcome(status="failed", reason="cancelled", errors=[f"{ERROR_PREFIX}run cancelled by {name}{kept}"])
        from hermes_nb.wire.reading import classify

        return classify(exchange, self.config)

    def _finish(self, exchange: Exchange | None, cancelled: Cancelled | None,
                diff: diffcap.DiffResult) -> RunResult:
        if exchange is not None:
            self._stream.text.adopt(exchange.text)  # the same text: keep one copy, not the pieces and a join (P5)
        outcome = self._outcome(exchange, cancelled)
        status = "cancelled" if outcome.reason == "cancelled" else outcome.status
        text = self._stream.text.raw
        if exchange is not None and exchange.text != text:
            if exchange.text.startswith(text):  # e.g. a JSON answer: no deltas were streamed
                self._stream.piece(exchange.text[len(text):])
            text = exchange.text
        self._stream.finish()
        final = outcome.final_message
        if final is None:
            from hermes_nb.wire.sentinel import extract_final_message

            final = extract_final_message(text)
        self.arts.write_text(self._file("runtime.stderr.log"), self._stderr_text(exchange, outcome, diff))
        self.arts.write_bytes(self._file("diff.patch"), diff.patch)
        self.arts.write_text(self._file("runtime-final.txt"), final or "")
        if exchange is not None:  # the request as the client recorded sending it (secrets masked; the prompt is
            # in prompt.md: the record keeps its digest and size, in the Exchange too, not a second copy)
            exchange.request = exchange.request.model_copy(
                update={"body": refer_to_prompt(exchange.request.body, self.plan.prompt_reference)})
            self.arts.write_json(self._file("request.json"), exchange.request.model_dump(mode="json"))
        self.notes.extend(diff.notes)
        return self._write_terminal(status, outcome, exchange, text, errors=outcome.errors + diff.errors,
                                    cancelled=cancelled)

    def _stderr_text(self, exchange: Exchange | None, outcome: Outcome, diff: diffcap.DiffResult) -> str:
        lines: list[str] = []
        if exchange is not None:
            if exchange.status is not None and not exchange.ok_status and exchange.body_text:
                lines.append(f"HTTP {exchange.status} body:")
                lines.append(exchange.body_text)
            elif exchange.in_band_error and exchange.envelope is not None:
                lines.append(f"in-band stream error: {exchange.envelope.model_dump_json(exclude_none=True)}")
            if exchange.transport_error is not None:
                te = exchange.transport_error
                lines.append(f"transport error ({te.kind}, {te.phase}): {te.message}")
            lines.extend(f"protocol error: {p}" for p in exchange.protocol_errors)
        lines.extend(f"error: {e}" for e in outcome.errors + diff.errors)
        lines.extend(f"warning: {w}" for w in outcome.warnings + self.callback_warnings)
        lines.extend(f"note: {n}" for n in self.notes + diff.notes)
        return "\n".join(lines) + ("\n" if lines else "")

    def _usage(self, exchange: Exchange | None, text: str) -> dict[str, Any]:
        usage = exchange.usage if exchange is not None else None
        if usage:
            doc: dict[str, Any] = {
                "input_tokens": usage.get("prompt_tokens", usage.get("input_tokens")),
                "output_tokens": usage.get("completion_tokens", usage.get("output_tokens")),
                "total_tokens": usage.get("total_tokens"),
                "source": "runtime",
            }
        else:
            inp, outp = math.ceil(len(self.plan.request_prompt) / 4), math.ceil(len(text) / 4)
            doc = {"input_tokens": inp, "output_tokens": outp, "total_tokens": inp + outp, "source": "estimated"}
        if exchange is not None and exchange.model:
            doc["model"] = exchange.model
        return doc

    def _write_terminal(self, status: str, outcome: Outcome, exchange: Exchange | None, text: str, *,
                        errors: list[str], cancelled: Cancelled | None) -> RunResult:
        finished_at = iso_now()
        exit_code = exit_code_for(status)
        usage = self._usage(exchange, text)
        result = documents.runtime_result(uh={
            "mission_id": self.mission.id,
            "runtime": self.plan.runtime,
            "status": status,
            "started_at": self.started_at,
            "finished_at": finished_at,
            "exit_code": exit_code,
            "prompt_path": self._rel("prompt.md"),
            "stdout_path": self._rel("runtime.stdout.log"),
            "stderr_path": self._rel("runtime.stderr.log"),
            "diff_path": self._rel("diff.patch"),
            "errors": errors,
            "notes": list(self.notes) or None,
        }, extras={
            "warnings": list(self.plan.warnings) + list(outcome.warnings) + self.callback_warnings,
            "reason": outcome.reason,
            "hint": outcome.hint,
            "http_status": outcome.http_status if outcome.http_status is not None
            else (exchange.status if exchange is not None else None),
            "error_type": outcome.error_type,
            "retry_after_s": outcome.retry_after_s,
            "usage": usage if usage.get("source") == "runtime" else None,
            "run_id": self.run_id,
            "provider": self.config.provider or provider_in_text(
                exchange.envelope.message if exchange is not None and exchange.envelope is not None else None),
        })
        self.result = self.arts.redactor.data(result)
        self.arts.write_yaml(self._file("runtime-result.yaml"), self.result)
        session_status = "succeeded" if status == "passed" else "failed"
        self.arts.write_yaml(self._file("runtime-session.yaml"), session_document(
            self.plan, self.arts, self.run_dir, status=session_status, started_at=self.started_at,
            finished_at=finished_at, exit_code=exit_code))
        if cancelled is not None:
            self._event("runtime.cancelled", **self._base(),
                        signal=SIGNAL_NAMES.get(cancelled.signum, str(cancelled.signum)))
        self._event("runtime.finished", **self._base(), exit_code=exit_code, status=session_status)
        self._event("runtime.usage", **self._base(), **usage)
        self.arts.write_yaml(self.arts.path("runtime-result.yaml"), self.result)
        self.arts.set_latest(self.run_id, self.started_at, status, finished_at)
        self.arts.update_index(self.run_id, finished_at=finished_at, status=status)
        return RunResult(result=self.result, run_dir=self.run_dir, run_id=self.run_id, exit_code=exit_code,
                         plan=self.plan, outcome=outcome, exchange=exchange, text=self.arts.redactor.text(text))

    def _abort(self, exc: BaseException) -> None:
        """Best effort: terminal documents after an unexpected error (the original error is re-raised)."""
        cancelled = isinstance(exc, (KeyboardInterrupt, Cancelled))
        status = "cancelled" if cancelled else "failed"
        message = "run cancelled" if cancelled else f"run aborted: {type(exc).__name__}: {exc}"
        outcome = Outcome(status="failed", reason="cancelled" if cancelled else "aborted",
                          errors=[f"{ERROR_PREFIX}{message}"])
        self.user_on_delta = self.user_on_event = None  # a hook that interrupted once is not called again
        try:
            if self._stdout is None:
                self._stdout = self.arts.open(self._file("runtime.stdout.log"), "a")
            self._stream.finish()
            self.arts.write_text(self._file("runtime.stderr.log"), f"error: {ERROR_PREFIX}{message}\n")
            # every path the result lists must exist, whatever step failed
            if not self._file("diff.patch").exists():
                self.arts.write_bytes(self._file("diff.patch"), b"")
            if not self._file("runtime-final.txt").exists():
                self.arts.write_text(self._file("runtime-final.txt"), "")
            self._write_terminal(status, outcome, None, self._stream.text.raw, errors=outcome.errors,
                                 cancelled=None)
        except (OSError, HermesError):
            # the documents could not be written (disk full, permissions changed mid-run): at least
            # make latest.json terminal; the original error is re-raised by execute() either way
            try:
                self.arts.set_latest(self.run_id, self.started_at, status, iso_now())
            except (OSError, HermesError):
                return
