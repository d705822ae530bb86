"""``run_load``: the load probe as one library call; the CLI, ``%hermes_load`` and the load notebook all end here.

The levels run on an event loop of their own in a thread, so the call works alike from a terminal and a Jupyter
kernel, and Ctrl-C (a kernel interrupt) in the caller's thread stops the level in flight and returns what was
measured. Without an endpoint the emulator runs in processes of its own: in a thread of the generator's, both shared
one interpreter and the generator read its own queueing as the target's (E2E 1.46 s at 256 streams for 0.56–0.59).
"""

from __future__ import annotations

import asyncio
import itertools
import math
import os
import platform
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from hermes_nb import __version__
from hermes_nb.core.config import HermesProxyRuntimeConfig
from hermes_nb.core.errors import ProxyUnreachable, UsageError
from hermes_nb.core.io import iso_now
from hermes_nb.core.redaction import Redactor
from hermes_nb.core.resolve import resolve_runtime_config
from hermes_nb.load.generator import Level, Prepared
from hermes_nb.load.metrics import LevelResult, Sample, TargetName, level_result
from hermes_nb.load.report import LoadReport, TargetInfo, compute
from hermes_nb.load.spec import LoadSpec, guard
from hermes_nb.load.views import register_displays
from hermes_nb.target import UNKNOWN, identify, release_of
from hermes_nb.wire.client import HermesClient
from hermes_nb.wire.payloads import chat_request_body

Progress = Callable[[str], None]
EMBEDDED_SCENARIO = "paced"
#: answers a second one emulator process serves on one core (docs/performance.md P6: it tops out near 400)
EMULATOR_RPS = 300


def processes_for(spec: LoadSpec) -> int:
    """Emulator processes for the top level: its answers a second at the paced floor over :data:`EMULATOR_RPS`, at
    most one per CPU."""
    floor = spec.first_delta_s + spec.token_interval_s * (spec.max_tokens - 1)
    wanted = max(spec.concurrency) / max(floor, 0.05)
    return max(1, min(os.cpu_count() or 1, math.ceil(wanted / EMULATOR_RPS)))


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextmanager
def _embedded_emulator(spec: LoadSpec, processes: int) -> Iterator[str]:
    """``processes`` emulators sharing one loopback port (``SO_REUSEPORT``: the kernel spreads the connections), each
    in a session of its own (the terminal's Ctrl-C is the generator's); their endpoint, all stopped on exit."""
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


def _identify(config: HermesProxyRuntimeConfig, hermes_bin: str | None) -> TargetInfo:
    """What answers at the endpoint (the job's one identity step); the release as the thing under test tells it,
    or as the executable the operator named (never a local install's)."""
    named = release_of(hermes_bin) if hermes_bin else (None, None, None)
    found = identify(config, ask_emulator=True, budget_s=5.0, release=named[0], release_source=named[1],
                     executable=named[2])
    return TargetInfo(kind=found.kind, release=None if found.release == UNKNOWN else found.release,
                      evidence=found.evidence, provider=found.provider, executable=found.executable)


def _builder(config: HermesProxyRuntimeConfig, spec: LoadSpec, stack: ExitStack,
             numbers: Iterator[int]) -> Callable[[], Prepared]:
    """Requests from the one request builder, each prompt numbered from ``numbers`` (one count a run, seeded: no two
    requests send the same prompt, so no prefix cache answers them)."""
    client = stack.enter_context(HermesClient(config))

    def build() -> Prepared:
        prompt = f"Load probe {spec.seed}-{next(numbers)}: answer briefly." + " the" * spec.prompt_tokens
        body = chat_request_body(config, [{"role": "user", "content": prompt}], stream=spec.stream)
        body["max_tokens"] = spec.max_tokens
        request = client.build_request("POST", "/chat/completions", json=body, sse=spec.stream)
        headers = {k: v for k, v in request.headers.items() if k not in ("host", "content-length")}
        return Prepared(str(request.url), headers, request.content)

    return build


