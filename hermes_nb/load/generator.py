"""The load generator: chat requests on one asyncio event loop through aiohttp, one :class:`Sample` each.

Why aiohttp, not httpx (docs/performance.md P8): at 256 streams httpx's ``AsyncClient`` spent 12–18 ms of CPU a
request and read a 100 ms first token as 3.6–4.5 s; aiohttp's client (C parser) under 1 ms. Every moment is read on
the loop when the bytes are handed over, so each level also measures how late the loop ran, and the CPU.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

import aiohttp

from hermes_nb.core.redaction import Redactor
from hermes_nb.load.metrics import Overhead, Percentiles, Sample, StopReason, e2e, percentile
from hermes_nb.load.spec import LoadSpec
from hermes_nb.wire.payloads import ChatStream, parse_error_body, parse_retry_after
from hermes_nb.wire.sse import SSEDecoder

ERROR_BODY_BYTES = 64 * 1024
LAG_TICK_S = 0.05
PROGRESS_EVERY_S = 1.0
#: a level warns when its loop ran later than this (p99), the process used more than this share of a CPU, or the
#: machine's CPUs were busier than this: fixed bounds, whatever the figures measured
LAG_WARN_MS, CPU_WARN_SHARE, MACHINE_WARN_BUSY = 10.0, 0.8, 0.9


@dataclass(frozen=True, slots=True)
class Prepared:
    """One request from the one request builder: URL, headers (Authorization included), body."""

    url: str
    headers: dict[str, str]
    body: bytes


def _http_error(sample: Sample, status: int, headers: Any, raw: bytes, redactor: Redactor) -> None:
    sample.error = "rate_limited" if status == 429 else "server_error" if status >= 500 else "client_error"
    envelope = parse_error_body(raw, headers.get("Content-Type"))
    what = envelope.type or envelope.code if envelope is not None else None
    message = envelope.message if envelope is not None and envelope.message else raw[:160].decode("utf-8", "replace")
    detail = f"{status}" + (f" {what}" if what else "") + (f": {' '.join(message.split())[:160]}" if message else "")
    if status == 429:
        sample.retry_after_s = parse_retry_after(headers)
        detail += " (no Retry-After)" if sample.retry_after_s is None else f" (Retry-After {sample.retry_after_s:g} s)"
    sample.detail = redactor.text(detail)


def _tokens(sample: Sample, chat: ChatStream, deltas: int, redactor: Redactor) -> None:
    """Token counts from the usage (else the deltas), and the stream's own errors."""
    usage = chat.usage or {}
    completion, details = usage.get("completion_tokens"), usage.get("completion_tokens_details")
    reasoning = details.get("reasoning_tokens") if isinstance(details, dict) else None
    sample.reasoning_deltas = chat.reasoning
    if isinstance(completion, int) and not isinstance(completion, bool) and completion >= 0:
        sample.tokens, sample.token_source = completion, "usage"
    else:
        sample.tokens, sample.token_source = deltas + chat.reasoning, "deltas"
    sample.reasoning_tokens = reasoning if isinstance(reasoning, int) and reasoning >= 0 else chat.reasoning
    if chat.in_band_error:
        sample.error = "stream_error"
        sample.detail = redactor.text(f"error inside the answer: {chat.error.message if chat.error else '?'}"[:200])
    elif not chat.done and chat.finish_reason is None:
        sample.error, sample.detail = "transport", "the answer ended before [DONE] or a finish_reason"


async def _read_stream(sample: Sample, response: aiohttp.ClientResponse, origin: float) -> tuple[ChatStream, int]:
    decoder, chat = SSEDecoder(), ChatStream()
    deltas, last = 0, None
    async for chunk in response.content.iter_any():
        now = time.perf_counter() - origin
        sample.last_byte_s = now
        if chat.finished:
            continue  # read to the end: the connection goes back to the pool
        for event in decoder.feed(chunk):
            thoughts = chat.reasoning
            if chat.feed(event):
                deltas += 1
                sample.last_token_s = now
                if sample.first_answer_s is None:
                    sample.first_answer_s = now
            elif chat.reasoning == thoughts:
                if chat.finished:
                    break
                continue
            if last is not None:
                sample.gaps_ms.append(round((now - last) * 1000, 3))
            elif sample.first_token_s is None:
                sample.first_token_s = now
            last = now
    return chat, deltas


