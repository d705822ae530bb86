"""P8: the load probe's fidelity and cost (not a test). docs/performance.md, docs/load.md.

The target is ``python -m hermes_nb.emulator --scenario paced`` in its own process with the side-by-side's known
pacing: the first token after 100 ms, then one every 10 ms, 30 tokens. Its **floor** is measured in the same run
by the named baseline, a bare aiohttp reader at concurrency 1 that only notes when each chunk arrives (no SSE
decoding, no bookkeeping): TTFT = first content chunk, ITL = (last − first) / 29, E2E = last content chunk.

* **P8a, fidelity**: ``run_load`` at concurrency 1, 16 and 64 (60, 320, 1,280 requests): TTFT, ITL and E2E p50
  as ratios to the floor (target about 1.06, the side-by-side's), and the generator's CPU per request (all the
  process's threads) against the bare reader's at the same concurrency, run right after (at concurrency 1 both
  are mostly the event loop's wake-ups).
* **P8b, the embedded default at 256**: ``hermes-nb load --concurrency 256 --requests 1024 --max-tokens 30`` (its
  emulator in processes of its own) against ``run_load`` of the out-of-process emulator at the same level:
  the E2E p50 ratio (target ≤ 1.25×, or the report warns).
* **P8c, the transport** (``--httpx``): 1,024 requests at 256 with aiohttp (``Level``) and with
  ``httpx.AsyncClient`` (the baseline: the same closed loop, SSE decoder and chunk reader), CPU per request.
* **P8d** (``--rig``): the real proxy (``.venv-hermes``) in front of the paced emulator, ``--direct`` at it.

    .venv/bin/python benchmarks/load_generator.py [--quick] [--httpx] [--rig]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time

import aiohttp
import httpx

from _child import endpoint_child
from hermes_nb.core.redaction import Redactor
from hermes_nb.load.report import LevelResult, Overhead, Sample, level_result
from hermes_nb.load.run import Level, Prepared, run_load
from hermes_nb.load.spec import LoadSpec
from hermes_nb.load.views import report_text
from hermes_nb.wire.payloads import ChatStream
from hermes_nb.wire.sse import SSEDecoder

TOKENS = 30
PACED = [sys.executable, "-m", "hermes_nb.emulator", "--port", "0", "--scenario", "paced", "--first-delta", "0.1",
         "--token-interval", "0.01"]
BODY = {"model": "m", "stream": True, "max_tokens": TOKENS, "stream_options": {"include_usage": True},
        "messages": [{"role": "user", "content": "floor" + " the" * 64}]}


def _machine() -> str:
    return f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs"


async def _bare(endpoint: str, concurrency: int, n: int) -> dict[str, float]:
    """The named baseline: a bare closed loop that only notes when each chunk arrives (p50s of ``n`` requests after
    one unmeasured round), and the CPU per request it costs."""
    ttft, itl, e2e = [], [], []
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as session:
        async def one(measured: bool) -> None:
            start, seen = time.perf_counter(), []
            async with session.post(f"{endpoint}/chat/completions", json=BODY) as response:
                async for chunk in response.content.iter_any():
                    if b'"content":"tok' in chunk:
                        seen.append(time.perf_counter())
            if measured and len(seen) >= 2:
                ttft.append(seen[0] - start)
                itl.append((seen[-1] - seen[0]) / (TOKENS - 1))
                e2e.append(seen[-1] - start)

        async def worker(count: int) -> None:
            for _ in range(count):
                await one(True)

        await asyncio.gather(*(one(False) for _ in range(concurrency)))
        cpu0 = time.process_time()
        await asyncio.gather(*(worker(n // concurrency) for _ in range(concurrency)))
        cpu = time.process_time() - cpu0
    return {**{k: statistics.median(v) * 1000 for k, v in (("ttft", ttft), ("itl", itl), ("e2e", e2e))},
            "cpu": cpu * 1000 / max(len(e2e), 1)}


def fidelity(endpoint: str, quick: bool) -> None:
    floor = asyncio.run(_bare(endpoint, 1, 20))
    print(f"P8 floor (bare reader, c=1, {_machine()}): TTFT {floor['ttft']:.1f} ms, ITL {floor['itl']:.2f} ms, "
          f"E2E {floor['e2e']:.1f} ms (nominal 100 / 10 / 390), CPU {floor['cpu']:.2f} ms/request", flush=True)
    requests = "20,80,320" if quick else "60,320,1280"
    report = run_load(endpoint, concurrency="1,16,64", requests=requests, max_tokens=TOKENS, saturation_gain=0)
    for lv in report.levels:
        bare = floor if lv.concurrency == 1 else asyncio.run(_bare(endpoint, lv.concurrency, 4 * lv.concurrency))
        ratios = {k: getattr(lv, f"{k}_ms").p50 / floor[k] for k in ("ttft", "itl", "e2e")}
        cpu = lv.overhead.cpu_per_request_ms or 0.0
        print(f"P8a c={lv.concurrency} n={lv.succeeded}: TTFT {lv.ttft_ms.p50:.1f} ms ({ratios['ttft']:.3f}x), "
              f"ITL {lv.itl_ms.p50:.2f} ms ({ratios['itl']:.3f}x), E2E {lv.e2e_ms.p50:.1f} ms "
              f"({ratios['e2e']:.3f}x) of the floor: {'within' if max(ratios.values()) <= 1.06 else 'NOT within'} "
              f"6 % (the bare reader at c={lv.concurrency}: {bare['ttft']:.1f} / {bare['itl']:.2f} / "
              f"{bare['e2e']:.1f}); CPU {cpu:.2f} ms/request, the bare reader's {bare['cpu']:.2f} "
              f"({cpu / bare['cpu']:.2f}x); largest gap {lv.gaps.gap_ms.max:.1f} ms; machine "
              f"{lv.overhead.machine_busy:.0%} busy, load {lv.overhead.load_avg}"
              + ("; WARNED" if lv.overhead.warning else ""), flush=True)


def embedded_vs_out_of_process(endpoint: str, quick: bool) -> None:
    requests = "512" if quick else "1024"
    ours = run_load(endpoint, concurrency="256", requests=requests, max_tokens=TOKENS).levels[0]
    proc = subprocess.run([sys.executable, "-m", "hermes_nb.cli", "load", "--concurrency", "256", "--requests",
                           requests, "--max-tokens", str(TOKENS), "--json"], capture_output=True, text=True,
                          timeout=900)
    doc = json.loads(proc.stdout)
    embedded = doc["levels"][0]
    ratio = embedded["e2e_ms"]["p50"] / ours.e2e_ms.p50
    warned = embedded["overhead"]["warning"]
    print(f"P8b c=256 E2E p50: embedded default {embedded['e2e_ms']['p50']:.1f} ms "
          f"({doc['target']['emulator_processes']} emulator processes) vs out-of-process {ours.e2e_ms.p50:.1f} ms: "
          f"{ratio:.3f}x; {'within 1.25x' if ratio <= 1.25 else 'above 1.25x'}, "
          f"{'warned' if warned else 'no warning'} (machine {embedded['overhead']['machine_busy']:.0%} busy, "
          f"{_machine()}); out-of-process run {'warned' if ours.overhead.warning else 'no warning'}; "
          f"generator CPU {embedded['overhead']['cpu_per_request_ms']:.2f} ms/request", flush=True)


async def _httpx_level(endpoint: str, concurrency: int, total: int) -> tuple[list[Sample], Overhead]:
    """P8c's baseline: the same closed loop and chunk reader with httpx.AsyncClient."""
    samples, overhead, issued, origin = list[Sample](), Overhead(), 0, time.perf_counter()
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=120.0, trust_env=False) as client:
        async def one() -> Sample:
            sample = Sample("proxy", concurrency, 0, time.perf_counter() - origin)
            decoder, chat = SSEDecoder(), ChatStream()
            async with client.stream("POST", f"{endpoint}/chat/completions", json=BODY) as r:
                async for chunk in r.aiter_raw():
                    now = time.perf_counter() - origin
                    for event in decoder.feed(chunk):
                        if chat.feed(event):
                            sample.first_token_s = sample.first_token_s or now
                            sample.last_token_s = now
                    sample.last_byte_s = now
            sample.tokens = (chat.usage or {}).get("completion_tokens", 0)
            return sample

        async def worker() -> None:
            nonlocal issued
            while issued < total:
                issued += 1
                samples.append(await one())

        cpu0 = time.process_time()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        overhead.cpu_s = time.process_time() - cpu0
    return samples, overhead


