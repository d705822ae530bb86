"""The probe console: exploratory wire probing in Jupyter, streaming live.

    from hermes_nb import ProbeConsole
    console = ProbeConsole()     # endpoint empty = an embedded emulator for the session (scenario picker)
    console                      # endpoint · model · scenario · token, route/method/path, prompt, JSON body,
                                 # Send / Stop, check / probe all routes / run prompt, response, history

All logic lives in plain classes tested without a browser:

* :class:`ConsoleActions` — the target's life cycle (an emulator restarted when the scenario changes) and the
  three library calls behind the buttons (adapter check, probe all routes, run a prompt as a mission);
* :func:`check_body` — the JSON body editor's validation messages;
* :class:`StreamJob` — one request sent **off the kernel's main thread**, deltas handed to a callback as they
  arrive; :meth:`StreamJob.stop` shuts the socket down, so the read ends at once and the partial text is kept;
* :class:`History` — the exchanges of this session, each exportable as JSON with secrets masked;
* :class:`ConsoleSession` — ties them together: inputs in, a job out, a history entry when it ends.

:class:`ProbeConsole` only wires ipywidgets to these. Widget values are set from the stream's thread (the
documented ipywidgets pattern; the kernel stays idle, so a Stop click is handled while the stream runs).

Auth: ``HERMES_NB_AUTH_TOKEN`` in the kernel, or the password field. The field's value is taken into the
session and the field is emptied at once, so the token is never echoed back, never kept in widget state
and never written into the notebook; every output goes through a :class:`Redactor` that knows it.
"""

from __future__ import annotations

import html
import json
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hermes_nb.core.errors import ConfigError, HermesError
from hermes_nb.core.facts import DEFAULT_MODEL
from hermes_nb.core.redaction import Redactor
from hermes_nb.emulator.scenarios import ALL_SCENARIOS
from hermes_nb.kit import display
from hermes_nb.kit.target import Target, runtime_config, start_target

if TYPE_CHECKING:
    from hermes_nb.core.config import HermesProxyRuntimeConfig
    from hermes_nb.core.records import Exchange, Outcome

__all__ = [
    "SCENARIO_CHOICES",
    "ROUTES",
    "METHODS",
    "RouteChoice",
    "BodyCheck",
    "check_body",
    "ConsoleActions",
    "StreamJob",
    "HistoryEntry",
    "History",
    "ConsoleSession",
    "ProbeConsole",
    "Console",
    "response_html",
]

#: every emulator scenario (``stall`` included: the request deadline then decides)
SCENARIO_CHOICES = ALL_SCENARIOS
METHODS = ("GET", "POST", "PUT", "DELETE")
EXPORT_SCHEMA = "hermes-nb.console-exchange.v1"


@dataclass(frozen=True)
class RouteChoice:
    """One entry of the route picker. ``method``/``path`` None: taken from the method picker and path field."""

    label: str
    method: str | None
    path: str | None
    root: bool = False
    sse: bool = False
    chat: bool = False


ROUTES: dict[str, RouteChoice] = {r.label: r for r in (
    RouteChoice("chat (streamed)", "POST", "/chat/completions", sse=True, chat=True),
    RouteChoice("chat", "POST", "/chat/completions", chat=True),
    RouteChoice("models", "GET", "/models"),
    RouteChoice("health", "GET", "/health", root=True),
    RouteChoice("forwarded path", None, None),
)}


# --------------------------------------------------------------------------- the body editor

@dataclass(frozen=True)
class BodyCheck:
    """The JSON body editor's verdict: the value to send (None: no body) and what is wrong with it."""

    value: Any = None
    errors: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.errors


