"""The figures of one level, computed from its raw samples (pure; docs/load.md has the definitions beside the
anchors' own: NVIDIA AIPerf / genai-perf, vLLM's ``benchmark_serving``, ray-project/llmperf).

* **TTFT**: sent → the first token of any kind (reasoning included; AIPerf's TTFT, vLLM's first chunk).
* **TTFAT**: sent → the first answer token (AIPerf's "time to first output token").
* **ITL**: per request, first token → last answer token over the tokens between them: ``(last - first) / (n - 1)``,
  ``n`` the completion tokens, minus the reasoning tokens the usage counts when none were streamed. A trailer
  (usage chunk, ``[DONE]``) after the last token does not move it.
* **E2E**: sent → the last answer token (vLLM's latency); **last byte**: sent → the stream's last byte, its own
  figure.
* **gaps**: every pause between two consecutive tokens of a stream (AIPerf's inter-chunk latency, vLLM's ITL
  list), pooled over the level; a stream with a gap over ``stall_s`` is a stall.

Percentiles interpolate linearly (numpy's default, as the anchors); a percentile resting on fewer samples than
it needs (p90: 10, p95: 20, p99: 100) is listed in ``thin``. The p50's 95 % interval is distribution-free (the
order statistics the binomial law puts around the median); the added latency's is a seeded bootstrap.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from typing import Literal

from pydantic import Field

from hermes_nb.core.model import StrictModel
from hermes_nb.load.samples import Sample

__all__ = ["ERROR_CLASSES", "Percentiles", "ErrorCounts", "Overhead", "Gaps", "Slo", "LevelResult",
           "AddedLatency", "percentile", "level_result", "added_latency", "e2e", "itl", "ttft", "ttfat"]

#: how a request can fail, in the order reports list them
ERROR_CLASSES = ("rate_limited", "client_error", "server_error", "timeout", "transport", "stream_error")
#: what ended a level before its budget: a 429, Ctrl-C, the run's budget
StopReason = Literal["rate_limited", "interrupted", "time_cap"]
QUANTILES = (50, 90, 95, 99)
#: z of a two-sided 95 % interval
Z95 = 1.96


def percentile(ordered: Sequence[float], q: float) -> float:
    """The ``q``-th percentile of ascending ``ordered`` values, linear between the nearest ranks."""
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
    #: the percentiles resting on fewer samples than they need (p90: 10, p95: 20, p99: 100)
    thin: list[str] = Field(default_factory=list)
    #: the p50's 95 % interval (distribution-free: order statistics), None under 6 samples
    p50_ci: tuple[float, float] | None = None
    #: the p50 of each repeat (with ``--repeat``): their spread is the run-to-run variation
    p50_by_repeat: list[float] = Field(default_factory=list)

    @classmethod
    def of(cls, values_s: Sequence[float], *, by_repeat: Sequence[Sequence[float]] = ()) -> Percentiles:
        ms = sorted(v * 1000.0 for v in values_s)
        if not ms:
            return cls()
        n = len(ms)
        half = Z95 * math.sqrt(n) / 2
        low, high = math.floor(n / 2 - half), math.ceil(n / 2 + half)
        return cls(count=n, **{f"p{q}": _r(percentile(ms, q)) for q in QUANTILES}, mean=_r(sum(ms) / n),
                   min=_r(ms[0]), max=_r(ms[-1]), thin=[f"p{q}" for q in QUANTILES[1:] if n < 100 / (100 - q)],
                   p50_ci=(_r(ms[max(low, 0)]), _r(ms[min(high, n - 1)])) if n >= 6 else None,
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
        return sum(getattr(self, name) for name in ERROR_CLASSES)

    def by_class(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in ERROR_CLASSES}


class Overhead(StrictModel):
    """What else was going on while a level ran: the CPU of the whole generator process (every thread), how late
    its event loop ran (every timestamp is taken on it, so the lag bounds how late a figure can be read), and
    how busy the machine was (every CPU, whatever used it: an emulator, other work)."""

    cpu_s: float = 0.0
    #: process CPU / wall time: 1.0 is one CPU
    cpu_share: float = 0.0
    cpu_per_request_ms: float | None = None
    loop_lag_ms: Percentiles = Field(default_factory=Percentiles)
    #: share of all the machine's CPUs busy during the level (Linux /proc/stat; None elsewhere)
    machine_busy: float | None = None
    #: the 1-minute load average at the level's end, and the CPUs it is shared by
    load_avg: float | None = None
    cpus: int | None = None
    warning: str | None = None


class Gaps(StrictModel):
    """The per-gap view: every pause between two tokens of the level's streams (ms), and the stalls."""

    gap_ms: Percentiles = Field(default_factory=Percentiles)
    streams: int = 0
    #: streams with a gap longer than ``stall_s``, and their share of the streams
    stalled: int = 0
    stall_share: float = 0.0


