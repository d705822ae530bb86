"""``run_load``: the load probe as one library call (the CLI, ``%hermes_load`` and the load notebook all end
here and get the same :class:`~hermes_nb.load.report.LoadReport`).

Order of work: the options are a :class:`~hermes_nb.load.spec.LoadSpec`; the target is checked (loopback,
:func:`~hermes_nb.load.spec.guard`) before anything is sent; without an endpoint (argument or
``HERMES_NB_ENDPOINT``) the embedded emulator starts in processes of its own (:mod:`hermes_nb.load.target`),
else the target is identified (emulator, the rig, live; the proxy's release). The generator runs on its own
event loop in its own thread, so the call works the same from a terminal and from a Jupyter kernel. Levels run
in ascending concurrency; each is measured ``repeat`` times, proxy and ``direct`` interleaved (ABBA). The ramp
stops after a level that met a 429, reached nobody, failed every request, or whose throughput stopped growing
(saturation). Ctrl-C (a kernel interrupt) stops the level in flight and returns what was measured.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import platform
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import ExitStack
from typing import Any

import aiohttp

from hermes_nb import __version__
from hermes_nb.core.config import HermesProxyRuntimeConfig
from hermes_nb.core.errors import UsageError
from hermes_nb.core.io import iso_now
from hermes_nb.core.redaction import Redactor
from hermes_nb.core.resolve import resolve_runtime_config
from hermes_nb.load.generator import LevelRun, Prepared, run_level
from hermes_nb.load.metrics import LevelResult, level_result
from hermes_nb.load.report import LoadReport, TargetInfo, compute
from hermes_nb.load.samples import Sample
from hermes_nb.load.spec import LoadSpec, guard
from hermes_nb.load.target import EMBEDDED_SCENARIO, embedded_emulator, identify, processes_for
from hermes_nb.load.views import register_displays
from hermes_nb.wire.client import HermesClient
from hermes_nb.wire.payloads import chat_request_body

__all__ = ["run_load", "level_line"]

Progress = Callable[[str], None]


def _builder(config: HermesProxyRuntimeConfig, spec: LoadSpec, stack: ExitStack,
             numbers: Iterator[int]) -> Callable[[], Prepared]:
    """The next request from the one request builder; its prompt numbered from ``numbers`` (one count for the
    whole run, seeded: no two requests send the same prompt, so a prefix cache cannot answer them)."""
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


class _LoadThread(threading.Thread):
    """The levels on a fresh event loop; :meth:`interrupt` (any thread) stops them."""

    def __init__(self, spec: LoadSpec, builds: dict[str, Callable[[], Prepared]], redactor: Redactor,
                 progress: Progress | None, origin: float) -> None:
        super().__init__(name="hermes-nb-load", daemon=True)
        self.spec, self.builds, self.redactor, self.progress, self.origin = spec, builds, redactor, progress, origin
        self.samples: list[Sample] = []
        #: per target, the levels it ran: what samples cannot say (overhead, what stopped it, cancelled)
        self.ran: dict[str, list[LevelResult]] = {"proxy": [], "direct": []}
        self.error: BaseException | None = None
        self.throughput: float | None = None  # the last proxy level's requests/s (the saturation stop)
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._halt: asyncio.Event | None = None

    def run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # thread edge: re-raised by run_load in the caller's thread
            self.error = exc
        finally:
            self._ready.set()

    def interrupt(self) -> None:
        self._ready.wait()
        loop, stop = self._loop, self._halt
        if loop is not None and stop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(stop.set)
            except RuntimeError:  # the loop closed in between: nothing left to stop
                pass

    async def _level(self, index: int, concurrency: int, stop: asyncio.Event, deadline: float) -> bool:
        """One level, every repeat, proxy and direct interleaved; True when the ramp goes on."""
        spec, targets = self.spec, [t for t in ("proxy", "direct") if t in self.builds]
        runs: dict[str, list[LevelRun]] = {t: [] for t in targets}
        for repeat in range(spec.repeat):
            for target in targets if repeat % 2 == 0 else targets[::-1]:
                run = await run_level(self.builds[target], spec, target=target, concurrency=concurrency,
                                      repeat=repeat, budget=spec.budget(index), stop=stop, deadline=deadline,
                                      origin=self.origin, redactor=self.redactor, progress=self.progress)
                runs[target].append(run)
                self.samples += run.samples
                if run.stopped_by is not None:
                    break
            if any(r.stopped_by for rs in runs.values() for r in rs):
                break
        for name, rs in runs.items():
            if not rs:
                continue
            worst = max(rs, key=lambda r: (r.overhead.warning is not None, r.overhead.loop_lag_ms.p99 or 0.0))
            self.ran[name].append(LevelResult(
                target="direct" if name == "direct" else "proxy", concurrency=concurrency,
                overhead=worst.overhead, cancelled=sum(r.cancelled for r in rs),
                stopped_by=next((r.stopped_by for r in rs if r.stopped_by), None)))
        shown = [level_result([s for s in self.samples if s.target == name and s.concurrency == concurrency],
                              concurrency=concurrency, target="direct" if name == "direct" else "proxy")
                 for name in targets]
        say = self.progress or (lambda line: None)
        for level in shown:
            say(level_line(level))
        now = shown[0]
        prior, self.throughput = self.throughput, now.request_throughput
        saturated = prior is not None and spec.saturation_gain > 0 and now.succeeded > 0 \
            and now.request_throughput < prior * (1 + spec.saturation_gain)
        if saturated:
            say(f"throughput stopped growing at concurrency {concurrency} ({now.request_throughput:g} req/s, "
                f"{prior:g} at the level before): saturated, the ramp stops")
        stopped = stop.is_set() or any(r.stopped_by for rs in runs.values() for r in rs)
        return not (stopped or now.unreachable or not now.succeeded or saturated)

    async def _main(self) -> None:
        self._loop, self._halt = asyncio.get_running_loop(), asyncio.Event()
        stop = self._halt
        self._ready.set()
        deadline = time.perf_counter() + self.spec.run_budget_s
        for index, concurrency in enumerate(self.spec.concurrency):
            if not await self._level(index, concurrency, stop, deadline):
                break


def _resolve(target: HermesProxyRuntimeConfig | str | None, spec: LoadSpec,
             environ: Mapping[str, str] | None) -> HermesProxyRuntimeConfig:
    """A resolved config as given, or the one resolution of an endpoint (or of nothing: the environment's)."""
    if isinstance(target, HermesProxyRuntimeConfig):
        return target
    return resolve_runtime_config(environ=environ, endpoint=target or spec.endpoint, model=spec.model)


def run_load(target: HermesProxyRuntimeConfig | str | None = None, *, spec: LoadSpec | None = None,
             environ: Mapping[str, str] | None = None, progress: Progress | None = None,
             **options: Any) -> LoadReport:
    """Measure chat completions level by level (module docstring, docs/load.md).

    ``target``: a resolved runtime config (endpoint, model, bearer, extra headers), an endpoint
    ``http://host:port/v1``, or None (``spec.endpoint``, ``HERMES_NB_ENDPOINT``, else the embedded emulator).
    ``options``: the :class:`LoadSpec` fields (``concurrency="1,4,16"``, ``requests=32``…), over ``spec``.
    Raises :class:`~hermes_nb.core.errors.UsageError` (nothing sent) for a bad option or target. HTTP and
    network failures are measured, not raised.
    """
    spec = LoadSpec.build(**{**(spec.model_dump() if spec else {}), **options})
    register_displays()  # in IPython: the report shows its tables and pictures
    config = _resolve(target, spec, environ)
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
            config = config.with_endpoint(stack.enter_context(embedded_emulator(spec, processes)), origin="emulator")
            info = TargetInfo(kind="emulator", scenario=spec.scenario or EMBEDDED_SCENARIO,
                              emulator_processes=processes)
        else:
            info = identify(config, spec.hermes_bin)
        numbers = itertools.count()
        builds = {"proxy": _builder(config, spec, stack, numbers)}
        if spec.direct:  # the same config (bearer, headers, model) aimed at the upstream
            builds["direct"] = _builder(config.with_endpoint(spec.direct, origin="argument"), spec, stack, numbers)
        worker = _LoadThread(spec, builds, Redactor(config.secrets()), progress, origin)
        worker.start()
        interrupted = False
        try:
            while worker.is_alive():
                worker.join(0.1)
        except KeyboardInterrupt:  # Ctrl-C / a kernel interrupt: stop, keep what was measured
            interrupted = True
            worker.interrupt()
            worker.join()
        if worker.error is not None:
            raise worker.error
    skeleton = LoadReport(
        endpoint=config.endpoint, direct=spec.direct, model=config.model, target=info, settings=spec.settings(),
        levels=worker.ran["proxy"], direct_levels=worker.ran["direct"], warnings=warnings, interrupted=interrupted,
        started_at=started, duration_s=round(time.perf_counter() - origin, 3),
        generator={"hermes_nb": __version__, "client": f"aiohttp {aiohttp.__version__}", "loop": "asyncio",
                   "python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count()})
    return compute(skeleton, worker.samples)
