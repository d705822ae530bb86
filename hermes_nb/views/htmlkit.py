"""The one HTML toolkit of every face (reprs, console, magics, receipts, ``index.html``). Every colour is a
JupyterLab theme variable (``--jp-*``) with a fallback; a verdict's text colour is its tone mixed with the theme's
strongest font colour (>= 4.5:1, WCAG AA, in Lab's light and dark themes). Every value is redacted and escaped."""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import mistune
from mistune.renderers.html import HTMLRenderer

from hermes_nb.core.redaction import Redactor

#: JupyterLab's own theme values: the fallbacks outside Lab, and a standalone page's variables (light; dark on request)
_LIGHT = {
    "content-font-color0": "#000", "content-font-color1": "rgba(0,0,0,.87)", "content-font-color2": "rgba(0,0,0,.54)",
    "layout-color0": "#fff", "border-color2": "#e0e0e0", "cell-editor-background": "#f5f5f5",
    "success-color1": "#388e3c", "error-color1": "#d32f2f", "warn-color1": "#f57c00", "brand-color1": "#1976d2",
    "info-color1": "#0097a7",
}
_DARK = {
    "content-font-color0": "#fff", "content-font-color1": "#fff", "content-font-color2": "rgba(255,255,255,.7)",
    "layout-color0": "#111", "border-color2": "#424242", "cell-editor-background": "#212121",
    "success-color1": "#4caf50", "error-color1": "#f44336", "warn-color1": "#ff9800", "brand-color1": "#2196f3",
    "info-color1": "#00bcd4",
}
TONES: dict[str, tuple[str, str]] = {tone: (f"--jp-{var}", _LIGHT[var]) for tone, var in (
    ("good", "success-color1"), ("bad", "error-color1"), ("warn", "warn-color1"), ("accent", "brand-color1"),
    ("info", "info-color1"), ("muted", "content-font-color2"))}
_TONE_SHARE = 65  # of a text colour; the rest is the theme's strongest font colour
_FONT0 = "var(--jp-content-font-color0,#000)"
VERDICT_TONES: dict[str, str] = {
    **dict.fromkeys(("passed", "ready", "ok", "live", "forwarded", "done", "True"), "good"),
    **dict.fromkeys(("failed", "error", "misconfigured", "drift", "False"), "bad"),
    **dict.fromkeys(("blocked", "locked", "unreachable", "stale", "warning"), "warn"),
    **dict.fromkeys(("stopped", "cancelled", "sending", "streaming", "idle"), "muted"),
}


def text_colour(tone: str) -> str:
    """A text colour for ``tone`` that reads at ≥ 4.5:1 in JupyterLab's light and dark themes."""
    var, fallback = TONES[tone]
    return f"color-mix(in srgb,var({var},{fallback}) {_TONE_SHARE}%,{_FONT0})"


def edge_colour(tone: str) -> str:  # the tone itself, for borders and marks (never for text)
    return "var({},{})".format(*TONES[tone])


def tone_of(word: Any) -> str | None:
    return VERDICT_TONES.get(str(word))


VERDICT_COLOURS: dict[str, str] = {word: text_colour(t) for word, t in VERDICT_TONES.items()}
MUTED = text_colour("muted")
BORDER = "var(--jp-border-color2,#d0d7de)"
CODE_BACKGROUND = "var(--jp-cell-editor-background,transparent)"

_CELL = f"border:1px solid {BORDER};padding:2px 8px;vertical-align:top;text-align:left"
TD_STYLE = f"{_CELL};overflow-wrap:anywhere"  # values wrap anywhere (URLs, digests); headers at word boundaries
TH_STYLE = f"{_CELL};overflow-wrap:normal;word-break:normal;hyphens:manual"
_TABLE = '<table class="hermes-nb" style="border-collapse:collapse;text-align:left;max-width:100%">'
_WRAP = '<div class="hermes-nb-box" style="max-width:100%;overflow-x:auto">'
_SHAPES = Redactor()


def esc(value: Any, redactor: Redactor | None = None) -> str:
    """One value as escaped, redacted text (``—`` for None, JSON for structures)."""
    if value is None:
        text = "—"
    elif isinstance(value, bool):
        text = "yes" if value else "no"
    elif isinstance(value, (dict, list, tuple)):
        text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    else:
        text = str(value)
    return html.escape((redactor or _SHAPES).text(text))


def seconds(value: float | None) -> str | None:
    return None if value is None else f"{value:.3f} s"


def note(text: str, tone: str = "muted") -> str:
    """A short escaped note (a hint, a validation message) in ``tone``."""
    return f'<small style="color:{text_colour(tone)}">{html.escape(text)}</small>'


def badge(word: Any, text: str | None = None) -> str:
    """A verdict word (or ``text`` in the word's colour), bold."""
    colour = VERDICT_COLOURS.get(str(word))
    shown = esc(word if text is None else text)
    return f'<b style="color:{colour}">{shown}</b>' if colour else shown


