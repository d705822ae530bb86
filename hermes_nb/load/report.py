"""The load report: one raw record per request (:class:`Sample`), each level's figures (docs/load.md) and the verdict.
:func:`compute` is the one way figures are made: by the run, and again by the receipt's notebook on the samples kept.
Times are seconds since the run started (``time.perf_counter``)."""

from __future__ import annotations

import csv
import io
import json
import math
import os
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

from pydantic import Field, PrivateAttr, TypeAdapter

from hermes_nb.core.model import StrictModel
from hermes_nb.core.providers import cooldown_note, start_hint
from hermes_nb.core.records import Status

REPORT_FILE = "load-report.json"  # what ``hermes-nb load --out`` hands the load notebook, kept in the receipt
SAMPLES_JSONL, SAMPLES_CSV = "load-samples.jsonl", "load-samples.csv"
EVIDENCE = (REPORT_FILE, SAMPLES_JSONL, SAMPLES_CSV)
#: how a request can fail, in the order reports list them
ERROR_CLASSES = ("rate_limited", "client_error", "server_error", "timeout", "transport", "stream_error")
QUANTILES = (50, 90, 95, 99)
#: a level warns past these fixed bounds: its loop's lag (p99), its process's share of a CPU, the machine's busy share
LAG_WARN_MS, CPU_WARN_SHARE, MACHINE_WARN_BUSY = 10.0, 0.8, 0.9


@dataclass(slots=True)
class Sample:
    """One request as the generator saw it (None: that moment never came, e.g. no token before an error)."""

    target: str  # proxy, or direct (the upstream itself)
    concurrency: int
    repeat: int
    start_s: float
    first_token_s: float | None = None  # of any kind, reasoning included
    first_answer_s: float | None = None
    last_token_s: float | None = None  # the last answer token
    last_byte_s: float | None = None  # after the usage chunk and [DONE]
    tokens: int = 0  # the usage's completion tokens (reasoning included), else the deltas counted: token_source
    reasoning_tokens: int = 0
    reasoning_deltas: int = 0  # 0: none streamed (any reasoning tokens were hidden)
    token_source: str = "deltas"
    status: int | None = None
    error: str | None = None  # one of ERROR_CLASSES
    retry_after_s: float | None = None
    detail: str | None = None  # one line, redacted
    connect_failed: bool = False
    gaps_ms: list[float] = field(default_factory=list)

    def since_start(self, moment: float | None) -> float | None:
        return None if moment is None else moment - self.start_s

    def ttft(self) -> float | None:
        return self.since_start(self.first_token_s)

    def ttfat(self) -> float | None:
        return self.since_start(self.first_answer_s)

    def e2e(self) -> float | None:
        return self.since_start(self.last_token_s if self.last_token_s is not None else self.last_byte_s)

    def itl(self) -> float | None:
        """First token → last answer token over the tokens between; hidden reasoning tokens take no time between."""
        n = self.tokens - (0 if self.reasoning_deltas else self.reasoning_tokens)
        if n < 2 or self.first_token_s is None or self.last_token_s is None:
            return None
        return (self.last_token_s - self.first_token_s) / (n - 1)


def sample_files(samples: Sequence[Sample]) -> dict[str, str]:
    """The samples as a receipt keeps them, one request a line: JSON Lines, and CSV (``gaps_ms`` space-separated)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=[f.name for f in fields(Sample)], lineterminator="\n")
    writer.writeheader()
    writer.writerows({**asdict(s), "gaps_ms": " ".join(map(str, s.gaps_ms))} for s in samples)
    return {SAMPLES_JSONL: "".join(json.dumps(asdict(s), separators=(",", ":")) + "\n" for s in samples),
            SAMPLES_CSV: buffer.getvalue()}


def read_samples(text: str) -> list[Sample]:
    """The samples of a ``load-samples.jsonl`` file's text."""
    return TypeAdapter(list[Sample]).validate_python([json.loads(line) for line in text.splitlines() if line.strip()])


def percentile(ordered: Sequence[float], q: float) -> float:
    """The ``q``-th percentile of ascending values, linear between ranks (numpy's default; ``statistics`` refuses one
    value)."""
    if not ordered:
        raise ValueError("percentile of no values")
    rank = (len(ordered) - 1) * q / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def _r(value: float) -> float:
    return round(value, 3)