def transport(endpoint: str) -> None:
    spec = LoadSpec.build(max_tokens=TOKENS, warmup_rounds=0)
    body = json.dumps(BODY).encode()

    def build() -> Prepared:
        return Prepared(f"{endpoint}/chat/completions", {"content-type": "application/json"}, body)

    level = Level(build, spec, target="proxy", concurrency=256, repeat=0, budget=1024, origin=time.perf_counter(),
                  deadline=time.perf_counter() + 600, redactor=Redactor())
    ours = asyncio.run(level.run())
    base = asyncio.run(_httpx_level(endpoint, 256, 1024))
    mine, theirs = (cpu.cpu_s * 1000 / len(samples) for samples, cpu in ((ours.samples, ours.result.overhead), base))
    ttft_ours, ttft_base = (level_result(s, LevelResult(concurrency=256)).ttft_ms.p50 for s in (ours.samples, base[0]))
    print(f"P8c c=256 n=1024: aiohttp {mine:.2f} ms CPU/request, TTFT p50 {ttft_ours:.0f} ms; httpx {theirs:.2f} ms, "
          f"TTFT p50 {ttft_base:.0f} ms: httpx/aiohttp {theirs / mine:.1f}x CPU", flush=True)


def rig() -> None:
    from hermes_nb.rig.rig import real_proxy

    with real_proxy("live", upstream_scenario="paced") as handle:
        report = run_load(handle.endpoint, concurrency="1,4,16", requests=32, max_tokens=TOKENS,
                          direct=handle.upstream.endpoint)
    print(report_text(report))


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller budgets (a quick look, not the rows)")
    parser.add_argument("--httpx", action="store_true", help="also P8c: aiohttp against httpx at 256 streams")
    parser.add_argument("--rig", action="store_true", help="also P8d: the real proxy's added latency")
    args = parser.parse_args()
    print(f"P8 start: {_machine()}", flush=True)
    with endpoint_child(PACED) as (_, endpoint):
        fidelity(endpoint, args.quick)
        embedded_vs_out_of_process(endpoint, args.quick)
        if args.httpx:
            transport(endpoint)
    if args.rig:
        rig()
    print(f"P8 end: {_machine()}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
