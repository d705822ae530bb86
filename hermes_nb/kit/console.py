"""The probe console: exploratory wire probing in Jupyter, streaming live.

    from hermes_nb import ProbeConsole
    console = ProbeConsole()     # endpoint empty = an embedded emulator for the session (scenario picker)
    console                      # endpoint · model · scenario · token, route/method/path, prompt, JSON body,
                                 # Send / Stop, adapter check / probe all routes / run prompt, response, history

The widgets only wire inputs to the plain classes of :mod:`hermes_nb.kit.session` and
:mod:`hermes_nb.kit.exchanges`, which hold the logic and are tested without a browser. Widget values are set
from the stream's thread (the documented ipywidgets pattern): the kernel stays idle while a stream runs, so a
Stop click is handled at once.

Auth: ``HERMES_NB_AUTH_TOKEN`` in the kernel, or the password field. The field's value is taken into the
session and the field is emptied at once, so the token is never echoed back, never kept in widget state and
never written into the notebook; every output goes through a :class:`Redactor` that knows it.
"""

from __future__ import annotations

import html
import threading
import time
from collections.abc import Mapping
from typing import Any

from hermes_nb.core.errors import HermesError
from hermes_nb.core.facts import DEFAULT_MODEL
from hermes_nb.emulator.scenarios import ALL_SCENARIOS  # every one (``stall`` too: the request deadline decides)
from hermes_nb.kit.exchanges import History, HistoryEntry, StreamJob
from hermes_nb.kit.session import (
    METHODS,
    ROUTES,
    BodyCheck,
    ConsoleActions,
    ConsoleSession,
    RouteChoice,
    check_body,
    error_html,
    response_html,
)

__all__ = ["ProbeConsole"]


# --------------------------------------------------------------------------- the widgets

_STREAM_BOX = ('<div class="hermes-stream" style="max-height:16em;overflow:auto;border:1px solid #d0d7de;'
               'padding:4px 8px;background:#f6f8fa">')


def _stream_html(text: str, state: str) -> str:
    return (f'{_STREAM_BOX}<div class="hermes-stream-state" style="color:#57606a">{html.escape(state)}</div>'
            f'<pre class="hermes-stream-text" style="white-space:pre-wrap;margin:0">{html.escape(text)}</pre></div>')


class ProbeConsole:
    """The widgets. Public attributes to drive: ``endpoint``, ``model``, ``prompt``, ``body``,
    ``send_button``, ``stop_button``, ``history`` (the picker), ``session.history`` (the records).

    ``delay_s``: the embedded emulator's pause before each delta in the ``slow`` scenario (0.25 s: streaming is
    visible to a person; None: the emulator's default). ``provider``: what the embedded emulator fronts
    (``xai`` also forwards ``/v1/responses``, the route picker's *responses* entries).
    """

    #: widget updates from the stream thread at most this often (the last one always goes out)
    UPDATE_EVERY_S = 0.05

    def __init__(self, *, endpoint: str = "", model: str = DEFAULT_MODEL, scenario: str = "ok",
                 prompt: str = "Summarise in one sentence what a smoke test proves.", route: str = "chat (streamed)",
                 delay_s: float | None = 0.25, actions: ConsoleActions | None = None,
                 environ: Mapping[str, str] | None = None, provider: str = "nous") -> None:
        import ipywidgets as w

        self.session = ConsoleSession(delay_s=delay_s, environ=environ, provider=provider)
        if actions is not None:
            self.session.actions = actions
        self.actions = self.session.actions
        lay = w.Layout(width="auto")
        self.endpoint = w.Text(value=endpoint, description="endpoint", placeholder="empty: embedded emulator")
        self.model = w.Text(value=model, description="model")
        self.scenario = w.Dropdown(options=ALL_SCENARIOS, value=scenario, description="scenario")
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
        self.history.add_class("hermes-history")
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
            *self._inputs(), environ=self.session.environ, auth_token=self.session._token)))
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
            self._show(error_html(exc))
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
                self._show(error_html(f"{type(job.error).__name__}: {self.session.redactor.text(str(job.error))}"))
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
