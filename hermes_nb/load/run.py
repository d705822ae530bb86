"""``run_load``, the load probe as one call, and its generator: aiohttp on one event loop (httpx cost too much CPU a
request: docs/performance.md P8), in a thread of its own so Ctrl-C in the caller returns what was measured. The embedded
emulator runs in processes of its own: in a thread, the generator read its queueing as the target's."""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import os
import platform
import random
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager, suppress
from typing import Any, NamedTuple
from urllib.parse import urlsplit

import aiohttp

from hermes_nb import __version__
from hermes_nb.core.config import HermesProxyRuntimeConfig
from hermes_nb.core.errors import ProxyUnreachable, UsageError
from hermes_nb.core.io import iso_now
from hermes_nb.core.redaction import Redactor
from hermes_nb.core.resolve import resolve_runtime_config
from hermes_nb.load.report import LevelResult, LoadReport, Overhead, Sample, TargetInfo, compute, level_result
from hermes_nb.load.spec import LoadSpec, guard
from hermes_nb.load.views import level_line, progress_line, register_displays
from hermes_nb.target import UNKNOWN, identify, release_of
from hermes_nb.wire.client import HermesClient
from hermes_nb.wire.payloads import ChatStream, chat_request_body, parse_error_body, parse_retry_after
from hermes_nb.wire.sse import SSEDecoder

Progress = Callable[[str], None]
ERROR_BODY_BYTES = 64 * 1024
LAG_TICK_S = 0.05
PROGRESS_EVERY_S = 1.0


class Prepared(NamedTuple):
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


class Level:
    """One level against one target, run once: unmeasured warm-up rounds (a failure there ends it), then ``concurrency``
    workers, closed or open loop, until the budget, the first 429, the run's deadline, or :meth:`cut`."""

    def __init__(self, build: Callable[[], Prepared], spec: LoadSpec, *, target: str, concurrency: int, repeat: int,
                 budget: int | None, origin: float, deadline: float, redactor: Redactor) -> None:
        self.build, self.spec, self.concurrency, self.repeat = build, spec, concurrency, repeat
        self.budget, self.origin, self.deadline, self.redactor = budget, origin, deadline, redactor
        self.tag = f"{target} concurrency {concurrency}" + (f" (repeat {repeat + 1})" if spec.repeat > 1 else "")
        self.result = LevelResult(target=target, concurrency=concurrency)
        self.samples: list[Sample] = []
        self._halt, self._warming, self._until = asyncio.Event(), True, float("inf")
        self._in_flight: set[asyncio.Task[Sample]] = set()

    def cut(self) -> None:
        """Ctrl-C: send nothing more; what is in flight is cancelled (counted, not measured)."""
        self.result.stopped_by = self.result.stopped_by or "interrupted"
        self._halt.set()
        self.result.cancelled += len(self._in_flight)
        for task in list(self._in_flight):
            task.cancel()

    def _record(self, sample: Sample) -> None:
        self.samples.append(sample)
        if sample.error == "rate_limited":
            self.result.stopped_by = self.result.stopped_by or "rate_limited"
        if sample.error == "rate_limited" or (self._warming and sample.error is not None):
            self._halt.set()

    def _open(self) -> bool:
        if self._halt.is_set():
            return False
        if time.perf_counter() >= self.deadline:
            self.result.stopped_by = self.result.stopped_by or "time_cap"
            return False
        return time.perf_counter() < self._until

    async def _phase(self, session: aiohttp.ClientSession, count: int | None, rate: float | None) -> None:
        rng = random.Random(f"{self.spec.seed}-{self.concurrency}-{self.repeat}")
        issued, due = 0, time.perf_counter()

        async def worker() -> None:
            nonlocal issued, due
            while self._open() and (count is None or issued < count):
                issued += 1
                if rate:  # the next arrival: its worker waits for it (all busy: the first free one sends it late)
                    due += rng.expovariate(rate)
                    if (wait := due - time.perf_counter()) > 0:
                        with suppress(TimeoutError):
                            await asyncio.wait_for(self._halt.wait(), wait)
                    if not self._open():
                        return
                sample = Sample(self.result.target, self.concurrency, self.repeat, 0.0)
                task = asyncio.create_task(measure_one(session, self.build(), sample, origin=self.origin,
                                                       timeout_s=self.spec.request_timeout_s, redactor=self.redactor,
                                                       stream=self.spec.stream))
                self._in_flight.add(task)
                task.add_done_callback(self._in_flight.discard)
                with suppress(asyncio.CancelledError):  # cut
                    self._record(await task)

        await asyncio.gather(*(worker() for _ in range(self.concurrency)))

    async def _progress(self, say: Progress) -> None:
        started = time.perf_counter()
        while True:
            await asyncio.sleep(PROGRESS_EVERY_S)
            say(progress_line(self.tag, self.samples, len(self._in_flight), time.perf_counter() - started,
                              self.budget, self.spec.level_budget_s))

    async def run(self, progress: Progress | None = None) -> Level:
        spec, lags = self.spec, list[float]()

        async def lag() -> None:
            while True:
                before = time.perf_counter()
                await asyncio.sleep(LAG_TICK_S)
                lags.append(max(0.0, time.perf_counter() - before - LAG_TICK_S))

        connector = aiohttp.TCPConnector(limit=self.concurrency, limit_per_host=0)
        silence = spec.request_timeout_s  # connecting included
        async with aiohttp.ClientSession(connector=connector, trust_env=False, auto_decompress=False, timeout=aiohttp.
                                         ClientTimeout(total=None, sock_connect=silence, sock_read=silence)) as session:
            await self._phase(session, spec.warmup_rounds * self.concurrency, None)
            if self._halt.is_set():  # a warm-up failure is the level's; an interrupted warm-up measured nothing
                if self.result.stopped_by == "interrupted":
                    self.samples.clear()
                return self
            self.samples.clear()
            self._warming = False
            tickers = [asyncio.create_task(t) for t in (lag(), *([self._progress(progress)] if progress else []))]
            cpu0, wall0, ticks0 = time.process_time(), time.perf_counter(), _cpu_ticks()
            if spec.level_budget_s is not None:
                self._until = wall0 + spec.level_budget_s
            await self._phase(session, self.budget, spec.rate)
            cpu, wall = time.process_time() - cpu0, max(time.perf_counter() - wall0, 1e-9)
            for ticker in tickers:
                ticker.cancel()
            await asyncio.gather(*tickers, return_exceptions=True)
        self.result.overhead = Overhead.of(self.tag, cpu, wall, len(self.samples), lags, ticks0, _cpu_ticks())
        return self