class Slo(StrictModel):
    """How a level met the SLO: the share of its sent requests meeting every target, and their rate (goodput)."""

    met: int = 0
    share: float = 0.0
    goodput: float = 0.0
    meets: bool = False


class LevelResult(StrictModel):
    """The figures of one concurrency level against one target, every repeat pooled."""

    target: Literal["proxy", "direct"] = "proxy"
    concurrency: int
    rate: float | None = None
    repeats: int = 1
    sent: int = 0
    succeeded: int = 0
    errors: ErrorCounts = Field(default_factory=ErrorCounts)
    cancelled: int = 0
    #: first request sent → last byte of any, summed over the repeats
    duration_s: float = 0.0
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
    stopped_by: StopReason | None = None
    unreachable: bool = False
    overhead: Overhead = Field(default_factory=Overhead)


def ttft(s: Sample) -> float | None:
    return s.since_start(s.first_token_s)


def ttfat(s: Sample) -> float | None:
    return s.since_start(s.first_answer_s)


def e2e(s: Sample) -> float | None:
    return s.since_start(s.last_token_s if s.last_token_s is not None else s.last_byte_s)


def itl(s: Sample) -> float | None:
    n = s.tokens - (0 if s.reasoning_deltas else s.reasoning_tokens)
    if n < 2 or s.first_token_s is None or s.last_token_s is None:
        return None
    return (s.last_token_s - s.first_token_s) / (n - 1)


def _figure(samples: Sequence[Sample], of: Callable[[Sample], float | None],
            repeats: Sequence[int]) -> Percentiles:
    values = [(s.repeat, v) for s in samples if (v := of(s)) is not None]
    return Percentiles.of([v for _, v in values], by_repeat=[[v for r, v in values if r == k] for k in repeats])


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


def _duration(samples: Sequence[Sample]) -> float:
    """First sent → last byte, per repeat, summed (the repeats ran at different times)."""
    total = 0.0
    for k in {s.repeat for s in samples}:
        mine = [s for s in samples if s.repeat == k]
        total += max(s.last_byte_s or s.start_s for s in mine) - min(s.start_s for s in mine)
    return total


def _slo(ok: Sequence[Sample], sent: int, duration: float, targets: dict[str, float], share: float) -> Slo:
    reads = {"ttft_s": ttft, "ttfat_s": ttfat, "itl_s": itl, "e2e_s": e2e}

    def meets(s: Sample) -> bool:
        return all((v := reads[key](s)) is not None and v <= bound for key, bound in targets.items())

    met = sum(meets(s) for s in ok)
    return Slo(met=met, share=_r(met / sent) if sent else 0.0, goodput=_r(met / duration) if duration > 0 else 0.0,
               meets=bool(sent) and met / sent >= share)


