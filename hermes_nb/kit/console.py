"""The probe console: exploratory wire probing in Jupyter, streaming live.

    from hermes_nb import ProbeConsole
    console = ProbeConsole()     # endpoint empty = an embedded emulator for the session (scenario picker)
    console                      # endpoint · model (the listed ones offered) · scenario · token, route/method/path,
                                 # prompt (Ctrl/Shift+Enter send, Esc stops), JSON body, Send / Stop, adapter check /
                                 # probe all routes / run prompt, the answer (Markdown or raw, copy), usage, the
                                 # response, history (copy as curl / Python), export

The widgets only wire inputs to plain classes that hold the logic and are tested without a browser:
:mod:`hermes_nb.kit.session` (routes, body, target, library calls), :mod:`hermes_nb.kit.exchanges` (the
request's thread, the history), :mod:`hermes_nb.kit.request_state` (one state machine for a request: what
the answer box, the status and the buttons show) and :mod:`hermes_nb.kit.console_view` (the HTML). Widget
values are set from the stream's thread (the documented ipywidgets pattern): the kernel stays idle while a
stream runs, so a Stop click is handled at once. Every rendering holds one lock and shows one consistent
snapshot, so a late callback can never put back an older state.

Auth: ``HERMES_NB_AUTH_TOKEN`` in the kernel, or the password field. The field's value is taken into the
session and the field is emptied at once, so the token is never echoed back, never kept in widget state and
never written into the notebook; every output goes through a :class:`Redactor` that knows it.

``history=PATH`` keeps the history in a file as well (secrets masked) and reloads it: after a kernel restart
the stale view says to run the cell again, and the new console starts with the old history.
"""

from __future__ import annotations

import html
import os
import threading
import time
from collections.abc import Mapping
from typing import Any

from hermes_nb.core.errors import HermesError
from hermes_nb.core.facts import DEFAULT_MODEL
from hermes_nb.emulator.scenarios import ALL_SCENARIOS  # every one (``stall`` too: the request deadline decides)
from hermes_nb.kit.console_view import CONSOLE_JS, answer_html, keys_hint_html, snapshot_html, snippets_html
from hermes_nb.kit.exchanges import HistoryEntry, StreamJob
from hermes_nb.kit.request_state import RequestState
from hermes_nb.kit.session import (
    METHODS,
    ROUTES,
    BodyCheck,
    ConsoleActions,
    ConsoleSession,
    check_body,
    error_html,
    response_html,
)
from hermes_nb.views.htmlkit import MUTED, text_colour

__all__ = ["ProbeConsole"]

_VIEWS = ("rendered", "raw")


def _note(text: str, tone: str | None = None) -> str:
    colour = text_colour(tone) if tone else MUTED
    return f'<small style="color:{colour}">{html.escape(text)}</small>'


