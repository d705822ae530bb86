"""The receipts index: ``DIR/index.json``, ``DIR/README.md`` and ``DIR/index.html``. Each entry names the sha256 of
the one before (``prev_sha256``): removing, editing or reordering an earlier entry breaks the chain."""

from __future__ import annotations

import fcntl
import html
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from hermes_nb.core.errors import ArtifactError
from hermes_nb.core.facts import worst_verdict
from hermes_nb.core.io import json_digest, write_atomic
from hermes_nb.core.redaction import Redactor
from hermes_nb.receipts.write import ReceiptFiles, check_clean
from hermes_nb.views.htmlkit import BORDER, badge, edge_colour, page_css, tone_of

INDEX_SCHEMA = "hermes-nb.receipts-index.v1"
#: index fields that must equal the receipt's own (metadata.receipt) values
INDEXED_FIELDS = ("run_id", "notebook", "verdict", "target_kind", "endpoint", "model", "started_at", "duration_s")
#: indexed later: an entry written before has none of them; one that has them must match
LATER_FIELDS = ("reason", "operator_action", "proxy_state", "provider")
#: JupyterLab's HTML viewer serves the page with ``?_xsrf=…``; relative links lose it (403): this carries it over
_LINKS_SCRIPT = """(function(){var b=new URL(document.baseURI),x=b.searchParams.get('_xsrf');if(!x)return;
document.querySelectorAll('a[href]').forEach(function(a){var h=a.getAttribute('href');
if(/^([a-z][a-z0-9+.-]*:|\\/\\/|#)/i.test(h))return;var u=new URL(h,b);
if(u.origin!==b.origin)return;u.searchParams.set('_xsrf',x);a.href=u.href;});})();"""
_NOSCRIPT = ("<noscript><p class=\"note\">Opened in JupyterLab? Its HTML viewer runs no script until you press "
             "<b>Trust HTML</b> in its toolbar; the receipt links need it there (or use <i>Open in New Browser "
             "Tab</i>).</p></noscript>")


