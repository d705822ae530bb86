"""The probe console's logic, without widgets: routes, the body editor, the target, one session.

* :data:`ROUTES` and :func:`check_body` — the route picker and the JSON body editor's validation messages;
* :class:`ConsoleActions` — the target's life cycle (an embedded emulator restarted when the scenario changes)
  and the library calls behind the buttons (adapter check, probe all routes, run a prompt as a mission);
* :class:`ConsoleSession` — inputs in, a :class:`~hermes_nb.kit.exchanges.StreamJob` out, a history entry
  when it ends (kept in a file too with ``history=PATH``); the bearer from ``HERMES_NB_AUTH_TOKEN`` or the
  password field, known to its redactor; the models the proxy lists (:class:`~hermes_nb.kit.models.ModelCatalog`);
* :func:`response_html` — the response panel (the answer itself is the answer box's: :mod:`hermes_nb.kit.console_view`).

Tested without a browser (tests/kit/test_console.py); :mod:`hermes_nb.kit.console` wires ipywidgets to it.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes_nb.core.config import HermesProxyRuntimeConfig
from hermes_nb.core.errors import ConfigError, HermesError
from hermes_nb.core.records import Exchange, Outcome, Usage
from hermes_nb.core.redaction import Redactor
from hermes_nb.core.resolve import resolve_runtime_config
from hermes_nb.harness.prepare import prepare_mission
from hermes_nb.kit import display
from hermes_nb.kit.exchanges import History, HistoryEntry, StreamJob
from hermes_nb.kit.models import ModelCatalog, models_of
from hermes_nb.proxy.check import check
from hermes_nb.proxy.probe import probe
from hermes_nb.target import Target, embedded_target, identify
from hermes_nb.views.reprs import box, kv_html, seconds
from hermes_nb.views.timeline import StreamTimeline, timeline_svg
from hermes_nb.wire.client import HermesClient
from hermes_nb.wire.payloads import chat_request_body, responses_request_body
from hermes_nb.wire.reading import classify, route_outcome

__all__ = ["ROUTES", "METHODS", "RouteChoice", "BodyCheck", "check_body", "ConsoleActions",
           "ConsoleSession", "response_html", "error_html"]

METHODS = ("GET", "POST", "PUT", "DELETE")


@dataclass(frozen=True)
class RouteChoice:
    """One entry of the route picker. ``method``/``path`` None: taken from the method picker and path field."""

    label: str
    method: str | None
    path: str | None
    root: bool = False
    sse: bool = False
    chat: bool = False
    #: the body the prompt becomes on a chat route: ``chat`` (messages) or ``responses`` (OpenAI's Responses API:
    #: ``input``; forwarded by an xai proxy, 404 path_not_allowed on nous)
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
    if route.api == "responses":
        if not isinstance(value.get("input"), (str, list)) or not value.get("input"):
            errors.append('"input" must be a non-empty string or list (Responses API)')
    elif not isinstance(messages, list) or not messages:
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

def error_html(exc: HermesError | str) -> str:
    return display.kv_table({"status": "error", "error": str(exc)}, title="error")


@dataclass
class ConsoleActions:
    """The target's life cycle and the library calls of the buttons; each call returns HTML."""

    profile: str = "hermes-agent"
    #: the ``slow`` scenario's pause before each delta (None: the emulator's default)
    delay_s: float | None = None
    #: what the embedded emulator fronts (``xai`` forwards ``/v1/responses``)
    provider: str = "nous"
    _target: Target | None = field(default=None, repr=False)
    _key: tuple[str, str, str] | None = field(default=None, repr=False)
    _stack: ExitStack = field(default_factory=ExitStack, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def target(self, config: HermesProxyRuntimeConfig, scenario: str) -> Target:
        """The target of a resolved ``config``, identified once per endpoint; the embedded emulator (no endpoint
        configured) restarts when the scenario changed."""
        given = config.origin("endpoint") != "default"
        key = (config.endpoint if given else "", scenario, self.profile)
        with self._lock:
            if self._target is None or self._key != key:
                self._close()
                if given:
                    self._target = identify(config)
                else:
                    extra = {} if self.delay_s is None else {"delay_s": self.delay_s}
                    fronted = config.model_copy(update={"provider": config.provider or self.provider})
                    self._target, _ = self._stack.enter_context(
                        embedded_target(fronted, scenario=scenario, profile=self.profile, **extra))
                self._key = key
            return self._target

    def aim(self, endpoint: str, model: str, scenario: str, *, environ: Mapping[str, str] | None = None,
            auth_token: str | None = None) -> tuple[Target, HermesProxyRuntimeConfig]:
        """The inputs' config, resolved once, and its target; the config aimed at the target."""
        config = resolve_runtime_config(environ=environ, endpoint=endpoint.strip() or None, model=model or None,
                                        auth_token=auth_token or None)
        target = self.target(config, scenario)
        return target, config if target.endpoint == config.endpoint else config.with_endpoint(target.endpoint,
                                                                                              origin="emulator")

    def check(self, endpoint: str, model: str, scenario: str, *, environ: Mapping[str, str] | None = None,
              auth_token: str | None = None) -> str:
        try:
            target, config = self.aim(endpoint, model, scenario, environ=environ, auth_token=auth_token)
        except HermesError as exc:
            return error_html(exc)
        return check(config, target=target)._repr_html_()

    def probe(self, endpoint: str, model: str, scenario: str, *, budget_s: float = 30.0,
              environ: Mapping[str, str] | None = None, auth_token: str | None = None) -> str:
        try:
            _, config = self.aim(endpoint, model, scenario, environ=environ, auth_token=auth_token)
            report = probe(config, budget_s=budget_s)
        except HermesError as exc:
            return error_html(exc)
        return report._repr_html_()

    def run_prompt(self, endpoint: str, model: str, scenario: str, prompt: str, *,
                   root: str | None = None, environ: Mapping[str, str] | None = None,
                   auth_token: str | None = None) -> str:
        """Run ``prompt`` as a mission, prepared as ``hermes-nb run --prompt`` prepares it."""
        try:
            _, config = self.aim(endpoint, model, scenario, environ=environ, auth_token=auth_token)
            prepared = prepare_mission(prompt=prompt, root=root, fallback_root=None)
            work = root or self._stack.enter_context(tempfile.TemporaryDirectory(prefix="hermes-nb-run-"))
            result = prepared.replace(config=config, root=Path(work)).run(handle_signals=False)
        except HermesError as exc:
            return error_html(exc)
        return result._repr_html_()

    def _close(self) -> None:
        self._stack.close()
        self._target = None
        self._key = None

    def close(self) -> None:
        with self._lock:
            self._close()


def _judge(route: RouteChoice, ex: Exchange, config: HermesProxyRuntimeConfig,
           stopped: bool) -> tuple[str, str, str | None, list[str], Outcome | None]:
    """(verdict, reason, hint, errors, outcome) of one console exchange."""

    if stopped:
        return ("stopped", "stopped", "the stream was stopped from the console; the partial text is kept",
                [f"stopped after {len(ex.text)} characters"], None)
    if route.chat or not ex.ok_status or ex.transport_error is not None:
        outcome = classify(ex, config)
        return outcome.status, outcome.reason, outcome.hint, list(outcome.errors), outcome
    return "passed", route_outcome(ex, root=route.root), None, [], None


def response_html(entry: HistoryEntry, redactor: Redactor | None = None, *, headers: bool = True) -> str:
    """The response panel: verdict and hint, status, timings, usage, error envelope, timeline, headers (not in
    the console's static picture: ``date`` and the like are session noise there)."""

    red = redactor or Redactor()
    ex = entry.exchange
    t = ex.timings
    pairs: list[tuple[str, Any]] = [
        ("verdict", entry.verdict), ("reason", entry.reason), ("hint", entry.hint),
        ("request", f"{ex.request.method} {ex.request.url}"), ("provider", entry.provider),
        ("status", f"{ex.status} {ex.reason or ''}".strip() if ex.status is not None else None),
        ("time to headers", seconds(t.headers_s)), ("time to first delta", seconds(t.first_delta_s)),
        ("total", seconds(t.total_s)),
    ]
    if ex.text or ex.usage or ex.streamed:
        pairs.append(("usage", Usage.from_exchange(ex).line()))
    if entry.errors:
        pairs.append(("errors", entry.errors))
    if ex.envelope is not None:
        pairs.append(("error envelope", ex.envelope.model_dump(mode="json", exclude_none=True)))
    parts = [kv_html(pairs, badges=("verdict",), redactor=red)]
    if ex.streamed:
        parts.append(timeline_svg(StreamTimeline.from_exchange(ex, stopped=entry.stopped)))
    if ex.headers and headers:
        parts.append("<details><summary>response headers</summary>"
                     + kv_html(sorted(ex.headers.items()), badges=(), redactor=red) + "</details>")
    return box(f"response #{entry.number}", entry.verdict, *parts)


# --------------------------------------------------------------------------- the session

class ConsoleSession:
    """Inputs in, a :class:`StreamJob` out, a :class:`HistoryEntry` when it ends. No widgets."""

    def __init__(self, *, profile: str = "hermes-agent", delay_s: float | None = None,
                 environ: Mapping[str, str] | None = None,
                 history: str | os.PathLike[str] | None = None, provider: str = "nous") -> None:
        self.actions = ConsoleActions(profile=profile, delay_s=delay_s, provider=provider)
        self._redactor = Redactor()
        self.history = History(history, self._redactor)
        self.environ = environ
        self.job: StreamJob | None = None
        self._token: str | None = None
        #: the models each endpoint lists, asked once per endpoint for the session
        self.catalog = ModelCatalog()
        #: the endpoint the last request (or models lookup) went to
        self.endpoint_in_use: str | None = None

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
        target, config = self.actions.aim(endpoint, model, scenario, environ=self.environ, auth_token=self._token)
        self._redactor.add(*config.secrets())
        self.endpoint_in_use = config.endpoint
        return target, config

    @property
    def redactor(self) -> Redactor:
        """Knows the session's token(s) and the secret shapes."""
        return self._redactor


    # ---- requests
    @staticmethod
    def default_body(route: RouteChoice, prompt: str, config: HermesProxyRuntimeConfig) -> dict[str, Any] | None:

        if not route.chat:
            return None
        if route.api == "responses":
            return responses_request_body(config, prompt, stream=route.sse)
        return chat_request_body(config, [{"role": "user", "content": prompt}], stream=route.sse)

    def prepare(self, endpoint: str, model: str, scenario: str, route: str | RouteChoice, *, prompt: str = "",
                body: str = "", method: str = "POST", path: str = "",
                on_delta: Callable[[str], None] | None = None,
                on_done: Callable[[StreamJob, HistoryEntry | None], None] | None = None) -> StreamJob:
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
        value = checked.value if checked.value is not None else self.default_body(choice, prompt, config)
        if choice.chat and isinstance(value, dict):
            value = {"model": config.model, **value}
            if choice.sse:
                value["stream"] = True
                value.setdefault("stream_options", {"include_usage": True})  # usage in the stream's last chunk
        client = HermesClient(config)
        request = client.build_request(req_method, req_path, json=value, root=choice.root, sse=choice.sse)

        provider = target.provider

        def done(job: StreamJob) -> None:
            entry = None
            if job.exchange is not None:
                verdict, reason, hint, errors, outcome = _judge(choice, job.exchange, config, job.stopped.is_set())
                entry = self.history.add(route=choice.label if choice.path else req_path, exchange=job.exchange,
                                         verdict=verdict, reason=reason, hint=hint, errors=errors,
                                         stopped=job.stopped.is_set(), outcome=outcome, provider=provider)
                if choice.path == "/models":
                    self.catalog.feed(config.endpoint, models_of(job.exchange))
            if on_done is not None:
                on_done(job, entry)

        return StreamJob(client, request, sse=choice.sse, on_delta=on_delta, on_done=done)

    def start(self, job: StreamJob) -> StreamJob:
        """Start a prepared request (refused while another runs)."""
        if self.job is not None and self.job.running:
            raise ConfigError("a request is still running: stop it first")
        self.job = job
        return job.start()

    def send(self, endpoint: str, model: str, scenario: str, route: str | RouteChoice, *, prompt: str = "",
             body: str = "", method: str = "POST", path: str = "",
             on_delta: Callable[[str], None] | None = None,
             on_done: Callable[[StreamJob, HistoryEntry | None], None] | None = None) -> StreamJob:
        """Start one request on its own thread. Raises :class:`ConfigError` for bad inputs (nothing sent)."""
        if self.job is not None and self.job.running:
            raise ConfigError("a request is still running: stop it first")
        return self.start(self.prepare(endpoint, model, scenario, route, prompt=prompt, body=body, method=method,
                                       path=path, on_delta=on_delta, on_done=on_done))

    def models(self, endpoint: str, model: str, scenario: str) -> list[str] | None:
        """The models the target lists (one ``GET /models`` per endpoint for the session; None: no list)."""
        _, config = self.config(endpoint, model, scenario)
        return self.catalog.lookup(config)

    def model_flag(self, model: str) -> str | None:
        """Why ``model`` looks wrong for the endpoint in use (None: listed, or nothing known yet)."""
        endpoint = self.endpoint_in_use
        return self.catalog.flag(endpoint, model.strip()) if endpoint is not None else None

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
