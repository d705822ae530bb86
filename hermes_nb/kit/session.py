"""The probe console's logic without widgets (tested without a browser): routes, the body editor, targets, one
request streamed on its own thread, the history. The magics share its targets and model lists."""

from __future__ import annotations

import json
import os
import socket
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError

from hermes_nb.core.config import HermesProxyRuntimeConfig
from hermes_nb.core.errors import ConfigError, HermesError
from hermes_nb.core.model import StrictModel
from hermes_nb.core.records import Exchange, Outcome, Usage
from hermes_nb.core.redaction import Redactor
from hermes_nb.core.resolve import resolve_runtime_config
from hermes_nb.harness.prepare import prepare_mission
from hermes_nb.proxy.check import check
from hermes_nb.proxy.probe import probe
from hermes_nb.target import Target, embedded_target, identify
from hermes_nb.views.htmlkit import kv_html
from hermes_nb.wire.client import HermesClient
from hermes_nb.wire.payloads import chat_request_body, responses_request_body
from hermes_nb.wire.reading import classify, route_outcome


@dataclass(frozen=True)
class RouteChoice:
    """One entry of the route picker (``method``/``path`` None: the method picker's and the path field's);
    ``api``: what a prompt becomes, ``chat`` (messages) or ``responses`` (OpenAI's Responses API: ``input``)."""

    label: str
    method: str | None
    path: str | None
    root: bool = False
    sse: bool = False
    chat: bool = False
    api: str = "chat"


ROUTES: dict[str, RouteChoice] = {r.label: r for r in (
    RouteChoice("chat (streamed)", "POST", "/chat/completions", sse=True, chat=True),
    RouteChoice("chat", "POST", "/chat/completions", chat=True),
    RouteChoice("responses (streamed)", "POST", "/responses", sse=True, chat=True, api="responses"),
    RouteChoice("responses", "POST", "/responses", chat=True, api="responses"),
    RouteChoice("models", "GET", "/models"),
    RouteChoice("health", "GET", "/health", root=True),
    RouteChoice("forwarded path", None, None),
)}


@dataclass(frozen=True)
class BodyCheck:
    """The body editor's verdict: the value to send (None: no body), what is wrong, what to know."""

    value: Any = None
    errors: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.errors