def level_result(samples: Sequence[Sample], *, concurrency: int, target: Literal["proxy", "direct"] = "proxy",
                 rate: float | None = None, stall_s: float = 0.5, slo: dict[str, float] | None = None,
                 slo_share: float = 0.9, overhead: Overhead | None = None, stopped_by: StopReason | None = None,
                 cancelled: int = 0) -> LevelResult:
    """A level's figures from its samples (see the module docstring for the definitions)."""
    ok = [s for s in samples if s.error is None]
    repeats = sorted({s.repeat for s in samples})
    duration = _duration(samples) if samples else 0.0
    streams = [s for s in ok if s.gaps_ms or s.first_token_s is not None]
    stalled = sum(1 for s in streams if s.gaps_ms and max(s.gaps_ms) > stall_s * 1000)
    tokens = sum(s.tokens for s in ok)
    sources = {s.token_source for s in ok if s.tokens}
    source: Literal["usage", "deltas", "mixed", "none"] = (
        "none" if not sources else "mixed" if len(sources) > 1 else "usage" if "usage" in sources else "deltas")
    return LevelResult(
        target=target, concurrency=concurrency, rate=rate, repeats=max(len(repeats), 1), sent=len(samples),
        succeeded=len(ok), errors=_errors(samples), cancelled=cancelled, duration_s=_r(duration),
        ttft_ms=_figure(ok, ttft, repeats), ttfat_ms=_figure(ok, ttfat, repeats), itl_ms=_figure(ok, itl, repeats),
        e2e_ms=_figure(ok, e2e, repeats),
        last_byte_ms=_figure(ok, lambda s: s.since_start(s.last_byte_s), repeats),
        gaps=Gaps(gap_ms=Percentiles.of([g / 1000 for s in streams for g in s.gaps_ms]), streams=len(streams),
                  stalled=stalled, stall_share=_r(stalled / len(streams)) if streams else 0.0),
        request_throughput=_r(len(ok) / duration) if duration > 0 else 0.0,
        output_token_throughput=_r(tokens / duration) if duration > 0 else 0.0, output_tokens=tokens,
        token_source=source,
        slo=_slo(ok, len(samples), duration, slo, slo_share) if slo else None, stopped_by=stopped_by,
        unreachable=bool(samples) and all(s.connect_failed for s in samples), overhead=overhead or Overhead())


class AddedLatency(StrictModel):
    """What the proxy adds over its upstream at one level: the proxy's percentile minus the upstream's (ms)."""

    concurrency: int
    ttft_ms: dict[str, float | None] = Field(default_factory=dict)
    e2e_ms: dict[str, float | None] = Field(default_factory=dict)
    #: the p50 differences' 95 % bootstrap intervals (resampling both sides, seeded)
    ttft_p50_ci: tuple[float, float] | None = None
    e2e_p50_ci: tuple[float, float] | None = None
    #: the p50 difference of each repeat (proxy and direct ran back to back: a pair)
    ttft_p50_by_repeat: list[float] = Field(default_factory=list)
    e2e_p50_by_repeat: list[float] = Field(default_factory=list)


def _bootstrap(a: Sequence[float], b: Sequence[float], rng: random.Random, rounds: int = 200
               ) -> tuple[float, float] | None:
    if len(a) < 6 or len(b) < 6:
        return None
    diffs = sorted(percentile(sorted(rng.choices(a, k=len(a))), 50) - percentile(sorted(rng.choices(b, k=len(b))), 50)
                   for _ in range(rounds))
    return _r(percentile(diffs, 2.5) * 1000), _r(percentile(diffs, 97.5) * 1000)


def _values(samples: Sequence[Sample], read: Callable[[Sample], float | None]) -> list[float]:
    return [v for s in samples if s.error is None and (v := read(s)) is not None]


def added_latency(proxy: Sequence[Sample], direct: Sequence[Sample], *, concurrency: int,
                  seed: int = 0) -> AddedLatency:
    """The proxy's TTFT and E2E percentiles minus the upstream's at one level: a difference of percentiles of
    separate requests (interleaved), with a bootstrap interval on the p50 and, per repeat, the paired p50s."""
    rng = random.Random(seed)
    out = AddedLatency(concurrency=concurrency)
    repeats = sorted({s.repeat for s in proxy} & {s.repeat for s in direct})
    for name, read in (("ttft", ttft), ("e2e", e2e)):
        a, b = _values(proxy, read), _values(direct, read)
        pa, pb = Percentiles.of(a), Percentiles.of(b)
        setattr(out, f"{name}_ms", {q: _r(getattr(pa, q) - getattr(pb, q)) if a and b else None
                                    for q in ("p50", "p95", "p99")})
        setattr(out, f"{name}_p50_ci", _bootstrap(a, b, rng))
        pairs = [(_values([s for s in proxy if s.repeat == k], read), _values([s for s in direct if s.repeat == k],
                                                                              read)) for k in repeats]
        if len(pairs) > 1:
            setattr(out, f"{name}_p50_by_repeat", [_r((percentile(sorted(x), 50) - percentile(sorted(y), 50)) * 1000)
                                                   for x, y in pairs if x and y])
    return out
