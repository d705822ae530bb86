"""``run_load``: the load probe as one library call (the CLI, the ``%hermes_load`` magic and the load notebook
all end here and get the same :class:`~hermes_nb.proxy.load.report.LoadReport`).

Order of work: the plan is checked (caps, loopback: :func:`~hermes_nb.proxy.load.plan.plan_load`) before
anything is sent or started; without an endpoint (argument or ``HERMES_NB_ENDPOINT``) an embedded emulator
is started for the run (scenario ``paced``: the first delta after 100 ms, then one token every 10 ms). The
generator runs on its own event loop in its own thread, so the call works the same from a terminal and from a
Jupyter kernel (whose main thread already runs a loop). Levels run in ascending concurrency, each followed by
the same level against ``direct`` when given; the ramp stops after a level that met a 429, reached nobody, or
failed every request. Ctrl-C (a kernel interrupt) stops the level in flight and returns what was measured,
marked ``interrupted``.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import platform
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import replace
from typing import TYPE_CHECKING

from hermes_nb.core.clock import iso_now
from hermes_nb.core.errors import UsageError
from hermes_nb.core.redaction import Redactor
from hermes_nb.proxy.load.generator import LevelRun, Prepared, run_level
from hermes_nb.proxy.load.plan import CAPS, DEFAULT_CONCURRENCY, LoadPlan, plan_load
from hermes_nb.proxy.load.report import LevelResult, LoadReport, LoadTarget, added_latency, judge, level_result

if TYPE_CHECKING:
    from hermes_nb.core.config import HermesProxyRuntimeConfig

__all__ = ["EMBEDDED_SCENARIO", "run_load", "level_line"]

#: the embedded emulator's scenario unless one is named
EMBEDDED_SCENARIO = "paced"
#: a level whose generator loop ran later (p99) than this, and than a tenth of its TTFT p50, or was busier than
#: this share of a CPU, gets a warning: its figures carry a noticeable part of the generator's own delay
LAG_WARN_MS = 10.0
LAG_WARN_SHARE_OF_TTFT = 0.1
CPU_WARN_SHARE = 0.8
Progress = Callable[[str], None]


def _prompt(index: int, tokens: int) -> str:
    """A prompt of about ``tokens`` tokens, distinct from its start (a prefix cache cannot serve it)."""
    return f"Load probe request {index}: answer briefly." + " the" * tokens


def _builder(config: HermesProxyRuntimeConfig, plan: LoadPlan, stack: ExitStack,
             numbers: Iterator[int]) -> Callable[[], Prepared]:
    """The next request: the one request builder's URL, headers and body for a streamed chat completion, its
    prompt numbered from ``numbers`` (one count for the whole run: no two requests send the same prompt)."""
    from hermes_nb.wire.client import HermesClient
    from hermes_nb.wire.payloads import chat_request_body

    client = stack.enter_context(HermesClient(config))

    def build() -> Prepared:
        body = chat_request_body(config, [{"role": "user", "content": _prompt(next(numbers), plan.prompt_tokens)}],
                                 stream=True)
        body["max_tokens"] = plan.max_tokens
        request = client.build_request("POST", "/chat/completions", json=body, sse=True)
        headers = {k: v for k, v in request.headers.items() if k not in ("host", "content-length")}
        return Prepared(str(request.url), headers, request.content)

    return build


def level_line(level: LevelResult) -> str:
    """One progress line per level."""
    def p50(p: object) -> str:
        value = getattr(p, "p50", None)
        return "-" if value is None else f"{value:.1f} ms"

    errors = ", ".join(f"{n} {name}" for name, n in level.errors.by_class().items() if n)
    return (f"{level.target} concurrency {level.concurrency}: {level.succeeded}/{level.sent} ok, TTFT p50 "
            f"{p50(level.ttft_ms)}, ITL p50 {p50(level.itl_ms)}, E2E p50 {p50(level.e2e_ms)}, "
            f"{level.request_throughput:g} req/s, {level.output_token_throughput:g} tok/s"
            + (f"; errors: {errors}" if errors else "")
            + (f"; stopped: {level.stopped_by}" if level.stopped_by else ""))


class _LoadThread(threading.Thread):
    """The levels on a fresh event loop; :meth:`interrupt` (any thread) stops them."""

    def __init__(self, plan: LoadPlan, builds: dict[str, Callable[[], Prepared]], redactor: Redactor,
                 progress: Progress | None) -> None:
        super().__init__(name="hermes-nb-load", daemon=True)
        self.plan, self.builds, self.redactor, self.progress = plan, builds, redactor, progress
        self.levels: list[LevelResult] = []
        self.direct_levels: list[LevelResult] = []
        self.error: BaseException | None = None
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._interrupt: asyncio.Event | None = None

    def run(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # thread edge: re-raised by run_load in the caller's thread
            self.error = exc
        finally:
            self._ready.set()

    def interrupt(self) -> None:
        self._ready.wait()
        loop, stop = self._loop, self._interrupt
        if loop is not None and stop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(stop.set)
            except RuntimeError:  # the loop closed in between: nothing left to stop
                pass

    async def _level(self, target: LoadTarget, concurrency: int, stop: asyncio.Event, deadline: float) -> LevelRun:
        plan = self.plan
        run = await run_level(self.builds[target], concurrency=concurrency, budget=plan.requests_at(concurrency),
                              duration_s=plan.duration_s, rate=plan.rate, timeout_s=plan.timeout_s, stop=stop,
                              deadline=deadline, redactor=self.redactor)
        result = level_result(run.samples, concurrency=concurrency, rate=plan.rate, target=target,
                              overhead=run.overhead, stopped_by=run.stopped_by, cancelled=run.cancelled)
        (self.levels if target == "proxy" else self.direct_levels).append(result)
        if self.progress is not None:
            self.progress(level_line(result))
        return run

    async def _main(self) -> None:
        self._loop, self._interrupt = asyncio.get_running_loop(), asyncio.Event()
        stop = self._interrupt
        self._ready.set()
        deadline = time.perf_counter() + CAPS["total_s"]
        for concurrency in self.plan.concurrency:
            run = await self._level("proxy", concurrency, stop, deadline)
            result = self.levels[-1]
            if "direct" in self.builds and run.stopped_by is None and not stop.is_set():
                await self._level("direct", concurrency, stop, deadline)
            if stop.is_set() or run.stopped_by is not None or result.unreachable or not result.succeeded:
                break


def _warn_overhead(levels: Sequence[LevelResult]) -> None:
    """Set each level's generator warning where its own delay is a noticeable part of the figures."""
    for lv in levels:
        lag, share = lv.overhead.loop_lag_ms.p99, lv.overhead.cpu_share
        bound = max(LAG_WARN_MS, LAG_WARN_SHARE_OF_TTFT * (lv.ttft_ms.p50 or 0.0))
        if (lag is not None and lag > bound) or share > CPU_WARN_SHARE:
            lv.overhead.warning = (f"{lv.target} concurrency {lv.concurrency}: the generator's own loop ran up to "
                                   f"{lag or 0:.1f} ms late (p99) at {share:.0%} of a CPU; its figures carry that "
                                   "much of the generator's own delay")