def check_body(text: str, route: RouteChoice, *, method: str | None = None) -> BodyCheck:
    """Validate the body editor's text for ``route`` (empty on a chat route: built from the prompt)."""
    stripped = text.strip()
    method = (route.method or method or "GET").upper()
    if not stripped:
        return BodyCheck(notes=("empty: the body is built from the prompt",)) if route.chat else BodyCheck()
    if method == "GET":
        return BodyCheck(errors=(f"{method} sends no body: clear the editor or pick POST",))
    try:
        value = json.loads(stripped)
    except json.JSONDecodeError as exc:
        return BodyCheck(errors=(f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}",))
    if not route.chat:
        return BodyCheck(value=value)
    if not isinstance(value, dict):
        return BodyCheck(errors=("a chat body must be a JSON object",))
    errors: list[str] = []
    notes: list[str] = []
    messages = value.get("messages")
    if route.api == "responses":
        if not isinstance(value.get("input"), (str, list)) or not value.get("input"):
            errors.append('"input" must be a non-empty string or list (Responses API)')
    elif not isinstance(messages, list) or not messages:
        errors.append('"messages" must be a non-empty list')
    else:
        errors += [f'messages[{i}] needs "role" and "content"' for i, m in enumerate(messages)
                   if not isinstance(m, dict) or "role" not in m or "content" not in m]
    if not isinstance(value.get("model"), str) or not value.get("model"):
        notes.append('no "model": the model field is used')
    if route.sse and value.get("stream") is not True:
        notes.append('"stream": true is sent (streamed route)')
    elif not route.sse and value.get("stream") is True:
        notes.append('"stream": true asks for a stream on the unstreamed route')
    return BodyCheck(value=value, errors=tuple(errors), notes=tuple(notes))


def error_html(exc: HermesError | str) -> str:
    return kv_html([("status", "error"), ("error", str(exc))], title="error")


def unlisted_note(model: str, models: Sequence[str], endpoint: str) -> str:
    listed = ", ".join(models[:8]) + (f", … ({len(models)} in all)" if len(models) > 8 else "")
    return f"model {model!r} is not listed by the proxy at {endpoint} (listed: {listed or 'none'})"


class StreamJob:
    """One request off the kernel's main thread, so the kernel stays idle and handles a Stop click. :meth:`stop`
    shuts the socket (from httpcore's ``connect_tcp`` trace) down: the blocked read returns, the deltas are kept."""

    def __init__(self, client: HermesClient, request: Any, *, sse: bool,
                 on_delta: Callable[[str], None] | None = None,
                 record: Callable[[Exchange, bool], HistoryEntry] | None = None,
                 on_done: Callable[[StreamJob], None] | None = None) -> None:
        self.client, self.request, self.sse = client, request, sse
        self.on_delta, self.record, self.on_done = on_delta, record, on_done
        self.pieces: list[str] = []
        self.exchange: Exchange | None = None
        self.entry: HistoryEntry | None = None
        self.error: BaseException | None = None
        self.stopped = threading.Event()
        self.ended = threading.Event()  # the entry is recorded: a new request may start
        self.done = threading.Event()  # ``on_done`` ran too
        self._sock: socket.socket | None = None
        self._thread = threading.Thread(target=self._run, name="hermes-nb-console-stream", daemon=True)
        request.extensions["trace"] = self._trace

    @property
    def text(self) -> str:
        """Every delta received so far (the partial text after a stop)."""
        return "".join(self.pieces)

    @property
    def running(self) -> bool:
        return not self.ended.is_set()

    def start(self) -> StreamJob:
        self._thread.start()
        return self

    def _trace(self, event: str, info: dict[str, Any]) -> None:
        if event == "connection.connect_tcp.complete":
            stream: Any = info.get("return_value")  # httpcore's network stream
            sock = stream.get_extra_info("socket") if hasattr(stream, "get_extra_info") else None
            self._sock = sock if isinstance(sock, socket.socket) else None
            if self.stopped.is_set():
                self._shutdown()

    def _shutdown(self) -> None:
        if self._sock is not None:
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:  # already closed: the stream has ended anyway
                pass

    def _delta(self, piece: str) -> None:
        self.pieces.append(piece)
        if self.on_delta is not None:
            self.on_delta(piece)

    def _run(self) -> None:
        try:
            self.exchange = self.client.send(self.request, sse=self.sse, on_delta=self._delta)
            if self.record is not None:
                self.entry = self.record(self.exchange, self.stopped.is_set())
        except BaseException as exc:  # thread edge: kept for the caller, shown in the response panel
            self.error = exc
        finally:
            self.client.close()
            self.ended.set()
            try:
                if self.on_done is not None:
                    self.on_done(self)
            finally:
                self.done.set()

    def stop(self) -> None:
        """Cancel the request; what arrived stays in :attr:`text` and in the exchange."""
        if not self.done.is_set():
            self.stopped.set()
            self._shutdown()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the request ended and ``on_done`` ran (scripts and tests; cells never need it)."""
        return self.done.wait(timeout)


class HistoryEntry(StrictModel):
    """One exchange of the session and its verdict; its JSON is the export and a history file's line."""

    schema_: Literal["hermes-nb.console-exchange.v1"] = Field("hermes-nb.console-exchange.v1", alias="schema")
    number: int
    route: str
    #: the provider the proxy fronts (its ``/health``), when it says
    provider: str | None = None
    verdict: str
    reason: str
    hint: str | None = None
    errors: list[str] = Field(default_factory=list)
    stopped: bool = False
    outcome: Outcome | None = None
    exchange: Exchange

    @property
    def label(self) -> str:
        ex = self.exchange
        status = ex.status if ex.status is not None else "—"
        return f"#{self.number} {ex.request.method} {self.route} → {status} {self.verdict} ({self.reason})"

    @property
    def answer(self) -> str:
        """The assistant text, else the body (JSON pretty-printed)."""
        ex = self.exchange
        if ex.text:
            return ex.text
        if ex.json_body is not None:
            return json.dumps(ex.json_body, indent=2, ensure_ascii=False)
        return ex.body_text or ""


def load_history(path: Path) -> list[HistoryEntry]:
    """The entries of a history file (a ConfigError naming the line that is not one)."""
    entries = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines() if path.is_file() else [], 1):
        if not line.strip():
            continue
        try:
            entries.append(HistoryEntry.model_validate_json(line))
        except ValidationError as exc:
            raise ConfigError(f"history file {path}, line {n}: not a console exchange "
                              f"({exc.errors()[0]['msg']})") from None
    return entries


