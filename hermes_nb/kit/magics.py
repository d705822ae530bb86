"""The magics ``%load_ext hermes_nb`` registers: arguments generated from the jobs' specs, config resolved as the CLI
resolves it (no endpoint: an embedded emulator per scenario). A kernel interrupt keeps what arrived."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from IPython.core.error import UsageError as IPythonUsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.display import display
from IPython.utils.process import arg_split
from pydantic import Field

from hermes_nb.core.config import HermesProxyRuntimeConfig
from hermes_nb.core.errors import HermesError
from hermes_nb.core.facts import ADAPTER_CHECK, WIRE_SPIKE
from hermes_nb.core.model import Shown
from hermes_nb.core.records import Exchange, Outcome, Usage
from hermes_nb.core.redaction import Redactor
from hermes_nb.core.resolve import ConfigOptions
from hermes_nb.core.spec import Opt, Spec
from hermes_nb.kit.console import ProbeConsole, answer_html, json_of
from hermes_nb.kit.job import Job
from hermes_nb.kit.session import ConsoleSession, status_line, unlisted_note
from hermes_nb.load.report import LoadReport  # the load wing, reached from the kit by this magic only
from hermes_nb.load.run import run_load
from hermes_nb.load.spec import LoadSpec
from hermes_nb.proxy.check import CheckResult, CheckSpec
from hermes_nb.proxy.contracts import resolve_contract
from hermes_nb.proxy.probe import ProbeSpec
from hermes_nb.proxy.report import WireReport
from hermes_nb.target import Target
from hermes_nb.views.htmlkit import badge
from hermes_nb.wire.client import HermesClient
from hermes_nb.wire.payloads import chat_request_body, responses_request_body
from hermes_nb.wire.reading import classify


@dataclass(repr=False)  # IPython's text repr is then Shown's one line, not the dataclass's repr
class ChatResult(Shown):
    """What ``%%hermes_chat`` returns: the exchange, its classification, the text (partial when stopped)."""

    exchange: Exchange | None
    outcome: Outcome | None
    text: str
    stopped: bool = False
    warnings: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        return "stopped" if self.stopped else (self.outcome.status if self.outcome else "failed")

    @property
    def usage(self) -> Usage:
        return Usage.from_exchange(self.exchange)

    @property
    def reason(self) -> str:
        return "interrupted" if self.stopped else self.outcome.reason if self.outcome else "no exchange"

    @property
    def status(self) -> str:
        """The console's status line: ``done: passed (ok)``, ``blocked: auth`` (never "done" for a failure)."""
        return "interrupted: partial text kept" if self.stopped else status_line(self.verdict, self.reason)

    def _repr_text_(self) -> str:
        took = f" in {self.exchange.timings.total_s:.3f} s" if self.exchange is not None else ""
        return f"verdict: {self.verdict} ({self.reason}), {len(self.text)} characters{took}"


class _Answer:
    """The streamed answer's display, updated in place at the console's pace."""

    def __init__(self, redactor: Redactor, fmt: str = "markdown") -> None:
        self.pieces: list[str] = []
        self.redactor, self.fmt = redactor, fmt
        self._last = 0.0
        self.handle = display(self._bundle("waiting for the first delta…"), raw=True, display_id=True)

    def _bundle(self, state: str, *, final: bool = False, usage: str | None = None) -> dict[str, Any]:
        text = self.redactor.text("".join(self.pieces))
        fmt = "text" if self.fmt == "json" and not final else self.fmt  # JSON once it is whole
        bundle: dict[str, Any] = {"text/plain": text, "text/html": answer_html(state, text, fmt=fmt, usage=usage,
                                                                               copy=False)}
        if fmt == "json":
            try:
                bundle["application/json"] = json_of(text)
            except ValueError:
                pass
        return bundle

    def delta(self, piece: str) -> None:
        self.pieces.append(piece)
        now = time.monotonic()
        if now - self._last >= ProbeConsole.UPDATE_EVERY_S:
            self._last = now
            self.handle.update(self._bundle("streaming…"), raw=True)

    def finish(self, state: str, usage: str | None) -> None:
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
        self.session = ConsoleSession()  # its emulators and the models each endpoint lists, for the kernel's session

    def aim(self, spec: Any, provider: str | None = None) -> tuple[Target, HermesProxyRuntimeConfig]:
        """The options' config, aimed at its target (the configured endpoint, else this session's emulator)."""
        config = spec.runtime_config()
        if provider and not config.provider:
            config = config.model_copy(update={"provider": provider})
        return self.session.aim(config, spec.scenario)

    @line_magic
    @_magic(CheckSpec, "%hermes_check")
    def hermes_check(self, spec: CheckSpec) -> CheckResult:
        """The adapter check against the configured proxy (or an embedded emulator)."""
        return Job(ADAPTER_CHECK, spec, *self.aim(spec)).check()

    @line_magic
    @_magic(ProbeSpec, "%hermes_probe")
    def hermes_probe(self, spec: ProbeSpec) -> WireReport:
        """Probe every route; with ``--compare``, the report carries its drift from the contract of the provider it
        detected, and what it could not judge."""
        if spec.compare:
            resolve_contract(spec.compare)  # an unknown name fails before anything is sent
        return Job(WIRE_SPIKE, spec, *self.aim(spec)).probe()

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
        models = self.session.listed(config)
        if models is not None and config.model not in models:
            warnings.append(unlisted_note(config.model, models, config.endpoint))
            display({"text/plain": f"warning: {warnings[0]}",
                     "text/html": badge("warning", f"⚠ warning: {warnings[0]}")}, raw=True)
        answer = _Answer(Redactor(config.secrets()), spec.format)
        body, path = ((responses_request_body(config, prompt, stream=True), "/responses") if spec.route == "responses"
                      else (chat_request_body(config, [{"role": "user", "content": prompt}], stream=True),
                            "/chat/completions"))
        exchange = None
        with HermesClient(config) as client:
            try:
                exchange = client.send(client.build_request("POST", path, json=body, sse=True), on_delta=answer.delta)
            except KeyboardInterrupt:  # the kernel's interrupt: stop here, keep what arrived
                pass
        outcome = classify(exchange, config, executable=target.executable) if exchange is not None else None
        text = exchange.text if exchange is not None else answer.redactor.text("".join(answer.pieces))
        result = ChatResult(exchange=exchange, outcome=outcome, text=text, stopped=exchange is None, warnings=warnings)
        answer.finish(result.status, result.usage.line() if exchange is not None else None)
        return result


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext hermes_nb``."""
    ipython.register_magics(HermesMagics(ipython))


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext hermes_nb``: stop the session's emulators."""
    magics = ipython.magics_manager.registry.get(HermesMagics.__name__)
    if isinstance(magics, HermesMagics):
        magics.session.close()