EMBEDDED_SCENARIO = "paced"
EMULATOR_RPS = 300  # answers a second one emulator process serves on one core (docs/performance.md P6)


def processes_for(spec: LoadSpec) -> int:
    """Emulator processes for the top level's answers a second at the paced floor, at most one per CPU."""
    floor = spec.first_delta_s + spec.token_interval_s * (spec.max_tokens - 1)
    wanted = max(spec.concurrency) / max(floor, 0.05)
    return max(1, min(os.cpu_count() or 1, math.ceil(wanted / EMULATOR_RPS)))


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()  # Popen's exit waits for it


@contextmanager
def _embedded_emulator(spec: LoadSpec, processes: int) -> Iterator[str]:
    """``processes`` emulators sharing one port (``SO_REUSEPORT``), each in a session of its own (the terminal's Ctrl-C
    is the generator's); their endpoint, all stopped on exit."""
    argv = [sys.executable, "-m", "hermes_nb.emulator", "--reuse-port", "--scenario", spec.scenario or
            EMBEDDED_SCENARIO, "--first-delta-s", repr(spec.first_delta_s), "--token-interval-s",
            repr(spec.token_interval_s)]
    endpoint, port = "", 0
    with ExitStack() as stack:
        for _ in range(processes):
            proc = stack.enter_context(subprocess.Popen([*argv, "--port", str(port)], stdout=subprocess.PIPE,
                                                        stderr=subprocess.DEVNULL, text=True, start_new_session=True))
            stack.callback(_stop, proc)
            endpoint = proc.stdout.readline().strip() if proc.stdout else ""
            if not endpoint.startswith("http://"):
                raise ProxyUnreachable(f"the embedded emulator did not start (exit {proc.poll()})")
            port = urlsplit(endpoint).port or 0
        yield endpoint


