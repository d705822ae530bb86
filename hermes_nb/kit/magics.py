"""IPython magics: ``%load_ext hermes_nb`` registers them.

``%hermes_check [--endpoint URL] [--model M] [--manifest PATH] [--scenario S]``
    the adapter check; returns the :class:`~hermes_nb.proxy.check.CheckResult`.
``%hermes_probe [--compare NAME] [--endpoint URL] [--model M] [--scenario S] [--deadline S]``
    the wire-format probe (and its drift from a recorded contract); returns the
    :class:`~hermes_nb.proxy.report.WireReport`.
``%hermes_load [--endpoint URL] [--concurrency 1,4,16] [--requests N | --level-budget-s S] [--direct URL] …``
    the load probe (the options of ``hermes-nb load``, from one declaration; ``%hermes_load?`` lists them; no
    endpoint = the embedded emulator in processes of its own); returns the
    :class:`~hermes_nb.load.report.LoadReport` ``hermes-nb load`` reports. A kernel interrupt stops it and
    returns what was measured.
``%%hermes_chat [--endpoint URL] [--model M] [--manifest PATH] [--scenario S] [--format markdown|text|code|json]``
    the cell body is the prompt; the answer streams into the output as it arrives (one display updated in
    place; rendered as Markdown by default, raw HTML in it escaped, nothing in it run), then the verdict and
    the token usage; returns a :class:`ChatResult` (``_.exchange``, ``_.outcome``, ``_.text``, ``_.usage``).
    A model the proxy does not list is warned about first (one ``GET /models`` per endpoint for the session).
    A kernel interrupt stops the stream and keeps the partial text.

Every result is the cell's value, so the next cell has it as ``_`` (or ``Out[n]``). The config is resolved
the way the CLI does it (:func:`hermes_nb.core.resolve.resolve_runtime_config`: defaults < manifest <
``HERMES_NB_*`` < flags); no endpoint anywhere = an embedded emulator for the session (one per scenario,
stopped by ``%unload_ext hermes_nb``). The token comes from ``HERMES_NB_AUTH_TOKEN`` only.
"""

from __future__ import annotations

import json
import shlex
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError as IPythonUsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from hermes_nb.core.errors import HermesError
from hermes_nb.core.htmlkit import MUTED, badge, esc, markdown_html, pre, tone_of
from hermes_nb.core.providers import PROXY_PROVIDERS
from hermes_nb.core.redaction import Redactor
from hermes_nb.core.usage import Usage
from hermes_nb.kit.models import ModelCatalog
from hermes_nb.kit.target import Target, runtime_config, start_target
from hermes_nb.load.spec import LoadSpec

if TYPE_CHECKING:
    from hermes_nb.core.config import HermesProxyRuntimeConfig
    from hermes_nb.core.records import Exchange, Outcome

__all__ = ["HermesMagics", "ChatResult", "load_ipython_extension", "unload_ipython_extension"]

#: stream display updates at most this often (the final text always goes out)
UPDATE_EVERY_S = 0.05
#: how ``%%hermes_chat --format`` shows the answer
FORMATS = ("markdown", "text", "code", "json")
_LOAD_PARSER = LoadSpec.parser("%hermes_load", "The load probe: the options of hermes-nb load; returns the "
                                               "LoadReport.")


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
        from hermes_nb.core.reprs import box, kv_html, seconds
        from hermes_nb.core.timeline import StreamTimeline, timeline_svg

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
        from IPython.display import display

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


