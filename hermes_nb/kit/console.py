"""The probe console (``from hermes_nb import ProbeConsole``): ipywidgets wired to :mod:`hermes_nb.kit.session`.
Widgets are set from the stream's thread (the documented ipywidgets pattern), so the kernel stays idle for Stop.
The password field is emptied once read: the bearer is never echoed, kept in widget state or saved."""

import html
import json
import os
import pprint
import shlex
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import ipywidgets as w
from IPython.display import display

from hermes_nb.core.errors import HermesError
from hermes_nb.core.facts import DEFAULT_MODEL, ENV_AUTH_TOKEN
from hermes_nb.core.redaction import Redactor
from hermes_nb.emulator.scenarios import ALL_SCENARIOS  # every one (``stall`` too: the request deadline decides)
from hermes_nb.kit.session import (
    ROUTES,
    ConsoleSession,
    HistoryEntry,
    StreamJob,
    View,
    check_body,
    error_html,
    unlisted_note,
)
from hermes_nb.views import judged_html
from hermes_nb.views.htmlkit import (
    BORDER,
    MUTED,
    VERDICT_COLOURS,
    box,
    edge_colour,
    esc,
    kv_html,
    markdown_html,
    note,
    pre,
    table_html,
    text_colour,
)

#: headers a client sets by itself: left out of the code
_OWN = {"authorization", "content-length", "host", "accept-encoding", "connection", "user-agent"}
_API_ROUTES = ("/chat/completions", "/completions", "/responses", "/models", "/embeddings")


def snippets(request: Any, redactor: Redactor | None = None) -> dict[str, str]:
    """One recorded request as ``curl``, Python (httpx) and Python (openai). Built from the record, never the
    config: a bearer is read from ``HERMES_NB_AUTH_TOKEN`` by the code, never written into it."""
    red = redactor or Redactor()
    method, url, body = request.method, request.url, request.body
    bearer = any(k.lower() == "authorization" for k in request.headers or {})
    headers = {k: v for k, v in (request.headers or {}).items() if k.lower() not in _OWN}
    streams = isinstance(body, dict) and body.get("stream") is True

    curl = [f"curl -sS{' -N' if streams else ''} -X {method} {shlex.quote(url)}"]
    curl += [f'-H "Authorization: Bearer ${ENV_AUTH_TOKEN}"'] if bearer else []
    curl += [f"-H {shlex.quote(f'{k}: {v}')}" for k, v in headers.items()]
    curl += [f"--data-raw {shlex.quote(json.dumps(body, ensure_ascii=False))}"] if body is not None else []

    items = [f'"Authorization": "Bearer " + os.environ["{ENV_AUTH_TOKEN}"]'] if bearer else []
    items += [f"{k!r}: {v!r}" for k, v in headers.items()]
    sent = "" if body is None else f",\n    json={pprint.pformat(body, sort_dicts=False, width=100)}"
    call = f'"{method}", {url!r},\n    headers={{{", ".join(items)}}}{sent},\n    timeout=300.0,'
    if streams:
        httpx_code = (f"with httpx.stream(\n    {call}\n) as response:\n    print(response.status_code)\n"
                      "    for line in response.iter_lines():\n        print(line)\n")
    else:
        httpx_code = f"response = httpx.request(\n    {call}\n)\nprint(response.status_code)\nprint(response.text)\n"

    route = next((r for r in _API_ROUTES if url.endswith(r)), None)
    if route is not None:
        base = url[: -len(route)]
    else:
        head, sep, tail = url.partition("/v1/")
        base, route = (head + "/v1", "/" + tail) if sep else (url.rsplit("/", 1)[0], "/" + url.rsplit("/", 1)[1])
    key = f'os.environ.get("{ENV_AUTH_TOKEN}", "not-needed")' if bearer else '"not-needed"'
    args = ",\n    ".join(f"{k}={pprint.pformat(v, sort_dicts=False, width=100)}"
                          for k, v in (body if isinstance(body, dict) else {}).items())
    if route == "/chat/completions" and method == "POST" and streams:
        sdk = (f"stream = client.chat.completions.create(\n    {args},\n)\nfor chunk in stream:\n"
               "    if chunk.choices:\n        print(chunk.choices[0].delta.content or \"\", end=\"\", flush=True)\n"
               "    if chunk.usage:\n        print(\"\\n\", chunk.usage)\n")
    elif route == "/chat/completions" and method == "POST":
        sdk = (f"completion = client.chat.completions.create(\n    {args},\n)\n"
               "print(completion.choices[0].message.content)\nprint(completion.usage)\n")
    elif route == "/models" and method == "GET":
        sdk = "for model in client.models.list():\n    print(model.id)\n"
    else:
        options = f", body={pprint.pformat(body, sort_dicts=False)}" if body is not None else ""
        sdk = (f"# not one of the SDK's own calls: its raw request helper\n"
               f"answer = client.{method.lower()}({route!r}, cast_to=object{options})\nprint(answer)\n")
    return {"curl": red.text(" \\\n  ".join(curl)) + "\n",
            "httpx": red.text(f"import os\n\nimport httpx\n\n{httpx_code}"),
            "openai": red.text(f"import os\n\nfrom openai import OpenAI\n\nclient = OpenAI(base_url={base!r}, "
                               f"api_key={key})  # the proxy attaches the real credentials\n\n{sdk}")}