class ProbeConsole:
    """The widgets. Public attributes to drive: ``endpoint``, ``model``, ``prompt``, ``body``, ``view``,
    ``send_button``, ``stop_button``, ``history`` (the picker), ``session.history`` (the records),
    ``state`` (the request's state machine).

    ``delay_s``: the embedded emulator's pause before each delta in the ``slow`` scenario (0.25 s: streaming is
    visible to a person; None: the emulator's default). ``history``: a JSON-lines file the history is kept in
    and reloaded from. ``provider``: what the embedded emulator fronts (``xai`` also forwards ``/v1/responses``,
    the route picker's *responses* entries).
    """

    #: widget updates from the stream thread at most this often (the last one always goes out)
    UPDATE_EVERY_S = 0.05

    def __init__(self, *, endpoint: str = "", model: str = DEFAULT_MODEL, scenario: str = "ok",
                 prompt: str = "Summarise in one sentence what a smoke test proves.", route: str = "chat (streamed)",
                 delay_s: float | None = 0.25, actions: ConsoleActions | None = None,
                 environ: Mapping[str, str] | None = None, history: str | os.PathLike[str] | None = None,
                 provider: str = "nous") -> None:
        import ipywidgets as w

        self.session = ConsoleSession(delay_s=delay_s, environ=environ, history=history, provider=provider)
        if actions is not None:
            self.session.actions = actions
        self.actions = self.session.actions
        self.state = RequestState()
        described = {"description_width": "initial"}

        def grow(basis: str) -> Any:
            return w.Layout(width="auto", flex=f"1 1 {basis}", min_width="10em")

        def row(*children: Any) -> Any:
            return w.Box(list(children), layout=w.Layout(display="flex", flex_flow="row wrap", width="100%",
                                                         align_items="center"))

        self.endpoint = w.Text(value=endpoint, description="endpoint", placeholder="empty: embedded emulator",
                               style=described, layout=grow("18em"))
        self.model = w.Combobox(value=model, options=[], ensure_option=False, description="model",
                                placeholder="the proxy's models are offered once known", style=described,
                                layout=grow("16em"))
        self.model.add_class("hermes-model")
        self.model_flag = w.HTML(value="", layout=w.Layout(width="auto"))
        self.model_flag.add_class("hermes-model-flag")
        self.scenario = w.Dropdown(options=ALL_SCENARIOS, value=scenario, description="scenario", style=described,
                                   layout=w.Layout(width="auto"))
        self.token = w.Password(value="", description="token", placeholder="else HERMES_NB_AUTH_TOKEN",
                                style=described, layout=grow("14em"))
        self.token_status = w.HTML(value=self._token_note())
        self.route = w.Dropdown(options=list(ROUTES), value=route, description="route", style=described,
                                layout=w.Layout(width="auto"))
        self.method = w.Dropdown(options=METHODS, value="GET", description="method", disabled=True, style=described,
                                 layout=w.Layout(width="auto"))
        self.path = w.Text(value="", description="path", placeholder="/models (forwarded path)", disabled=True,
                           style=described, layout=grow("12em"))
        self.prompt = w.Textarea(value=prompt, description="prompt", rows=3, style=described,
                                 layout=w.Layout(width="auto"))
        self.prompt.add_class("hermes-prompt")
        self.keys_hint = w.HTML(value=keys_hint_html())
        self.keys_hint.add_class("hermes-keys-hint")
        self.body = w.Textarea(value="", description="JSON body", placeholder="empty: built from the prompt",
                               style=described, layout=w.Layout(width="auto", height="6em"))
        self.body_message = w.HTML(value="")
        auto = w.Layout(width="auto")
        self.send_button = w.Button(description="Send", button_style="primary", icon="paper-plane", layout=auto)
        self.stop_button = w.Button(description="Stop", button_style="danger", icon="stop", disabled=True,
                                    layout=auto)
        self.check_button = w.Button(description="adapter check", layout=auto)
        self.probe_button = w.Button(description="probe all routes", layout=auto)
        self.run_button = w.Button(description="run prompt", layout=auto)
        for button, cls in ((self.send_button, "hermes-send"), (self.stop_button, "hermes-stop"),
                            (self.check_button, "hermes-check"), (self.probe_button, "hermes-probe"),
                            (self.run_button, "hermes-run")):
            button.add_class(cls)
        self.view = w.ToggleButtons(options=_VIEWS, value="rendered", tooltips=("the answer as Markdown",
                                                                                "the answer as sent"),
                                    style={"button_width": "auto"}, layout=auto)
        self.view.add_class("hermes-view-toggle")
        self.stream_view = w.HTML(value="", layout=w.Layout(width="auto"))
        self.output = w.HTML(value="", layout=w.Layout(width="auto"))
        self.output.add_class("hermes-response")
        self.history = w.Select(options=[], description="history", rows=5, style=described,
                                layout=w.Layout(width="auto"))
        self.history.add_class("hermes-history")
        self.snippets = w.HTML(value="", layout=w.Layout(width="auto"))
        self.export_button = w.Button(description="export selected (JSON)", layout=auto)
        self.export_view = w.HTML(value="", layout=w.Layout(width="auto"))
        self._last_push = 0.0
        self._render_lock = threading.RLock()
        self._syncing = False
        self._closed = False

        self.token.observe(self._take_token, names="value")
        self.route.observe(self._route_changed, names="value")
        self.body.observe(lambda _c: self._validate(), names="value")
        self.method.observe(lambda _c: self._validate(), names="value")
        self.model.observe(lambda _c: self._flag_model(), names="value")
        self.view.observe(lambda _c: self._render(), names="value")
        self.send_button.on_click(lambda _b: self.send())
        self.stop_button.on_click(lambda _b: self.stop())
        self.check_button.on_click(lambda _b: self._check())
        self.probe_button.on_click(lambda _b: self._action("probing every route…", lambda: self.actions.probe(
            *self._inputs(), environ=self.session.environ, auth_token=self.session._token)))
        self.run_button.on_click(lambda _b: self._action("running the prompt as a mission…",
                                                         lambda: self.actions.run_prompt(
            *self._inputs(), self.prompt.value, environ=self.session.environ, auth_token=self.session._token)))
        self.export_button.on_click(lambda _b: self.export())
        self.history.observe(lambda _c: self._show_selected(), names="value")
        self._route_changed(None)
        self.widget = w.VBox([
            row(self.endpoint, self.model, self.scenario), self.model_flag,
            row(self.token, self.token_status),
            row(self.route, self.method, self.path),
            self.prompt, self.keys_hint, self.body, self.body_message,
            row(self.send_button, self.stop_button, self.check_button, self.probe_button, self.run_button,
                self.view),
            self.stream_view, self.output,
            self.history, self.snippets, row(self.export_button), self.export_view,
        ], layout=w.Layout(width="100%"))
        self.widget.add_class("hermes-console")
        self._render()

    # ---- inputs
    def _inputs(self) -> tuple[str, str, str]:
        return self.endpoint.value, self.model.value, self.scenario.value

    def _token_note(self) -> str:
        return _note(f"bearer from: {self.session.token_source}")

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
        lines = [_note(f"✗ {e}", "bad") for e in checked.errors]
        lines += [_note(n) for n in checked.notes]
        if checked.ok and self.body.value.strip():
            lines.insert(0, _note("✓ valid JSON", "good"))
        self.body_message.value = "<br>".join(lines)
        return checked

    # ---- the model picker
    def _flag_model(self) -> None:
        flag = self.session.model_flag(self.model.value)
        endpoint = self.session.endpoint_in_use
        known = self.session.catalog.known(endpoint) if endpoint is not None else None
        if flag:
            self.model_flag.value = _note(f"⚠ {flag}", "warn")
        elif known:
            self.model_flag.value = _note(f"✓ listed by the proxy ({len(known)} models)", "good")
        else:
            self.model_flag.value = ""

    def refresh_models(self) -> list[str] | None:
        """Ask the target for its models (once per endpoint for the session) and offer them in the model field."""
        try:
            models = self.session.models(*self._inputs())
        except HermesError:
            models = None
        if models:
            self.model.options = tuple(models)
        self._flag_model()
        return models

    def _refresh_models_later(self) -> None:
        threading.Thread(target=self.refresh_models, name="hermes-nb-console-models", daemon=True).start()

    # ---- rendering (any thread)
    def _render(self, *, force: bool = True) -> None:
        with self._render_lock:
            now = time.monotonic()
            if not force and now - self._last_push < self.UPDATE_EVERY_S:
                return
            self._last_push = now
            view = self.state.snapshot()
            red = self.session.redactor
            self.stream_view.value = answer_html(view, raw=self.view.value == "raw", redactor=red)
            self.send_button.disabled = not view.send_enabled
            self.stop_button.disabled = not view.stop_enabled
            if view.running:
                self.output.value = ""
            elif view.entry is not None:
                self.output.value = response_html(view.entry, red)
            elif view.error is not None:
                self.output.value = error_html(red.text(view.error))
            self.snippets.value = snippets_html(view.entry, red)
            self._sync_history(view.entry)

    def _sync_history(self, shown: HistoryEntry | None) -> None:
        entries = self.session.history.entries
        self._syncing = True
        try:
            if len(self.history.options) != len(entries):
                self.history.options = self.history_labels()
            index = next((i for i, e in enumerate(entries) if e is shown), None)
            if self.history.value != index:
                self.history.value = index
        finally:
            self._syncing = False

    def _show(self, html_text: str) -> None:
        self.output.value = html_text

    # ---- actions
    def send(self) -> StreamJob | None:
        """What the Send button does; returns the running job (None when the inputs were refused)."""
        gen = 0

        def delta(_piece: str) -> None:
            if self.state.delta(gen, _piece):
                self._render(force=False)

        def done(job: StreamJob, entry: HistoryEntry | None) -> None:
            error = None if entry is not None else (
                f"{type(job.error).__name__}: {job.error}" if job.error is not None else "no exchange")
            if self.state.finish(gen, entry, error):
                self._render()
            if not self._closed and not self.session.catalog.asked(job.client.config.endpoint):
                self.refresh_models()

        try:
            job = self.session.prepare(*self._inputs(), self.route.value, prompt=self.prompt.value,
                                       body=self.body.value, method=self.method.value, path=self.path.value,
                                       on_delta=delta, on_done=done)
            gen = self.state.begin()
        except HermesError as exc:
            self._show(error_html(exc))
            return None
        self._render()
        self._flag_model()
        try:
            return self.session.start(job)
        except HermesError as exc:
            self.state.abandon(gen)
            self._render()
            self._show(error_html(exc))
            return None

    def _action(self, running: str, call: Any) -> None:
        self._show(_note(running))
        self._show(call())

    def _check(self) -> None:
        self._action("running the adapter check…", lambda: self.actions.check(
            *self._inputs(), environ=self.session.environ, auth_token=self.session._token))
        self._flag_model()

    def history_labels(self) -> list[tuple[str, int]]:
        return self.session.history.labels()

    def stop(self) -> None:
        """What the Stop button does: cancel the running request, keep the partial text."""
        self.session.stop()

    def wait(self, timeout: float | None = 30.0) -> bool:
        """Block until the running request ended and the console shows it (scripts and tests)."""
        job = self.session.job
        return True if job is None else job.wait(timeout)

    def _show_selected(self) -> None:
        if self._syncing:
            return
        index = self.history.value
        if index is None or not 0 <= index < len(self.session.history):
            return
        if self.state.select(self.session.history[index]):
            self._render()

    def export(self) -> str | None:
        """The selected history entry as JSON (secrets masked), also shown under the history."""
        index = self.history.value
        if index is None:
            return None
        text = self.session.export(index)
        self.export_view.value = (f'<pre style="white-space:pre-wrap;max-height:20em;overflow:auto">'
                                  f"{html.escape(text)}</pre>")
        return text

    # ---- display
    def _repr_text_(self) -> str:
        return (f"ProbeConsole ({len(self.session.history)} exchanges in its history): run this cell for the live "
                "console")

    def snapshot_html(self) -> str:
        """A static picture of the console now (what a notebook shows without its kernel)."""
        view = self.state.snapshot()
        fields = [("endpoint", self.endpoint.value or "(embedded emulator)"), ("model", self.model.value),
                  ("scenario", self.scenario.value), ("route", self.route.value), ("prompt", self.prompt.value)]
        red = self.session.redactor
        response = response_html(view.entry, red, headers=False) if view.entry is not None else ""
        return snapshot_html(fields, view, list(self.session.history.entries), response=response, redactor=red)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        """The live widget, and a static picture (``text/html``) for where no widget can show."""
        bundle = dict(self.widget._repr_mimebundle_(include=include, exclude=exclude) or {})
        bundle["text/plain"] = self._repr_text_()
        bundle["text/html"] = self.snapshot_html()
        return bundle

    def _ipython_display_(self) -> None:
        from IPython.display import display as ipy_display

        ipy_display(self._repr_mimebundle_(), raw=True)
        ipy_display({"application/javascript": CONSOLE_JS}, raw=True)  # the keys and the copy buttons
        self._refresh_models_later()

    def close(self) -> None:
        self._closed = True
        self.session.close()
        self.widget.close()

