"""A small, fast HTML render of a receipt notebook (no nbconvert).

nbconvert's HTMLExporter costs ~2 s per smoke run on these machines
(imports, templates, preprocessors: benchmarks/smoke_bench.py), more than the
whole target. A receipt needs far less: a header with ``metadata.receipt``,
then each cell — markdown via mistune (already a dependency of nbconvert),
code escaped, outputs as Jupyter shows them (``text/html`` as is, images
inline — SVG as a ``data:`` image —, streams and tracebacks escaped with ANSI codes stripped).
"""

from __future__ import annotations

import base64
import html
import json
import re
from typing import Any

__all__ = ["render_html"]

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
#: header rows shown only when the receipt has a value (a passed receipt has no operator action)
OPTIONAL_ROWS = ("operator_action", "proxy_state")


def _style() -> str:
    """The toolkit's page stylesheet (theme variables, light and dark) plus the receipt's own parts."""
    from hermes_nb.views.htmlkit import BORDER, edge_colour, page_css

    return "\n".join((
        page_css(),
        ".out table,table.receipt{display:block;overflow-x:auto;max-width:100%}",
        ".out td,table.receipt td{overflow-wrap:anywhere}",
        ".timeline{margin:.6em 0}.timeline svg{max-width:100%;height:auto}",
        "code.digest{font-size:.85em;overflow-wrap:anywhere}",
        f".cell{{margin:1em 0}}.src{{border-left:3px solid {edge_colour('accent')}}}"
        f".out{{border-left:3px solid {BORDER};padding-left:.6em}}",
        f".err pre{{background:color-mix(in srgb,{edge_colour('bad')} 15%,transparent)}}"
        f".stderr pre{{background:color-mix(in srgb,{edge_colour('warn')} 15%,transparent)}}",
    ))


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _markdown(source: str) -> str:
    try:
        import mistune
    except ImportError:  # pragma: no cover - mistune ships with nbconvert
        return f"<pre>{html.escape(source)}</pre>"
    return str(mistune.html(source))


def _output(out: Any) -> str:
    kind = out.get("output_type")
    if kind == "stream":
        cls = "stderr" if out.get("name") == "stderr" else "stdout"
        return f'<div class="out {cls}"><pre>{html.escape(_ANSI.sub("", _text(out.get("text", ""))))}</pre></div>'
    if kind == "error":
        trace = "\n".join(_ANSI.sub("", line) for line in out.get("traceback", []))
        head = f"{out.get('ename', '')}: {out.get('evalue', '')}"
        return f'<div class="out err"><pre>{html.escape(trace or head)}</pre></div>'
    data = out.get("data", {})
    if "text/html" in data:
        return f'<div class="out">{_text(data["text/html"])}</div>'
    for mime in ("image/png", "image/jpeg"):
        if mime in data:
            return f'<div class="out"><img src="data:{mime};base64,{_text(data[mime]).strip()}"></div>'
    if "image/svg+xml" in data:  # an image, never inline markup: a picture cannot run script in the receipt
        svg = base64.b64encode(_text(data["image/svg+xml"]).encode("utf-8")).decode("ascii")
        alt = html.escape(_text(data.get("text/plain", "")), quote=True)
        return f'<div class="out"><img src="data:image/svg+xml;base64,{svg}" alt="{alt}" style="max-width:100%"></div>'
    if "text/plain" in data:
        return f'<div class="out"><pre>{html.escape(_text(data["text/plain"]))}</pre></div>'
    return ""


def _value(key: str, value: Any) -> str:
    from hermes_nb.views.htmlkit import badge

    return badge(value) if key == "verdict" else html.escape(str(value))


def _usage(summary: dict[str, Any] | None) -> str | None:
    """The run's token usage line (e2e receipts: the runtime result's usage and the stream's timing)."""
    from hermes_nb.core.records import Usage

    details = (summary or {}).get("details") or {}
    if not isinstance(details, dict) or "usage" not in details:
        return None
    doc = details.get("usage")
    timeline = details.get("timeline")
    marks = timeline if isinstance(timeline, dict) else {}
    nums = [v if isinstance(v, (int, float)) else None for v in (marks.get(k) for k in
                                                                  ("first_delta_s", "last_byte_s", "total_s"))]
    output_s = Usage.output_seconds(*nums)
    return Usage.from_mapping(doc, source=(doc or {}).get("source") if isinstance(doc, dict) else None,
                              output_s=output_s).line()