KEYS_HINT = "Ctrl+Enter or Shift+Enter: send · Enter: new line · Esc (or the send keys again): stop"
RESTART_NOTICE = ("The kernel behind this console has restarted or stopped: run this cell again for a working "
                  "console (ProbeConsole(history=PATH) reloads the history from PATH).")
_COPY_LABELS = {"curl": "copy as curl", "httpx": "copy as Python (httpx)", "openai": "copy as Python (openai)"}

#: the notice a console shows once its kernel is gone (ipywidgets marks it ``jupyter-widgets-disconnected``)
CONSOLE_CSS = (
    f'.hermes-console.jupyter-widgets-disconnected::before{{content:"{RESTART_NOTICE}";display:block;'
    f"font:inherit;white-space:normal;padding:.4em .6em;margin-bottom:.4em;"
    f"border:2px solid {edge_colour('warn')};color:{text_colour('warn')}}}"
    ".hermes-console .widget-html-content{line-height:1.45}"
    ".hermes-stream-text pre,.hermes-stream-text code{background:var(--jp-cell-editor-background,transparent)}"
    ".hermes-stream-text pre{padding:4px 6px;white-space:pre-wrap;overflow-wrap:anywhere}"
    ".hermes-stream-text p{margin:.3em 0}"
)

#: the prompt's keys and the copy buttons (where no script runs, the code is under "show the code")
CONSOLE_JS = """(function () {
  if (window.__hermesNbConsole) { return; }
  window.__hermesNbConsole = true;
  function live(b) { return b && !b.disabled; }
  window.addEventListener('keydown', function (e) {
    var t = e.target;
    if (!(t instanceof HTMLTextAreaElement) || !t.closest('.hermes-prompt')) { return; }
    var root = t.closest('.hermes-console');
    if (!root) { return; }
    var send = root.querySelector('.hermes-send'), stop = root.querySelector('.hermes-stop');
    var submit = e.key === 'Enter' && (e.ctrlKey || e.shiftKey || e.metaKey);
    if ((e.key === 'Escape' || submit) && live(stop)) {
      e.preventDefault(); e.stopPropagation(); stop.click(); return;
    }
    if (submit) {
      e.preventDefault(); e.stopPropagation();
      t.dispatchEvent(new Event('change', {bubbles: true}));
      setTimeout(function () { if (live(send)) { send.click(); } }, 60);
    }
  }, true);
  function copy(text) {
    if (navigator.clipboard && window.isSecureContext) { return navigator.clipboard.writeText(text); }
    var area = document.createElement('textarea');
    area.value = text; document.body.appendChild(area); area.select();
    try { document.execCommand('copy'); } finally { area.remove(); }
    return Promise.resolve();
  }
  document.addEventListener('click', function (e) {
    var b = e.target instanceof Element ? e.target.closest('[data-hermes-copy]') : null;
    if (!b) { return; }
    var scope = b.closest('[data-hermes-copy-scope]') || document;
    var src = scope.querySelector('[data-hermes-source="' + b.getAttribute('data-hermes-copy') + '"]');
    if (!src) { return; }
    e.preventDefault();
    var label = b.textContent;
    copy(src.textContent).then(function () {
      b.textContent = 'copied ✓'; setTimeout(function () { b.textContent = label; }, 1500);
    });
  }, true);
})();"""