def _builder(config: HermesProxyRuntimeConfig, spec: LoadSpec, stack: ExitStack,
             numbers: Iterator[int]) -> Callable[[], Prepared]:
    """Requests from the one request builder, each prompt numbered (no prefix cache answers two of them)."""
    client = stack.enter_context(HermesClient(config))

    def build() -> Prepared:
        prompt = f"Load probe {spec.seed}-{next(numbers)}: answer briefly." + " the" * spec.prompt_tokens
        body = chat_request_body(config, [{"role": "user", "content": prompt}], stream=spec.stream)
        body["max_tokens"] = spec.max_tokens
        request = client.build_request("POST", "/chat/completions", json=body, sse=spec.stream)
        headers = {k: v for k, v in request.headers.items() if k not in ("host", "content-length")}
        return Prepared(str(request.url), headers, request.content)

    return build


class _Ramp:
    """The levels, ascending, each ``repeat`` times with proxy and direct interleaved (ABBA); stops after a level that
    met a 429, reached nobody, failed every request, or whose throughput stopped growing."""

    def __init__(self, spec: LoadSpec, builds: dict[str, Callable[[], Prepared]], redactor: Redactor,
                 progress: Progress | None, origin: float) -> None:
        self.spec, self.builds, self.redactor, self.progress, self.origin = spec, builds, redactor, progress, origin
        self.say = progress or (lambda line: None)
        self.samples: list[Sample] = []
        self.ran: dict[str, list[LevelResult]] = {"proxy": [], "direct": []}  # per target, its levels' records
        self.interrupted = False
        self.level: Level | None = None
        self.throughput: float | None = None  # the last proxy level's requests/s

    def interrupt(self) -> None:
        """Ctrl-C, on the ramp's loop: cut the level in flight, start no other."""
        self.interrupted = True
        if self.level is not None:
            self.level.cut()

    async def _level(self, index: int, concurrency: int, deadline: float) -> bool:
        """One level, every repeat; True when the ramp goes on."""
        spec, targets, done = self.spec, list(self.builds), list[LevelResult]()
        for repeat in range(spec.repeat):
            for target in targets if repeat % 2 == 0 else targets[::-1]:
                if self.interrupted or any(lv.stopped_by for lv in done):
                    break
                self.level = Level(self.builds[target], spec, target=target, concurrency=concurrency, repeat=repeat,
                                   budget=spec.budget(index), origin=self.origin, deadline=deadline,
                                   redactor=self.redactor)
                self.samples += (await self.level.run(self.progress)).samples
                done.append(self.level.result)
                self.level = None
        for name in targets:
            if mine := [lv for lv in done if lv.target == name]:
                worst = max(mine, key=lambda r: (r.overhead.warning is not None, r.overhead.loop_lag_ms.p99 or 0.0))
                self.ran[name].append(worst.model_copy(update={"cancelled": sum(r.cancelled for r in mine),
                                                               "stopped_by": next((r.stopped_by for r in mine
                                                                                   if r.stopped_by), None)}))
        shown = [level_result([s for s in self.samples if s.target == name and s.concurrency == concurrency],
                              LevelResult(target=name, concurrency=concurrency)) for name in targets]
        for level in shown:
            self.say(level_line(level))
        now, prior = shown[0], self.throughput
        self.throughput = now.request_throughput
        saturated = prior is not None and spec.saturation_gain > 0 and now.succeeded > 0 \
            and now.request_throughput < prior * (1 + spec.saturation_gain)
        if saturated:
            self.say(f"throughput stopped growing at concurrency {concurrency} ({now.request_throughput:g} req/s, "
                     f"{prior:g} at the level before): saturated, the ramp stops")
        stopped = self.interrupted or any(lv.stopped_by for lv in done)
        return not (stopped or now.unreachable or not now.succeeded or saturated)

    async def run(self) -> None:
        deadline = time.perf_counter() + self.spec.run_budget_s
        for index, concurrency in enumerate(self.spec.concurrency):
            if not await self._level(index, concurrency, deadline):
                break

    def measure(self) -> None:
        """Run on a fresh event loop in its own thread; Ctrl-C here interrupts it and waits for what was measured."""
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="hermes-nb-load", daemon=True)
        thread.start()
        ramp = asyncio.run_coroutine_threadsafe(self.run(), loop)
        try:
            ramp.result()
        except KeyboardInterrupt:
            loop.call_soon_threadsafe(self.interrupt)
            ramp.result()
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.close()