def _summary(nb: Any, receipt: dict[str, Any]) -> dict[str, Any] | None:
    from hermes_nb.receipts.verdict import find_verdict

    return receipt.get("summary") if isinstance(receipt.get("summary"), dict) else find_verdict(nb)


def _receipt_table(receipt: dict[str, Any], summary: dict[str, Any] | None = None) -> str:
    keys = ("notebook", "verdict", "status", "reason", "operator_action", "target_kind", "proxy_state", "endpoint",
            "model", "run_id", "started_at",
            "duration_s", "hermes_nb_version", "hermes_agent_version", "papermill_version", "nbclient_version")
    shown = dict(receipt)
    if "hermes_agent_version" in shown and not shown["hermes_agent_version"]:  # never a bare "None"
        shown["hermes_agent_version"] = ("none: the embedded emulator" if receipt.get("target_kind") == "emulator"
                                         else "unknown")
    rows = "".join(f"<tr><th>{html.escape(k)}</th><td>{_value(k, shown.get(k))}</td></tr>"
                   for k in keys if k in shown and (shown.get(k) is not None or k not in OPTIONAL_ROWS))
    usage = _usage(summary)
    if usage is not None:
        rows += f"<tr><th>usage</th><td>{html.escape(usage)}</td></tr>"
    raw = ("errors", "template", "parameters", "parameters_sha256", "environment", "artifacts")
    extra = {k: receipt[k] for k in raw if k in receipt}
    dump = html.escape(json.dumps(extra, indent=2, sort_keys=True, ensure_ascii=False))
    return (f'<h2>Receipt</h2><table class="receipt">{rows}</table>{_digests(receipt)}'
            f'<details><summary>provenance</summary><pre>{dump}</pre></details>')


def _digests(receipt: dict[str, Any]) -> str:
    """The run artifacts and the template with their sha256 (the digests themselves)."""
    rows = [(name, digest) for name, digest in (receipt.get("artifacts") or {}).items()]
    template = receipt.get("template")
    if isinstance(template, dict) and template.get("sha256"):
        rows.append((f"template {template.get('path', '')}".strip(), template["sha256"]))
    if receipt.get("parameters_sha256"):
        rows.append(("parameters", receipt["parameters_sha256"]))
    if not rows:
        return ""
    body = "".join(f'<tr><th>{html.escape(str(n))}</th><td><code class="digest">{html.escape(str(d))}</code></td></tr>'
                   for n, d in rows)
    return f'<h3>Digests (sha256)</h3><table class="receipt digests">{body}</table>'


def _timeline(summary: dict[str, Any] | None) -> str:
    """The stream timeline picture from the verdict's summary (run and probe receipts), else nothing."""
    from hermes_nb.views.timeline import timeline_svg

    details = (summary or {}).get("details") or {}
    marks = details.get("timeline") if isinstance(details, dict) else None
    if not isinstance(marks, dict):
        return ""
    return (f'<h3>Stream timeline</h3><div class="timeline">{timeline_svg(marks, width=900)}</div>'
            "<p><small>request sent at 0 s; headers, first delta, each delta (blue ticks), last byte; "
            "shaded: idle gaps.</small></p>")


def render_html(nb: Any) -> str:
    """The receipt notebook as one self-contained HTML page."""
    receipt = dict(nb.get("metadata", {}).get("receipt") or {})
    title = html.escape(str(receipt.get("notebook", "notebook")))
    parts = [f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{title} receipt</title>"
             f"<style>{_style()}</style></head><body>"]
    if receipt:
        summary = _summary(nb, receipt)
        parts.append(_receipt_table(receipt, summary))
        parts.append(_timeline(summary))
    for cell in nb.get("cells", []):
        source = _text(cell.get("source", ""))
        if cell.get("cell_type") == "markdown":
            parts.append(f'<div class="cell md">{_markdown(source)}</div>')
        elif cell.get("cell_type") == "code":
            tags = cell.get("metadata", {}).get("tags", [])
            label = f' <small>[{html.escape(", ".join(tags))}]</small>' if tags else ""
            count = cell.get("execution_count")
            parts.append(f'<div class="cell code"><small>In [{count if count is not None else " "}]</small>{label}'
                         f'<div class="src"><pre>{html.escape(source)}</pre></div>')
            parts.extend(_output(out) for out in cell.get("outputs", []))
            parts.append("</div>")
    parts.append("</body></html>\n")
    return "\n".join(parts)
