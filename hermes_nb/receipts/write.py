"""One receipt under ``DIR/<UTC date>/<run id>/``: the executed notebook redacted and stamped (``metadata.receipt``),
its HTML page (rendered here: nbconvert took ~2 s), copies of the run's artifacts and the sidecar with the sha256 of
``metadata.receipt`` and every file. Nothing is written before it is redacted and scanned."""

from __future__ import annotations

import base64
import contextlib
import html
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat

from hermes_nb.core.errors import ArtifactError, SecretLeak
from hermes_nb.core.io import json_digest, sha256_file, write_atomic
from hermes_nb.core.records import Usage
from hermes_nb.core.redaction import Redactor
from hermes_nb.receipts.verdict import find_verdict
from hermes_nb.views.htmlkit import BORDER, badge, edge_colour, markdown_html, page_css, timeline_svg

RECEIPT_SCHEMA = "hermes-nb.receipt.v1"
SIDECAR_SUFFIX = ".receipt.json"


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_KEYS = ("notebook", "verdict", "status", "reason", "operator_action", "target_kind", "proxy_state", "endpoint",
         "model", "run_id", "started_at", "duration_s", "hermes_nb_version", "hermes_agent_version",
         "papermill_version", "nbclient_version")
#: header rows shown only when the receipt has a value (a passed receipt has no operator action)
_OPTIONAL = ("operator_action", "proxy_state")
_STYLE = "\n".join((
    ".out table,table.receipt{display:block;overflow-x:auto;max-width:100%}",
    ".out td,table.receipt td{overflow-wrap:anywhere}",
    ".timeline{margin:.6em 0}.timeline svg{max-width:100%;height:auto}",
    "code.digest{font-size:.85em;overflow-wrap:anywhere}",
    f".cell{{margin:1em 0}}.src{{border-left:3px solid {edge_colour('accent')}}}"
    f".out{{border-left:3px solid {BORDER};padding-left:.6em}}",
    f".err pre{{background:color-mix(in srgb,{edge_colour('bad')} 15%,transparent)}}"
    f".stderr pre{{background:color-mix(in srgb,{edge_colour('warn')} 15%,transparent)}}"))


