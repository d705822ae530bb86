"""P7: the load probe's generator (not a test). docs/performance.md, docs/load.md.

The target is ``hermes-nb emulator --scenario paced`` in its own process (first delta after 100 ms, then a
token every 10 ms, 16 tokens): a known TTFT to measure against.

* **P8a, 256 concurrent streams**: the generator (``hermes_nb.proxy.load.generator.run_level``: asyncio +
  aiohttp) runs 1,024 requests at concurrency 256; the **baseline** is the same closed loop with
  ``httpx.AsyncClient`` (the same SSE decoder and chunk interpreter), interleaved in the same run. Printed:
  errors, the most streams open at once, TTFT p50/p99, the generator's CPU per request, its loop lag, the
  emulator's CPU, and the ratios httpx / aiohttp.
* **P8b, accuracy against the named baseline "the emulator's 100 ms first delta"**: ``run_load`` at
  concurrency 1 and 16, 48 requests each; TTFT p50 must be 100 ms ± 10 ms at 1 and ± 15 % at 16. Then the
  issue's command itself, ``hermes-nb load --concurrency 1,16 --requests 48 --json`` (its embedded emulator,
  in-process), for the same two rows.
* **P7c, with ``--rig``**: the real proxy (``.venv-hermes``) in front of the paced emulator, ``--direct`` at
  it: the proxy's added TTFT and E2E per level (the worked example of docs/load.md).

    .venv/bin/python benchmarks/load_generator.py [--rounds 1] [--skip-httpx] [--rig]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Callable

import httpx

from _child import EMULATOR, endpoint_child
from emulator_load import cpu_seconds
from hermes_nb.core.redaction import Redactor
from hermes_nb.proxy.load.generator import LevelRun, Prepared, run_level
from hermes_nb.proxy.load.report import Percentiles, Sample, level_result
from hermes_nb.proxy.load.run import run_load
from hermes_nb.wire.payloads import ChatStream
from hermes_nb.wire.sse import SSEDecoder

PACED = [*EMULATOR, "--scenario", "paced", "--first-delta", "0.1", "--token-interval", "0.01"]
FIRST_DELTA_MS = 100.0


def _builder(endpoint: str) -> Callable[[], Prepared]:
    numbers = iter(range(10**9))
    headers = {"content-type": "application/json", "accept": "text/event-stream", "authorization": "Bearer bench"}

    def build() -> Prepared:
        body = {"model": "m", "stream": True, "max_tokens": 16, "stream_options": {"include_usage": True},
                "messages": [{"role": "user", "content": f"request {next(numbers)}" + " the" * 64}]}
        return Prepared(f"{endpoint}/chat/completions", headers, json.dumps(body).encode())

    return build


async def _httpx_level(build: Callable[[], Prepared], concurrency: int, total: int) -> LevelRun:
    """The baseline: the same closed loop and figures with httpx.AsyncClient."""
    run, issued, origin = LevelRun(), 0, time.perf_counter()
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=120.0, trust_env=False) as client:
        async def one() -> Sample:
            request = build()
            start = time.perf_counter()
            sample = Sample(start_s=start - origin, end_s=start - origin)
            decoder, chat = SSEDecoder(), ChatStream()
            try:
                async with client.stream("POST", request.url, content=request.body, headers=request.headers) as r:
                    sample.status = r.status_code
                    async for chunk in r.aiter_raw():
                        now = time.perf_counter()
                        sample.end_s = now - origin
                        for event in decoder.feed(chunk):
                            if chat.feed(event) and sample.ttft_s is None:
                                sample.ttft_s = now - start
                usage = (chat.usage or {}).get("completion_tokens")
                if isinstance(usage, int):
                    sample.output_tokens, sample.token_source = usage, "usage"
                else:
                    sample.output_tokens, sample.token_source = 0, "deltas"
                if r.status_code != 200 or not chat.done:
                    sample.error = "transport"
            except httpx.HTTPError as exc:
                sample.error, sample.detail = "transport", str(exc)
            return sample

        async def worker() -> None:
            nonlocal issued
            while issued < total:
                issued += 1
                run.samples.append(await one())

        cpu0 = time.thread_time()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        run.overhead.cpu_s = time.thread_time() - cpu0
    return run


def _most_open(samples: list[Sample]) -> int:
    """The most requests in flight at one moment (start/end sweep)."""
    edges = sorted([(s.start_s, 1) for s in samples] + [(s.end_s, -1) for s in samples])
    best = current = 0
    for _, step in edges:
        current += step
        best = max(best, current)
    return best


def p7a(endpoint: str, emulator_pid: int, client: str, concurrency: int = 256, total: int = 1024) -> dict:
    build = _builder(endpoint)
    cpu_before = cpu_seconds(emulator_pid)
    started = time.perf_counter()
    if client == "aiohttp":
        run = asyncio.run(run_level(build, concurrency=concurrency, budget=total, duration_s=None, rate=None,
                                    timeout_s=120.0, stop=asyncio.Event(), deadline=time.perf_counter() + 600,
                                    redactor=Redactor()))
    else:
        run = asyncio.run(_httpx_level(build, concurrency, total))
    wall = time.perf_counter() - started
    emulator_cpu = (cpu_seconds(emulator_pid) or 0.0) - (cpu_before or 0.0)
    level = level_result(run.samples, concurrency=concurrency, overhead=run.overhead)
    lag = run.overhead.loop_lag_ms if client == "aiohttp" else Percentiles()
    row = {"client": client, "errors": level.errors.total, "most_open": _most_open(run.samples),
           "ttft_p50": level.ttft_ms.p50, "ttft_p99": level.ttft_ms.p99, "wall_s": wall,
           "cpu_ms_per_request": run.overhead.cpu_s * 1000 / max(len(run.samples), 1),
           "lag_p99": lag.p99, "emulator_cpu_ms_per_request": emulator_cpu * 1000 / max(len(run.samples), 1)}
    print(f"P8a {client:7} c={concurrency} n={len(run.samples)}: errors {row['errors']}, most open at once "
          f"{row['most_open']}, TTFT p50 {row['ttft_p50']:.1f} ms p99 {row['ttft_p99']:.1f} ms, wall {wall:.2f} s, "
          f"generator CPU {row['cpu_ms_per_request']:.2f} ms/request"
          + (f", loop lag p99 {row['lag_p99']:.1f} ms" if row["lag_p99"] is not None else "")
          + f"; emulator CPU {row['emulator_cpu_ms_per_request']:.2f} ms/request", flush=True)
    return row


def _accuracy(label: str, levels: list[dict]) -> None:
    for lv in levels:
        c, p50 = lv["concurrency"], lv["ttft_ms"]["p50"]
        tolerance = 10.0 if c == 1 else 0.15 * FIRST_DELTA_MS
        ok = abs(p50 - FIRST_DELTA_MS) <= tolerance
        print(f"P8b {label} c={c}: TTFT p50 {p50:.1f} ms vs baseline {FIRST_DELTA_MS:.0f} ms: "
              f"{p50 / FIRST_DELTA_MS:.3f}x ({p50 - FIRST_DELTA_MS:+.1f} ms; tolerance ±{tolerance:.0f} ms: "
              f"{'met' if ok else 'NOT met'}); ITL p50 {lv['itl_ms']['p50']:.1f} ms; generator CPU "
              f"{lv['overhead']['cpu_share']:.0%}, loop lag p99 {lv['overhead']['loop_lag_ms']['p99']:.1f} ms",
              flush=True)


def p7c() -> None:
    from hermes_nb.rig.rig import real_proxy

    with real_proxy("live", upstream_scenario="paced") as rig:
        report = run_load(rig.endpoint, concurrency="1,4,16", requests=32, direct=rig.upstream.endpoint)
    print(report._repr_text_())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1, help="P8a rounds (aiohttp and httpx alternate)")
    parser.add_argument("--skip-httpx", action="store_true", help="P8a without the httpx baseline")
    parser.add_argument("--rig", action="store_true", help="also P7c: the real proxy's added latency")
    args = parser.parse_args()
    with endpoint_child(PACED) as (proc, endpoint):
        print(f"emulator {endpoint} (paced: first delta 100 ms, then 10 ms a token)", flush=True)
        for _ in range(args.rounds):
            ours = p7a(endpoint, proc.pid, "aiohttp")
            if not args.skip_httpx:
                base = p7a(endpoint, proc.pid, "httpx")
                cpu = base["cpu_ms_per_request"] / ours["cpu_ms_per_request"]
                print(f"P8a ratio httpx/aiohttp: CPU per request {cpu:.1f}x, "
                      f"TTFT p50 {base['ttft_p50'] / ours['ttft_p50']:.1f}x, "
                      f"wall {base['wall_s'] / ours['wall_s']:.1f}x",
                      flush=True)
        report = run_load(endpoint, concurrency="1,16", requests=48)
        _accuracy("run_load, emulator in its own process", [lv.model_dump() for lv in report.levels])
    proc = subprocess.run([sys.executable, "-m", "hermes_nb.cli", "load", "--concurrency", "1,16", "--requests", "48",
                           "--json"], capture_output=True, text=True, timeout=600)
    doc = json.loads(proc.stdout)
    _accuracy("`hermes-nb load --concurrency 1,16 --requests 48 --json` (embedded emulator)", doc["levels"])
    print(f"P8b exit code {proc.returncode}, verdict {doc['verdict']}")
    if args.rig:
        p7c()
    return 0


if __name__ == "__main__":
    sys.exit(main())