_PHASES = {"passed": "done", "blocked": "blocked", "stopped": "stopped"}


def status_line(verdict: str, reason: str) -> str:
    """``done: passed (ok)``, ``blocked: auth``, ``stopped: partial text kept`` (a failure never says "done")."""
    phase = _PHASES.get(verdict, "failed")
    if phase == "done":
        return f"done: {verdict} ({reason})"
    return "stopped: partial text kept" if phase == "stopped" else f"{phase}: {reason}"


@dataclass(frozen=True)
class View:
    """What the console shows, all from one moment (``phase``: idle, sending, streaming, done, failed, blocked or
    stopped)."""

    phase: str
    status: str
    text: str = ""
    usage: str | None = None
    entry: HistoryEntry | None = None
    error: str | None = None

    @property
    def running(self) -> bool:
        """Stop is enabled exactly then, Send exactly otherwise."""
        return self.phase in ("sending", "streaming")


def _judged(route: RouteChoice, ex: Exchange, config: HermesProxyRuntimeConfig, stopped: bool) -> dict[str, Any]:
    """The verdict fields of one console exchange's history entry."""
    if stopped:
        return {"verdict": "stopped", "reason": "stopped", "errors": [f"stopped after {len(ex.text)} characters"],
                "hint": "the stream was stopped from the console; the partial text is kept"}
    if route.chat or not ex.ok_status or ex.transport_error is not None:
        outcome = classify(ex, config)
        return {"verdict": outcome.status, "reason": outcome.reason, "hint": outcome.hint,
                "errors": list(outcome.errors), "outcome": outcome}
    return {"verdict": "passed", "reason": route_outcome(ex, root=route.root)}