def _copy_button(cls: str, key: str, label: str) -> str:
    return (f'<button class="jupyter-button {cls}" type="button" style="width:auto;margin:0 2px" '
            f'data-hermes-copy="{key}">{html.escape(label)}</button>')


def _source(key: str, text: str, cls: str = "") -> str:
    klass = f' class="{cls}"' if cls else ""
    return f'<pre{klass} hidden data-hermes-source="{key}">{html.escape(text)}</pre>'


def json_of(text: str) -> Any:
    """The answer as JSON (a surrounding code fence allowed); ValueError when it is not."""
    body = text.strip()
    if body.startswith("```"):
        body = body.split("\n", 1)[1].rsplit("```", 1)[0] if "\n" in body else ""
    return json.loads(body)


def answer_html(status: str, text: str, *, fmt: str = "markdown", usage: str | None = None, copy: bool = True,
                redactor: Redactor | None = None) -> str:
    """An answer under its status line (in the colour of the verdict it names) and usage: as Markdown (nothing in
    it runs), as sent (``text``, ``code``) or pretty JSON; ``copy``: a copy button (the console's page script)."""
    red = redactor or Redactor()
    text = red.text(text)
    word = status.split(":", 1)[0]
    colour = VERDICT_COLOURS.get({"interrupted": "stopped"}.get(word, word), MUTED)
    head = [f'<span class="hermes-stream-state" style="color:{colour};font-weight:bold">{esc(status)}</span>']
    if usage is not None:
        head.append(f'<span class="hermes-usage" style="color:{MUTED}">usage: {esc(usage)}</span>')
    if text and copy:
        head.append(_copy_button("hermes-copy-answer", "answer", "copy answer"))
    body = markdown_html(text, red) if text and fmt == "markdown" else pre(text, red) if text else ""
    if text and fmt == "json":
        try:
            body = pre(json.dumps(json_of(text), indent=2, ensure_ascii=False), red)
        except ValueError as exc:
            body = note(f"not JSON ({exc}): shown as text") + body
    return (f'<div class="hermes-stream" data-hermes-copy-scope style="border:1px solid {BORDER};padding:4px 8px;'
            f'max-height:24em;overflow:auto">'
            f'<div style="display:flex;flex-wrap:wrap;gap:.3em 1em;align-items:center">{"".join(head)}</div>'
            f'<div class="hermes-stream-text">{body}</div>'
            f"{_source('answer', text, 'hermes-answer-source') if copy else ''}</div>")


def snippets_html(entry: HistoryEntry | None, redactor: Redactor | None = None) -> str:
    """Copy the shown exchange as curl / Python (httpx) / Python (openai); the code also shown, collapsed."""
    if entry is None:
        return ""
    code = snippets(entry.exchange.request, redactor)
    buttons = "".join(_copy_button(f"hermes-copy-{k}", k, _COPY_LABELS[k]) for k in code)
    sources = "".join(_source(k, v) for k, v in code.items())
    shown = "".join(f"<div><b>{html.escape(_COPY_LABELS[k].removeprefix('copy as '))}</b></div>{pre(v, redactor)}"
                    for k, v in code.items())
    return (f'<div class="hermes-snippets" data-hermes-copy-scope style="display:flex;flex-wrap:wrap;gap:.3em;'
            f'align-items:center"><span style="color:{MUTED}">#{entry.number}:</span>{buttons}{sources}'
            f'<details style="flex-basis:100%"><summary>show the code (the bearer comes from '
            f"HERMES_NB_AUTH_TOKEN, never from here)</summary>{shown}</details></div>")


def response_html(entry: HistoryEntry, redactor: Redactor | None = None, *, headers: bool = True) -> str:
    """The response panel (headers left out of the static picture: ``date`` and the like are noise there)."""
    return judged_html(f"response #{entry.number}", entry.verdict, entry.exchange, reason=entry.reason,
                       hint=entry.hint, extra=[("provider", entry.provider)], errors=entry.errors,
                       stopped=entry.stopped, headers=headers, redactor=redactor)