async def measure_one(session: aiohttp.ClientSession, request: Prepared, sample: Sample, *, origin: float,
                      timeout_s: float, redactor: Redactor, stream: bool = True) -> Sample:
    """Send one chat request and time it; failures are the sample's, never raised."""
    sample.start_s = time.perf_counter() - origin
    try:
        async with session.post(request.url, data=request.body, headers=request.headers) as response:
            sample.status = response.status
            kind = response.headers.get("Content-Type", "")
            if not 200 <= response.status < 300:
                raw = await response.content.read(ERROR_BODY_BYTES)
                _http_error(sample, response.status, response.headers, raw, redactor)
            elif "text/event-stream" in kind:
                _tokens(sample, *await _read_stream(sample, response, origin), redactor)
            elif "json" in kind and not stream:
                chat, whole = ChatStream(), json.loads(await response.read())
                sample.last_byte_s = time.perf_counter() - origin
                chat.feed_chunk(whole if isinstance(whole, dict) else {})
                chat.done = True
                _tokens(sample, chat, 1 if chat.text else 0, redactor)
            else:
                await response.read()
                sample.error = "stream_error"
                sample.detail = f"a {response.status} answer of the wrong kind ({kind or 'no content type'})"
    except TimeoutError:
        sample.error, sample.detail = "timeout", f"no byte for {timeout_s:g} s"
    except aiohttp.ClientConnectorError as exc:
        sample.error, sample.connect_failed = "transport", True
        sample.detail = redactor.text(f"connect failed: {exc.os_error.strerror or exc.os_error}")
    except (aiohttp.ClientError, OSError, ValueError) as exc:
        sample.error, sample.detail = "transport", redactor.text(f"{type(exc).__name__}: {exc}"[:200])
    if sample.last_byte_s is None:
        sample.last_byte_s = time.perf_counter() - origin
    return sample


