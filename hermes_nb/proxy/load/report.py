"""The load report: one record per concurrency level, the proxy's added latency, the verdict.

Pure (no IO). The generator (:mod:`hermes_nb.proxy.load.generator`) hands over one :class:`Sample` per
request; :func:`level_result` turns a level's samples into its figures, with the definitions NVIDIA
genai-perf (now AIPerf) uses, so the numbers read the way LLM-serving people expect (docs/load.md):

* **TTFT** — time to first token: the request was sent → the first chunk with non-empty content arrived.
* **E2E** — end-to-end request latency: sent → the stream's last byte.
* **ITL** — inter-token latency of one request: ``(E2E - TTFT) / (output tokens - 1)`` (requests with at least
  two output tokens).
* **output tokens** — the stream's ``usage.completion_tokens`` when it sends one, else its content deltas.
* **request throughput** — successful requests / the level's duration (first request sent → last byte);
  **output token throughput** — their output tokens / the same duration.

Percentiles interpolate linearly between the two nearest samples (numpy's default, as genai-perf).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field

from hermes_nb.core.model import StrictModel
from hermes_nb.core.providers import start_hint
from hermes_nb.core.records import Status

__all__ = [
    "LOAD_SCHEMA",
    "REPORT_FILE",
    "ERROR_CLASSES",
    "Sample",
    "Percentiles",
    "ErrorCounts",
    "Overhead",
    "LevelResult",
    "AddedLatency",
    "RateLimit",
    "LoadReport",
    "percentile",
    "level_result",
    "added_latency",
    "judge",
]

LOAD_SCHEMA = "hermes-nb.load.v1"
#: a report as a file: what ``hermes-nb load --out`` hands the load notebook, and its copy in the receipt
REPORT_FILE = "load-report.json"
#: how a request can fail, in the order reports list them
ERROR_CLASSES = ("rate_limited", "client_error", "server_error", "timeout", "transport", "stream_error")
ErrorClass = Literal["rate_limited", "client_error", "server_error", "timeout", "transport", "stream_error"]
#: what ended a level before its budget: a 429, Ctrl-C, the whole run's time cap
StopReason = Literal["rate_limited", "interrupted", "time_cap"]
#: what a level measured: through the proxy, or (``--direct``) the upstream without it
LoadTarget = Literal["proxy", "direct"]


@dataclass(slots=True)
class Sample:
    """One request as the generator saw it; times in seconds, ``start_s``/``end_s`` since the level started."""

    start_s: float
    end_s: float
    ttft_s: float | None = None
    output_tokens: int = 0
    #: where ``output_tokens`` came from: ``usage`` (the stream's usage chunk) or ``deltas`` (content chunks)
    token_source: Literal["usage", "deltas"] = "deltas"
    status: int | None = None
    error: ErrorClass | None = None
    retry_after_s: float | None = None
    #: a one-line description of the error (redacted by the generator)
    detail: str | None = None
    #: the connection was refused or could not be made (an unreachable endpoint)
    connect_failed: bool = False

    @property
    def e2e_s(self) -> float:
        return self.end_s - self.start_s


class Percentiles(StrictModel):
    """Milliseconds over the requests of one level (None: no request gave this figure)."""

    count: int = 0
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    mean: float | None = None
    min: float | None = None
    max: float | None = None

    @classmethod
    def of(cls, values_s: Sequence[float]) -> Percentiles:
        ms = sorted(v * 1000.0 for v in values_s)
        if not ms:
            return cls()
        return cls(count=len(ms), p50=_r(percentile(ms, 50)), p90=_r(percentile(ms, 90)),
                   p99=_r(percentile(ms, 99)), mean=_r(sum(ms) / len(ms)), min=_r(ms[0]), max=_r(ms[-1]))


class ErrorCounts(StrictModel):
    """Failed requests of a level by class; the Retry-After values its 429s carried; one example per class."""

    rate_limited: int = 0
    client_error: int = 0
    server_error: int = 0
    timeout: int = 0
    transport: int = 0
    stream_error: int = 0
    #: distinct Retry-After values of the 429s (seconds; a 429 without one is not listed)
    retry_after_s: list[float] = Field(default_factory=list)
    examples: dict[str, str] = Field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(getattr(self, name) for name in ERROR_CLASSES)

    def by_class(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in ERROR_CLASSES}


class Overhead(StrictModel):
    """What the generator itself cost during a level: CPU of its event-loop thread and how late that loop ran.

    Every timestamp is taken when the loop gets to the bytes, so ``loop_lag_ms`` bounds how late a TTFT or
    an E2E can be read; ``cpu_share`` near 1.0 means the generator, not the target, was the limit.
    """

    cpu_s: float = 0.0
    cpu_share: float = 0.0
    cpu_per_request_ms: float | None = None
    loop_lag_ms: Percentiles = Field(default_factory=Percentiles)
    #: set when the generator's own delay is a noticeable part of this level's figures
    warning: str | None = None


class LevelResult(StrictModel):
    """The figures of one concurrency level against one target (``proxy`` or ``direct``)."""

    target: LoadTarget = "proxy"
    concurrency: int
    rate: float | None = None
    sent: int = 0
    succeeded: int = 0
    errors: ErrorCounts = Field(default_factory=ErrorCounts)
    #: requests still in flight when Ctrl-C stopped the level (not measured)
    cancelled: int = 0
    duration_s: float = 0.0
    ttft_ms: Percentiles = Field(default_factory=Percentiles)
    itl_ms: Percentiles = Field(default_factory=Percentiles)
    e2e_ms: Percentiles = Field(default_factory=Percentiles)
    request_throughput: float = 0.0
    output_token_throughput: float = 0.0
    output_tokens: int = 0
    token_source: Literal["usage", "deltas", "mixed", "none"] = "none"
    stopped_by: StopReason | None = None
    #: every request failed to connect: the endpoint is not there
    unreachable: bool = False
    overhead: Overhead = Field(default_factory=Overhead)


class AddedLatency(StrictModel):
    """What the proxy adds over its upstream at one level: the proxy's percentile minus the direct one (ms)."""

    concurrency: int
    ttft_ms: dict[str, float | None] = Field(default_factory=dict)
    e2e_ms: dict[str, float | None] = Field(default_factory=dict)