def run_load(target: HermesProxyRuntimeConfig | str | None = None, *, spec: LoadSpec | None = None,
             environ: Mapping[str, str] | None = None, progress: Progress | None = None,
             **options: Any) -> LoadReport:
    """Measure chat completions level by level (docs/load.md). ``target``: a runtime config, an endpoint, or None
    (``spec.endpoint``, ``HERMES_NB_ENDPOINT``, else the embedded emulator); ``options``: :class:`LoadSpec` fields.
    A bad option or target is a UsageError (nothing sent); HTTP and network failures are measured, not raised."""
    spec = LoadSpec.build(**{**(spec.model_dump() if spec else {}), **options})
    register_displays()  # in IPython: the report shows its tables and pictures
    config = target if isinstance(target, HermesProxyRuntimeConfig) else resolve_runtime_config(
        environ=environ, endpoint=target or spec.endpoint, model=spec.model)
    embedded = config.origin("endpoint") == "default"
    if embedded and spec.direct:
        raise UsageError("--direct needs --endpoint: the proxy to compare with its upstream")
    if not embedded and spec.scenario is not None:
        raise UsageError("--scenario picks the embedded emulator's behaviour; it needs no --endpoint")
    warnings = [] if embedded else guard("--endpoint", config.endpoint, allow_non_loopback=spec.allow_non_loopback)
    if spec.direct is not None:
        if spec.direct == config.endpoint:
            raise UsageError("--direct is the endpoint itself; give the upstream behind the proxy")
        warnings += guard("--direct", spec.direct, allow_non_loopback=spec.allow_non_loopback)
    started, origin = iso_now(), time.perf_counter()
    with ExitStack() as stack:
        if embedded:
            processes = processes_for(spec)
            config = config.with_endpoint(stack.enter_context(_embedded_emulator(spec, processes)), origin="emulator")
            info = TargetInfo(kind="emulator", scenario=spec.scenario or EMBEDDED_SCENARIO,
                              emulator_processes=processes)
        else:  # the one identity step; the release as the proxy or the executable the operator named tells it
            named = release_of(spec.hermes_bin) if spec.hermes_bin else (None, None, None)
            found = identify(config, ask_emulator=True, budget_s=5.0, release=named[0], release_source=named[1],
                             executable=named[2])
            info = TargetInfo(kind=found.kind, release=None if found.release == UNKNOWN else found.release,
                              evidence=found.evidence, provider=found.provider, executable=found.executable)
        if parked := info.cooldown():  # a 429 costs this provider more than the run: say so before the first
            warnings.append(f"the ramp stops at the first 429, for then {parked}")
            if progress is not None:
                progress(f"warning: {warnings[-1]}")
        numbers = itertools.count()
        builds = {"proxy": _builder(config, spec, stack, numbers)}
        if spec.direct:  # the same config (bearer, headers, model) aimed at the upstream
            builds["direct"] = _builder(config.with_endpoint(spec.direct, origin="argument"), spec, stack, numbers)
        ramp = _Ramp(spec, builds, Redactor(config.secrets()), progress, origin)
        ramp.measure()
    skeleton = LoadReport(
        endpoint=config.endpoint, direct=spec.direct, model=config.model, target=info, settings=spec.settings(),
        levels=ramp.ran["proxy"], direct_levels=ramp.ran["direct"], warnings=warnings, interrupted=ramp.interrupted,
        started_at=started, duration_s=round(time.perf_counter() - origin, 3),
        generator={"hermes_nb": __version__, "client": f"aiohttp {aiohttp.__version__}", "loop": "asyncio",
                   "python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count()})
    return compute(skeleton, ramp.samples)