class ConsoleSession:
    """The console's logic: its targets (with no endpoint configured, an embedded emulator per scenario and
    provider, started on first use), its buttons' calls, and its requests, each a :class:`HistoryEntry` once it
    ends (also appended, masked, to the ``history`` file so it survives a kernel restart)."""

    def __init__(self, *, delay_s: float | None = None, environ: Mapping[str, str] | None = None,
                 history: str | os.PathLike[str] | None = None, provider: str = "nous") -> None:
        self.delay_s, self.provider = delay_s, provider  # delay_s: the ``slow`` scenario's pause before each delta
        self.environ = environ
        self.auth_token: str | None = None
        self.emulators: dict[tuple[str, str], Target] = {}
        self._stack = ExitStack()
        self.redactor = Redactor()
        self.history_path = Path(history) if history is not None else None
        self.history = load_history(self.history_path) if self.history_path is not None else []
        self._lock = threading.Lock()  # the history and what is shown: one moment, whichever thread asks
        self.job: StreamJob | None = None
        self.shown: HistoryEntry | None = None
        #: endpoint (no final ``/``) → the models it lists (None: asked, no list)
        self.catalog: dict[str, list[str] | None] = {}
        self._once = threading.Lock()  # an emulator started, a model list asked for: once, the others wait
        self.endpoint_in_use: str | None = None

    def aim(self, config: HermesProxyRuntimeConfig, scenario: str) -> tuple[Target, HermesProxyRuntimeConfig]:
        """``config``'s target, and ``config`` aimed at it."""
        if config.origin("endpoint") != "default":
            return identify(config), config
        config = config.model_copy(update={"provider": config.provider or self.provider})
        key = (scenario, config.provider or "nous")
        with self._once:
            if key not in self.emulators:
                extra: dict[str, Any] = {} if self.delay_s is None else {"delay_s": self.delay_s}
                self.emulators[key], _ = self._stack.enter_context(embedded_target(config, scenario=scenario, **extra))
        target = self.emulators[key]
        return target, config.with_endpoint(target.endpoint, origin="emulator")

    def config(self, endpoint: str, model: str, scenario: str) -> tuple[Target, HermesProxyRuntimeConfig]:
        """The inputs' config and its target."""
        config = resolve_runtime_config(environ=self.environ, endpoint=endpoint.strip() or None, model=model or None,
                                        auth_token=self.auth_token)
        target, config = self.aim(config, scenario)
        self.redactor.add(*config.secrets())
        self.endpoint_in_use = config.endpoint
        return target, config

    def set_token(self, value: str | None) -> None:
        """Use ``value`` as the bearer (None or empty: back to ``HERMES_NB_AUTH_TOKEN``)."""
        self.auth_token = value or None
        if value:
            self.redactor.add(value)

    def _shown(self, inputs: tuple[str, str, str], call: Callable[[Target, HermesProxyRuntimeConfig], Any]) -> str:
        try:
            return str(call(*self.config(*inputs))._repr_html_())
        except HermesError as exc:
            return error_html(exc)

    def check(self, endpoint: str, model: str, scenario: str) -> str:
        return self._shown((endpoint, model, scenario), lambda t, c: check(c, target=t))

    def probe(self, endpoint: str, model: str, scenario: str, *, budget_s: float = 30.0) -> str:
        return self._shown((endpoint, model, scenario), lambda _t, c: probe(c, budget_s=budget_s))

    def run_prompt(self, endpoint: str, model: str, scenario: str, prompt: str, *, root: str | None = None) -> str:
        """Run ``prompt`` as a mission, prepared as ``hermes-nb run --prompt`` prepares it."""
        def run(_target: Target, config: HermesProxyRuntimeConfig) -> Any:
            work = root or self._stack.enter_context(tempfile.TemporaryDirectory(prefix="hermes-nb-run-"))
            prepared = prepare_mission(prompt=prompt, root=root, fallback_root=None)
            return prepared.replace(config=config, root=Path(work)).run(handle_signals=False)
        return self._shown((endpoint, model, scenario), run)

    def listed(self, config: HermesProxyRuntimeConfig, *, deadline_s: float = 5.0) -> list[str] | None:
        """The models ``config``'s endpoint lists (None: no list; an unlisted model is then not flagged)."""
        key = config.endpoint.rstrip("/")
        with self._once:
            if key not in self.catalog:
                with HermesClient(config) as client:
                    answer = client.models(deadline_s=deadline_s)
                body = answer.json_body if answer.ok_status else None
                data = body.get("data") if isinstance(body, dict) else None
                self.catalog[key] = ([str(m["id"]) for m in data if isinstance(m, dict) and m.get("id") is not None]
                                     if isinstance(data, list) else None)
        return self.catalog[key]

    def prepare(self, endpoint: str, model: str, scenario: str, route: str | RouteChoice, *, prompt: str = "",
                body: str = "", method: str = "POST", path: str = "",
                on_delta: Callable[[str], None] | None = None,
                on_done: Callable[[StreamJob], None] | None = None) -> StreamJob:
        """One request, built and not started. Raises :class:`ConfigError` for bad inputs (nothing sent)."""
        choice = ROUTES[route] if isinstance(route, str) else route
        req_method = (choice.method or method or "GET").upper()
        req_path = choice.path or path.strip()
        if not req_path:
            raise ConfigError("forwarded path: type a path relative to the endpoint, e.g. /models")
        checked = check_body(body, choice, method=req_method)
        if not checked.ok:
            raise ConfigError("body: " + "; ".join(checked.errors))
        target, config = self.config(endpoint, model, scenario)
        value = checked.value
        if value is None and choice.chat:
            value = (responses_request_body(config, prompt, stream=choice.sse) if choice.api == "responses" else
                     chat_request_body(config, [{"role": "user", "content": prompt}], stream=choice.sse))
        if choice.chat and isinstance(value, dict):
            value = {"model": config.model, **value}
            if choice.sse:
                value["stream"] = True
                value.setdefault("stream_options", {"include_usage": True})  # usage in the stream's last chunk
        client = HermesClient(config)
        request = client.build_request(req_method, req_path, json=value, root=choice.root, sse=choice.sse)

        def record(exchange: Exchange, stopped: bool) -> HistoryEntry:
            judged = _judged(choice, exchange, config, stopped)
            with self._lock:  # entries come from stream threads
                entry = HistoryEntry(number=self.history[-1].number + 1 if self.history else 1,
                                     route=choice.label if choice.path else req_path, exchange=exchange,
                                     stopped=stopped, provider=target.provider, **judged)
                self.history.append(entry)
                if self.history_path is not None:
                    self.history_path.parent.mkdir(parents=True, exist_ok=True)
                    with self.history_path.open("a", encoding="utf-8") as fh:
                        fh.write(json.dumps(self.redactor.data(entry.model_dump(mode="json", by_alias=True)),
                                            ensure_ascii=False, sort_keys=True) + "\n")
                self.shown = entry
            return entry

        return StreamJob(client, request, sse=choice.sse, on_delta=on_delta, record=record, on_done=on_done)

    def start(self, job: StreamJob) -> StreamJob:
        """Start a prepared request (refused while another runs); the previous answer is no longer shown."""
        with self._lock:
            if self.job is not None and self.job.running:
                raise ConfigError("a request is still running: stop it first")
            self.job, self.shown = job, None
        return job.start()

    def send(self, endpoint: str, model: str, scenario: str, route: str | RouteChoice, **inputs: Any) -> StreamJob:
        return self.start(self.prepare(endpoint, model, scenario, route, **inputs))

    def select(self, entry: HistoryEntry) -> bool:
        """Show a finished entry; refused (False) while a request runs."""
        with self._lock:
            if self.job is not None and self.job.running:
                return False
            self.shown = entry
            return True

    def view(self) -> View:
        """What the console shows now: the running request, else the shown entry, else how the last one ended."""
        with self._lock:
            job, entry = self.job, self.shown
            running = job is not None and job.running
        if job is not None and running:
            phase = "streaming" if job.pieces else "sending"
            return View(phase, f"{phase}…", job.text)
        if entry is not None:
            return View(_PHASES.get(entry.verdict, "failed"), status_line(entry.verdict, entry.reason), entry.answer,
                        Usage.from_exchange(entry.exchange).line(), entry)
        if job is None:
            return View("idle", "idle")
        error = f"{type(job.error).__name__}: {job.error}" if job.error is not None else "no exchange"
        return View("failed", f"failed: {error}", job.text, error=error)

    def stop(self) -> None:
        if self.job is not None:
            self.job.stop()

    def export(self, index: int) -> str:
        """History entry ``index`` as JSON, secrets masked."""
        data = self.redactor.data(self.history[index].model_dump(mode="json", by_alias=True))
        return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False)

    def close(self) -> None:
        """Stop the request and the emulators."""
        self.stop()
        if self.job is not None:
            self.job.wait(5.0)
        with self._once:
            self._stack.close()
            self.emulators.clear()
