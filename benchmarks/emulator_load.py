"""Emulator load benchmark (not a test): N concurrent streaming chat requests against ONE emulator process.

Starts ``hermes-nb emulator --port 0`` as a subprocess (loopback only), reads the
endpoint from its first stdout line, fires ``--requests`` streaming
``/v1/chat/completions`` requests at once with an aiohttp ``ClientSession``
(``--client httpx`` for ``httpx.AsyncClient``; one connection each,
``--concurrency`` at most), and checks every answer: HTTP 200,
the text, ``finish_reason`` and ``data: [DONE]``. Anything else is an error.
Each round is bounded by ``--timeout`` seconds; the emulator is stopped with
SIGTERM at the end and must exit 0.

    .venv/bin/python benchmarks/emulator_load.py [--requests 200] [--concurrency 200] [--rounds 3]
                                                 [--profile hermes-agent] [--scenario ok]

Target: 0 errors. The last line reads ``errors: <n>``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import time
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import httpx

from _child import EMULATOR, endpoint_child
from hermes_nb.emulator import SCENARIO_HEADER
from hermes_nb.wire.sse import SSEDecoder

BODY = {"model": "hermes-4-405b", "messages": [{"role": "user", "content": "Load test."}], "stream": True,
        "stream_options": {"include_usage": True}}


@dataclass
class Round:
    latencies: list[float] = field(default_factory=list)
    first_bytes: list[float] = field(default_factory=list)
    deltas: int = 0
    errors: list[str] = field(default_factory=list)
    wall_s: float = 0.0


class _Stream:
    """Per-request state: decode frames, accumulate text, note [DONE] and finish_reason."""

    def __init__(self, result: Round) -> None:
        self.result, self.decoder, self.text, self.done, self.finish = result, SSEDecoder(), "", False, None

    def feed(self, chunk: bytes) -> None:
        for event in self.decoder.feed(chunk):
            if event.data == "[DONE]":
                self.done = True
                continue
            for choice in json.loads(event.data).get("choices", []):
                piece = choice["delta"].get("content")
                if piece:
                    self.text += piece
                    self.result.deltas += 1
                self.finish = choice.get("finish_reason") or self.finish


def _check(state: _Stream, result: Round, expected: list[str], started: float, first: float | None) -> None:
    if not (state.done and state.finish == "stop"):
        result.errors.append(f"incomplete stream (done={state.done}, finish={state.finish})")
        return
    if expected and state.text != expected[0]:
        result.errors.append("text differs between requests")
        return
    expected.append(state.text)
    result.latencies.append(time.perf_counter() - started)
    result.first_bytes.append(first or 0.0)


async def one_httpx(client: httpx.AsyncClient, endpoint: str, headers: dict[str, str], result: Round,
                    expected: list[str]) -> None:
    started, first, state = time.perf_counter(), None, _Stream(result)
    try:
        async with client.stream("POST", endpoint + "/chat/completions", json=BODY, headers=headers) as r:
            if r.status_code != 200:
                result.errors.append(f"HTTP {r.status_code}")
                return
            async for chunk in r.aiter_raw():
                first = first or time.perf_counter() - started
                state.feed(chunk)
    except httpx.HTTPError as exc:
        result.errors.append(f"{type(exc).__name__}: {exc}")
        return
    except ValueError as exc:
        result.errors.append(f"bad frame: {exc}")
        return
    _check(state, result, expected, started, first)


async def one_aiohttp(session: aiohttp.ClientSession, endpoint: str, headers: dict[str, str], result: Round,
                      expected: list[str]) -> None:
    started, first, state = time.perf_counter(), None, _Stream(result)
    try:
        async with session.post(endpoint + "/chat/completions", json=BODY, headers=headers) as r:
            if r.status != 200:
                result.errors.append(f"HTTP {r.status}")
                return
            async for chunk in r.content.iter_any():
                first = first or time.perf_counter() - started
                state.feed(chunk)
    except aiohttp.ClientError as exc:
        result.errors.append(f"{type(exc).__name__}: {exc}")
        return
    except ValueError as exc:
        result.errors.append(f"bad frame: {exc}")
        return
    _check(state, result, expected, started, first)


async def run_round(endpoint: str, n: int, concurrency: int, scenario: str, timeout: float,
                    client_kind: str = "aiohttp") -> Round:
    result = Round()
    expected: list[str] = []
    headers = {SCENARIO_HEADER: scenario, "Authorization": "Bearer bench"}
    async with contextlib.AsyncExitStack() as stack:
        if client_kind == "httpx":
            limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
            client = await stack.enter_async_context(httpx.AsyncClient(
                limits=limits, timeout=httpx.Timeout(timeout, pool=timeout), trust_env=False))

            def make() -> Coroutine[Any, Any, None]:
                return one_httpx(client, endpoint, headers, result, expected)
        else:
            connector = aiohttp.TCPConnector(limit=concurrency)
            session = await stack.enter_async_context(aiohttp.ClientSession(
                connector=connector, timeout=aiohttp.ClientTimeout(total=timeout), trust_env=False))

            def make() -> Coroutine[Any, Any, None]:
                return one_aiohttp(session, endpoint, headers, result, expected)
        started = time.perf_counter()
        tasks = [asyncio.create_task(make()) for _ in range(n)]
        _, pending = await asyncio.wait(tasks, timeout=timeout)
        for task in pending:
            task.cancel()
            result.errors.append("round deadline")
        await asyncio.gather(*pending, return_exceptions=True)
        result.wall_s = time.perf_counter() - started
    return result


def cpu_seconds(pid: int) -> float | None:
    """User+system CPU time of a process (Linux /proc), or None."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", default="hermes-agent", choices=("hermes-agent", "seed", "upstream"))
    parser.add_argument("--scenario", default="ok", choices=("ok", "no-sentinel", "slow"))
    parser.add_argument("--timeout", type=float, default=60.0, help="bound of each round, seconds")
    parser.add_argument("--client", default="aiohttp", choices=("aiohttp", "httpx"),
                        help="load generator (httpx's async client costs ~10x the server's CPU)")
    args = parser.parse_args()

    total_errors = 0
    with endpoint_child([*EMULATOR, "--profile", args.profile]) as (proc, endpoint):
        print(f"emulator {endpoint} profile={args.profile} scenario={args.scenario} client={args.client}; "
              f"{args.requests} streaming requests x {args.rounds} rounds, concurrency {args.concurrency}")
        for index in range(args.rounds):
            cpu_before = cpu_seconds(proc.pid)
            r = asyncio.run(run_round(endpoint, args.requests, args.concurrency, args.scenario, args.timeout,
                                      args.client))
            cpu_after = cpu_seconds(proc.pid)
            total_errors += len(r.errors)
            ok = len(r.latencies)
            print(f"round {index + 1}: {ok}/{args.requests} ok in {r.wall_s:.2f}s -> {ok / r.wall_s:.0f} req/s, "
                  f"{r.deltas / r.wall_s:.0f} deltas/s; latency p50 {percentile(r.latencies, 50) * 1000:.0f} ms "
                  f"p95 {percentile(r.latencies, 95) * 1000:.0f} ms max {max(r.latencies, default=0) * 1000:.0f} ms; "
                  f"first byte p50 {statistics.median(r.first_bytes or [0]) * 1000:.0f} ms; errors {len(r.errors)}")
            if cpu_before is not None and cpu_after is not None:
                print(f"  emulator CPU {cpu_after - cpu_before:.2f}s for the round "
                      f"({(cpu_after - cpu_before) / max(ok, 1) * 1000:.2f} ms per streamed request)")
            for error in sorted(set(r.errors))[:5]:
                print(f"  error: {error} (x{r.errors.count(error)})")
    code = proc.returncode
    print(f"emulator exit code: {code}")
    print(f"errors: {total_errors}")
    return 0 if total_errors == 0 and code == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