def check_body(text: str, route: RouteChoice, *, method: str | None = None) -> BodyCheck:
    """Validate the body editor's text for ``route`` (empty text on a chat route: built from the prompt)."""
    stripped = text.strip()
    method = (route.method or method or "GET").upper()
    if not stripped:
        if route.chat:
            return BodyCheck(notes=("empty: the body is built from the prompt",))
        return BodyCheck()
    if method == "GET":
        return BodyCheck(errors=(f"{method} sends no body: clear the editor or pick POST",))
    try:
        value = json.loads(stripped)
    except json.JSONDecodeError as exc:
        return BodyCheck(errors=(f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}",))
    if not route.chat:
        return BodyCheck(value=value)
    errors: list[str] = []
    notes: list[str] = []
    if not isinstance(value, dict):
        return BodyCheck(errors=("a chat body must be a JSON object",))
    messages = value.get("messages")
    if not isinstance(messages, list) or not messages:
        errors.append('"messages" must be a non-empty list')
    else:
        for i, message in enumerate(messages):
            if not isinstance(message, dict) or "role" not in message or "content" not in message:
                errors.append(f'messages[{i}] needs "role" and "content"')
    if not isinstance(value.get("model"), str) or not value.get("model"):
        notes.append('no "model": the model field is used')
    if route.sse and value.get("stream") is not True:
        notes.append('"stream": true is sent (streamed route)')
    elif not route.sse and value.get("stream") is True:
        notes.append('"stream": true asks for a stream on the unstreamed route')
    return BodyCheck(value=value, errors=tuple(errors), notes=tuple(notes))


# --------------------------------------------------------------------------- target and library calls

def _error_html(exc: HermesError | str) -> str:
    return display.kv_table({"status": "error", "error": str(exc)}, title="error")


@dataclass
class ConsoleActions:
    """The target's life cycle and the library calls of the buttons; each call returns HTML."""

    profile: str = "hermes-agent"
    #: the ``slow`` scenario's pause before each delta (None: the emulator's default)
    delay_s: float | None = None
    _target: Target | None = field(default=None, repr=False)
    _key: tuple[str, str, str] | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def target(self, endpoint: str, scenario: str) -> Target:
        """The target for these inputs; restarts the emulator when the scenario changed."""
        key = (endpoint.strip(), scenario, self.profile)
        with self._lock:
            if self._target is None or self._key != key:
                self._close()
                self._target = start_target(endpoint.strip() or None, profile=self.profile, scenario=scenario,
                                            delay_s=self.delay_s)
                self._key = key
            return self._target

    def check(self, endpoint: str, model: str, scenario: str, *, environ: Mapping[str, str] | None = None,
              auth_token: str | None = None) -> str:
        from hermes_nb.proxy.check import adapter_check

        try:
            target = self.target(endpoint, scenario)
            config = runtime_config(target.endpoint, model, environ=environ, auth_token=auth_token)
        except HermesError as exc:
            return _error_html(exc)
        return adapter_check(config, hermes_bin=target.hermes_bin)._repr_html_()

    def probe(self, endpoint: str, model: str, scenario: str, *, deadline_s: float = 30.0,
              auth_token: str | None = None) -> str:
        from hermes_nb.proxy.probe import probe

        try:
            target = self.target(endpoint, scenario)
            report = probe(target.endpoint, model=model, deadline_s=deadline_s,
                           **({"auth_token": auth_token} if auth_token else {}))
        except HermesError as exc:
            return _error_html(exc)
        return report._repr_html_()

    def run_prompt(self, endpoint: str, model: str, scenario: str, prompt: str, *,
                   root: str | None = None, environ: Mapping[str, str] | None = None,
                   auth_token: str | None = None) -> str:
        from hermes_nb.harness.mission import Mission
        from hermes_nb.harness.run import run

        try:
            target = self.target(endpoint, scenario)
            config = runtime_config(target.endpoint, model, environ=environ, auth_token=auth_token)
            mission = Mission.adhoc(prompt)
            run_root = root or target.temp_dir("hermes-nb-console-")
            result = run(mission, config, root=run_root, handle_signals=False)
        except HermesError as exc:
            return _error_html(exc)
        return result._repr_html_()

    def _close(self) -> None:
        if self._target is not None:
            self._target.close()
        self._target = None
        self._key = None

    def close(self) -> None:
        with self._lock:
            self._close()


# --------------------------------------------------------------------------- one streamed request

class StreamJob:
    """One request on its own thread; deltas go to ``on_delta`` as they arrive; :meth:`stop` cancels.

    Stop shuts the connection's socket down (the socket is taken from httpcore's ``connect_tcp`` trace
    event, the same hook the client's deadline watchdog uses): the blocked read returns at once, the client
    records the cut as a transport failure, and the exchange keeps every delta that arrived.
    """

    def __init__(self, client: Any, request: Any, *, sse: bool, on_delta: Callable[[str], None] | None = None,
                 on_done: Callable[[StreamJob], None] | None = None, deadline_s: float | None = None) -> None:
        self.client = client
        self.request = request
        self.sse = sse
        self.on_delta = on_delta
        self.on_done = on_done
        self.deadline_s = deadline_s
        self.pieces: list[str] = []
        self.exchange: Exchange | None = None
        self.error: BaseException | None = None
        self.stopped = threading.Event()
        self.done = threading.Event()
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="hermes-nb-console-stream", daemon=True)
        request.extensions["trace"] = self._trace

    @property
    def text(self) -> str:
        """Every delta received so far (the partial text after a stop)."""
        return "".join(self.pieces)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def start(self) -> StreamJob:
        self._thread.start()
        return self

    def _trace(self, event: str, info: dict[str, Any]) -> None:
        if event == "connection.connect_tcp.complete":
            stream = info.get("return_value")
            sock = stream.get_extra_info("socket") if hasattr(stream, "get_extra_info") else None
            with self._lock:
                self._sock = sock if isinstance(sock, socket.socket) else None
            if self.stopped.is_set():
                self._shutdown()

    def _shutdown(self) -> None:
        with self._lock:
            sock = self._sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:  # already closed: the stream has ended anyway
                pass

    def _delta(self, piece: str) -> None:
        self.pieces.append(piece)
        if self.on_delta is not None:
            self.on_delta(piece)

    def _run(self) -> None:
        try:
            self.exchange = self.client.send(self.request, sse=self.sse, on_delta=self._delta,
                                             deadline_s=self.deadline_s)
        except BaseException as exc:  # thread edge: kept for the caller, shown in the response panel
            self.error = exc
        finally:
            self.client.close()
            try:
                if self.on_done is not None:
                    self.on_done(self)
            finally:  # waiters see the history entry and the final widget values
                self.done.set()

    def stop(self) -> None:
        """Cancel the request; what arrived stays in :attr:`text` and in the exchange."""
        if self.done.is_set():
            return
        self.stopped.set()
        self._shutdown()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the request ended (for scripts and tests; cells never need it)."""
        return self.done.wait(timeout)


# --------------------------------------------------------------------------- history

@dataclass
class HistoryEntry:
    """One exchange of the session and its classification."""

    number: int
    route: str
    exchange: Exchange
    verdict: str
    reason: str
    hint: str | None = None
    errors: list[str] = field(default_factory=list)
    stopped: bool = False
    outcome: Outcome | None = None

    @property
    def label(self) -> str:
        ex = self.exchange
        status = ex.status if ex.status is not None else "—"
        return f"#{self.number} {ex.request.method} {self.route} → {status} {self.verdict} ({self.reason})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": EXPORT_SCHEMA,
            "number": self.number,
            "route": self.route,
            "verdict": self.verdict,
            "reason": self.reason,
            "hint": self.hint,
            "errors": list(self.errors),
            "stopped": self.stopped,
            "outcome": self.outcome.model_dump(mode="json") if self.outcome is not None else None,
            "exchange": self.exchange.model_dump(mode="json"),
        }


class History:
    """The session's exchanges, oldest first; thread-safe appends (entries come from stream threads)."""

    def __init__(self) -> None:
        self.entries: list[HistoryEntry] = []
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.entries)

    def __getitem__(self, i: int) -> HistoryEntry:
        return self.entries[i]

    def add(self, **fields: Any) -> HistoryEntry:
        with self._lock:
            entry = HistoryEntry(number=len(self.entries) + 1, **fields)
            self.entries.append(entry)
        return entry

    def labels(self) -> list[tuple[str, int]]:
        """``(label, index)`` pairs for a picker, newest first."""
        return [(e.label, i) for i, e in reversed(list(enumerate(self.entries)))]

    def export_json(self, index: int, redactor: Redactor | None = None) -> str:
        """The selected exchange as JSON, every string through the redactor (secrets masked)."""
        data = (redactor or Redactor()).data(self.entries[index].to_dict())
        return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False)


