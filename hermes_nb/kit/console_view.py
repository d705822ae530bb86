"""The console's HTML, without widgets: the answer box, the copy-as-code bar, the keyboard hint, the static picture.

Pure functions of a :class:`~hermes_nb.kit.request_state.View` (and the entry shown), built with the one
toolkit (:mod:`hermes_nb.views.htmlkit`: theme colours, sanitised Markdown), tested without a browser.

Two pieces run in the page, both ours and neither taken from an answer:

* :data:`CONSOLE_CSS` (in the keyboard hint's HTML): the notice a console shows once its kernel is gone
  (ipywidgets marks a view ``jupyter-widgets-disconnected`` after a kernel restart);
* :data:`CONSOLE_JS` (published once per console as ``application/javascript``, which JupyterLab runs for
  outputs of the session): the keys in the prompt (Ctrl/Shift+Enter send, Escape stops, Enter stays a
  newline) and the copy buttons (the clipboard is the browser's). Where no script runs (an untrusted or
  static view), the code is still there to select by hand under "show the code".
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from hermes_nb.core.redaction import Redactor
from hermes_nb.kit.request_state import BLOCKED, DONE, FAILED
from hermes_nb.views.htmlkit import BORDER, MUTED, edge_colour, esc, markdown_html, pre, text_colour

if TYPE_CHECKING:
    from hermes_nb.kit.exchanges import HistoryEntry
    from hermes_nb.kit.request_state import View

__all__ = ["CONSOLE_CSS", "CONSOLE_JS", "KEYS_HINT", "RESTART_NOTICE", "answer_html", "snippets_html",
           "keys_hint_html", "snapshot_html"]

KEYS_HINT = "Ctrl+Enter or Shift+Enter: send · Enter: new line · Esc (or the send keys again): stop"
RESTART_NOTICE = ("The kernel behind this console has restarted or stopped: run this cell again for a working "
                  "console (ProbeConsole(history=PATH) reloads the history from PATH).")
_TONE = {DONE: "good", FAILED: "bad", BLOCKED: "warn"}
_BUTTON = 'class="jupyter-button {cls}" type="button" style="width:auto;margin:0 2px"'

CONSOLE_CSS = (
    f'.hermes-console.jupyter-widgets-disconnected::before{{content:"{RESTART_NOTICE}";display:block;'
    f"font:inherit;white-space:normal;padding:.4em .6em;margin-bottom:.4em;"
    f"border:2px solid {edge_colour('warn')};color:{text_colour('warn')}}}"
    ".hermes-console .widget-html-content{line-height:1.45}"
    ".hermes-stream-text pre,.hermes-stream-text code{background:var(--jp-cell-editor-background,transparent)}"
    ".hermes-stream-text pre{padding:4px 6px;white-space:pre-wrap;overflow-wrap:anywhere}"
    ".hermes-stream-text p{margin:.3em 0}"
)

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


def _button(cls: str, key: str, label: str) -> str:
    return f'<button {_BUTTON.format(cls=cls)} data-hermes-copy="{key}">{html.escape(label)}</button>'


def _source(key: str, text: str, cls: str = "") -> str:
    klass = f' class="{cls}"' if cls else ""
    return f'<pre{klass} hidden data-hermes-source="{key}">{html.escape(text)}</pre>'


def _body(view: View, text: str, raw: bool, red: Redactor) -> str:
    if not text:
        return ""
    entry = view.entry
    as_code = entry is not None and not entry.exchange.text  # a body, not an assistant's text
    if raw or as_code:
        return pre(text, red)
    return markdown_html(text, red)


def answer_html(view: View, *, raw: bool = False, redactor: Redactor | None = None) -> str:
    """The answer box: status (named by the verdict), usage, copy button, the answer (Markdown or raw)."""
    red = redactor or Redactor()
    text = red.text(view.text)
    tone = _TONE.get(view.phase)
    colour = text_colour(tone) if tone else MUTED
    head = [f'<span class="hermes-stream-state" style="color:{colour};font-weight:bold">{esc(view.status)}</span>']
    if view.usage is not None:
        head.append(f'<span class="hermes-usage" style="color:{MUTED}">usage: {esc(view.usage)}</span>')
    if text:
        head.append(_button("hermes-copy-answer", "answer", "copy answer"))
    return (f'<div class="hermes-stream" data-hermes-copy-scope style="border:1px solid {BORDER};padding:4px 8px;'
            f'max-height:24em;overflow:auto">'
            f'<div style="display:flex;flex-wrap:wrap;gap:.3em 1em;align-items:center">{"".join(head)}</div>'
            f'<div class="hermes-stream-text">{_body(view, text, raw, red)}</div>'
            f"{_source('answer', text, 'hermes-answer-source')}</div>")


def snippets_html(entry: HistoryEntry | None, redactor: Redactor | None = None) -> str:
    """Copy the shown exchange as curl / Python (httpx) / Python (openai); the code also shown collapsed."""
    from hermes_nb.kit.snippets import snippets

    if entry is None:
        return ""
    code = snippets(entry.exchange.request, redactor)
    labels = {"curl": "copy as curl", "httpx": "copy as Python (httpx)", "openai": "copy as Python (openai)"}
    buttons = "".join(_button(f"hermes-copy-{k}", k, labels[k]) for k in code)
    sources = "".join(_source(k, v) for k, v in code.items())
    shown = "".join(f"<div><b>{html.escape(labels[k].removeprefix('copy as '))}</b></div>{pre(v, redactor)}"
                    for k, v in code.items())
    return (f'<div class="hermes-snippets" data-hermes-copy-scope style="display:flex;flex-wrap:wrap;gap:.3em;'
            f'align-items:center"><span style="color:{MUTED}">#{entry.number}:</span>{buttons}{sources}'
            f'<details style="flex-basis:100%"><summary>show the code (the bearer comes from '
            f"HERMES_NB_AUTH_TOKEN, never from here)</summary>{shown}</details></div>")


def keys_hint_html() -> str:
    """The hint under the prompt, carrying the console's stylesheet."""
    return (f'<style>{CONSOLE_CSS}</style><small class="hermes-keys" style="color:{MUTED};display:block;'
            f'line-height:1.4">{html.escape(KEYS_HINT)}</small>')


def snapshot_html(fields: list[tuple[str, Any]], view: View, entries: list[HistoryEntry], *,
                  response: str = "", redactor: Redactor | None = None) -> str:
    """A static picture of the console (for a notebook opened without its kernel): inputs, status, answer,
    the shown response, the history. Plain HTML that survives JupyterLab's sanitiser."""
    from hermes_nb.views.htmlkit import box, kv_html, table_html

    red = redactor or Redactor()
    history = table_html([{"#": e.number, "request": f"{e.exchange.request.method} {e.route}",
                           "status": e.exchange.status, "verdict": e.verdict, "reason": e.reason} for e in entries],
                         ("#", "request", "status", "verdict", "reason"), badges=("verdict",), redactor=red)
    note = ("<p><i>A static picture of the probe console: run this cell for the live one "
            "(Send, Stop, history, copy as code).</i></p>")
    return box("ProbeConsole", None, note, kv_html(fields, redactor=red), answer_html(view, redactor=red),
               response, f"<div><b>history</b></div>{history}")
