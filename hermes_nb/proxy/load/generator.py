"""The load generator: streamed chat requests on one asyncio event loop, through aiohttp.

Why aiohttp and not httpx here (``benchmarks/load_generator.py``, docs/performance.md P7): on this 2-core
machine httpx's ``AsyncClient`` spent 12–18 ms of CPU per request at 256 concurrent streams and its TTFT p50
read 3.6–4.5 s where the emulator answered after 0.1 s; aiohttp's client (C HTTP parser) held 256 streams at
0.83–0.88 ms per request. The requests themselves still come from the one request builder
(:meth:`hermes_nb.wire.client.HermesClient.build_request`), the stream from the one SSE decoder and chunk
interpreter (:mod:`hermes_nb.wire.sse`, :class:`hermes_nb.wire.payloads.ChatStream`).

Each request is timed on the loop (``time.perf_counter``) when its bytes are handed over, so the loop's own
lateness bounds every figure; :func:`run_level` measures it (a 10 ms ticker) with the CPU its thread used.
A level runs closed loop (``concurrency`` workers back to back) or open loop (Poisson arrivals at ``rate``,
at most ``concurrency`` in flight). It stops sending on the first 429 (the requests in flight finish), when
its budget or duration is spent, at the run's time cap, or on ``stop`` (Ctrl-C: the requests in flight are
cancelled and not counted).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from hermes_nb.core.redaction import Redactor
from hermes_nb.proxy.load.report import Overhead, Percentiles, Sample, StopReason
from hermes_nb.wire.envelopes import parse_error_body
from hermes_nb.wire.payloads import ChatStream, parse_retry_after
from hermes_nb.wire.sse import SSEDecoder

__all__ = ["Prepared", "LevelRun", "measure_one", "run_level", "open_session"]

#: at most this much of an error answer is read (for its envelope)
ERROR_BODY_BYTES = 64 * 1024
#: the loop-lag ticker's period
LAG_TICK_S = 0.01


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


def open_session(concurrency: int) -> aiohttp.ClientSession:
    """A client session with a pool of ``concurrency`` connections; no proxy from the environment, no timeout
    of its own (each request has :func:`measure_one`'s), no decompression."""
    connector = aiohttp.TCPConnector(limit=concurrency, limit_per_host=0)
    return aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=None), trust_env=False,
                                 auto_decompress=False)


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


async def _read_stream(sample: Sample, response: aiohttp.ClientResponse, start: float, origin: float,
                       redactor: Redactor) -> None:
    decoder, chat = SSEDecoder(), ChatStream()
    deltas = 0
    async for chunk in response.content.iter_any():
        now = time.perf_counter()
        sample.end_s = now - origin
        if chat.finished:
            continue  # read to the end: the connection goes back to the pool
        for event in decoder.feed(chunk):
            if chat.feed(event):
                deltas += 1
                if sample.ttft_s is None:
                    sample.ttft_s = now - start
            if chat.finished:
                break
    completion = (chat.usage or {}).get("completion_tokens")
    if isinstance(completion, int) and not isinstance(completion, bool) and completion >= 0:
        sample.output_tokens, sample.token_source = completion, "usage"
    else:
        sample.output_tokens, sample.token_source = deltas, "deltas"
    if chat.in_band_error:
        envelope = chat.error
        sample.error = "stream_error"
        sample.detail = redactor.text(f"error inside the 200 stream: {envelope.message if envelope else '?'}"[:200])
    elif not chat.done and chat.finish_reason is None:
        sample.error, sample.detail = "transport", "the stream ended before [DONE] or a finish_reason"


async def measure_one(session: aiohttp.ClientSession, request: Prepared, *, origin: float, timeout_s: float,
                      redactor: Redactor) -> Sample:
    """Send one streamed chat request and time it (see :mod:`hermes_nb.proxy.load.report` for the figures)."""
    start = time.perf_counter()
    sample = Sample(start_s=start - origin, end_s=start - origin)
    try:
        async with asyncio.timeout(timeout_s):
            async with session.post(request.url, data=request.body, headers=request.headers) as response:
                sample.status = response.status
                sample.end_s = time.perf_counter() - origin
                if not 200 <= response.status < 300:
                    raw = await response.content.read(ERROR_BODY_BYTES)
                    sample.end_s = time.perf_counter() - origin
                    _http_error(sample, response.status, response.headers, raw, redactor)
                elif "text/event-stream" not in response.headers.get("Content-Type", ""):
                    await response.read()
                    sample.end_s = time.perf_counter() - origin
                    sample.error = "stream_error"
                    sample.detail = f"a {response.status} answer that is not an event stream " \
                                    f"({response.headers.get('Content-Type') or 'no content type'})"
                else:
                    await _read_stream(sample, response, start, origin, redactor)
    except TimeoutError:
        sample.end_s = time.perf_counter() - origin
        sample.error, sample.detail = "timeout", f"no complete answer within {timeout_s:g} s"
    except aiohttp.ClientConnectorError as exc:
        sample.end_s = time.perf_counter() - origin
        sample.error, sample.connect_failed = "transport", True
        sample.detail = redactor.text(f"connect failed: {exc.os_error.strerror or exc.os_error}")
    except (aiohttp.ClientError, OSError) as exc:
        sample.end_s = time.perf_counter() - origin
        sample.error, sample.detail = "transport", redactor.text(f"{type(exc).__name__}: {exc}"[:200])
    return sample