class Percentiles(StrictModel):
    """Milliseconds over a level's requests (None: no request gave this figure)."""

    count: int = 0
    p50: float | None = None
    p90: float | None = None
    p95: float | None = None
    p99: float | None = None
    mean: float | None = None
    min: float | None = None
    max: float | None = None
    thin: list[str] = Field(default_factory=list)  # those resting on too few samples (p90: 10, p95: 20, p99: 100)
    p50_ci: tuple[float, float] | None = None  # the p50's distribution-free 95 % interval (None under 6 samples)
    p50_by_repeat: list[float] = Field(default_factory=list)  # each repeat's p50: the run-to-run spread

    @classmethod
    def of(cls, values_s: Sequence[float], *, by_repeat: Sequence[Sequence[float]] = ()) -> Percentiles:
        ms = sorted(v * 1000.0 for v in values_s)
        n = len(ms)
        if not n:
            return cls()
        half = 1.96 * math.sqrt(n) / 2
        low, high = max(math.floor(n / 2 - half), 0), min(math.ceil(n / 2 + half), n - 1)
        return cls(count=n, **{f"p{q}": _r(percentile(ms, q)) for q in QUANTILES}, mean=_r(sum(ms) / n),
                   min=_r(ms[0]), max=_r(ms[-1]), thin=[f"p{q}" for q in QUANTILES[1:] if n < 100 / (100 - q)],
                   p50_ci=(_r(ms[low]), _r(ms[high])) if n >= 6 else None,
                   p50_by_repeat=[_r(percentile(sorted(r), 50) * 1000) for r in by_repeat if r]
                   if len(by_repeat) > 1 else [])


class ErrorCounts(StrictModel):
    """Failed requests of a level by class; the Retry-After values its 429s carried; one example per class."""

    rate_limited: int = 0
    client_error: int = 0
    server_error: int = 0
    timeout: int = 0
    transport: int = 0
    stream_error: int = 0
    retry_after_s: list[float] = Field(default_factory=list)
    examples: dict[str, str] = Field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.by_class().values())

    def by_class(self) -> dict[str, int]:
        return self.model_dump(include=set(ERROR_CLASSES))


class Overhead(StrictModel):
    """What else went on while a level ran: the CPU of the whole generator process, how late its event loop woke
    (every timestamp is taken on it, so the lag bounds how late a figure is read), how busy the machine was."""

    cpu_s: float = 0.0
    cpu_share: float = 0.0  # process CPU / wall time: 1.0 is one CPU
    cpu_per_request_ms: float | None = None
    loop_lag_ms: Percentiles = Field(default_factory=Percentiles)
    machine_busy: float | None = None  # share of all the machine's CPUs busy (Linux /proc/stat)
    load_avg: float | None = None  # 1 minute, at the level's end
    cpus: int | None = None
    warning: str | None = None

    @classmethod
    def of(cls, tag: str, cpu: float, wall: float, requests: int, lags: list[float], t0: tuple[int, int] | None,
           t1: tuple[int, int] | None) -> Overhead:
        """From the process's CPU and wall seconds, the loop's lags (s), the machine's (busy, total) CPU ticks."""
        busy = (t1[0] - t0[0]) / (t1[1] - t0[1]) if t0 and t1 and t1[1] > t0[1] else None
        over = cls(cpu_s=round(cpu, 4), cpu_share=round(cpu / wall, 3), cpus=os.cpu_count(),
                   cpu_per_request_ms=round(cpu * 1000 / requests, 3) if requests else None,
                   loop_lag_ms=Percentiles.of(lags), machine_busy=None if busy is None else round(busy, 3),
                   load_avg=round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None)
        lag = over.loop_lag_ms.p99 or 0.0
        if lag > LAG_WARN_MS or over.cpu_share > CPU_WARN_SHARE or (busy or 0.0) > MACHINE_WARN_BUSY:
            over.warning = (f"{tag}: the generator's loop ran up to {lag:.1f} ms late (p99), the process used "
                            f"{over.cpu_share:.0%} of a CPU and the machine's {over.cpus} CPUs were "
                            f"{'?' if busy is None else f'{busy:.0%}'} busy (load average {over.load_avg}): its "
                            "figures carry the machine's own delay")
        return over


class Gaps(StrictModel):
    """Every pause between two tokens of the level's streams (ms), and the streams with one over ``stall_s``."""

    gap_ms: Percentiles = Field(default_factory=Percentiles)
    streams: int = 0
    stalled: int = 0
    stall_share: float = 0.0


class Slo(StrictModel):
    """The share of a level's sent requests meeting every target, and their rate (goodput)."""

    met: int = 0
    share: float = 0.0
    goodput: float = 0.0
    meets: bool = False


