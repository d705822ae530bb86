"""``DIR/index.html`` beside ``DIR/index.json``: each smoke run's verdicts together, newest run first.

One section per run id: the run's overall verdict (the worst of its notebooks), where it pointed (the target
labelled with the state the proxy was seen in: a stale proxy is not "live"), when it started, its total
duration, then one row per notebook with its verdict in colour, its reason and, when blocked, the operator
action, its duration and links to the receipt's HTML, notebook and sidecar. Built from ``index.json`` alone (no
receipt is opened), so it costs milliseconds; rewritten after every append. Like every file of a receipts
directory it is scanned for secrets before it is written, and ``receipts verify`` scans it again.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hermes_nb.core.facts import worst_verdict
from hermes_nb.core.io import write_atomic
from hermes_nb.core.redaction import Redactor
from hermes_nb.receipts.index import load_index
from hermes_nb.receipts.write import check_clean
from hermes_nb.views.htmlkit import BORDER, badge, edge_colour, page_css, tone_of

__all__ = ["render_index_html", "write_index_html", "target_label"]

#: in JupyterLab's HTML viewer the page sits in a blob: frame whose <base> is the file's own /files/ URL with
#: ``?_xsrf=…``; relative links lose that query and the frame sends no Referer, so jupyter_server answers 403
#: "Blocking request from unknown origin". This carries the query over to each relative link (it runs once
#: the viewer trusts the page); on file:// or S3 the base has no _xsrf and nothing changes.
_LINKS_SCRIPT = """(function(){var b=new URL(document.baseURI),x=b.searchParams.get('_xsrf');if(!x)return;
document.querySelectorAll('a[href]').forEach(function(a){var h=a.getAttribute('href');
if(/^([a-z][a-z0-9+.-]*:|\\/\\/|#)/i.test(h))return;var u=new URL(h,b);
if(u.origin!==b.origin)return;u.searchParams.set('_xsrf',x);a.href=u.href;});})();"""
_NOSCRIPT = ("<noscript><p class=\"note\">Opened in JupyterLab? Its HTML viewer runs no script until you press "
             "<b>Trust HTML</b> in its toolbar; the receipt links need it there (or use <i>Open in New Browser "
             "Tab</i>).</p></noscript>")


def _style() -> str:
    return (f"{page_css()}\nsection{{border-left:4px solid var(--c);padding:.2em .8em;margin:1.2em 0}}"
            "\ntable{display:block;overflow-x:auto;max-width:100%}"
            f"\n.note{{border:1px solid {BORDER};padding:.3em .6em}}")


def _e(value: Any) -> str:
    return html.escape("—" if value is None else str(value))


def _verdict(word: Any) -> str:
    return f'<span class="v">{badge("—" if word is None else str(word))}</span>'


def _runs(entries: list[Mapping[str, Any]]) -> list[tuple[str, list[Mapping[str, Any]]]]:
    """Entries grouped by run id, in first-seen order, newest run first."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for entry in entries:
        groups.setdefault(str(entry.get("run_id")), []).append(entry)
    return list(reversed(list(groups.items())))


def _links(entry: Mapping[str, Any]) -> str:
    """Links to what the receipt has: its page (none for a run with the HTML renders off), notebook, sidecar."""
    path = str(entry.get("path") or "")
    page = entry["html"] if "html" in entry else (path[: -len(".ipynb")] + ".html" if path.endswith(".ipynb") else path)
    links = [f'<a href="{_e(page)}">receipt</a>'] if page else []
    links.append(f'<a href="{_e(path)}">ipynb</a>')
    if entry.get("sidecar"):
        links.append(f'<a href="{_e(entry["sidecar"])}">sidecar</a>')
    return " · ".join(links)


def target_label(entries: list[Mapping[str, Any]]) -> str:
    """The run's target kind, with the state its notebooks saw the proxy in when that is not live: a ``live``
    endpoint whose proxy refused its credentials reads ``live endpoint, proxy stale``."""
    kind = str(entries[0].get("target_kind") or "—") if entries else "—"
    states = {str(e["proxy_state"]) for e in entries if e.get("proxy_state")}
    seen = next((s for s in ("stale", "unreachable") if s in states), None)
    if seen is None:
        return kind
    return f"{kind} endpoint, proxy {seen}" if kind == "live" else f"{kind}, proxy {seen}"


def render_index_html(index: Mapping[str, Any], *, chain: str = "index.json") -> str:
    """The page for an index (``load_index``); ``chain``: where its hash chain is (shared storage: ``index.d/``,
    one index object per run)."""
    entries = [e for e in index.get("receipts", []) if isinstance(e, Mapping)]
    parts = ['<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>Smoke receipts</title>'
             f"<style>{_style()}</style></head><body><h1>Smoke receipts</h1>{_NOSCRIPT}"
             f'<p><small>{len(entries)} receipts; the chain is in <a href="{_e(chain)}">{_e(chain)}</a>; '
             "check it with <code>hermes-nb receipts verify &lt;this dir&gt;</code>.</small></p>"]
    for run_id, runs in _runs(entries):
        overall = worst_verdict(str(e.get("verdict")) for e in runs)
        first = runs[0]
        total = sum(float(e.get("duration_s") or 0.0) for e in runs)
        longest = max(float(e.get("duration_s") or 0.0) for e in runs)
        provider = next((e.get("provider") for e in runs if e.get("provider")), "—")
        edge = edge_colour(tone_of(overall) or "muted")
        parts.append(
            f'<section class="run" id="{_e(run_id)}" style="--c:{edge}">'
            f"<h2>{_verdict(overall)} · run {_e(run_id)}</h2>"
            f"<p><small>started {_e(first.get('started_at'))} · target {_e(target_label(runs))} "
            f"{_e(first.get('endpoint'))} · provider {_e(provider)}"
            f" · model {_e(first.get('model'))} · "
            f"notebooks {len(runs)}, longest {longest:.3f} s, sum {total:.3f} s</small></p>"
            "<table><tr><th>notebook</th><th>verdict</th><th>reason · operator action</th><th>duration</th>"
            "<th>links</th></tr>")
        for e in runs:
            duration = e.get("duration_s")
            shown = f"{float(duration):.3f} s" if isinstance(duration, (int, float)) else "—"
            why = _e(e.get("reason"))
            if e.get("operator_action"):
                why += f'<br><b>action:</b> {_e(e["operator_action"])}'
            parts.append(f'<tr class="receipt"><td>{_e(e.get("notebook"))}</td><td>{_verdict(e.get("verdict"))}</td>'
                         f'<td class="why">{why}</td><td>{shown}</td><td>{_links(e)}</td></tr>')
        parts.append("</table></section>")
    parts.append(f"<script>{_LINKS_SCRIPT}</script></body></html>\n")
    return "".join(parts)


def write_index_html(directory: Path, *, redactor: Redactor | None = None) -> Path:
    """(Re)write ``directory/index.html`` from ``directory/index.json`` (scanned for secrets first)."""
    directory = Path(directory)
    text = render_index_html(load_index(directory))
    check_clean("index.html", text, redactor or Redactor())
    path = directory / "index.html"
    write_atomic(path, text)
    return path