def parse_index(text: str | bytes, where: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ArtifactError(f"{where}: not valid JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("receipts"), list) \
            or data.get("schema", INDEX_SCHEMA) != INDEX_SCHEMA:
        raise ArtifactError(f"{where}: not a receipts index")
    return data


def load_index(directory: Path) -> dict[str, Any]:
    path = Path(directory) / "index.json"
    if not path.is_file():
        return {"schema": INDEX_SCHEMA, "receipts": []}
    return parse_index(path.read_bytes(), str(path))  # (bytes that are not UTF-8: not valid JSON)


def index_entry(directory: Path, files: ReceiptFiles, receipt: Mapping[str, Any]) -> dict[str, Any]:
    return {
        **{key: receipt.get(key) for key in (*INDEXED_FIELDS, *LATER_FIELDS)},
        "path": files.notebook.relative_to(directory).as_posix(),
        "html": files.html.relative_to(directory).as_posix() if files.html is not None else None,
        "sidecar": files.sidecar.relative_to(directory).as_posix(),
        "sidecar_sha256": files.sidecar_sha256,
        "receipt_sha256": files.receipt_sha256,
    }


def entry_digest(entries: list[Any]) -> str | None:
    return json_digest(entries[-1]) if entries else None


def append_index(directory: Path, entries: Iterable[Mapping[str, Any]], *, redactor: Redactor) -> Path:
    """Append entries to ``index.json`` (each naming the digest of the one before) and rewrite ``README.md``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(directory, os.O_RDONLY)  # locked itself: no lock file in a tree meant to be committed
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        index = load_index(directory)
        for e in entries:
            index["receipts"].append({**redactor.data(dict(e)), "prev_sha256": entry_digest(index["receipts"])})
        text = json.dumps(index, indent=2, ensure_ascii=False) + "\n"
        check_clean("index.json", text, redactor)
        write_atomic(directory / "index.json", text)
        write_atomic(directory / "README.md", render_readme(index))
    finally:
        os.close(fd)  # releases the lock
    return directory / "index.json"


def _page(entry: Mapping[str, Any]) -> str:
    path = str(entry.get("path") or "")
    if "html" in entry:
        return str(entry["html"] or "")
    return path[: -len(".ipynb")] + ".html" if path.endswith(".ipynb") else path


def render_readme(index: Mapping[str, Any]) -> str:
    lines = [
        "# Smoke receipts",
        "",
        "Written by `hermes-nb smoke`; check with `hermes-nb receipts verify <this dir>`.",
        "Newest first. Each receipt: the executed notebook, its HTML render and a JSON sidecar with digests.",
        "",
        "| started (UTC) | run id | notebook | verdict | target | provider | model | endpoint | receipt |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for e in reversed(index.get("receipts", [])):
        cells = [e.get(k) for k in ("started_at", "run_id", "notebook", "verdict", "target_kind", "provider", "model",
                                    "endpoint")]
        text = " | ".join(str(c if c is not None else "—").replace("|", "\\|") for c in cells)
        page = _page(e)
        lines.append(f"| {text} | [ipynb]({e.get('path', '')})" + (f" · [html]({page})" if page else "") + " |")
    return "\n".join(lines) + "\n"


def _e(value: Any) -> str:
    return html.escape("—" if value is None else str(value))


def _verdict(word: Any) -> str:
    return f'<span class="v">{badge("—" if word is None else str(word))}</span>'


def target_label(entries: list[Mapping[str, Any]]) -> str:
    """The run's target kind, with the proxy's state when not live (``live endpoint, proxy stale``)."""
    kind = str(entries[0].get("target_kind") or "—") if entries else "—"
    states = {str(e["proxy_state"]) for e in entries if e.get("proxy_state")}
    seen = next((s for s in ("stale", "unreachable") if s in states), None)
    if seen is None:
        return kind
    return f"{kind} endpoint, proxy {seen}" if kind == "live" else f"{kind}, proxy {seen}"


def render_index_html(index: Mapping[str, Any], *, chain: str = "index.json") -> str:
    """The page of an index; ``chain``: where its hash chain is (shared storage: ``index.d/``)."""
    entries = [e for e in index.get("receipts", []) if isinstance(e, Mapping)]
    runs: dict[str, list[Mapping[str, Any]]] = {}
    for entry in entries:
        runs.setdefault(str(entry.get("run_id")), []).append(entry)
    style = (f"{page_css()}\nsection{{border-left:4px solid var(--c);padding:.2em .8em;margin:1.2em 0}}"
             f"\ntable{{display:block;overflow-x:auto;max-width:100%}}\n.note{{border:1px solid {BORDER};"
             "padding:.3em .6em}")
    parts = ['<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>Smoke receipts</title>'
             f"<style>{style}</style></head><body><h1>Smoke receipts</h1>{_NOSCRIPT}"
             f'<p><small>{len(entries)} receipts; the chain is in <a href="{_e(chain)}">{_e(chain)}</a>; '
             "check it with <code>hermes-nb receipts verify &lt;this dir&gt;</code>.</small></p>"]
    for run_id, group in reversed(runs.items()):  # newest run first
        overall = worst_verdict(str(e.get("verdict")) for e in group)
        first = group[0]
        durations = [float(e.get("duration_s") or 0.0) for e in group]
        provider = next((e.get("provider") for e in group if e.get("provider")), "—")
        parts.append(
            f'<section class="run" id="{_e(run_id)}" style="--c:{edge_colour(tone_of(overall) or "muted")}">'
            f"<h2>{_verdict(overall)} · run {_e(run_id)}</h2>"
            f"<p><small>started {_e(first.get('started_at'))} · target {_e(target_label(group))} "
            f"{_e(first.get('endpoint'))} · provider {_e(provider)} · model {_e(first.get('model'))} · "
            f"notebooks {len(group)}, longest {max(durations):.3f} s, sum {sum(durations):.3f} s</small></p>"
            "<table><tr><th>notebook</th><th>verdict</th><th>reason · operator action</th><th>duration</th>"
            "<th>links</th></tr>")
        for e in group:
            duration = e.get("duration_s")
            shown = f"{float(duration):.3f} s" if isinstance(duration, (int, float)) else "—"
            why = _e(e.get("reason")) + (f'<br><b>action:</b> {_e(e["operator_action"])}'
                                         if e.get("operator_action") else "")
            links = [f'<a href="{_e(_page(e))}">receipt</a>'] if _page(e) else []
            links.append(f'<a href="{_e(e.get("path") or "")}">ipynb</a>')
            if e.get("sidecar"):
                links.append(f'<a href="{_e(e["sidecar"])}">sidecar</a>')
            parts.append(f'<tr class="receipt"><td>{_e(e.get("notebook"))}</td><td>{_verdict(e.get("verdict"))}</td>'
                         f'<td class="why">{why}</td><td>{shown}</td><td>{" · ".join(links)}</td></tr>')
        parts.append("</table></section>")
    parts.append(f"<script>{_LINKS_SCRIPT}</script></body></html>\n")
    return "".join(parts)


def write_index_html(directory: Path, *, redactor: Redactor | None = None) -> Path:
    text = render_index_html(load_index(Path(directory)))
    check_clean("index.html", text, redactor or Redactor())
    return write_atomic(Path(directory) / "index.html", text)