class LevelResult(StrictModel):
    """The figures of one concurrency level against one target, every repeat pooled."""

    target: str = "proxy"  # or direct
    concurrency: int
    rate: float | None = None
    repeats: int = 1
    sent: int = 0
    succeeded: int = 0
    errors: ErrorCounts = Field(default_factory=ErrorCounts)
    cancelled: int = 0
    duration_s: float = 0.0  # first request sent → last byte of any, summed over the repeats
    ttft_ms: Percentiles = Field(default_factory=Percentiles)
    ttfat_ms: Percentiles = Field(default_factory=Percentiles)
    itl_ms: Percentiles = Field(default_factory=Percentiles)
    e2e_ms: Percentiles = Field(default_factory=Percentiles)
    last_byte_ms: Percentiles = Field(default_factory=Percentiles)
    gaps: Gaps = Field(default_factory=Gaps)
    request_throughput: float = 0.0
    output_token_throughput: float = 0.0
    output_tokens: int = 0
    token_source: Literal["usage", "deltas", "mixed", "none"] = "none"
    slo: Slo | None = None
    stopped_by: Literal["rate_limited", "interrupted", "time_cap"] | None = None  # what ended it before its budget
    unreachable: bool = False
    overhead: Overhead = Field(default_factory=Overhead)


_SLO: dict[str, Callable[[Sample], float | None]] = {"ttft_s": Sample.ttft, "ttfat_s": Sample.ttfat,
                                                     "itl_s": Sample.itl, "e2e_s": Sample.e2e}


def _values(samples: Iterable[Sample], read: Callable[[Sample], float | None]) -> list[float]:
    return [v for s in samples if s.error is None and (v := read(s)) is not None]


def _figure(ok: Sequence[Sample], read: Callable[[Sample], float | None], repeats: Sequence[int]) -> Percentiles:
    return Percentiles.of(_values(ok, read), by_repeat=[_values([s for s in ok if s.repeat == k], read)
                                                        for k in repeats])


def _errors(samples: Sequence[Sample]) -> ErrorCounts:
    counts = ErrorCounts()
    for s in samples:
        if s.error is not None:
            setattr(counts, s.error, getattr(counts, s.error) + 1)
            if s.detail:
                counts.examples.setdefault(s.error, s.detail)
    counts.retry_after_s = sorted({round(s.retry_after_s, 3) for s in samples
                                   if s.error is not None and s.retry_after_s is not None})
    return counts


def level_result(samples: Sequence[Sample], ran: LevelResult, settings: Mapping[str, Any] | None = None) -> LevelResult:
    """The level ``ran`` (its overhead, what stopped it, how many were cancelled) with its figures from its samples,
    under the run's ``settings`` (``stall_s``, ``slo``, ``slo_share``, ``rate``)."""
    cfg = settings or {}
    stall_s, slo, slo_share = cfg.get("stall_s", 0.5), cfg.get("slo") or {}, cfg.get("slo_share", 0.9)
    ok = [s for s in samples if s.error is None]
    repeats = sorted({s.repeat for s in samples})
    duration = 0.0  # per repeat, first sent → last byte, summed: the repeats ran at different times
    for k in repeats:
        mine = [s for s in samples if s.repeat == k]
        duration += max(s.last_byte_s or s.start_s for s in mine) - min(s.start_s for s in mine)
    streams = [s for s in ok if s.gaps_ms or s.first_token_s is not None]
    stalled = sum(1 for s in streams if s.gaps_ms and max(s.gaps_ms) > stall_s * 1000)
    tokens = sum(s.tokens for s in ok)
    sources = {s.token_source for s in ok if s.tokens}
    met = sum(all((v := _SLO[key](s)) is not None and v <= bound for key, bound in slo.items())
              for s in ok) if slo else 0
    sent = len(samples)
    return ran.model_copy(update=dict(
        rate=cfg.get("rate"), repeats=max(len(repeats), 1), sent=sent, succeeded=len(ok), errors=_errors(samples),
        duration_s=_r(duration), ttft_ms=_figure(ok, Sample.ttft, repeats), ttfat_ms=_figure(ok, Sample.ttfat, repeats),
        itl_ms=_figure(ok, Sample.itl, repeats), e2e_ms=_figure(ok, Sample.e2e, repeats),
        last_byte_ms=_figure(ok, lambda s: s.since_start(s.last_byte_s), repeats),
        gaps=Gaps(gap_ms=Percentiles.of([g / 1000 for s in streams for g in s.gaps_ms]), streams=len(streams),
                  stalled=stalled, stall_share=_r(stalled / len(streams)) if streams else 0.0),
        request_throughput=_r(len(ok) / duration) if duration > 0 else 0.0,
        output_token_throughput=_r(tokens / duration) if duration > 0 else 0.0, output_tokens=tokens,
        token_source="none" if not sources else "mixed" if len(sources) > 1 else
        "usage" if "usage" in sources else "deltas",
        slo=Slo(met=met, share=_r(met / sent) if sent else 0.0, goodput=_r(met / duration) if duration > 0 else 0.0,
                meets=bool(sent) and met / sent >= slo_share) if slo else None,
        unreachable=bool(samples) and all(s.connect_failed for s in samples)))