def level_line(level: LevelResult) -> str:
    """One line per level (the progress the CLI prints)."""
    def ms(value: float | None) -> str:
        return "-" if value is None else f"{value:.1f} ms"

    errors = ", ".join(f"{n} {name}" for name, n in level.errors.by_class().items() if n)
    return (f"{level.target} concurrency {level.concurrency}: {level.succeeded}/{level.sent} ok, TTFT p50 "
            f"{ms(level.ttft_ms.p50)}, ITL p50 {ms(level.itl_ms.p50)}, E2E p50 {ms(level.e2e_ms.p50)}, largest gap "
            f"{ms(level.gaps.gap_ms.max)}, {level.request_throughput:g} req/s"
            + (f"; errors: {errors}" if errors else "")
            + (f"; stopped: {level.stopped_by}" if level.stopped_by else ""))


class _Ramp:
    """The levels, ascending, each measured ``repeat`` times with proxy and direct interleaved (ABBA). The ramp stops
    after a level that met a 429, reached nobody, failed every request, or whose throughput stopped growing."""

    def __init__(self, spec: LoadSpec, builds: dict[TargetName, Callable[[], Prepared]], redactor: Redactor,
                 progress: Progress | None, origin: float) -> None:
        self.spec, self.builds, self.redactor, self.progress, self.origin = spec, builds, redactor, progress, origin
        self.say = progress or (lambda line: None)
        self.samples: list[Sample] = []
        #: per target, the levels it ran: what samples cannot say (overhead, what stopped it, cancelled)
        self.ran: dict[TargetName, list[LevelResult]] = {"proxy": [], "direct": []}
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
        spec, targets, done = self.spec, list(self.builds), list[Level]()
        for repeat in range(spec.repeat):
            for target in targets if repeat % 2 == 0 else targets[::-1]:
                if self.interrupted or any(lv.stopped_by for lv in done):
                    break
                self.level = Level(self.builds[target], spec, target=target, concurrency=concurrency, repeat=repeat,
                                   budget=spec.budget(index), origin=self.origin, redactor=self.redactor)
                done.append(await self.level.run(deadline, self.progress))
                self.level = None
                self.samples += done[-1].samples
        for name in targets:
            if mine := [lv for lv in done if lv.target == name]:
                worst = max(mine, key=lambda r: (r.overhead.warning is not None, r.overhead.loop_lag_ms.p99 or 0.0))
                self.ran[name].append(LevelResult(
                    target=name, concurrency=concurrency, overhead=worst.overhead,
                    cancelled=sum(r.cancelled for r in mine), stopped_by=next((r.stopped_by for r in mine
                                                                                if r.stopped_by), None)))
        shown = [level_result([s for s in self.samples if s.target == name and s.concurrency == concurrency],
                              concurrency=concurrency, target=name) for name in targets]
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
    """Measure chat completions level by level (docs/load.md).

    ``target``: a resolved runtime config, an endpoint ``http://host:port/v1``, or None (``spec.endpoint``,
    ``HERMES_NB_ENDPOINT``, else the embedded emulator); ``options``: :class:`LoadSpec` fields, over ``spec``.
    Raises :class:`~hermes_nb.core.errors.UsageError` (nothing sent) for a bad option or target; HTTP and network
    failures are measured, not raised.
    """
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
        if spec.direct.rstrip("/") == config.endpoint.rstrip("/"):
            raise UsageError("--direct is the endpoint itself; give the upstream behind the proxy")
        warnings += guard("--direct", spec.direct, allow_non_loopback=spec.allow_non_loopback)
    started, origin = iso_now(), time.perf_counter()
    with ExitStack() as stack:
        if embedded:
            processes = processes_for(spec)
            config = config.with_endpoint(stack.enter_context(_embedded_emulator(spec, processes)), origin="emulator")
            info = TargetInfo(kind="emulator", scenario=spec.scenario or EMBEDDED_SCENARIO,
                              emulator_processes=processes)
        else:
            info = _identify(config, spec.hermes_bin)
        if parked := info.cooldown():  # a 429 costs this provider more than the run: say so before the first
            warnings.append(f"the ramp stops at the first 429, for then {parked}")
            if progress is not None:
                progress(f"warning: {warnings[-1]}")
        numbers = itertools.count()
        builds: dict[TargetName, Callable[[], Prepared]] = {"proxy": _builder(config, spec, stack, numbers)}
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
