"""IPython magics: ``%load_ext hermes_nb`` registers them. Their arguments are generated from the jobs' specs, so
``%hermes_check?`` states the same options, words and defaults as ``hermes-nb check --help`` and the notebooks'
parameters cells:

``%hermes_check``   the adapter check (:class:`~hermes_nb.proxy.check.CheckSpec`); returns the ``CheckResult``.
``%hermes_probe``   the wire-format probe and its drift from a contract (:class:`~hermes_nb.proxy.probe.ProbeSpec`);
                    returns the ``WireReport``.
``%hermes_load``    the load probe (its spec: the flags of ``hermes-nb load``); returns the ``LoadReport``. A kernel
                    interrupt stops it and returns what was measured.
``%%hermes_chat``   the cell body is the prompt (:class:`ChatSpec`); the answer streams into the output as it arrives
                    (one display updated in place; Markdown by default, raw HTML in it escaped, nothing in it run),
                    then the verdict and the token usage; returns a :class:`ChatResult`. A model the proxy does not
                    list is warned about first (one ``GET /models`` per endpoint for the session). A kernel
                    interrupt stops the stream and keeps the partial text.

Every result is the cell's value (``_`` in the next cell). The config is resolved the way the CLI does it
(defaults < manifest < ``HERMES_NB_*`` < flags); no endpoint anywhere = an embedded emulator for the session
(one per scenario and provider, stopped by ``%unload_ext hermes_nb``). The token comes from
``HERMES_NB_AUTH_TOKEN`` only.
"""

from __future__ import annotations

import functools
import json
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from IPython.core.error import UsageError as IPythonUsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.display import display
from IPython.utils.process import arg_split
from pydantic import Field

from hermes_nb.core.config import HermesProxyRuntimeConfig
from hermes_nb.core.errors import HermesError
from hermes_nb.core.records import Exchange, Outcome, Usage
from hermes_nb.core.redaction import Redactor
from hermes_nb.core.resolve import ConfigOptions
from hermes_nb.core.spec import Opt, Spec
from hermes_nb.kit.models import ModelCatalog, unlisted_note
from hermes_nb.load.report import LoadReport  # the load wing, reached from the kit by this magic only
from hermes_nb.load.run import run_load
from hermes_nb.load.spec import LoadSpec
from hermes_nb.proxy.check import CheckResult, CheckSpec, check
from hermes_nb.proxy.contracts import apply_contract, load_contract, resolve_contract
from hermes_nb.proxy.probe import ProbeSpec, probe
from hermes_nb.proxy.report import WireReport
from hermes_nb.target import Target, embedded_target, identify
from hermes_nb.views.htmlkit import MUTED, badge, esc, markdown_html, pre, tone_of
from hermes_nb.views.reprs import box, kv_html, seconds
from hermes_nb.views.timeline import StreamTimeline, timeline_svg
from hermes_nb.wire.client import HermesClient
from hermes_nb.wire.payloads import responses_request_body
from hermes_nb.wire.reading import classify

__all__ = ["HermesMagics", "ChatSpec", "ChatResult", "load_ipython_extension", "unload_ipython_extension"]

#: stream display updates at most this often (the final text always goes out)
UPDATE_EVERY_S = 0.05


@dataclass
class ChatResult:
    """What ``%%hermes_chat`` returns: the exchange, its classification, the text (partial when stopped)."""

    exchange: Exchange | None
    outcome: Outcome | None
    text: str
    stopped: bool = False
    #: e.g. the model is not one the proxy lists
    warnings: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        return "stopped" if self.stopped else (self.outcome.status if self.outcome else "failed")

    @property
    def usage(self) -> Usage:
        return Usage.from_exchange(self.exchange)

    @property
    def status(self) -> str:
        """``done: passed (ok)``, ``failed: …``, ``blocked: …``, ``interrupted: partial text kept`` (never "done"
        for a failure)."""
        if self.stopped:
            return "interrupted: partial text kept"
        reason = self.outcome.reason if self.outcome else "no exchange"
        return f"done: passed ({reason})" if self.verdict == "passed" else f"{self.verdict}: {reason}"

    def _repr_text_(self) -> str:
        reason = "interrupted" if self.stopped else (self.outcome.reason if self.outcome else "no exchange")
        took = f" in {self.exchange.timings.total_s:.3f} s" if self.exchange is not None else ""
        return f"verdict: {self.verdict} ({reason}), {len(self.text)} characters{took}"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text("ChatResult(...)" if cycle else self._repr_text_())

    def _repr_html_(self) -> str:
        out, ex = self.outcome, self.exchange
        pairs: list[tuple[str, Any]] = [("verdict", self.verdict),
                                        ("reason", "interrupted" if self.stopped else out.reason if out else None),
                                        ("hint", out.hint if out else None)]
        if ex is not None:
            t = ex.timings
            pairs += [("status", ex.status), ("time to headers", seconds(t.headers_s)),
                      ("time to first delta", seconds(t.first_delta_s)), ("total", seconds(t.total_s)),
                      ("usage", self.usage.line())]
        pairs += [("error", e) for e in (out.errors if out else [])]
        pairs += [("warning", w) for w in [*self.warnings, *(out.warnings if out else [])]]
        parts = [kv_html(pairs, badges=("verdict",))]
        if ex is not None and ex.streamed:
            parts.append(timeline_svg(StreamTimeline.from_exchange(ex, stopped=self.stopped), title="answer stream"))
        return box("hermes chat", self.verdict, *parts)