def _judge(route: RouteChoice, ex: Exchange, config: HermesProxyRuntimeConfig,
           stopped: bool) -> tuple[str, str, str | None, list[str], Outcome | None]:
    """(verdict, reason, hint, errors, outcome) of one console exchange."""
    from hermes_nb.proxy.report import route_outcome
    from hermes_nb.wire.classify import classify

    if stopped:
        return ("stopped", "stopped", "the stream was stopped from the console; the partial text is kept",
                [f"stopped after {len(ex.text)} characters"], None)
    if route.chat or not ex.ok_status or ex.transport_error is not None:
        outcome = classify(ex, config)
        return outcome.status, outcome.reason, outcome.hint, list(outcome.errors), outcome
    return "passed", route_outcome(ex, root=route.root), None, [], None


def response_html(entry: HistoryEntry, redactor: Redactor | None = None) -> str:
    """The response panel: verdict and hint, status, headers, error envelope, timings, timeline."""
    from hermes_nb.core.reprs import box, esc, kv_html, seconds
    from hermes_nb.core.timeline import StreamTimeline, timeline_svg

    red = redactor or Redactor()
    ex = entry.exchange
    t = ex.timings
    pairs: list[tuple[str, Any]] = [
        ("verdict", entry.verdict), ("reason", entry.reason), ("hint", entry.hint),
        ("request", f"{ex.request.method} {ex.request.url}"),
        ("status", f"{ex.status} {ex.reason or ''}".strip() if ex.status is not None else None),
        ("time to headers", seconds(t.headers_s)), ("time to first delta", seconds(t.first_delta_s)),
        ("total", seconds(t.total_s)),
    ]
    if entry.errors:
        pairs.append(("errors", entry.errors))
    if ex.envelope is not None:
        pairs.append(("error envelope", ex.envelope.model_dump(mode="json", exclude_none=True)))
    parts = [kv_html(pairs, badges=("verdict",), redactor=red)]
    if ex.streamed:
        parts.append(timeline_svg(StreamTimeline.from_exchange(ex, stopped=entry.stopped)))
    if ex.headers:
        parts.append("<details><summary>response headers</summary>"
                     + kv_html(sorted(ex.headers.items()), badges=(), redactor=red) + "</details>")
    if ex.body_text and not ex.streamed:
        body = ex.body_text if len(ex.body_text) <= 4000 else ex.body_text[:4000] + "…"
        parts.append(f'<details><summary>body</summary><pre style="white-space:pre-wrap">{esc(body, red)}</pre>'
                     "</details>")
    return box(f"response #{entry.number}", entry.verdict, *parts)