def _cpu_ticks() -> tuple[int, int] | None:
    """(busy, total) jiffies of all the machine's CPUs (Linux), or None."""
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            values = [int(v) for v in fh.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    return sum(values) - values[3] - (values[4] if len(values) > 4 else 0), sum(values)


def _overhead(tag: str, cpu: float, wall: float, requests: int, lags: list[float],
              ticks: tuple[tuple[int, int] | None, tuple[int, int] | None]) -> Overhead:
    before, after = ticks
    busy = (after[0] - before[0]) / (after[1] - before[1]) if before and after and after[1] > before[1] else None
    over = Overhead(cpu_s=round(cpu, 4), cpu_share=round(cpu / wall, 3), cpus=os.cpu_count(),
                    cpu_per_request_ms=round(cpu * 1000 / requests, 3) if requests else None,
                    loop_lag_ms=Percentiles.of(lags), machine_busy=None if busy is None else round(busy, 3),
                    load_avg=round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None)
    lag = over.loop_lag_ms.p99 or 0.0
    if lag > LAG_WARN_MS or over.cpu_share > CPU_WARN_SHARE or (busy or 0.0) > MACHINE_WARN_BUSY:
        over.warning = (f"{tag}: the generator's loop ran up to {lag:.1f} ms late (p99), the process used "
                        f"{over.cpu_share:.0%} of a CPU and the machine's {over.cpus} CPUs were "
                        f"{'?' if busy is None else f'{busy:.0%}'} busy (load average {over.load_avg}): its figures "
                        "carry the machine's own delay")
    return over


class Level:
    """One level against one target, run once: ``warmup_rounds`` unmeasured rounds (connections opened; a failure
    there ends the level, its failures reported), then closed loop (``concurrency`` workers back to back) or open
    loop (Poisson arrivals at ``rate``, at most ``concurrency`` in flight) until the budget, the first 429 (those in
    flight finish), the run's deadline, or :meth:`cut`."""

    def __init__(self, build: Callable[[], Prepared], spec: LoadSpec, *, target: str, concurrency: int,
                 repeat: int, budget: int | None, origin: float, redactor: Redactor) -> None:
        self.build, self.spec, self.target, self.concurrency, self.repeat = build, spec, target, concurrency, repeat
        self.budget, self.origin, self.redactor = budget, origin, redactor
        self.tag = f"{target} concurrency {concurrency}" + (f" (repeat {repeat + 1})" if spec.repeat > 1 else "")
        self.samples: list[Sample] = []
        self.cancelled = 0
        self.stopped_by: StopReason | None = None
        self.overhead = Overhead()
        self._halt, self._warming = asyncio.Event(), True
        self._in_flight: set[asyncio.Task[Sample]] = set()

    def cut(self) -> None:
        """Ctrl-C: send nothing more; what is in flight is cancelled (counted, not measured)."""
        self.stopped_by = self.stopped_by or "interrupted"
        self._halt.set()
        self.cancelled += len(self._in_flight)
        for task in list(self._in_flight):
            task.cancel()

    def _record(self, sample: Sample) -> None:
        self.samples.append(sample)
        if sample.error == "rate_limited":
            self.stopped_by = self.stopped_by or "rate_limited"
        if sample.error == "rate_limited" or (self._warming and sample.error is not None):
            self._halt.set()

    def _may_send(self, issued: int, count: int | None, until: float | None, deadline: float) -> bool:
        if self._halt.is_set() or (count is not None and issued >= count):
            return False
        if time.perf_counter() >= deadline:
            self.stopped_by = self.stopped_by or "time_cap"
            return False
        return until is None or time.perf_counter() < until

    def _send(self, session: aiohttp.ClientSession) -> asyncio.Task[Sample]:
        sample, spec = Sample(self.target, self.concurrency, self.repeat, 0.0), self.spec
        task = asyncio.create_task(measure_one(session, self.build(), sample, origin=self.origin, stream=spec.stream,
                                               redactor=self.redactor, timeout_s=spec.request_timeout_s))
        self._in_flight.add(task)
        task.add_done_callback(self._in_flight.discard)
        return task

    async def _closed(self, session: aiohttp.ClientSession, count: int | None, until: float | None,
                      deadline: float) -> None:
        issued = 0

        async def worker() -> None:
            nonlocal issued
            while self._may_send(issued, count, until, deadline):
                issued += 1
                with suppress(asyncio.CancelledError):  # cut: the worker ends
                    self._record(await self._send(session))

        await asyncio.gather(*(worker() for _ in range(self.concurrency)))

    async def _arrivals(self, session: aiohttp.ClientSession, count: int | None, until: float | None,
                        deadline: float) -> None:
        rng = random.Random(f"{self.spec.seed}-{self.concurrency}-{self.repeat}")
        slots, due, issued = asyncio.Semaphore(self.concurrency), time.perf_counter(), 0

        def landed(task: asyncio.Task[Sample]) -> None:
            slots.release()
            if not task.cancelled() and task.exception() is None:
                self._record(task.result())

        while self._may_send(issued, count, until, deadline):
            due += rng.expovariate(self.spec.rate or 1.0)
            if (wait := due - time.perf_counter()) > 0:
                with suppress(TimeoutError):
                    await asyncio.wait_for(self._halt.wait(), wait)
            await slots.acquire()
            if not self._may_send(issued, count, until, deadline):
                slots.release()
                break
            issued += 1
            self._send(session).add_done_callback(landed)
        await asyncio.gather(*self._in_flight, return_exceptions=True)

    async def _progress(self, say: Callable[[str], None]) -> None:
        """Every second: done / in flight / E2E p50 so far / ETA."""
        started = time.perf_counter()
        while True:
            await asyncio.sleep(PROGRESS_EVERY_S)
            spent, count = time.perf_counter() - started, len(self.samples)
            so_far = sorted(v for s in self.samples if s.error is None and (v := e2e(s)) is not None)
            if self.budget is not None:
                eta = (self.budget - count) * spent / count if count else None
            else:
                eta = max((self.spec.level_budget_s or 0.0) - spent, 0.0)
            say(f"{self.tag}: {count}/{'…' if self.budget is None else self.budget} done, {len(self._in_flight)} in "
                f"flight, E2E p50 {f'{percentile(so_far, 50) * 1000:.1f} ms' if so_far else '-'} so far, ETA "
                + (f"{eta:.0f} s" if eta is not None else "-"))

    async def run(self, deadline: float, progress: Callable[[str], None] | None = None) -> Level:
        spec, lags = self.spec, list[float]()

        async def lag() -> None:
            while True:
                before = time.perf_counter()
                await asyncio.sleep(LAG_TICK_S)
                lags.append(max(0.0, time.perf_counter() - before - LAG_TICK_S))

        connector = aiohttp.TCPConnector(limit=self.concurrency, limit_per_host=0)
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=spec.request_timeout_s,
                                        sock_read=spec.request_timeout_s)  # a silence, connecting included
        async with aiohttp.ClientSession(connector=connector, timeout=timeout, trust_env=False,
                                         auto_decompress=False) as session:
            await self._closed(session, spec.warmup_rounds * self.concurrency, None, deadline)
            if self._halt.is_set():  # a warm-up failure is the level's; an interrupted warm-up measured nothing
                if self.stopped_by == "interrupted":
                    self.samples.clear()
                return self
            self.samples.clear()
            self._warming = False
            tickers = [asyncio.create_task(lag())] + ([asyncio.create_task(self._progress(progress))]
                                                      if progress else [])
            cpu0, wall0, ticks0 = time.process_time(), time.perf_counter(), _cpu_ticks()
            until = wall0 + spec.level_budget_s if spec.level_budget_s is not None else None
            await (self._arrivals if spec.rate else self._closed)(session, self.budget, until, deadline)
            cpu, wall = time.process_time() - cpu0, max(time.perf_counter() - wall0, 1e-9)
            for ticker in tickers:
                ticker.cancel()
            await asyncio.gather(*tickers, return_exceptions=True)
        self.overhead = _overhead(self.tag, cpu, wall, len(self.samples), lags, (ticks0, _cpu_ticks()))
        return self
