"""The load generator: chat requests on one asyncio event loop, through aiohttp, one :class:`Sample` each.

Why aiohttp and not httpx (``benchmarks/load_generator.py``, docs/performance.md P8): at 256 concurrent streams
httpx's ``AsyncClient`` spent 12–18 ms of CPU per request and read a 100 ms first token as 3.6–4.5 s; aiohttp's
client (C HTTP parser) under 1 ms. The requests still come from the one request builder
(:meth:`hermes_nb.wire.client.HermesClient.build_request`), the stream from the one SSE decoder and chunk reader
(:mod:`hermes_nb.wire.sse`, :class:`hermes_nb.wire.payloads.ChatStream`).

Every moment is read on the loop (``time.perf_counter``) when the bytes are handed over, so the loop's own
lateness bounds every figure: :func:`run_level` measures it (how late a 50 ms ticker wakes), with the CPU of the
whole process and how busy the machine was, and warns on fixed bounds. A level first sends ``warmup_rounds``
rounds that are not measured (connections opened; a failure there ends the level and is reported), then runs closed loop
(``concurrency`` workers back to back) or open loop (Poisson arrivals at ``rate``, at most ``concurrency`` in
flight) until its budget, on the first 429 (those in flight finish), at the run's budget, or on ``stop`` (Ctrl-C:
those in flight are cancelled, not measured).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from hermes_nb.core.redaction import Redactor
from hermes_nb.load.metrics import Overhead, Percentiles, StopReason, e2e, percentile
from hermes_nb.load.samples import Sample
from hermes_nb.load.spec import LoadSpec
from hermes_nb.wire.payloads import ChatStream, parse_error_body, parse_retry_after
from hermes_nb.wire.sse import SSEDecoder

__all__ = ["Prepared", "LevelRun", "measure_one", "run_level", "open_session"]

ERROR_BODY_BYTES = 64 * 1024
LAG_TICK_S = 0.05
PROGRESS_EVERY_S = 1.0
#: a level is warned about when its loop ran later than this (p99), the process used more than this share of a
#: CPU, or the machine's CPUs were busier than this: fixed bounds, whatever the figures measured
LAG_WARN_MS, CPU_WARN_SHARE, MACHINE_WARN_BUSY = 10.0, 0.8, 0.9


@dataclass(frozen=True, slots=True)
class Prepared:
    """One request, built by the one request builder: URL, headers (Authorization included), body."""

    url: str
    headers: dict[str, str]
    body: bytes


@dataclass
class LevelRun:
    samples: list[Sample] = field(default_factory=list)
    cancelled: int = 0
    stopped_by: StopReason | None = None
    overhead: Overhead = field(default_factory=Overhead)


def open_session(concurrency: int, timeout_s: float) -> aiohttp.ClientSession:
    """A pool of ``concurrency`` connections; no proxy from the environment, no decompression; a request fails
    after ``timeout_s`` without a byte (connecting included)."""
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=concurrency, limit_per_host=0), trust_env=False, auto_decompress=False,
        timeout=aiohttp.ClientTimeout(total=None, sock_connect=timeout_s, sock_read=timeout_s))


def _http_error(sample: Sample, status: int, headers: Any, raw: bytes, redactor: Redactor) -> None:
    sample.error = "rate_limited" if status == 429 else "server_error" if status >= 500 else "client_error"
    envelope = parse_error_body(raw, headers.get("Content-Type"))
    what = envelope.type or envelope.code if envelope is not None else None
    message = envelope.message if envelope is not None and envelope.message else raw[:160].decode("utf-8", "replace")
    detail = f"{status}" + (f" {what}" if what else "") + (f": {' '.join(message.split())[:160]}" if message else "")
    if status == 429:
        sample.retry_after_s = parse_retry_after(headers)
        detail += f" (Retry-After {sample.retry_after_s:g} s)" if sample.retry_after_s is not None else \
            " (no Retry-After)"
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
    """Send one chat request and time it (the figures: :mod:`hermes_nb.load.metrics`)."""
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
                chat = ChatStream()
                body = await response.read()
                sample.last_byte_s = time.perf_counter() - origin
                whole = json.loads(body)
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


async def _lag(done: asyncio.Event, lags: list[float]) -> None:
    while not done.is_set():
        before = time.perf_counter()
        await asyncio.sleep(LAG_TICK_S)
        lags.append(max(0.0, time.perf_counter() - before - LAG_TICK_S))


def _overhead(tag: str, cpu: float, wall: float, requests: int, lags: list[float],
              ticks: tuple[tuple[int, int] | None, tuple[int, int] | None]) -> Overhead:
    before, after = ticks
    busy = ((after[0] - before[0]) / (after[1] - before[1])
            if before and after and after[1] > before[1] else None)
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


async def run_level(build: Callable[[], Prepared], spec: LoadSpec, *, target: str, concurrency: int, repeat: int,
                    budget: int | None, stop: asyncio.Event, deadline: float, origin: float, redactor: Redactor,
                    progress: Callable[[str], None] | None = None) -> LevelRun:
    """One level against one target: warm-up, then measured requests from ``build()`` (module docstring)."""
    run, halt = LevelRun(), asyncio.Event()
    in_flight: set[asyncio.Task[Sample]] = set()
    tag = f"{target} concurrency {concurrency}" + (f" (repeat {repeat + 1})" if spec.repeat > 1 else "")
    warm: list[Sample] = []  # the warm-up's answers: not measured, unless one fails (then they are the level)
    warming = True

    def record(sample: Sample) -> None:
        (warm if warming else run.samples).append(sample)
        if sample.error == "rate_limited" and run.stopped_by is None:
            run.stopped_by = "rate_limited"
        if sample.error == "rate_limited" or (warming and sample.error is not None):
            halt.set()

    def may_send(issued: int, count: int | None, until: float | None) -> bool:
        if halt.is_set() or stop.is_set() or (count is not None and issued >= count):
            return False
        if time.perf_counter() >= deadline:
            run.stopped_by = run.stopped_by or "time_cap"
            return False
        return until is None or time.perf_counter() < until

    async with open_session(concurrency, spec.request_timeout_s) as session:
        def send() -> asyncio.Task[Sample]:
            task = asyncio.create_task(measure_one(session, build(), Sample(target, concurrency, repeat, 0.0),
                                                   origin=origin, timeout_s=spec.request_timeout_s,
                                                   redactor=redactor, stream=spec.stream))
            in_flight.add(task)
            task.add_done_callback(in_flight.discard)
            return task

        async def closed(count: int | None, until: float | None) -> None:
            issued = 0

            async def worker() -> None:
                nonlocal issued
                while may_send(issued, count, until):
                    issued += 1
                    try:
                        record(await send())
                    except asyncio.CancelledError:
                        return

            await asyncio.gather(*(worker() for _ in range(concurrency)))

        async def arrivals(count: int | None, until: float | None) -> None:
            rng, slots = random.Random(f"{spec.seed}-{concurrency}-{repeat}"), asyncio.Semaphore(concurrency)
            due, issued = time.perf_counter(), 0

            def landed(task: asyncio.Task[Sample]) -> None:
                slots.release()
                if not task.cancelled() and task.exception() is None:
                    record(task.result())

            while may_send(issued, count, until):
                due += rng.expovariate(spec.rate or 1.0)
                if due > time.perf_counter():
                    await _first(halt, stop, timeout=due - time.perf_counter())
                await slots.acquire()
                if not may_send(issued, count, until):
                    slots.release()
                    break
                issued += 1
                send().add_done_callback(landed)
            await asyncio.gather(*in_flight, return_exceptions=True)

        await _drive(closed(spec.warmup_rounds * concurrency, None), stop, in_flight, run)
        warming = False
        if halt.is_set() or stop.is_set():
            run.samples = warm if halt.is_set() else []
            return _ended(run, stop)
        done, lags = asyncio.Event(), list[float]()
        tickers = [asyncio.create_task(_lag(done, lags))]
        if progress is not None:
            tickers.append(asyncio.create_task(_progress(done, progress, tag, run, in_flight, budget, spec)))
        cpu0, wall0, ticks0 = time.process_time(), time.perf_counter(), _cpu_ticks()
        until = wall0 + spec.level_budget_s if spec.level_budget_s is not None else None
        await _drive((arrivals if spec.rate else closed)(budget, until), stop, in_flight, run)
        cpu, wall = time.process_time() - cpu0, max(time.perf_counter() - wall0, 1e-9)
        done.set()
        await asyncio.gather(*tickers)
    run.overhead = _overhead(tag, cpu, wall, len(run.samples), lags, (ticks0, _cpu_ticks()))
    return _ended(run, stop)


def _ended(run: LevelRun, stop: asyncio.Event) -> LevelRun:
    if stop.is_set() and run.stopped_by is None:
        run.stopped_by = "interrupted"
    return run


async def _drive(driver: Coroutine[Any, Any, None], stop: asyncio.Event, in_flight: set[asyncio.Task[Sample]],
                 run: LevelRun) -> None:
    """Run a phase's driver; on ``stop`` (Ctrl-C) cut what is in flight (counted as cancelled, not measured)."""
    task, watcher = asyncio.create_task(driver), asyncio.create_task(stop.wait())
    finished, _ = await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    if watcher in finished:
        run.cancelled += len(in_flight)
        for pending in list(in_flight):
            pending.cancel()
        await task
    watcher.cancel()
    task.result()  # a bug in a driver surfaces here rather than as a lost task