def _json_of(text: str) -> Any:
    """The answer as JSON (a surrounding code fence allowed); raises ValueError when it is not."""
    body = text.strip()
    if body.startswith("```"):
        body = body.split("\n", 1)[1] if "\n" in body else ""
        body = body.rsplit("```", 1)[0]
    return json.loads(body)


def answer_html(text: str, state: str, fmt: str = "markdown", *, final: bool = False) -> str:
    """The streamed answer as ``fmt`` under its status line (the status in its verdict's colour)."""
    word = state.split(":", 1)[0]
    head = (f'<small class="hermes-chat-state">{badge(tone_word(word), state)}</small>' if tone_word(word)
            else f'<small class="hermes-chat-state" style="color:{MUTED}">{esc(state)}</small>')
    if fmt == "markdown":
        body = f'<div class="hermes-chat-text">{markdown_html(text)}</div>'
    elif fmt == "json" and final:
        try:
            body = pre(json.dumps(_json_of(text), indent=2, ensure_ascii=False), cls="hermes-chat-text")
        except ValueError as exc:
            body = (f'<small style="color:{MUTED}">not JSON ({esc(str(exc))}): shown as text</small>'
                    + pre(text, cls="hermes-chat-text"))
    else:  # text, code, and json while it streams
        body = pre(text, cls="hermes-chat-text")
    return f'<div class="hermes-chat">{head}{body}</div>'


def tone_word(word: str) -> str | None:
    """The verdict word a status starts with, when it has a colour (``done`` → passed)."""
    verdict = {"done": "passed", "interrupted": "stopped"}.get(word, word)
    return verdict if tone_of(verdict) else None


class _Answer:
    """The streamed answer's display: ``text/plain`` + ``text/html``, updated in place (throttled)."""

    def __init__(self, redactor: Redactor, fmt: str = "markdown") -> None:
        self.pieces: list[str] = []
        self.redactor = redactor
        self.fmt = fmt
        self._last = 0.0
        self.handle = display(self._bundle("waiting for the first delta…"), raw=True, display_id=True)

    def _bundle(self, state: str, *, final: bool = False, usage: str | None = None) -> dict[str, Any]:
        text = self.redactor.text("".join(self.pieces))
        shown = answer_html(text, state + (f" · usage: {usage}" if usage else ""), self.fmt, final=final)
        bundle: dict[str, Any] = {"text/plain": text, "text/html": shown}
        if self.fmt == "json" and final:
            try:
                bundle["application/json"] = _json_of(text)
            except ValueError:
                pass
        return bundle

    def delta(self, piece: str) -> None:
        self.pieces.append(piece)
        now = time.monotonic()
        if now - self._last >= UPDATE_EVERY_S:
            self._last = now
            self.handle.update(self._bundle("streaming…"), raw=True)

    def finish(self, state: str, usage: str | None = None) -> None:
        self.handle.update(self._bundle(state, final=True, usage=usage), raw=True)


class ChatSpec(ConfigOptions):
    """``%%hermes_chat``'s options (the cell body is the prompt)."""

    scenario: str = Field("ok", description="the embedded emulator's scenario (only when no endpoint is configured)")
    route: Literal["chat", "responses"] = Field(
        "chat", description="chat: POST /v1/chat/completions; responses: POST /v1/responses (OpenAI's Responses "
                            "API, forwarded by an xai proxy; an embedded emulator then fronts xai)")
    format: Annotated[Literal["markdown", "text", "code", "json"], Opt(short="-f")] = Field(
        "markdown", description="how the answer shows (markdown: nothing in it runs)")