def _r(value: float) -> float:
    return round(value, 3)


def percentile(ordered: Sequence[float], q: float) -> float:
    """The ``q``-th percentile of ascending ``ordered`` values, linear between the nearest ranks."""
    if not ordered:
        raise ValueError("percentile of no values")
    rank = (len(ordered) - 1) * q / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def _errors(samples: Sequence[Sample]) -> ErrorCounts:
    counts = ErrorCounts()
    retry: set[float] = set()
    for s in samples:
        if s.error is None:
            continue
        setattr(counts, s.error, getattr(counts, s.error) + 1)
        if s.retry_after_s is not None:
            retry.add(round(s.retry_after_s, 3))
        if s.detail and s.error not in counts.examples:
            counts.examples[s.error] = s.detail
    counts.retry_after_s = sorted(retry)
    return counts


def level_result(samples: Sequence[Sample], *, concurrency: int, rate: float | None = None,
                 target: LoadTarget = "proxy", overhead: Overhead | None = None,
                 stopped_by: StopReason | None = None, cancelled: int = 0) -> LevelResult:
    """A level's figures from its samples (see the module docstring for the definitions)."""
    ok = [s for s in samples if s.error is None]
    duration = (max(s.end_s for s in samples) - min(s.start_s for s in samples)) if samples else 0.0
    itl = [(s.e2e_s - s.ttft_s) / (s.output_tokens - 1) for s in ok if s.ttft_s is not None and s.output_tokens > 1]
    tokens = sum(s.output_tokens for s in ok)
    sources = {s.token_source for s in ok if s.output_tokens}
    source: Literal["usage", "deltas", "mixed", "none"] = (
        "none" if not sources else sources.pop() if len(sources) == 1 else "mixed")
    return LevelResult(
        target=target, concurrency=concurrency, rate=rate, sent=len(samples), succeeded=len(ok),
        errors=_errors(samples), cancelled=cancelled, duration_s=_r(duration),
        ttft_ms=Percentiles.of([s.ttft_s for s in ok if s.ttft_s is not None]),
        itl_ms=Percentiles.of(itl), e2e_ms=Percentiles.of([s.e2e_s for s in ok]),
        request_throughput=_r(len(ok) / duration) if duration > 0 else 0.0,
        output_token_throughput=_r(tokens / duration) if duration > 0 else 0.0,
        output_tokens=tokens, token_source=source, stopped_by=stopped_by,
        unreachable=bool(samples) and all(s.connect_failed for s in samples),
        overhead=overhead or Overhead(),
    )


