"""The load report: what was measured, at which target, and the verdict (pure: its views register themselves with
IPython). :func:`compute` is the one way figures are made, from the raw samples: the run calls it, and the receipt's
notebook again on the sample files it keeps.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field, PrivateAttr

from hermes_nb.core.model import StrictModel
from hermes_nb.core.providers import cooldown_note, start_hint
from hermes_nb.core.records import Status
from hermes_nb.load.metrics import ERROR_CLASSES, AddedLatency, LevelResult, Sample, added_latency, level_result

LOAD_SCHEMA = "hermes-nb.load.v2"
#: the report as a file: what ``hermes-nb load --out`` hands the load notebook, kept in the receipt
REPORT_FILE = "load-report.json"


class TargetInfo(StrictModel):
    """What was loaded: ``emulator`` (hermes_nb's emulator answered), ``rig`` (a real proxy with the emulator as its
    upstream: the proxy is the target) or ``live``."""

    kind: Literal["emulator", "rig", "live"] = "live"
    release: str | None = None  # the proxy's hermes-agent release, when known
    evidence: str | None = None
    provider: str | None = None  # what the proxy fronts, when it said
    executable: str = "hermes"  # the name its hints use
    scenario: str | None = None  # the embedded emulator's, and how many processes served it
    emulator_processes: int = 0

    def cooldown(self) -> str | None:
        """What a 429 does to this provider's credential (None: nothing lasting)."""
        return cooldown_note(self.provider, 429, self.executable, release=self.release)


class RateLimit(StrictModel):
    """Where the ramp stopped on 429s: the level, how many, the Retry-After values they carried."""

    concurrency: int
    count: int
    retry_after_s: list[float] = Field(default_factory=list)


class LoadReport(StrictModel):
    """What :func:`hermes_nb.load.run.run_load` measured. The raw samples are :attr:`samples` (not in the JSON: the
    receipt keeps them as files)."""

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
    #: about the target (non-loopback, plain http, a 429's cool-down); each level's own is in its overhead
    warnings: list[str] = Field(default_factory=list)
    first_error_concurrency: int | None = None
    rate_limited: RateLimit | None = None
    #: the level whose throughput grew less than ``saturation_gain`` over the one before
    saturated_at: int | None = None
    slo_max_concurrency: int | None = None
    interrupted: bool = False
    started_at: str = ""
    duration_s: float = 0.0  # the measurement's own (emulators started, levels run)
    generator: dict[str, Any] = Field(default_factory=dict)  # hermes-nb's version, its HTTP client, the machine
    _samples: list[Sample] = PrivateAttr(default_factory=list)

    @property
    def samples(self) -> list[Sample]:
        return self._samples

    def level(self, concurrency: int, *, target: str = "proxy") -> LevelResult | None:
        levels = self.levels if target == "proxy" else self.direct_levels
        return next((lv for lv in levels if lv.concurrency == concurrency), None)

    def all_warnings(self) -> list[str]:
        return [*self.warnings, *(lv.overhead.warning for lv in self.levels + self.direct_levels
                                  if lv.overhead.warning)]


def compute(report: LoadReport, samples: Sequence[Sample]) -> LoadReport:
    """``report`` with its figures and verdict computed from ``samples``; what samples cannot say (each level's
    overhead, what stopped it, how many were cancelled) is kept from the levels it ran."""
    s = report.settings

    def figures(ran: list[LevelResult]) -> list[LevelResult]:
        return [level_result([x for x in samples if x.target == lv.target and x.concurrency == lv.concurrency],
                             concurrency=lv.concurrency, target=lv.target, rate=s.get("rate"),
                             stall_s=s.get("stall_s", 0.5), slo=s.get("slo") or None,
                             slo_share=s.get("slo_share", 0.9), overhead=lv.overhead, stopped_by=lv.stopped_by,
                             cancelled=lv.cancelled) for lv in ran]

    levels, direct, gain = figures(report.levels), figures(report.direct_levels), s.get("saturation_gain", 0.0)
    updated = report.model_copy(update={
        "levels": levels, "direct_levels": direct,
        "saturated_at": next((b.concurrency for a, b in zip(levels, levels[1:], strict=False)
                              if gain and b.succeeded and b.request_throughput < a.request_throughput * (1 + gain)),
                             None),
        "added": [added_latency([x for x in samples if x.target == "proxy" and x.concurrency == d.concurrency],
                                [x for x in samples if x.target == "direct" and x.concurrency == d.concurrency],
                                concurrency=d.concurrency, seed=s.get("seed", 0)) for d in direct],
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
    """Interrupted or non-429 errors → failed; unreachable or 429s → blocked; else passed."""
    levels = report.levels
    report.first_error_concurrency = next((lv.concurrency for lv in levels if lv.errors.total), None)
    limited = next((lv for lv in levels + report.direct_levels if lv.errors.rate_limited), None)
    report.rate_limited = (RateLimit(concurrency=limited.concurrency, count=limited.errors.rate_limited,
                                     retry_after_s=limited.errors.retry_after_s) if limited else None)
    errors = [_error_line(lv) for lv in levels if lv.errors.total - lv.errors.rate_limited]
    if limited is not None:
        after = ", ".join(f"{v:g} s" for v in limited.errors.retry_after_s) or "none given"
        parked = report.target.cooldown()
        errors.append(f"concurrency {limited.concurrency}: {limited.errors.rate_limited} answered 429 "
                      f"(Retry-After: {after}); the ramp stopped there" + (f"; {parked}" if parked else ""))
    verdict: Status
    if report.interrupted:
        verdict, reason = "failed", "interrupted"
        errors.insert(0, f"interrupted (Ctrl-C) during concurrency {levels[-1].concurrency if levels else '-'}: "
                         "the figures are what was measured until then")
    elif not any(lv.sent for lv in levels):
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