def _magic(spec: type[Spec], prog: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A magic whose arguments are ``spec``'s: its parser and its ``%magic?`` help are generated from it."""
    parser = spec.parser(prog, face="magic")

    def wrap(func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def magic(self: HermesMagics, line: str, cell: str | None = None) -> Any:
            try:
                options = spec.from_args(parser.parse_args(arg_split(line)), face="magic")
                return func(self, options) if cell is None else func(self, options, cell)
            except HermesError as exc:
                raise IPythonUsageError(str(exc)) from None

        magic.__doc__ = f"{(func.__doc__ or '').strip()}\n\n{parser.format_help()}"
        return magic
    return wrap


@magics_class
class HermesMagics(Magics):
    """``%hermes_check``, ``%hermes_probe``, ``%hermes_load``, ``%%hermes_chat``."""

    def __init__(self, shell: Any = None) -> None:
        super().__init__(shell)
        self._stack = ExitStack()
        self._emulators: dict[tuple[str, str], Target] = {}
        #: the models each endpoint lists: one ``GET /models`` per endpoint for the session
        self.catalog = ModelCatalog()

    def aim(self, spec: Any, provider: str | None = None) -> tuple[Target, HermesProxyRuntimeConfig]:
        """The options' config, resolved once, and its target: the configured endpoint (identified), else this
        session's emulator for the scenario and provider; the config aimed at the target."""
        config = spec.runtime_config()
        if provider and not config.provider:
            config = config.model_copy(update={"provider": provider})
        if config.origin("endpoint") != "default":
            return identify(config), config
        key = (spec.scenario, config.provider or "nous")
        if key not in self._emulators:
            self._emulators[key], _ = self._stack.enter_context(embedded_target(config, scenario=spec.scenario))
        target = self._emulators[key]
        return target, config.with_endpoint(target.endpoint, origin="emulator")

    def close(self) -> None:
        self._stack.close()
        self._emulators.clear()

    @line_magic
    @_magic(CheckSpec, "%hermes_check")
    def hermes_check(self, spec: CheckSpec) -> CheckResult:
        """The adapter check against the configured proxy (or an embedded emulator)."""
        target, config = self.aim(spec)
        return check(config, spec=spec, target=target)

    @line_magic
    @_magic(ProbeSpec, "%hermes_probe")
    def hermes_probe(self, spec: ProbeSpec) -> WireReport:
        """Probe every route; with ``--compare``, the report carries its drift from the contract of the provider it
        detected, and what it could not judge."""
        if spec.compare:
            resolve_contract(spec.compare)  # an unknown name fails before anything is sent
        _, config = self.aim(spec)
        report = probe(config, budget_s=spec.budget_s, request_budget_s=spec.request_budget_s)
        if spec.compare:
            apply_contract(report, load_contract(resolve_contract(spec.compare, provider=report.provider)))
        return report

    @line_magic
    @_magic(LoadSpec, "%hermes_load")
    def hermes_load(self, spec: LoadSpec) -> LoadReport:
        """The load probe (the options of ``hermes-nb load``; no endpoint = the embedded emulator in processes of its
        own); returns the ``LoadReport``. A kernel interrupt stops it and returns what was measured."""
        return run_load(spec=spec)

    @cell_magic
    @_magic(ChatSpec, "%%hermes_chat")
    def hermes_chat(self, spec: ChatSpec, cell: str) -> ChatResult:
        """The cell is the prompt; the answer streams in, then the verdict; returns a :class:`ChatResult`."""
        prompt = cell.strip()
        if not prompt:
            raise HermesError("%%hermes_chat: the cell body is the prompt, and it is empty")
        target, config = self.aim(spec, provider="xai" if spec.route == "responses" else None)
        warnings = []
        models = self.catalog.lookup(config)
        if models is not None and config.model not in models:
            warnings.append(unlisted_note(config.model, models, config.endpoint))
            display({"text/plain": f"warning: {warnings[0]}",
                     "text/html": badge("warning", f"⚠ warning: {warnings[0]}")}, raw=True)
        answer = _Answer(Redactor(config.secrets()), spec.format)
        exchange = outcome = None
        stopped = False
        with HermesClient(config) as client:
            try:
                if spec.route == "responses":
                    body = responses_request_body(config, prompt, stream=True)
                    exchange = client.send(client.build_request("POST", "/responses", json=body, sse=True), sse=True,
                                           on_delta=answer.delta)
                else:
                    exchange = client.chat([{"role": "user", "content": prompt}], stream=True,
                                           on_delta=answer.delta)
            except KeyboardInterrupt:  # the kernel's interrupt: stop here, keep what arrived
                stopped = True
        if exchange is not None:
            outcome = classify(exchange, config, executable=target.executable)
        text = exchange.text if exchange is not None else answer.redactor.text("".join(answer.pieces))
        result = ChatResult(exchange=exchange, outcome=outcome, text=text, stopped=stopped, warnings=warnings)
        answer.finish(result.status, usage=result.usage.line() if exchange is not None else None)
        return result


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext hermes_nb``."""
    ipython.register_magics(HermesMagics(ipython))


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext hermes_nb``: stop the session's emulators."""
    magics = ipython.magics_manager.registry.get(HermesMagics.__name__)
    if isinstance(magics, HermesMagics):
        magics.close()