async def _lag(done: asyncio.Event, lags: list[float]) -> None:
    while not done.is_set():
        before = time.perf_counter()
        await asyncio.sleep(LAG_TICK_S)
        lags.append(max(0.0, time.perf_counter() - before - LAG_TICK_S))


async def run_level(build: Callable[[], Prepared], *, concurrency: int, budget: int | None,
                    duration_s: float | None, rate: float | None, timeout_s: float, stop: asyncio.Event,
                    deadline: float, redactor: Redactor, seed: int = 0) -> LevelRun:
    """One level: requests from ``build()`` until its budget, duration or a stop (see the module docstring)."""
    run = LevelRun()
    in_flight: set[asyncio.Task[Sample]] = set()
    halt = asyncio.Event()
    issued = 0
    origin = time.perf_counter()

    def may_send() -> bool:
        if halt.is_set() or stop.is_set() or (budget is not None and issued >= budget):
            return False
        now = time.perf_counter()
        if now >= deadline:
            run.stopped_by = run.stopped_by or "time_cap"
            return False
        return duration_s is None or now - origin < duration_s

    def record(sample: Sample) -> None:
        run.samples.append(sample)
        if sample.error == "rate_limited" and not halt.is_set():
            run.stopped_by = "rate_limited"
            halt.set()

    async with open_session(concurrency) as session:
        def spawn() -> asyncio.Task[Sample]:
            nonlocal issued
            task = asyncio.create_task(measure_one(session, build(), origin=origin, timeout_s=timeout_s,
                                                   redactor=redactor))
            issued += 1
            in_flight.add(task)
            task.add_done_callback(in_flight.discard)
            return task

        async def worker() -> None:  # closed loop: one request after the other
            while may_send():
                try:
                    record(await spawn())
                except asyncio.CancelledError:
                    return

        async def arrivals() -> None:  # open loop: Poisson arrivals, at most `concurrency` in flight
            rng, slots = random.Random(seed), asyncio.Semaphore(concurrency)
            due = origin

            def landed(task: asyncio.Task[Sample]) -> None:
                slots.release()
                if not task.cancelled() and task.exception() is None:
                    record(task.result())

            while may_send():
                due += rng.expovariate(rate or 1.0)
                wait = due - time.perf_counter()
                if wait > 0:
                    await _first(halt, stop, timeout=wait)
                await slots.acquire()
                if not may_send():
                    slots.release()
                    break
                spawn().add_done_callback(landed)
            await asyncio.gather(*in_flight, return_exceptions=True)

        done = asyncio.Event()
        lags: list[float] = []
        ticker = asyncio.create_task(_lag(done, lags))
        cpu0 = time.thread_time()
        drivers = [asyncio.create_task(arrivals())] if rate else [asyncio.create_task(worker())
                                                                  for _ in range(concurrency)]
        watcher: asyncio.Task[Any] | None = asyncio.create_task(stop.wait())
        pending: set[asyncio.Task[Any]] = set(drivers)
        while pending:
            finished, _ = await asyncio.wait(pending | ({watcher} if watcher else set()),
                                             return_when=asyncio.FIRST_COMPLETED)
            pending -= finished
            if watcher is not None and watcher in finished:  # Ctrl-C: what is in flight is cut, not measured
                watcher = None
                run.cancelled += len(in_flight)
                for task in list(in_flight):
                    task.cancel()
        if watcher is not None:
            watcher.cancel()
        for driver in drivers:  # a bug in a driver surfaces here rather than as a lost task
            error = None if driver.cancelled() else driver.exception()
            if error is not None:
                raise error
        cpu = time.thread_time() - cpu0
        done.set()
        await ticker
    if stop.is_set() and run.stopped_by is None:
        run.stopped_by = "interrupted"
    wall = max(time.perf_counter() - origin, 1e-9)
    run.overhead = Overhead(cpu_s=round(cpu, 4), cpu_share=round(cpu / wall, 3),
                            cpu_per_request_ms=round(cpu * 1000 / len(run.samples), 3) if run.samples else None,
                            loop_lag_ms=Percentiles.of(lags))
    return run


async def _first(*events: asyncio.Event, timeout: float) -> None:
    """Wait until any of ``events`` is set, or ``timeout`` seconds."""
    waits = [asyncio.create_task(e.wait()) for e in events]
    try:
        await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waits:
            w.cancel()
