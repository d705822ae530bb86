"""Rich HTML tables for results: pure functions returning HTML strings.

Used by the notebooks' setup cells (``HTML(show.kv_table(...))``) and the verdict cell; the results
themselves display through their own ``_repr_html_`` (:mod:`hermes_nb.views.reprs`). The markup, colours
and table style are :mod:`hermes_nb.views.htmlkit`'s (one toolkit for every face). Every string goes
through a :class:`Redactor` (shapes at least) and :func:`html.escape`. Durations are always written
``<n.nnn> s`` so the nbval sanitize file can normalise them.
"""

from __future__ import annotations

import dataclasses
import html
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from hermes_nb.core.redaction import Redactor
from hermes_nb.views.htmlkit import badge, details, kv_html, raw, table_html

__all__ = [
    "to_data",
    "fmt",
    "kv_table",
    "rows_table",
    "list_block",
    "check_html",
    "wire_report_html",
    "drift_html",
    "upstream_differences_html",
    "outcome_html",
    "run_html",
    "verdict_html",
]

def to_data(obj: Any) -> Any:
    """pydantic model / dataclass / mapping / sequence → JSON-like data."""
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_data(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, Mapping):
        return {str(k): to_data(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [to_data(v) for v in obj]
    return str(obj)


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name, default)
    return getattr(obj, name, default)


def fmt(value: Any, *, key: str = "", redactor: Redactor | None = None) -> str:
    """One value as escaped HTML text (durations as ``n.nnn s``, JSON for structures)."""
    red = redactor or Redactor()
    if value is None:
        text = "—"
    elif isinstance(value, bool):
        text = "yes" if value else "no"
    elif isinstance(value, float) and (key.endswith("_s") or key in ("duration", "elapsed")):
        text = f"{value:.3f} s"
    elif isinstance(value, (dict, list)):
        text = json.dumps(to_data(value), sort_keys=True, ensure_ascii=False)
    else:
        text = str(value)
    return html.escape(red.text(text))


def kv_table(data: Mapping[str, Any] | Any, *, title: str | None = None, keys: Sequence[str] | None = None,
             redactor: Redactor | None = None, badges: Iterable[str] = ("status", "state", "verdict")) -> str:
    """A two-column key/value table."""
    mapping = to_data(data) if not isinstance(data, Mapping) else dict(data)
    if not isinstance(mapping, Mapping):
        mapping = {"value": mapping}
    badge_keys = set(badges)
    pairs = [(key, raw(_value(mapping[key], key, key in badge_keys, redactor)))
             for key in (keys if keys is not None else list(mapping)) if key in mapping]
    return kv_html(pairs, badges=(), title=title)


def _value(value: Any, key: str, marked: bool, redactor: Redactor | None) -> str:
    if marked and value is not None:
        return badge(str(value))
    return fmt(value, key=key, redactor=redactor)


def rows_table(rows: Sequence[Mapping[str, Any]], *, columns: Sequence[str] | None = None,
               title: str | None = None, redactor: Redactor | None = None) -> str:
    """A table with one row per mapping (columns: the given ones, else the union in order)."""
    items = [to_data(r) for r in rows]
    cols: list[str] = list(columns) if columns is not None else []
    if columns is None:
        for item in items:
            for key in item:
                if key not in cols:
                    cols.append(key)
    shown = [{c: raw(_value(item.get(c), c, c in ("status", "verdict"), redactor)) for c in cols} for item in items]
    return table_html(shown, cols, badges=(), title=title)


def list_block(title: str, items: Sequence[Any], *, redactor: Redactor | None = None) -> str:
    """A titled bullet list; empty string when there is nothing to show."""
    if not items:
        return ""
    lis = "".join(f"<li>{fmt(i, redactor=redactor)}</li>" for i in items)
    return f"<p><b>{html.escape(title)}</b></p><ul>{lis}</ul>"


def check_html(result: Any, *, redactor: Redactor | None = None) -> str:
    """An adapter-check result (``CheckResult``)."""
    data = to_data(result)
    keys = ["state", "available", "endpoint", "hermes_version", "hint"]
    models = data.get("models") or []
    out = kv_table(data, title="adapter check", keys=keys, redactor=redactor)
    out += rows_table([{"model": m} if isinstance(m, str) else m for m in models], title="models",
                      redactor=redactor)
    out += list_block("errors", data.get("errors") or [], redactor=redactor)
    out += list_block("warnings", data.get("warnings") or [], redactor=redactor)
    return out


def drift_html(drifts: Sequence[Any], *, redactor: Redactor | None = None) -> str:
    items = [to_data(d) for d in drifts]
    if not items:
        return "<p><b>drift</b>: none — the proxy matches the recorded wire contract.</p>"
    rows = [d if isinstance(d, Mapping) else {"drift": d} for d in items]
    return rows_table(rows, title="drift from the wire contract", redactor=redactor)


def upstream_differences_html(diffs: Sequence[Any], *, redactor: Redactor | None = None) -> str:
    """Differences on upstream-owned fields: information about what answers behind the proxy, never drift."""
    items = [to_data(d) for d in diffs]
    if not items:
        return "<p><b>upstream differences</b>: none.</p>"
    rows = [d if isinstance(d, Mapping) else {"difference": d} for d in items]
    return details(f"upstream differences: {len(items)} (information: the upstream owns these fields, never drift)",
                   rows_table(rows, redactor=redactor))


def wire_report_html(report: Any, *, redactor: Redactor | None = None) -> str:
    """A wire-format spike report (``WireReport``): headline facts, routes, drift."""
    data = to_data(report)
    scalars = {k: v for k, v in data.items() if not isinstance(v, (dict, list))}
    out = kv_table(scalars, title="wire-format report", redactor=redactor)
    routes = data.get("routes")
    if isinstance(routes, Mapping):
        routes = [{"route": k, **(v if isinstance(v, Mapping) else {"result": v})} for k, v in routes.items()]
    if routes:
        out += rows_table(routes, title="routes", redactor=redactor)
    shape = data.get("stream_failure_shape")
    if isinstance(shape, (Mapping, list)):
        out += kv_table(shape if isinstance(shape, Mapping) else {"shape": shape},
                        title="stream failure shape", redactor=redactor)
    if "drift" in data:
        out += drift_html(data.get("drift") or [], redactor=redactor)
    return out


def outcome_html(outcome: Any, *, redactor: Redactor | None = None) -> str:
    """A classified exchange (``Outcome``)."""
    data = to_data(outcome)
    keys = ["status", "reason", "http_status", "error_type", "retry_after_s", "hint", "final_message"]
    out = kv_table(data, title="outcome", keys=keys, redactor=redactor)
    out += list_block("errors", data.get("errors") or [], redactor=redactor)
    out += list_block("warnings", data.get("warnings") or [], redactor=redactor)
    return out


def run_html(run_result: Any, *, artifacts: Mapping[str, str] | None = None,
             stdout: str | None = None, redactor: Redactor | None = None) -> str:
    """A mission run (``RunResult``): the runtime result, final message, stdout, artifact digests."""
    result = to_data(_get(run_result, "result")) or {}
    outcome = _get(run_result, "outcome")
    head = {
        "status": result.get("status"),
        "exit_code": _get(run_result, "exit_code"),
        "mission_id": result.get("mission_id"),
        "runtime": result.get("runtime"),
    }
    out = kv_table(head, title="runtime result", redactor=redactor)
    if outcome is not None:
        out += outcome_html(outcome, redactor=redactor)
    out += list_block("errors", result.get("errors") or [], redactor=redactor)
    if stdout is not None:
        out += f"<p><b>assistant text (stdout)</b></p><pre>{fmt(stdout, redactor=redactor)}</pre>"
    if artifacts:
        # the digests themselves (the nbval sanitize rules turn 64-hex digests into <sha256>)
        out += rows_table([{"artifact": k, "sha256": v} for k, v in artifacts.items()],
                          title="run artifacts", redactor=redactor)
    return out


def verdict_html(summary: Mapping[str, Any], *, redactor: Redactor | None = None) -> str:
    """The verdict cell's human view: stable fields only (no digests, no timings)."""
    from hermes_nb.receipts.verdict import operator_action

    keys = ["job", "verdict", "reason", "target", "endpoint", "model"]
    shown = dict(summary)
    if summary.get("verdict") == "blocked":  # an expected outcome: what to do about it, not a traceback
        shown["operator action"] = operator_action(summary)
        keys.append("operator action")
    out = kv_table(shown, title="verdict", keys=keys, redactor=redactor)
    out += list_block("errors", list(summary.get("errors") or []), redactor=redactor)
    return out