def _text(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _output(out: Any) -> str:
    kind, data = out.get("output_type"), out.get("data", {})
    if kind == "stream":
        cls = "stderr" if out.get("name") == "stderr" else "stdout"
        return f'<div class="out {cls}"><pre>{html.escape(_ANSI.sub("", _text(out.get("text", ""))))}</pre></div>'
    if kind == "error":
        trace = "\n".join(_ANSI.sub("", line) for line in out.get("traceback", []))
        trace = trace or f"{out.get('ename', '')}: {out.get('evalue', '')}"
        return f'<div class="out err"><pre>{html.escape(trace)}</pre></div>'
    if "text/html" in data:
        return f'<div class="out">{_text(data["text/html"])}</div>'
    for mime in ("image/png", "image/jpeg"):
        if mime in data:
            return f'<div class="out"><img src="data:{mime};base64,{_text(data[mime]).strip()}"></div>'
    if "image/svg+xml" in data:
        svg = base64.b64encode(_text(data["image/svg+xml"]).encode("utf-8")).decode("ascii")
        alt = html.escape(_text(data.get("text/plain", "")), quote=True)
        return f'<div class="out"><img src="data:image/svg+xml;base64,{svg}" alt="{alt}" style="max-width:100%"></div>'
    if "text/plain" in data:
        return f'<div class="out"><pre>{html.escape(_text(data["text/plain"]))}</pre></div>'
    return ""


def _receipt_table(receipt: dict[str, Any], details: dict[str, Any]) -> str:
    shown = dict(receipt)
    if "hermes_agent_version" in shown and not shown["hermes_agent_version"]:  # never a bare "None"
        emulated = receipt.get("target_kind") == "emulator"
        shown["hermes_agent_version"] = "none: the embedded emulator" if emulated else "unknown"
    rows = "".join(f"<tr><th>{k}</th><td>{badge(v) if k == 'verdict' else html.escape(str(v))}</td></tr>"
                   for k, v in ((k, shown.get(k)) for k in _KEYS if k in shown)
                   if v is not None or k not in _OPTIONAL)
    if "usage" in details:  # e2e receipts: the runtime result's usage and the stream's timing
        doc, marks = details["usage"], details.get("timeline")
        marks = marks if isinstance(marks, dict) else {}
        output_s = Usage.output_seconds(*(v if isinstance(v, (int, float)) else None for v in (
            marks.get("first_delta_s"), marks.get("last_byte_s"), marks.get("total_s"))))
        line = Usage.from_mapping(doc, source=doc.get("source") if isinstance(doc, dict) else None,
                                  output_s=output_s).line()
        rows += f"<tr><th>usage</th><td>{html.escape(line)}</td></tr>"
    digests = list((receipt.get("artifacts") or {}).items())
    template = receipt.get("template")
    if isinstance(template, dict) and template.get("sha256"):
        digests.append((f"template {template.get('path', '')}".strip(), template["sha256"]))
    if receipt.get("parameters_sha256"):
        digests.append(("parameters", receipt["parameters_sha256"]))
    raw = {k: receipt[k] for k in ("errors", "template", "parameters", "parameters_sha256", "environment",
                                   "artifacts") if k in receipt}
    page = f'<h2>Receipt</h2><table class="receipt">{rows}</table>'
    if digests:
        page += '<h3>Digests (sha256)</h3><table class="receipt digests">' + "".join(
            f'<tr><th>{html.escape(str(n))}</th><td><code class="digest">{html.escape(str(d))}</code></td></tr>'
            for n, d in digests) + "</table>"
    page += (f"<details><summary>provenance</summary>"
             f"<pre>{html.escape(json.dumps(raw, indent=2, sort_keys=True, ensure_ascii=False))}</pre></details>")
    if isinstance(details.get("timeline"), dict):  # run and probe receipts
        page += (f'<h3>Stream timeline</h3><div class="timeline">{timeline_svg(details["timeline"], width=900)}</div>'
                 "<p><small>request sent at 0 s; headers, first delta, each delta (blue ticks), last byte; "
                 "shaded: idle gaps.</small></p>")
    return page


def render_html(nb: Any) -> str:
    receipt = dict(nb.get("metadata", {}).get("receipt") or {})
    parts = [f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>'
             f'{html.escape(str(receipt.get("notebook", "notebook")))} receipt</title>'
             f"<style>{page_css()}\n{_STYLE}</style></head><body>"]
    if receipt:
        summary = receipt.get("summary") if isinstance(receipt.get("summary"), dict) else find_verdict(nb)
        details = (summary or {}).get("details")
        parts.append(_receipt_table(receipt, details if isinstance(details, dict) else {}))
    for cell in nb.get("cells", []):
        source = _text(cell.get("source", ""))
        if cell.get("cell_type") == "markdown":
            parts.append(f'<div class="cell md">{markdown_html(source)}</div>')
        elif cell.get("cell_type") == "code":
            tags = cell.get("metadata", {}).get("tags", [])
            label = f' <small>[{html.escape(", ".join(tags))}]</small>' if tags else ""
            count = cell.get("execution_count")
            parts.append(f'<div class="cell code"><small>In [{count if count is not None else " "}]</small>{label}'
                         f'<div class="src"><pre>{html.escape(source)}</pre></div>')
            parts += [_output(out) for out in cell.get("outputs", [])]
            parts.append("</div>")
    parts.append("</body></html>\n")
    return "\n".join(parts)


def receipt_digest(receipt: Mapping[str, Any]) -> str:
    return json_digest(dict(receipt))


def redact_notebook(nb: Any, redactor: Redactor) -> nbformat.NotebookNode:
    """Every string of the notebook redacted."""
    return nbformat.reads(json.dumps(redactor.data(json.loads(nbformat.writes(nb)))), as_version=4)


@dataclass
class ReceiptFiles:
    notebook: Path
    html: Path | None
    sidecar: Path
    receipt_sha256: str
    sidecar_sha256: str
    files: dict[str, str] = field(default_factory=dict)


def check_clean(label: str, text: str, redactor: Redactor) -> None:
    found = redactor.find(text)
    if found:
        raise SecretLeak(f"{label}: refusing to write: {', '.join(found)}")


def write_receipt(nb: Any, receipt_dir: Path, name: str, receipt: Mapping[str, Any], *,
                  redactor: Redactor, page: bool = False, artifacts: Mapping[str, Path] | None = None) -> ReceiptFiles:
    """Redact, stamp, scan, then write the notebook, its HTML ``page``, artifact copies and sidecar."""
    clean = redact_notebook(nb, redactor)
    meta = redactor.data(dict(receipt))
    clean.metadata["receipt"] = meta
    documents = {f"{name}.ipynb": nbformat.writes(clean)}
    if page:
        documents[f"{name}.html"] = render_html(clean)
    for art_name, src in (artifacts or {}).items():
        if Path(art_name).name != art_name:
            raise ArtifactError(f"artifact name {art_name!r} must be a plain file name")
        documents[f"artifacts/{name}/{art_name}"] = redactor.text(Path(src).read_text(encoding="utf-8",
                                                                                      errors="replace"))
    for rel, text in documents.items():
        check_clean(f"artifact {Path(rel).name}" if rel.startswith("artifacts/") else rel, text, redactor)
    receipt_dir.mkdir(parents=True, exist_ok=True)
    sidecar_path = receipt_dir / f"{name}{SIDECAR_SUFFIX}"
    files: dict[str, str] = {}
    try:  # a receipt is one unit: when one file cannot be written, the ones written before it go too
        for rel, text in documents.items():
            files[rel] = sha256_file(write_atomic(receipt_dir / rel, text))
        digest = receipt_digest(meta)
        sidecar = {"schema": RECEIPT_SCHEMA, "receipt": meta, "receipt_sha256": digest, "files": files}
        sidecar_text = json.dumps(sidecar, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        check_clean(f"{name}{SIDECAR_SUFFIX}", sidecar_text, redactor)
        write_atomic(sidecar_path, sidecar_text)
    except BaseException:
        for rel in files:
            with contextlib.suppress(OSError):
                (receipt_dir / rel).unlink()
        raise
    return ReceiptFiles(receipt_dir / f"{name}.ipynb", receipt_dir / f"{name}.html" if page else None,
                        sidecar_path, digest, sha256_file(sidecar_path), files)
