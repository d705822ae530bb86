"""The smoke result's rich display: the run's verdict, each notebook's verdict and duration, where the receipts are.

Built from :meth:`hermes_nb.nbrun.smoke.SmokeResult.to_dict` (the ``--json`` object) with the blocks of
:mod:`hermes_nb.views.htmlkit`: allow-listed fields, secret shapes masked, verdicts in colour.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hermes_nb.core.redaction import Redactor
from hermes_nb.views.htmlkit import box, kv_html, seconds, table_html

__all__ = ["smoke_html", "smoke_text"]


def smoke_text(data: Mapping[str, Any]) -> str:
    runs = ", ".join(f"{r.get('notebook')} {r.get('verdict')}" for r in data.get("receipts") or [])
    return Redactor().text(f"SmokeResult({data.get('verdict')}, run {data.get('run_id')}, "
                           f"target {data.get('target_kind')} {data.get('endpoint')}"
                           + (f", provider {data['provider']}" if data.get("provider") else "") + ", "
                           f"{data.get('duration_s', 0.0):.3f} s: {runs})")


def smoke_html(data: Mapping[str, Any]) -> str:
    head = kv_html([("verdict", data.get("verdict")), ("run id", data.get("run_id")),
                    ("target", data.get("target_kind")), ("provider", data.get("provider")),
                    ("endpoint", data.get("endpoint")),
                    ("duration", seconds(data.get("duration_s"))), ("receipts in", data.get("out_dir"))],
                   badges=("verdict",))
    rows = [{"notebook": r.get("notebook"), "verdict": r.get("verdict"), "reason": r.get("reason"),
             "duration": seconds(r.get("duration_s")), "receipt": r.get("path")}
            for r in data.get("receipts") or []]
    return box("smoke", data.get("verdict"), head,
               table_html(rows, ("notebook", "verdict", "reason", "duration", "receipt"), badges=("verdict",)))
