"""The load report: what was measured, at which target, and the verdict (pure; no view is imported here: the
text, the HTML and the pictures are :mod:`hermes_nb.load.views`, which registers them with IPython).

:func:`compute` is the only way figures are made: from the raw samples (:mod:`hermes_nb.load.samples`) and what
samples cannot say (each level's overhead, what stopped it, how many were cancelled). The run calls it once; the
receipt's notebook calls it again on the receipt's own sample files, so the figures shown are recomputed from the
evidence kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field, PrivateAttr

from hermes_nb.core.model import StrictModel
from hermes_nb.core.providers import start_hint
from hermes_nb.core.records import Status
from hermes_nb.load.metrics import ERROR_CLASSES, AddedLatency, LevelResult, added_latency, level_result
from hermes_nb.load.samples import Sample

__all__ = ["LOAD_SCHEMA", "REPORT_FILE", "TargetInfo", "RateLimit", "LoadReport", "compute", "judge"]

LOAD_SCHEMA = "hermes-nb.load.v2"
#: the report as a file: what ``hermes-nb load --out`` hands the load notebook, kept in the receipt
REPORT_FILE = "load-report.json"


class TargetInfo(StrictModel):
    """What was loaded. ``emulator``: hermes_nb's emulator answered; ``rig``: a real proxy with the emulator as its
    upstream (the proxy is the target); ``live``: anything else."""

    kind: Literal["emulator", "rig", "live"] = "live"
    #: the hermes-agent release of the proxy (its /health, else the local ``hermes``), when known
    release: str | None = None
    evidence: str | None = None
    #: the embedded emulator: its scenario and how many processes served it
    scenario: str | None = None
    emulator_processes: int = 0


class RateLimit(StrictModel):
    """Where the ramp stopped on 429s: the level, how many, the Retry-After values they carried."""

    concurrency: int
    count: int
    retry_after_s: list[float] = Field(default_factory=list)


class LoadReport(StrictModel):
    """What :func:`hermes_nb.load.run.run_load` measured; ``--json``, the magic and the receipt show it. The raw
    samples are :attr:`samples` (not in the JSON: the receipt keeps them as files)."""

    format: str = LOAD_SCHEMA
    endpoint: str
    direct: str | None = None
    model: str
    target: TargetInfo = Field(default_factory=TargetInfo)
    settings: dict[str, Any] = Field(default_factory=dict)
    levels: list[LevelResult] = Field(default_factory=list)
    direct_levels: list[LevelResult] = Field(default_factory=list)
    added: list[AddedLatency] = Field(default_factory=list)
    verdict: Status = "passed"
    reason: str = "measured"
    errors: list[str] = Field(default_factory=list)
    #: about the target (non-loopback, plain http); each level's own warning is in its overhead
    warnings: list[str] = Field(default_factory=list)
    first_error_concurrency: int | None = None
    rate_limited: RateLimit | None = None
    #: the level whose throughput grew less than ``saturation_gain`` over the one before (the ramp stopped there)
    saturated_at: int | None = None
    #: with an SLO: the highest concurrency that met it
    slo_max_concurrency: int | None = None
    interrupted: bool = False
    started_at: str = ""
    #: the measurement's own duration (emulators started, levels run), seconds
    duration_s: float = 0.0
    #: the generator: hermes-nb's version, its HTTP client, Python, the machine
    generator: dict[str, Any] = Field(default_factory=dict)
    _samples: list[Sample] = PrivateAttr(default_factory=list)

    @property
    def samples(self) -> list[Sample]:
        return self._samples

    def level(self, concurrency: int, *, target: str = "proxy") -> LevelResult | None:
        levels = self.levels if target == "proxy" else self.direct_levels
        return next((lv for lv in levels if lv.concurrency == concurrency), None)

    def all_warnings(self) -> list[str]:
        """The report's warnings, then each level's (what the text and HTML views list)."""
        return [*self.warnings, *(lv.overhead.warning for lv in self.levels + self.direct_levels
                                  if lv.overhead.warning)]


def compute(report: LoadReport, samples: Sequence[Sample]) -> LoadReport:
    """``report`` with its levels, added latency and verdict computed from ``samples``; each level's overhead,
    stop and cancelled count are kept from ``report.levels`` / ``direct_levels`` (the levels it ran)."""
    s = report.settings
    figures: dict[str, list[LevelResult]] = {}
    for target, ran in (("proxy", report.levels), ("direct", report.direct_levels)):
        figures[target] = [level_result(
            [x for x in samples if x.target == target and x.concurrency == lv.concurrency],
            concurrency=lv.concurrency, target=lv.target, rate=s.get("rate"), stall_s=s.get("stall_s", 0.5),
            slo=s.get("slo") or None, slo_share=s.get("slo_share", 0.9), overhead=lv.overhead,
            stopped_by=lv.stopped_by, cancelled=lv.cancelled) for lv in ran]
    levels = figures["proxy"]
    gain = s.get("saturation_gain", 0.0)
    saturated = next((b.concurrency for a, b in zip(levels, levels[1:], strict=False)
                      if gain and b.succeeded and b.request_throughput < a.request_throughput * (1 + gain)), None)
    updated = report.model_copy(update={
        "levels": levels, "direct_levels": figures["direct"], "saturated_at": saturated,
        "added": [added_latency([x for x in samples if x.target == "proxy" and x.concurrency == d.concurrency],
                                [x for x in samples if x.target == "direct" and x.concurrency == d.concurrency],
                                concurrency=d.concurrency, seed=s.get("seed", 0)) for d in figures["direct"]],
        "slo_max_concurrency": max((lv.concurrency for lv in levels if lv.slo and lv.slo.meets), default=None)})
    updated._samples = list(samples)
    return judge(updated)


def _error_line(level: LevelResult) -> str:
    parts = [f"{n} × {name}" for name, n in level.errors.by_class().items() if n and name != "rate_limited"]
    example = next((level.errors.examples[name] for name in ERROR_CLASSES
                    if name != "rate_limited" and name in level.errors.examples), None)
    return (f"concurrency {level.concurrency}: {', '.join(parts)} of {level.sent} requests"
            + (f" (e.g. {example})" if example else ""))


def judge(report: LoadReport) -> LoadReport:
    """The verdict: interrupted or non-429 errors → failed; unreachable or 429s → blocked; else passed. Also the
    first level with errors and where 429s stopped the ramp."""
    levels = report.levels
    erring = [lv for lv in levels if lv.errors.total]
    report.first_error_concurrency = erring[0].concurrency if erring else None
    limited = next((lv for lv in levels + report.direct_levels if lv.errors.rate_limited), None)
    report.rate_limited = (RateLimit(concurrency=limited.concurrency, count=limited.errors.rate_limited,
                                     retry_after_s=limited.errors.retry_after_s) if limited else None)
    errors = [_error_line(lv) for lv in levels if lv.errors.total - lv.errors.rate_limited]
    if limited is not None:
        after = ", ".join(f"{v:g} s" for v in limited.errors.retry_after_s) or "none given"
        errors.append(f"concurrency {limited.concurrency}: {limited.errors.rate_limited} answered 429 "
                      f"(Retry-After: {after}); the ramp stopped there")
    verdict: Status
    if report.interrupted:
        verdict, reason = "failed", "interrupted"
        errors.insert(0, f"interrupted (Ctrl-C) during concurrency {levels[-1].concurrency if levels else '-'}: "
                         "the figures are what was measured until then")
    elif not levels or not any(lv.sent for lv in levels):
        verdict, reason = "failed", "nothing measured"
    elif levels[0].unreachable:
        verdict, reason = "blocked", "unreachable"
        errors = [f"{report.endpoint}: every request of the first level failed to connect; {start_hint()}"]
    elif any(lv.errors.total - lv.errors.rate_limited for lv in levels):
        verdict, reason = "failed", "errors"
    elif limited is not None:
        verdict, reason = "blocked", "rate-limited"
    else:
        verdict, reason = "passed", "measured"
    report.verdict, report.reason, report.errors = verdict, reason, errors
    return report