# --------------------------------------------------------------------------- the session

class ConsoleSession:
    """Inputs in, a :class:`StreamJob` out, a :class:`HistoryEntry` when it ends. No widgets."""

    def __init__(self, *, profile: str = "hermes-agent", delay_s: float | None = None,
                 environ: Mapping[str, str] | None = None) -> None:
        self.actions = ConsoleActions(profile=profile, delay_s=delay_s)
        self.history = History()
        self.environ = environ
        self.job: StreamJob | None = None
        self._token: str | None = None
        self._redactor = Redactor()

    # ---- auth
    def set_token(self, value: str | None) -> None:
        """Use ``value`` as the bearer (None or empty: back to ``HERMES_NB_AUTH_TOKEN``)."""
        self._token = value or None
        if value:
            self._redactor.add(value)

    @property
    def token_source(self) -> str:
        """Where the bearer comes from, never the bearer itself."""
        return "password field" if self._token else "HERMES_NB_AUTH_TOKEN or the default"

    def config(self, endpoint: str, model: str, scenario: str) -> tuple[Target, HermesProxyRuntimeConfig]:
        target = self.actions.target(endpoint, scenario)
        config = runtime_config(target.endpoint, model, environ=self.environ, auth_token=self._token)
        self._redactor.add(*config.secrets())
        return target, config

    @property
    def redactor(self) -> Redactor:
        """Knows the session's token(s) and the secret shapes."""
        return self._redactor

    # ---- requests
    @staticmethod
    def default_body(route: RouteChoice, prompt: str, config: HermesProxyRuntimeConfig) -> dict[str, Any] | None:
        from hermes_nb.wire.payloads import chat_request_body

        if not route.chat:
            return None
        return chat_request_body(config, [{"role": "user", "content": prompt}], stream=route.sse)

    def send(self, endpoint: str, model: str, scenario: str, route: str | RouteChoice, *, prompt: str = "",
             body: str = "", method: str = "POST", path: str = "",
             on_delta: Callable[[str], None] | None = None,
             on_done: Callable[[StreamJob, HistoryEntry | None], None] | None = None) -> StreamJob:
        """Start one request on its own thread. Raises :class:`ConfigError` for bad inputs (nothing sent)."""
        from hermes_nb.wire.client import HermesClient

        choice = ROUTES[route] if isinstance(route, str) else route
        if self.job is not None and self.job.running:
            raise ConfigError("a request is still running: stop it first")
        req_method = (choice.method or method or "GET").upper()
        req_path = choice.path or path.strip()
        if not req_path:
            raise ConfigError("forwarded path: type a path relative to the endpoint, e.g. /models")
        checked = check_body(body, choice, method=req_method)
        if not checked.ok:
            raise ConfigError("body: " + "; ".join(checked.errors))
        target, config = self.config(endpoint, model, scenario)
        value = checked.value if checked.value is not None else self.default_body(choice, prompt, config)
        if choice.chat and isinstance(value, dict):
            value = {"model": config.model, **value}
            if choice.sse:
                value["stream"] = True
        client = HermesClient(config)
        request = client.build_request(req_method, req_path, json=value, root=choice.root, sse=choice.sse)

        def done(job: StreamJob) -> None:
            entry = None
            if job.exchange is not None:
                verdict, reason, hint, errors, outcome = _judge(choice, job.exchange, config, job.stopped.is_set())
                entry = self.history.add(route=choice.label if choice.path else req_path, exchange=job.exchange,
                                         verdict=verdict, reason=reason, hint=hint, errors=errors,
                                         stopped=job.stopped.is_set(), outcome=outcome)
            if on_done is not None:
                on_done(job, entry)

        self.job = StreamJob(client, request, sse=choice.sse, on_delta=on_delta, on_done=done)
        return self.job.start()

    def stop(self) -> None:
        if self.job is not None:
            self.job.stop()

    def export(self, index: int) -> str:
        return self.history.export_json(index, self._redactor)

    def close(self) -> None:
        self.stop()
        if self.job is not None:
            self.job.wait(5.0)
        self.actions.close()