class AddedLatency(StrictModel):
    """What the proxy adds over its upstream at one level: the proxy's percentile minus the upstream's (ms)."""

    concurrency: int
    ttft_ms: dict[str, float | None] = Field(default_factory=dict)
    e2e_ms: dict[str, float | None] = Field(default_factory=dict)
    ttft_p50_ci: tuple[float, float] | None = None  # the p50 difference's 95 % bootstrap interval (seeded)
    e2e_p50_ci: tuple[float, float] | None = None
    ttft_p50_by_repeat: list[float] = Field(default_factory=list)
    e2e_p50_by_repeat: list[float] = Field(default_factory=list)


def _median(values: Sequence[float]) -> float:
    return percentile(sorted(values), 50)


def added_latency(proxy: Sequence[Sample], direct: Sequence[Sample], *, concurrency: int,
                  seed: int = 0) -> AddedLatency:
    """The proxy's TTFT and E2E percentiles minus the upstream's at one level (separate requests, interleaved)."""
    rng = random.Random(seed)
    out = AddedLatency(concurrency=concurrency)
    repeats = sorted({s.repeat for s in proxy} & {s.repeat for s in direct})
    for name, read in (("ttft", Sample.ttft), ("e2e", Sample.e2e)):
        a, b = _values(proxy, read), _values(direct, read)
        pa, pb = Percentiles.of(a), Percentiles.of(b)
        setattr(out, f"{name}_ms", {q: _r(getattr(pa, q) - getattr(pb, q)) if a and b else None
                                    for q in ("p50", "p95", "p99")})
        if len(a) >= 6 and len(b) >= 6:
            diffs = sorted(_median(rng.choices(a, k=len(a))) - _median(rng.choices(b, k=len(b))) for _ in range(200))
            setattr(out, f"{name}_p50_ci", (_r(percentile(diffs, 2.5) * 1000), _r(percentile(diffs, 97.5) * 1000)))
        pairs = [(_values([s for s in proxy if s.repeat == k], read), _values([s for s in direct if s.repeat == k],
                                                                              read)) for k in repeats]
        if len(pairs) > 1:
            setattr(out, f"{name}_p50_by_repeat", [_r((_median(x) - _median(y)) * 1000) for x, y in pairs if x and y])
    return out


class TargetInfo(StrictModel):
    """What was loaded: ``emulator``, ``rig`` (a real proxy before the emulator: the proxy is the target), ``live``."""

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
    """What :func:`hermes_nb.load.run.run_load` measured; its raw :attr:`samples` are kept as files, not in the JSON."""

    format: str = "hermes-nb.load.v2"
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
    warnings: list[str] = Field(default_factory=list)  # about the target; each level's own is in its overhead
    first_error_concurrency: int | None = None
    rate_limited: RateLimit | None = None
    saturated_at: int | None = None  # the level whose throughput grew less than ``saturation_gain``
    slo_max_concurrency: int | None = None
    interrupted: bool = False
    started_at: str = ""
    duration_s: float = 0.0  # the measurement's own (emulators started, levels run)
    generator: dict[str, Any] = Field(default_factory=dict)  # hermes-nb's version, its HTTP client, the machine
    _samples: list[Sample] = PrivateAttr(default_factory=list)

    @property
    def samples(self) -> list[Sample]:
        return self._samples


def compute(report: LoadReport, samples: Sequence[Sample]) -> LoadReport:
    """``report`` with its figures and verdict computed from ``samples``; what samples cannot say (each level's
    overhead, what stopped it, how many were cancelled) is kept from the levels it ran."""
    s = report.settings

    def figures(ran: list[LevelResult]) -> list[LevelResult]:
        return [level_result([x for x in samples if x.target == lv.target and x.concurrency == lv.concurrency], lv, s)
                for lv in ran]

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
    return _judge(updated)


def _error_line(level: LevelResult) -> str:
    parts = [f"{n} × {name}" for name, n in level.errors.by_class().items() if n and name != "rate_limited"]
    example = next((level.errors.examples[name] for name in ERROR_CLASSES
                    if name != "rate_limited" and name in level.errors.examples), None)
    return (f"concurrency {level.concurrency}: {', '.join(parts)} of {level.sent} requests"
            + (f" (e.g. {example})" if example else ""))


def _judge(report: LoadReport) -> LoadReport:
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