async def _progress(done: asyncio.Event, say: Callable[[str], None], tag: str, run: LevelRun,
                    in_flight: set[asyncio.Task[Sample]], budget: int | None, spec: LoadSpec) -> None:
    """Every second inside a level: done / in flight / E2E p50 so far / ETA."""
    started = time.perf_counter()
    while True:
        try:
            await asyncio.wait_for(done.wait(), PROGRESS_EVERY_S)
            return
        except TimeoutError:
            pass
        spent, count = time.perf_counter() - started, len(run.samples)
        so_far = sorted(v for s in run.samples if s.error is None and (v := e2e(s)) is not None)
        if budget is not None:
            eta = (budget - count) * spent / count if count else None
        else:
            eta = max((spec.level_budget_s or 0.0) - spent, 0.0)
        say(f"{tag}: {count}/{budget if budget is not None else '…'} done, {len(in_flight)} in flight, E2E p50 "
            + (f"{percentile(so_far, 50) * 1000:.1f} ms" if so_far else "-") + " so far, ETA "
            + (f"{eta:.0f} s" if eta is not None else "-"))


async def _first(*events: asyncio.Event, timeout: float) -> None:
    """Wait until any of ``events`` is set, or ``timeout`` seconds."""
    waits = [asyncio.create_task(e.wait()) for e in events]
    try:
        await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waits:
            w.cancel()
