"""``hermes-nb load --out``: measure, then keep the evidence as a receipt like every other.

The measurement runs in this process (:func:`hermes_nb.proxy.load.run.run_load`), where Ctrl-C is owned: an
interrupted load still yields what it measured. The report is then written to a file and the shipped ``load``
notebook is executed on a fresh kernel through papermill with ``report`` set to that file (the smoke's runner,
:func:`hermes_nb.nbrun.smoke.run_smoke`, with only that notebook): it displays the report, its three pictures
and the verdict, and the receipt keeps a verified copy of the report (``artifacts/load/load-report.json``).
The receipt is redacted, digested, indexed in ``<out>/index.json`` and checked by ``hermes-nb receipts verify``
like the smoke's. ``out`` may be a storage URL (``s3://…``), as for the smoke.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes_nb.core.config import HermesProxyRuntimeConfig
from hermes_nb.core.facts import LOAD_NOTEBOOK
from hermes_nb.nbrun.smoke import SmokeResult, run_smoke
from hermes_nb.proxy.load.report import REPORT_FILE, LoadReport
from hermes_nb.proxy.load.run import run_load
from hermes_nb.receipts.store import is_url
from hermes_nb.target import Target, identify

__all__ = ["LoadRun", "load_with_receipt"]

@dataclass
class LoadRun:
    """The report and the receipt run that keeps it."""

    report: LoadReport
    receipt: SmokeResult

    def to_dict(self) -> dict[str, Any]:
        """The report, plus where its receipt went and that receipt's verdict."""
        run = self.receipt.runs[0] if self.receipt.runs else None
        return {**self.report.model_dump(mode="json"),
                "receipt": {"path": str(run.receipt_path) if run and run.receipt_path else None,
                            "verdict": run.verdict if run else None, "reason": run.reason if run else None,
                            "run_id": self.receipt.run_id, "out_dir": str(self.receipt.out_dir)}}


def load_with_receipt(target: HermesProxyRuntimeConfig | str | None = None, *, out: str | Path, html: bool = True,
                      timeout_s: float = 120.0, environ: Mapping[str, str] | None = None,
                      progress: Callable[[str], None] | None = None, **load: Any) -> LoadRun:
    """:func:`run_load` of ``target`` with ``load``'s arguments, then its receipt under ``out`` (a directory or
    a URL)."""
    from hermes_nb.core.resolve import resolve_runtime_config

    store = None
    if is_url(str(out)):  # shared storage: checked before anything is measured, published after
        from hermes_nb.receipts.store import open_store

        store = open_store(str(out))
        store.check()
    report = run_load(target, environ=environ, progress=progress, **load)
    config = target if isinstance(target, HermesProxyRuntimeConfig) else resolve_runtime_config(environ=environ)
    config = config.with_endpoint(report.endpoint, origin="argument")
    receipt_target = (Target(endpoint=report.endpoint, kind="emulator") if report.target_kind == "emulator"
                      else identify(config, ask_emulator=True))
    with tempfile.TemporaryDirectory(prefix="hermes-nb-load-") as work:
        report_path = Path(work) / REPORT_FILE
        report_path.write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
        staging = Path(work) / "staging" if store is not None else Path(out)
        params = {"endpoint": report.endpoint, "model": report.model, "report": str(report_path)}
        if progress is not None:
            progress(f"writing the load receipt ({LOAD_NOTEBOOK} notebook)")
        result = run_smoke(receipt_target, config, out_dir=staging, only=[LOAD_NOTEBOOK], timeout_s=timeout_s,
                           html=html, progress=progress, parameters={LOAD_NOTEBOOK: params})
        if store is not None:
            store.publish(staging, result.run_id)
            for r in result.runs:
                r.receipt_path = store.locate(r.receipt_path, staging=staging) if r.receipt_path else None
            result.out_dir = store.url
    return LoadRun(report, result)