def added_latency(proxy: LevelResult, direct: LevelResult) -> AddedLatency:
    """The proxy's TTFT and E2E percentiles minus the upstream's own, at the same level (None where one lacks it).

    A difference of percentiles, not a percentile of differences: the two runs are separate requests.
    """
    def diff(a: Percentiles, b: Percentiles) -> dict[str, float | None]:
        return {q: (_r(getattr(a, q) - getattr(b, q)) if getattr(a, q) is not None and getattr(b, q) is not None
                    else None) for q in ("p50", "p90", "p99")}

    return AddedLatency(concurrency=proxy.concurrency, ttft_ms=diff(proxy.ttft_ms, direct.ttft_ms),
                        e2e_ms=diff(proxy.e2e_ms, direct.e2e_ms))


class RateLimit(StrictModel):
    """Where the ramp stopped on 429s: the level, how many, the Retry-After values they carried."""

    concurrency: int
    count: int
    retry_after_s: list[float] = Field(default_factory=list)


class LoadReport(StrictModel):
    """What :func:`hermes_nb.proxy.load.run_load` measured; ``--json``, the magic and the receipt show it."""

    format: str = LOAD_SCHEMA
    endpoint: str
    direct: str | None = None
    model: str
    #: ``emulator`` (started for the run) or ``given``
    target_kind: str = "given"
    #: the embedded emulator's scenario (None for a given endpoint)
    scenario: str | None = None
    settings: dict[str, object] = Field(default_factory=dict)
    levels: list[LevelResult] = Field(default_factory=list)
    direct_levels: list[LevelResult] = Field(default_factory=list)
    #: the proxy's added latency per level (with ``--direct``)
    added: list[AddedLatency] = Field(default_factory=list)
    verdict: Status = "passed"
    reason: str = "measured"
    errors: list[str] = Field(default_factory=list)
    #: about the target (a non-loopback endpoint, plain http); each level's generator warning is in its overhead
    warnings: list[str] = Field(default_factory=list)
    #: the lowest concurrency at which any request failed
    first_error_concurrency: int | None = None
    rate_limited: RateLimit | None = None
    interrupted: bool = False
    started_at: str = ""
    duration_s: float = 0.0
    #: the load generator: its HTTP client, Python, CPUs (its per-level cost is each level's ``overhead``)
    generator: dict[str, object] = Field(default_factory=dict)

    def all_warnings(self) -> list[str]:
        """The report's warnings, then each level's generator warning (what the text and HTML views list)."""
        return [*self.warnings, *(lv.overhead.warning for lv in self.levels + self.direct_levels
                                  if lv.overhead.warning)]

    def level(self, concurrency: int, *, target: str = "proxy") -> LevelResult | None:
        levels = self.levels if target == "proxy" else self.direct_levels
        return next((lv for lv in levels if lv.concurrency == concurrency), None)

    def plot(self, name: str) -> Any:
        """One picture (``latency``, ``throughput``, ``errors``) as an SVG a notebook shows as an image."""
        from hermes_nb.proxy.load.plots import plot

        return plot(self, name)

    def _repr_text_(self) -> str:
        from hermes_nb.proxy.load.views import report_text

        return report_text(self)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text("LoadReport(...)" if cycle else self._repr_text_())

    def html(self, *, plots: bool = True) -> str:
        """The HTML view; ``plots=False`` leaves the pictures out (a notebook shows them as images, one a cell)."""
        from hermes_nb.proxy.load.views import report_html

        return report_html(self, plots=plots)

    def _repr_html_(self) -> str:
        return self.html()


def _error_line(level: LevelResult) -> str:
    parts = [f"{n} × {name}" for name, n in level.errors.by_class().items() if n and name != "rate_limited"]
    example = next((level.errors.examples[name] for name in ERROR_CLASSES
                    if name != "rate_limited" and name in level.errors.examples), None)
    return (f"concurrency {level.concurrency}: {', '.join(parts)} of {level.sent} requests"
            + (f" (e.g. {example})" if example else ""))


def judge(report: LoadReport) -> LoadReport:
    """Set the verdict: interrupted or non-429 errors → failed; unreachable or 429s → blocked; else passed.

    Also sets ``first_error_concurrency`` and ``rate_limited`` (the first level with 429s, where the ramp stopped).
    """
    levels = report.levels
    erring = [lv for lv in levels if lv.errors.total]
    report.first_error_concurrency = erring[0].concurrency if erring else None
    limited = next((lv for lv in levels if lv.errors.rate_limited), None)
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