def _cell(value: Any, marked: bool, redactor: Redactor | None) -> str:
    return badge(value) if marked and value is not None else esc(value, redactor)


def _table(title: str | None, rows: str) -> str:
    caption = f'<caption style="text-align:left"><b>{html.escape(title)}</b></caption>' if title else ""
    return f"{_WRAP}{_TABLE}{caption}{rows}</table></div>"


def kv_html(pairs: Iterable[tuple[str, Any]], *, badges: Iterable[str] = ("verdict", "status", "state"),
            redactor: Redactor | None = None, title: str | None = None) -> str:
    """Key/value rows; the values of ``badges`` keys in their verdict colour."""
    marked = set(badges)
    rows = "".join(f'<tr><th style="{TH_STYLE}">{html.escape(key)}</th>'
                   f'<td style="{TD_STYLE}">{_cell(value, key in marked, redactor)}</td></tr>' for key, value in pairs)
    return _table(title, rows)


def table_html(rows: Sequence[Mapping[str, Any]], columns: Sequence[str], *,
               badges: Iterable[str] = ("verdict", "status", "outcome"), redactor: Redactor | None = None) -> str:
    """One row per mapping; wraps and scrolls inside its box."""
    marked = set(badges)
    head = "".join(f'<th style="{TH_STYLE}">{html.escape(c)}</th>' for c in columns)
    body = ["<tr>" + "".join(f'<td style="{TD_STYLE}">{_cell(row.get(c), c in marked, redactor)}</td>'
                             for c in columns) + "</tr>" for row in rows]
    if not rows:
        body.append(f'<tr><td style="{TD_STYLE}" colspan="{max(len(columns), 1)}">(none)</td></tr>')
    return _table(None, f"<tr>{head}</tr>{''.join(body)}")


def box(title: str, verdict: Any, *parts: str, headline: str | None = None) -> str:
    """A block with a coloured left edge: the title, the verdict (or ``headline`` in its colour), the parts."""
    tone = tone_of(verdict)
    edge = edge_colour(tone) if tone else BORDER
    shown = badge(verdict, headline) if verdict is not None else (esc(headline) if headline else "")
    head = f"<b>{html.escape(title)}</b>" + (f" · {shown}" if shown else "")
    return (f'<div class="hermes-nb-repr" style="border-left:4px solid {edge};padding:2px 8px;margin:4px 0">'
            f"<div>{head}</div>{''.join(parts)}</div>")


def details(summary: str, body: str) -> str:
    """A collapsed section (``summary`` is escaped, ``body`` is HTML)."""
    return f"<details><summary>{html.escape(summary)}</summary>{body}</details>"


def pre(text: str, redactor: Redactor | None = None) -> str:
    """Preformatted, wrapped, escaped and redacted text on the theme's code background."""
    return (f'<pre style="white-space:pre-wrap;overflow-wrap:anywhere;margin:2px 0;padding:4px 6px;'
            f'background:{CODE_BACKGROUND}">{esc(text, redactor)}</pre>')


class _Renderer(HTMLRenderer):
    """Raw HTML escaped, safe link schemes only, images as links: nothing in an answer runs or fetches."""

    SAFE_PROTOCOLS = ("http:", "https:", "mailto:")

    def image(self, text: str, url: str, title: str | None = None) -> str:
        return self.link(f"image: {text or url}", url, title)

    def link(self, text: str, url: str, title: str | None = None) -> str:
        return super().link(text, url, title).replace("<a ", '<a rel="noopener noreferrer" ', 1)


_MARKDOWN = mistune.create_markdown(renderer=_Renderer(escape=True), plugins=["strikethrough", "table"])


def markdown_html(text: str, redactor: Redactor | None = None) -> str:
    """``text`` (redacted) rendered as Markdown, sanitised (:class:`_Renderer`)."""
    return str(_MARKDOWN((redactor or _SHAPES).text(text)))


def page_css() -> str:
    """A standalone page's stylesheet: the theme variables (light; dark on the reader's wish), the one table style."""
    light, dark = (";".join(f"--jp-{k}:{v}" for k, v in theme.items()) for theme in (_LIGHT, _DARK))
    return "\n".join((
        f":root{{color-scheme:light dark;{light}}}",
        f"@media (prefers-color-scheme: dark){{:root{{{dark}}}}}",
        "body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;"
        "background:var(--jp-layout-color0);color:var(--jp-content-font-color1)}",
        f"a{{color:{text_colour('accent')}}}small,.muted{{color:{MUTED}}}",
        f"pre{{background:{CODE_BACKGROUND};padding:.6em;overflow-x:auto;white-space:pre-wrap;overflow-wrap:anywhere}}",
        f"table{{border-collapse:collapse}}td{{{TD_STYLE}}}th{{{TH_STYLE}}}",
    ))