# --------------------------------------------------------------------------- the widgets

_STREAM_BOX = ('<div class="hermes-stream" style="max-height:16em;overflow:auto;border:1px solid #d0d7de;'
               'padding:4px 8px;background:#f6f8fa">')


def _stream_html(text: str, state: str) -> str:
    return (f'{_STREAM_BOX}<div class="hermes-stream-state" style="color:#57606a">{html.escape(state)}</div>'
            f'<pre class="hermes-stream-text" style="white-space:pre-wrap;margin:0">{html.escape(text)}</pre></div>')


class ProbeConsole:
    """The widgets. Public attributes to drive: ``endpoint``, ``model``, ``prompt``, ``body``,
    ``send_button``, ``stop_button``, ``history`` (the picker), ``session.history`` (the records)."""

    #: widget updates from the stream thread at most this often (the last one always goes out)
    UPDATE_EVERY_S = 0.05

    def __init__(self, *, endpoint: str = "", model: str = DEFAULT_MODEL, scenario: str = "ok",
                 prompt: str = "Summarise in one sentence what a smoke test proves.", route: str = "chat (streamed)",
                 delay_s: float | None = None, actions: ConsoleActions | None = None,
                 environ: Mapping[str, str] | None = None) -> None:
        import ipywidgets as w

        self.session = ConsoleSession(delay_s=delay_s, environ=environ)
        if actions is not None:
            self.session.actions = actions
        self.actions = self.session.actions
        lay = w.Layout(width="auto")
        self.endpoint = w.Text(value=endpoint, description="endpoint", placeholder="empty: embedded emulator")
        self.model = w.Text(value=model, description="model")
        self.scenario = w.Dropdown(options=SCENARIO_CHOICES, value=scenario, description="scenario")
        self.token = w.Password(value="", description="token", placeholder="else HERMES_NB_AUTH_TOKEN")
        self.token_status = w.HTML(value=self._token_note())
        self.route = w.Dropdown(options=list(ROUTES), value=route, description="route")
        self.method = w.Dropdown(options=METHODS, value="GET", description="method", disabled=True)
        self.path = w.Text(value="", description="path", placeholder="/models (forwarded path)", disabled=True)
        self.prompt = w.Textarea(value=prompt, description="prompt", layout=w.Layout(width="98%"))
        self.body = w.Textarea(value="", description="JSON body", placeholder="empty: built from the prompt",
                               layout=w.Layout(width="98%", height="6em"))
        self.body_message = w.HTML(value="")
        self.send_button = w.Button(description="Send", button_style="primary", icon="paper-plane")
        self.stop_button = w.Button(description="Stop", button_style="danger", icon="stop", disabled=True)
        self.check_button = w.Button(description="adapter check")
        self.probe_button = w.Button(description="probe all routes")
        self.run_button = w.Button(description="run prompt")
        for button, cls in ((self.send_button, "hermes-send"), (self.stop_button, "hermes-stop"),
                            (self.check_button, "hermes-check"), (self.probe_button, "hermes-probe"),
                            (self.run_button, "hermes-run")):
            button.add_class(cls)
        self.stream_view = w.HTML(value=_stream_html("", "idle"))
        self.output = w.HTML(value="")
        self.output.add_class("hermes-response")
        self.history = w.Select(options=[], description="history", rows=5, layout=w.Layout(width="98%"))
        self.export_button = w.Button(description="export selected (JSON)")
        self.export_view = w.HTML(value="")
        self._last_push = 0.0
        self._push_lock = threading.Lock()

        self.token.observe(self._take_token, names="value")
        self.route.observe(self._route_changed, names="value")
        self.body.observe(lambda _c: self._validate(), names="value")
        self.method.observe(lambda _c: self._validate(), names="value")
        self.send_button.on_click(lambda _b: self.send())
        self.stop_button.on_click(lambda _b: self.stop())
        self.check_button.on_click(lambda _b: self._show(self.actions.check(
            *self._inputs(), environ=self.session.environ, auth_token=self.session._token)))
        self.probe_button.on_click(lambda _b: self._show(self.actions.probe(
            *self._inputs(), auth_token=self.session._token)))
        self.run_button.on_click(lambda _b: self._show(self.actions.run_prompt(
            *self._inputs(), self.prompt.value, environ=self.session.environ, auth_token=self.session._token)))
        self.export_button.on_click(lambda _b: self.export())
        self.history.observe(lambda _c: self._show_selected(), names="value")
        self._route_changed(None)
        self.widget = w.VBox([
            w.HBox([self.endpoint, self.model, self.scenario]),
            w.HBox([self.token, self.token_status]),
            w.HBox([self.route, self.method, self.path]),
            self.prompt, self.body, self.body_message,
            w.HBox([self.send_button, self.stop_button, self.check_button, self.probe_button, self.run_button]),
            self.stream_view, self.output,
            self.history, w.HBox([self.export_button]), self.export_view,
        ], layout=lay)
        self.widget.add_class("hermes-console")

    # ---- inputs
    def _inputs(self) -> tuple[str, str, str]:
        return self.endpoint.value, self.model.value, self.scenario.value

    def _token_note(self) -> str:
        return f'<small style="color:#57606a">bearer from: {html.escape(self.session.token_source)}</small>'

    def _take_token(self, change: Any) -> None:
        """Take the typed token into the session and empty the field (never kept in widget state)."""
        value = change["new"]
        if not value:
            return
        self.session.set_token(value)
        self.token.value = ""
        self.token_status.value = self._token_note()

    def _route_changed(self, _change: Any) -> None:
        choice = ROUTES[self.route.value]
        free = choice.method is None
        self.method.disabled = not free
        self.path.disabled = not free
        if not free:
            self.method.value = choice.method
        self.prompt.disabled = not choice.chat
        self._validate()

    def _validate(self) -> BodyCheck:
        checked = check_body(self.body.value, ROUTES[self.route.value], method=self.method.value)
        lines = [f'<span style="color:#cf222e">✗ {html.escape(e)}</span>' for e in checked.errors]
        lines += [f'<span style="color:#57606a">{html.escape(n)}</span>' for n in checked.notes]
        if checked.ok and self.body.value.strip():
            lines.insert(0, '<span style="color:#1a7f37">✓ valid JSON</span>')
        self.body_message.value = "<br>".join(lines)
        return checked

    # ---- output (called from the stream thread too)
    def _show(self, html_text: str) -> None:
        self.output.value = html_text

    def _push(self, state: str, force: bool = False) -> None:
        now = time.monotonic()
        with self._push_lock:
            if not force and now - self._last_push < self.UPDATE_EVERY_S:
                return
            self._last_push = now
        job = self.session.job
        self.stream_view.value = _stream_html(self.session.redactor.text(job.text if job else ""), state)

    # ---- actions
    def send(self) -> StreamJob | None:
        """What the Send button does; returns the running job (None when the inputs were refused)."""
        self._last_push = 0.0
        try:
            job = self.session.send(*self._inputs(), self.route.value, prompt=self.prompt.value,
                                    body=self.body.value, method=self.method.value, path=self.path.value,
                                    on_delta=lambda _p: self._push("streaming…"), on_done=self._finished)
        except HermesError as exc:
            self._show(_error_html(exc))
            return None
        self.send_button.disabled = True
        self.stop_button.disabled = False
        self._show("")
        self.stream_view.value = _stream_html("", "sending…")
        return job

    def _finished(self, job: StreamJob, entry: HistoryEntry | None) -> None:
        state = "stopped: partial text kept" if job.stopped.is_set() else "done"
        self._push(state, force=True)
        with self.widget.hold_sync():
            if entry is not None:
                self._show(response_html(entry, self.session.redactor))
                self.history.options = self.history_labels()
                self.history.value = len(self.session.history) - 1
            elif job.error is not None:
                self._show(_error_html(f"{type(job.error).__name__}: {self.session.redactor.text(str(job.error))}"))
            self.send_button.disabled = False
            self.stop_button.disabled = True

    def history_labels(self) -> list[tuple[str, int]]:
        return self.session.history.labels()

    def stop(self) -> None:
        """What the Stop button does: cancel the running request, keep the partial text."""
        self.session.stop()

    def wait(self, timeout: float | None = 30.0) -> bool:
        """Block until the running request ended (scripts and tests)."""
        job = self.session.job
        return True if job is None else job.wait(timeout)

    def _show_selected(self) -> None:
        index = self.history.value
        if index is None or not 0 <= index < len(self.session.history):
            return
        self._show(response_html(self.session.history[index], self.session.redactor))

    def export(self) -> str | None:
        """The selected history entry as JSON (secrets masked), also shown under the history."""
        index = self.history.value
        if index is None:
            return None
        text = self.session.export(index)
        self.export_view.value = f'<pre style="white-space:pre-wrap;max-height:20em;overflow:auto">' \
                                 f'{html.escape(text)}</pre>'
        return text

    def _ipython_display_(self) -> None:
        from IPython.display import display as ipy_display

        ipy_display(self.widget)

    def close(self) -> None:
        self.session.close()
        self.widget.close()


#: the name earlier releases used
Console = ProbeConsole