def _row(*children: Any) -> w.Box:
    return w.Box(list(children), layout=w.Layout(display="flex", flex_flow="row wrap", width="100%",
                                                 align_items="center"))


def _field(kind: Any, description: str, cls: str = "", *, grow: str | None = None,
           changed: Callable[[Any], Any] | None = None, **kw: Any) -> Any:
    """An input with its label; ``grow``: it grows from that width, else it fits."""
    layout = w.Layout(width="auto", flex=f"1 1 {grow}", min_width="10em") if grow else w.Layout(width="auto")
    field = kind(description=description, style={"description_width": "initial"}, layout=kw.pop("layout", layout),
                 _dom_classes=(cls,) if cls else (), **kw)
    if changed is not None:
        field.observe(changed, names="value")
    return field


def _button(description: str, cls: str, click: Callable[[], Any], **kw: Any) -> w.Button:
    button = w.Button(description=description, layout=w.Layout(width="auto"), _dom_classes=(cls,) if cls else (),
                      **kw)
    button.on_click(lambda _b: click())
    return button


def _html(cls: str = "", **kw: Any) -> w.HTML:
    return w.HTML(value=kw.pop("value", ""), layout=w.Layout(width="auto"), _dom_classes=(cls,) if cls else (), **kw)


class ProbeConsole:
    """The widgets (drivable from code; ``session`` is the logic). ``delay_s``: the ``slow`` scenario's pause before
    each delta; ``history``: a JSON-lines file the history is kept in and reloaded from; ``provider``: what the
    embedded emulator fronts (``xai`` forwards ``/v1/responses``)."""

    #: widget updates from the stream thread at most this often (the last one always goes out)
    UPDATE_EVERY_S = 0.05

    def __init__(self, *, endpoint: str = "", model: str = DEFAULT_MODEL, scenario: str = "ok",
                 prompt: str = "Summarise in one sentence what a smoke test proves.", route: str = "chat (streamed)",
                 delay_s: float | None = 0.25, environ: Mapping[str, str] | None = None,
                 history: str | os.PathLike[str] | None = None, provider: str = "nous") -> None:
        self.session = ConsoleSession(delay_s=delay_s, environ=environ, history=history, provider=provider)
        self.endpoint = _field(w.Text, "endpoint", value=endpoint, placeholder="empty: embedded emulator", grow="18em")
        self.model = _field(w.Combobox, "model", "hermes-model", value=model, options=[], ensure_option=False,
                            placeholder="the proxy's models are offered once known", grow="16em",
                            changed=lambda _c: self._flag_model())
        self.model_flag = _html("hermes-model-flag")
        self.scenario = _field(w.Dropdown, "scenario", options=ALL_SCENARIOS, value=scenario)
        self.token = _field(w.Password, "token", value="", placeholder="else HERMES_NB_AUTH_TOKEN", grow="14em",
                            changed=self._take_token)
        self.token_status = w.HTML(value=self._token_note())
        self.route = _field(w.Dropdown, "route", options=list(ROUTES), value=route, changed=self._route_changed)
        self.method = _field(w.Dropdown, "method", options=("GET", "POST", "PUT", "DELETE"), value="GET",
                             disabled=True, changed=lambda _c: self._validate())
        self.path = _field(w.Text, "path", value="", placeholder="/models (forwarded path)", disabled=True,
                           grow="12em")
        self.prompt = _field(w.Textarea, "prompt", "hermes-prompt", value=prompt, rows=3)
        self.keys_hint = _html("hermes-keys-hint", value=f'<style>{CONSOLE_CSS}</style><small class="hermes-keys" '
                               f'style="color:{MUTED};display:block;line-height:1.4">{html.escape(KEYS_HINT)}</small>')
        self.body = _field(w.Textarea, "JSON body", value="", placeholder="empty: built from the prompt",
                           layout=w.Layout(width="auto", height="6em"), changed=lambda _c: self._validate())
        self.body_message = w.HTML(value="")
        self.send_button = _button("Send", "hermes-send", self.send, button_style="primary", icon="paper-plane")
        self.stop_button = _button("Stop", "hermes-stop", self.stop, button_style="danger", icon="stop", disabled=True)
        self.check_button = _button("adapter check", "hermes-check",
                                    lambda: self._action("running the adapter check…", self.session.check))
        self.probe_button = _button("probe all routes", "hermes-probe",
                                    lambda: self._action("probing every route…", self.session.probe))
        self.run_button = _button("run prompt", "hermes-run", lambda: self._action(
            "running the prompt as a mission…", self.session.run_prompt, self.prompt.value))
        self.export_button = _button("export selected (JSON)", "", self.export)
        self.view = w.ToggleButtons(options=("rendered", "raw"), value="rendered", style={"button_width": "auto"},
                                    tooltips=("the answer as Markdown", "the answer as sent"),
                                    layout=w.Layout(width="auto"), _dom_classes=("hermes-view-toggle",))
        self.stream_view, self.output = _html(), _html("hermes-response")
        self.history = _field(w.Select, "history", "hermes-history", options=[], rows=5,
                              changed=lambda _c: self._show_selected())
        self.snippets, self.export_view = _html(), _html()
        self._last_push = 0.0
        self._render_lock = threading.RLock()
        self._syncing = False
        self._closed = False
        self.view.observe(lambda _c: self._render(), names="value")
        self._route_changed(None)
        self.widget = w.VBox([
            _row(self.endpoint, self.model, self.scenario), self.model_flag, _row(self.token, self.token_status),
            _row(self.route, self.method, self.path), self.prompt, self.keys_hint, self.body, self.body_message,
            _row(self.send_button, self.stop_button, self.check_button, self.probe_button, self.run_button,
                 self.view),
            self.stream_view, self.output, self.history, self.snippets, _row(self.export_button), self.export_view,
        ], layout=w.Layout(width="100%"), _dom_classes=("hermes-console",))
        self._render()

    def _inputs(self) -> tuple[str, str, str]:
        return self.endpoint.value, self.model.value, self.scenario.value

    def _token_note(self) -> str:
        """Where the bearer comes from, never the bearer itself."""
        return note("bearer from: " + ("password field" if self.session.auth_token else
                                       "HERMES_NB_AUTH_TOKEN or the default"))

    def _take_token(self, change: Any) -> None:
        """Take the typed token into the session and empty the field (never kept in widget state)."""
        if change["new"]:
            self.session.set_token(change["new"])
            self.token.value = ""
            self.token_status.value = self._token_note()

    def _route_changed(self, _change: Any) -> None:
        choice = ROUTES[self.route.value]
        self.method.disabled = self.path.disabled = choice.method is not None
        if choice.method is not None:
            self.method.value = choice.method
        self.prompt.disabled = not choice.chat
        self._validate()

    def _validate(self) -> None:
        checked = check_body(self.body.value, ROUTES[self.route.value], method=self.method.value)
        lines = [note("✓ valid JSON", "good")] if checked.ok and self.body.value.strip() else []
        lines += [note(f"✗ {e}", "bad") for e in checked.errors] + [note(n) for n in checked.notes]
        self.body_message.value = "<br>".join(lines)

    def _flag_model(self) -> None:
        endpoint, model = (self.session.endpoint_in_use or "").rstrip("/"), self.model.value.strip()
        known = self.session.catalog.get(endpoint)
        if known is not None and model and model not in known:
            self.model_flag.value = note(f"⚠ {unlisted_note(model, known, endpoint)}", "warn")
        else:
            self.model_flag.value = note(f"✓ listed by the proxy ({len(known)} models)", "good") if known else ""

    def refresh_models(self) -> list[str] | None:
        """Ask the target for its models (once per endpoint for the session) and offer them in the model field."""
        try:
            models = self.session.listed(self.session.config(*self._inputs())[1])
        except HermesError:
            models = None
        if models:
            self.model.options = tuple(models)
        self._flag_model()
        return models

    def _render(self, *, force: bool = True) -> None:
        with self._render_lock:
            now = time.monotonic()
            if not force and now - self._last_push < self.UPDATE_EVERY_S:
                return
            self._last_push = now
            view, red = self.session.view(), self.session.redactor
            self.stream_view.value = self._answer_html(view, raw=self.view.value == "raw")
            self.send_button.disabled = view.running
            self.stop_button.disabled = not view.running
            if view.running:
                self.output.value = ""
            elif view.entry is not None:
                self.output.value = response_html(view.entry, red)
            elif view.error is not None:
                self.output.value = error_html(red.text(view.error))
            self.snippets.value = snippets_html(view.entry, red)
            self._sync_history(view.entry)

    def _answer_html(self, view: View, *, raw: bool = False) -> str:
        as_code = raw or (view.entry is not None and not view.entry.exchange.text)  # a body, not an assistant's text
        return answer_html(view.status, view.text, fmt="text" if as_code else "markdown", usage=view.usage,
                           redactor=self.session.redactor)

    def _sync_history(self, shown: HistoryEntry | None) -> None:
        entries = self.session.history
        self._syncing = True
        try:
            if len(self.history.options) != len(entries):
                self.history.options = [(e.label, i) for i, e in reversed(list(enumerate(entries)))]  # newest first
            index = next((i for i, e in enumerate(entries) if e is shown), None)
            if self.history.value != index:
                self.history.value = index
        finally:
            self._syncing = False

    def send(self) -> StreamJob | None:
        """What the Send button does; returns the running job (None when the inputs were refused)."""
        try:
            job = self.session.send(*self._inputs(), self.route.value, prompt=self.prompt.value, body=self.body.value,
                                    method=self.method.value, path=self.path.value,
                                    on_delta=lambda _piece: self._render(force=False), on_done=self._done)
        except HermesError as exc:
            self.output.value = error_html(exc)
            return None
        self._render()
        self._flag_model()
        return job

    def _done(self, job: StreamJob) -> None:
        self._render()
        if not self._closed and job.client.endpoint.rstrip("/") not in self.session.catalog:
            self.refresh_models()

    def _action(self, running: str, action: Callable[..., str], *args: Any) -> None:
        self.output.value = note(running)
        self.output.value = action(*self._inputs(), *args)
        self._flag_model()

    def stop(self) -> None:
        """What the Stop button does: cancel the running request, keep the partial text."""
        self.session.stop()

    def wait(self, timeout: float | None = 30.0) -> bool:
        """Block until the running request ended and the console shows it (scripts and tests)."""
        job = self.session.job
        return True if job is None else job.wait(timeout)

    def _show_selected(self) -> None:
        index = self.history.value
        if (not self._syncing and index is not None and 0 <= index < len(self.session.history)
                and self.session.select(self.session.history[index])):
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

    def _repr_text_(self) -> str:
        return (f"ProbeConsole ({len(self.session.history)} exchanges in its history): run this cell for the live "
                "console")

    def snapshot_html(self) -> str:
        """A static picture of the console, for a notebook opened without its kernel (survives the sanitiser)."""
        view, red = self.session.view(), self.session.redactor
        fields = [("endpoint", self.endpoint.value or "(embedded emulator)"), ("model", self.model.value),
                  ("scenario", self.scenario.value), ("route", self.route.value), ("prompt", self.prompt.value)]
        history = table_html([{"#": e.number, "request": f"{e.exchange.request.method} {e.route}",
                               "status": e.exchange.status, "verdict": e.verdict, "reason": e.reason}
                              for e in self.session.history],
                             ("#", "request", "status", "verdict", "reason"), badges=("verdict",), redactor=red)
        return box("ProbeConsole", None, "<p><i>A static picture of the probe console: run this cell for the live "
                   "one (Send, Stop, history, copy as code).</i></p>", kv_html(fields, redactor=red),
                   self._answer_html(view),
                   response_html(view.entry, red, headers=False) if view.entry is not None else "",
                   f"<div><b>history</b></div>{history}")

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        """The live widget, and a static picture (``text/html``) for where no widget can show."""
        bundle = dict(self.widget._repr_mimebundle_(include=include, exclude=exclude) or {})
        return {**bundle, "text/plain": self._repr_text_(), "text/html": self.snapshot_html()}

    def _ipython_display_(self) -> None:
        display(self._repr_mimebundle_(), raw=True)
        display({"application/javascript": CONSOLE_JS}, raw=True)  # the keys and the copy buttons
        threading.Thread(target=self.refresh_models, name="hermes-nb-console-models", daemon=True).start()

    def close(self) -> None:
        self._closed = True
        self.session.close()
        self.widget.close()