@magics_class
class HermesMagics(Magics):
    """``%hermes_check``, ``%hermes_probe``, ``%hermes_load``, ``%%hermes_chat``."""

    def __init__(self, shell: Any = None) -> None:
        super().__init__(shell)
        self._emulators: dict[str, Target] = {}
        #: the models each endpoint lists: one ``GET /models`` per endpoint for the session
        self.catalog = ModelCatalog()

    # ---- targets
    def _aim(self, args: Any, provider: str = "nous") -> tuple[Target, HermesProxyRuntimeConfig]:
        """The flags' config, resolved once, and its target: the configured endpoint, else this session's
        emulator for ``--scenario`` (fronting ``provider``); the config aimed at the target."""
        config = runtime_config(args.endpoint, args.model, manifest=getattr(args, "manifest", None))
        if config.origin("endpoint") != "default":
            target = start_target(config)
        else:
            key = args.scenario if provider == "nous" else f"{args.scenario}@{provider}"
            if key not in self._emulators:
                self._emulators[key] = start_target(config, scenario=args.scenario, provider=provider)
            target = self._emulators[key]
        return target, target.point(config)

    def close(self) -> None:
        for target in self._emulators.values():
            target.close()
        self._emulators.clear()

    @staticmethod
    def _fail(exc: HermesError) -> None:
        raise IPythonUsageError(str(exc)) from None

    # ---- %hermes_check
    @magic_arguments()
    @argument("--endpoint", default=None, help="proxy endpoint incl. /v1 (else HERMES_NB_ENDPOINT, else an emulator)")
    @argument("--model", default=None, help="model id (else HERMES_NB_MODEL, else the default)")
    @argument("--manifest", default=None, help="adapter manifest whose runtime_config is the base")
    @argument("--scenario", default="ok", help="emulator scenario (only without an endpoint)")
    @argument("--deadline", type=float, default=5.0, help="deadline of GET /models, seconds")
    @line_magic
    def hermes_check(self, line: str) -> Any:
        """The adapter check against the configured proxy (or an embedded emulator)."""
        from hermes_nb.proxy.check import adapter_check

        args = parse_argstring(self.hermes_check, line)
        try:
            target, config = self._aim(args)
        except HermesError as exc:
            self._fail(exc)
        return adapter_check(config, deadline_s=args.deadline, hermes_bin=target.hermes_bin)

    # ---- %hermes_probe
    @magic_arguments()
    @argument("--compare", default=None, metavar="NAME",
              help="compare with a wire contract (a name shipped with hermes_nb, e.g. hermes-agent-0.19.0, or a path)")
    @argument("--endpoint", default=None, help="proxy endpoint incl. /v1 (else HERMES_NB_ENDPOINT, else an emulator)")
    @argument("--model", default=None, help="model id (else HERMES_NB_MODEL, else the default)")
    @argument("--scenario", default="ok", help="emulator scenario (only without an endpoint)")
    @argument("--deadline", type=float, default=30.0, help="budget of the whole probe, seconds")
    @argument("--provider", default="nous", choices=PROXY_PROVIDERS,
              help="what the embedded emulator fronts (only without an endpoint)")
    @line_magic
    def hermes_probe(self, line: str) -> Any:
        """Probe every route; with ``--compare``, the report carries its drift from the contract of the provider
        it detected, and what it could not judge."""
        from hermes_nb.proxy.contracts import apply_contract, load_contract, resolve_contract
        from hermes_nb.proxy.probe import probe

        args = parse_argstring(self.hermes_probe, line)
        try:
            if args.compare:
                resolve_contract(args.compare)  # an unknown name fails before anything is sent
            _, config = self._aim(args, provider=args.provider)
            report = probe(config, deadline_s=args.deadline)
            contract = (load_contract(resolve_contract(args.compare, provider=report.provider))
                        if args.compare else None)
        except HermesError as exc:
            self._fail(exc)
        if contract is not None:
            apply_contract(report, contract)
        return report

    # ---- %hermes_load: the load wing's options, declared once (LoadSpec); ``%hermes_load?`` is its help
    @line_magic
    def hermes_load(self, line: str) -> Any:
        from hermes_nb.load.run import run_load  # the wing's generator (aiohttp) loads when the magic is used

        try:
            return run_load(spec=LoadSpec.from_args(_LOAD_PARSER.parse_args(shlex.split(line)), face="magic"))
        except HermesError as exc:
            self._fail(exc)

    hermes_load.__doc__ = _LOAD_PARSER.format_help()

    # ---- %%hermes_chat
    @magic_arguments()
    @argument("--endpoint", default=None, help="proxy endpoint incl. /v1 (else HERMES_NB_ENDPOINT, else an emulator)")
    @argument("--model", default=None, help="model id (else HERMES_NB_MODEL, else the default)")
    @argument("--manifest", default=None, help="adapter manifest whose runtime_config is the base")
    @argument("--scenario", default="ok", help="emulator scenario (only without an endpoint)")
    @argument("--route", default="chat", choices=("chat", "responses"),
              help="chat: POST /v1/chat/completions; responses: POST /v1/responses (OpenAI's Responses API, "
                   "forwarded by an xai proxy)")
    @argument("--provider", default=None, choices=PROXY_PROVIDERS,
              help="what the embedded emulator fronts (only without an endpoint; default nous, xai with --route "
                   "responses)")
    @argument("--format", "-f", default="markdown", choices=FORMATS,
              help="how the answer shows: markdown (default, nothing in it runs), text, code, json")
    @cell_magic
    def hermes_chat(self, line: str, cell: str) -> ChatResult:
        """The cell is the prompt; the answer streams in, then the verdict; returns a :class:`ChatResult`."""
        from hermes_nb.wire.classify import classify
        from hermes_nb.wire.client import HermesClient
        from hermes_nb.wire.payloads import responses_request_body

        args = parse_argstring(self.hermes_chat, line)
        prompt = cell.strip()
        if not prompt:
            raise IPythonUsageError("%%hermes_chat: the cell body is the prompt, and it is empty")
        provider = args.provider or ("xai" if args.route == "responses" else "nous")
        try:
            _, config = self._aim(args, provider=provider)
        except HermesError as exc:
            self._fail(exc)
        warnings = []
        models = self.catalog.lookup(config)
        if models is not None and config.model not in models:
            from IPython.display import display

            from hermes_nb.kit.models import unlisted_note

            warnings.append(unlisted_note(config.model, models, config.endpoint))
            display({"text/plain": f"warning: {warnings[0]}",
                     "text/html": badge("warning", f"⚠ warning: {warnings[0]}")}, raw=True)
        answer = _Answer(Redactor(config.secrets()), args.format)
        exchange = outcome = None
        stopped = False
        with HermesClient(config) as client:
            try:
                if args.route == "responses":
                    body = responses_request_body(config, prompt, stream=True)
                    exchange = client.send(client.build_request("POST", "/responses", json=body, sse=True), sse=True,
                                           on_delta=answer.delta)
                else:
                    exchange = client.chat([{"role": "user", "content": prompt}], stream=True,
                                           on_delta=answer.delta)
            except KeyboardInterrupt:  # the kernel's interrupt: stop here, keep what arrived
                stopped = True
        if exchange is not None:
            outcome = classify(exchange, config)
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