def _resolve(target: HermesProxyRuntimeConfig | str | None, model: str | None,
             environ: Mapping[str, str] | None) -> HermesProxyRuntimeConfig:
    """A resolved config as given (``model`` over it), or the one resolution of an endpoint / of nothing."""
    from hermes_nb.core.config import HermesProxyRuntimeConfig
    from hermes_nb.core.resolve import resolve_runtime_config

    if isinstance(target, HermesProxyRuntimeConfig):
        if not model:
            return target
        config = target.model_copy()
        config.model = model  # validated on assignment
        return config
    return resolve_runtime_config(environ=environ, endpoint=target or None, model=model or None)


def run_load(target: HermesProxyRuntimeConfig | str | None = None, *, model: str | None = None,
             concurrency: str | Sequence[int] = DEFAULT_CONCURRENCY, requests: int | None = None,
             duration_s: float | None = None, rate: float | None = None, prompt_tokens: int = 64,
             max_tokens: int = 16, timeout_s: float = 60.0, direct: str | None = None,
             allow_non_loopback: bool = False, scenario: str | None = None,
             environ: Mapping[str, str] | None = None, progress: Progress | None = None) -> LoadReport:
    """Measure streamed chat completions level by level; see the module docstring and docs/load.md.

    ``target``: a resolved runtime config (the CLI's, the kit's: endpoint, model, bearer, extra headers), an
    endpoint ``http://host:port/v1``, or None (``HERMES_NB_ENDPOINT``, else an embedded emulator in
    ``scenario``). Raises :class:`~hermes_nb.core.errors.UsageError` (nothing sent) for a bad argument, a cap
    exceeded or a non-loopback endpoint without ``allow_non_loopback``. HTTP and network failures are
    measured, not raised.
    """
    config = _resolve(target, model, environ)
    embedded = config.origin("endpoint") == "default"
    if embedded and direct:
        raise UsageError("--direct needs --endpoint: the proxy to compare with its upstream")
    if not embedded and scenario is not None:
        raise UsageError("--scenario picks the embedded emulator's behaviour; it needs no --endpoint")
    plan = plan_load(config.endpoint, model=config.model, concurrency=concurrency, requests=requests,
                     duration_s=duration_s, rate=rate, prompt_tokens=prompt_tokens, max_tokens=max_tokens,
                     timeout_s=timeout_s, direct=direct, allow_non_loopback=allow_non_loopback)
    started, t0 = iso_now(), time.perf_counter()
    with ExitStack() as stack:
        if embedded:
            from hermes_nb.emulator import serve_emulator

            emulator = stack.enter_context(serve_emulator(scenario=scenario or EMBEDDED_SCENARIO))
            config = config.with_endpoint(emulator.endpoint, origin="emulator")
            plan = replace(plan, endpoint=config.endpoint)
        numbers = itertools.count()
        builds = {"proxy": _builder(config, plan, stack, numbers)}
        if direct:  # the same config (bearer, headers, model) aimed at the upstream
            builds["direct"] = _builder(config.with_endpoint(direct, origin="argument"), plan, stack, numbers)
        worker = _LoadThread(plan, builds, Redactor(config.secrets()), progress)
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
    import aiohttp

    _warn_overhead(worker.levels + worker.direct_levels)
    report = LoadReport(
        endpoint=plan.endpoint, direct=plan.direct, model=plan.model,
        target_kind="emulator" if embedded else "given",
        scenario=(scenario or EMBEDDED_SCENARIO) if embedded else None, settings=plan.settings(),
        levels=worker.levels, direct_levels=worker.direct_levels,
        added=[added_latency(p, d) for p in worker.levels for d in worker.direct_levels
               if d.concurrency == p.concurrency],
        warnings=list(plan.warnings),
        interrupted=interrupted, started_at=started, duration_s=round(time.perf_counter() - t0, 3),
        generator={"client": f"aiohttp {aiohttp.__version__}", "loop": "asyncio",
                   "python": platform.python_version(), "cpus": os.cpu_count()},
    )
    return judge(report)
