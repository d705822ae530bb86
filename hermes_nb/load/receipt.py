"""``hermes-nb load`` as one call, its receipt (``--out``: the shipped ``load`` notebook executed on the report and its
samples, recomputing every figure) and the notebook's cells."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes_nb.core.config import HermesProxyRuntimeConfig
from hermes_nb.core.facts import LOAD_NOTEBOOK, exit_code_for, worst_verdict
from hermes_nb.core.io import sha256_file
from hermes_nb.core.resolve import resolve_runtime_config
from hermes_nb.load.report import EVIDENCE, REPORT_FILE, SAMPLES_JSONL, LoadReport, compute, read_samples, sample_files
from hermes_nb.load.run import run_load
from hermes_nb.load.spec import LoadSpec
from hermes_nb.load.views import report_text
from hermes_nb.nbrun.smoke import SmokeResult, run_smoke
from hermes_nb.receipts.store import RemoteStore, is_url
from hermes_nb.receipts.verdict import verdict_summary
from hermes_nb.target import UNKNOWN, Target

__all__ = ["LoadRun", "load", "keep", "read", "measure_or_read", "summary"]  # the CLI's and the notebook's calls


@dataclass
class LoadRun:
    """What ``hermes-nb load`` prints: the report, and the receipt run that keeps it (with ``--out``)."""

    report: LoadReport
    receipt: SmokeResult | None = None

    @property
    def exit_code(self) -> int:
        receipt = [] if self.receipt is None else [self.receipt.runs[0].verdict if self.receipt.runs else "failed"]
        return exit_code_for(worst_verdict([self.report.verdict, *receipt]))

    def text(self) -> str:
        kept = self.to_dict().get("receipt")
        return report_text(self.report) + (f"\nreceipt: {kept['verdict']} ({kept['reason']})  {kept['path']}"
                                           if kept else "")

    def to_dict(self) -> dict[str, Any]:
        """The report (``--json``), plus where its receipt went and that receipt's verdict."""
        document = self.report.model_dump(mode="json")
        if self.receipt is not None:
            run = self.receipt.runs[0] if self.receipt.runs else None
            document["receipt"] = {"path": str(run.receipt_path) if run and run.receipt_path else None,
                                   "verdict": run.verdict if run else None, "reason": run.reason if run else None,
                                   "run_id": self.receipt.run_id, "out_dir": str(self.receipt.out_dir)}
        return {**document, "exit_code": self.exit_code}


def load(spec: LoadSpec, config: HermesProxyRuntimeConfig | None = None, *,
         progress: Callable[[str], None] | None = None, environ: Mapping[str, str] | None = None) -> LoadRun:
    """Measure, then (``spec.out``) keep the receipt; shared storage is checked first."""
    if spec.out and is_url(spec.out):
        RemoteStore(spec.out).check()
    report = run_load(config, spec=spec, progress=progress, environ=environ)
    if spec.out is None:
        return LoadRun(report)
    secrets = (config or resolve_runtime_config(environ=environ)).secrets()
    return LoadRun(report, keep(report, spec.out, html=spec.html, secrets=secrets, progress=progress))


def keep(report: LoadReport, out: str, *, html: bool = True, secrets: list[str] | None = None,
         progress: Callable[[str], None] | None = None, timeout_s: float = 300.0) -> SmokeResult:
    """The receipt of ``report`` under ``out`` (a directory or a storage URL): the load notebook, executed."""
    store = RemoteStore(out) if is_url(out) else None
    target = Target(endpoint=report.endpoint, kind=report.target.kind, release=report.target.release or UNKNOWN,
                    evidence=report.target.evidence, provider=report.target.provider,
                    executable=report.target.executable)
    config = resolve_runtime_config(environ={}, endpoint=report.endpoint, model=report.model)
    with tempfile.TemporaryDirectory(prefix="hermes-nb-load-") as work:
        for name, text in sample_files(report.samples).items():
            (Path(work) / name).write_text(text, encoding="utf-8")
        (Path(work) / REPORT_FILE).write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
        staging = Path(work) / "staging" if store is not None else Path(out)
        if progress is not None:
            progress(f"writing the load receipt ({LOAD_NOTEBOOK} notebook)")
        result = run_smoke(target, config, out_dir=staging, only=[LOAD_NOTEBOOK], timeout_s=timeout_s, html=html,
                           progress=progress, secrets=list(secrets or []),
                           parameters={LOAD_NOTEBOOK: {"report": str(Path(work) / REPORT_FILE)}})
        if store is not None:
            store.publish(staging, result.run_id)
            for r in result.runs:
                r.receipt_path = store.locate(r.receipt_path, staging=staging) if r.receipt_path else None
            result.out_dir = store.url
    return result


def read(path: str | Path) -> LoadReport:
    """The report at ``path`` with every figure recomputed from the samples beside it (``load-samples.jsonl``)."""
    path = Path(path)
    report = LoadReport.model_validate_json(path.read_text(encoding="utf-8"))
    return compute(report, read_samples((path.parent / SAMPLES_JSONL).read_text(encoding="utf-8")))


def measure_or_read(spec: LoadSpec) -> LoadReport:
    """The notebook's measurement: the report ``hermes-nb load --out`` handed over, or (no ``report``) one here."""
    return read(spec.report) if spec.report else run_load(spec=spec)


def summary(result: LoadReport, report: str | None = None) -> dict[str, Any]:
    """The load receipt's verdict: the report's, its figures in the details, the digests of the files handed over."""
    folder = Path(report).parent if report else None
    return verdict_summary(
        LOAD_NOTEBOOK, result.verdict, reason=result.reason, errors=list(result.errors),
        warnings=list(result.warnings), endpoint=result.endpoint, model=result.model, target=result.target.kind,
        hermes_version=result.target.release, artifacts={name: sha256_file(folder / name) for name in EVIDENCE}
        if folder else {}, run_dir=str(folder) if folder else None,
        details={"load": result.model_dump(mode="json"), "measured_s": result.duration_s,
                 "requests": len(result.samples)})
