"""P5 scaling (not a test): 1 MB, 10 MB and 50 MB streamed answers through ``hermes-nb run``; the 10 MB body cap.

A loopback stream server in this process (aiohttp, its own thread) answers ``POST /v1/chat/completions``
with an SSE stream whose content totals the bytes asked for in the ``x-bench-bytes`` request header
(deltas of 1,000 characters of prose, then the final-message fence, a finish chunk, a usage chunk and
``[DONE]``). Each size runs as one ``hermes-nb run --prompt … --json`` process; its wall time and its peak
RSS (``ru_maxrss`` from ``os.wait4``) are taken, and a run of a 1 KB answer gives the RSS floor.

Also in the same run, the baseline the ratios are read against: the same bytes downloaded by raw ``httpx``
(``iter_raw``, nothing kept), so the stream server's own cost is visible.

Targets: time(50 MB) / time(10 MB) within 4-6 (linear; also shown with the 1 KB run's time, the fixed
start-up cost, taken off both); peak RSS growth (peak - floor) <= 3x the answer size.

Then the body cap: a mission whose prompt is 11 MB goes to the emulator (``hermes-agent`` profile, whose
``client_max_size`` is the real proxy's 10 MB); the seconds between the 413 arriving (``HermesClient.send``
returning) and ``run`` returning are reported (target: well under a second).

    .venv/bin/python benchmarks/scaling.py [--sizes 1,10,50]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
from aiohttp import web

from hermes_nb.core.facts import SENTINEL_TAG

MB = 1_000_000
PIECE = ("the proxy streams tokens back to the harness as server sent events and the runner writes "
         "each delta to the log ") * 10
PIECE = PIECE[:1000]


def _frame(obj: dict) -> bytes:
    return b"data: " + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"


def _chunk(content: str | None = None, finish: str | None = None) -> dict:
    delta = {} if content is None else {"content": content}
    return {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1764680000,
            "model": "bench", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


async def _chat(request: web.Request) -> web.StreamResponse:
    await request.read()
    size = int(request.headers.get("x-bench-bytes", "1000"))
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    frame = _frame(_chunk(PIECE))
    batch = frame * 64
    n = max(1, size // len(PIECE))
    await response.write(_frame({**_chunk(""), "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""},
                                                           "finish_reason": None}]}))
    for _ in range(n // 64):
        await response.write(batch)
    for _ in range(n % 64):
        await response.write(frame)
    fence = f"\n```{SENTINEL_TAG}\nScaled answer delivered.\n```\n"
    await response.write(_frame(_chunk(fence)) + _frame(_chunk(finish="stop")))
    usage = {**_chunk(), "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": n, "total_tokens": n + 3}}
    await response.write(_frame(usage) + b"data: [DONE]\n\n")
    await response.write_eof()
    return response


class StreamServer:
    def __init__(self) -> None:
        self.port = 0
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        self._ready.wait(15)

    def _run(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._loop.run_until_complete(self._main())

    async def _main(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", _chat)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        self.port = runner.addresses[0][1]
        self._stop = asyncio.Event()
        self._ready.set()
        await self._stop.wait()
        await runner.cleanup()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def close(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)


def hermes_run_rss(endpoint: str, size: int, root: Path) -> tuple[float, int, str]:
    """(wall seconds, peak RSS bytes, status) of one ``hermes-nb run`` process."""
    overrides = json.dumps({"extra_headers": {"x-bench-bytes": str(size)}, "request_timeout_ms": 600_000})
    cmd = [sys.executable, "-m", "hermes_nb.cli", "run", "--prompt", "Scale.", "--endpoint", endpoint,
           "--model", "bench", "--runtime-config-overrides", overrides, "--root", str(root), "--no-sandbox",
           "--json"]
    env = {**os.environ, "HERMES_NB_AUTH_TOKEN": "sk-bench-scaling-x"}
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL, env=env)
        _, code, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(code)
        out.seek(0)
        raw = out.read()
    status = json.loads(raw)["status"] if raw.strip().startswith(b"{") else f"exit {proc.returncode}"
    return wall, usage.ru_maxrss * 1024, status


def raw_download(endpoint: str, size: int) -> float:
    start = time.perf_counter()
    with httpx.Client(trust_env=False, timeout=600) as client, client.stream(
            "POST", endpoint + "/chat/completions", json={"model": "bench", "messages": [], "stream": True},
            headers={"x-bench-bytes": str(size)}) as r:
        for _ in r.iter_raw():
            pass
    return time.perf_counter() - start


def body_cap() -> tuple[float, float, str]:
    """(seconds from the 413 to run() returning, whole run seconds, status) for an 11 MB prompt."""
    import hermes_nb.wire.client as client_mod
    from hermes_nb.core.config import validate_config
    from hermes_nb.emulator import serve_emulator
    from hermes_nb.harness.mission import Mission
    from hermes_nb.harness.run import run

    marks: dict[str, float] = {}
    original = client_mod.HermesClient.send

    def send(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        exchange = original(self, *args, **kwargs)
        marks["response"] = time.perf_counter()
        return exchange

    client_mod.HermesClient.send = send  # type: ignore[method-assign]
    try:
        with serve_emulator() as emu, tempfile.TemporaryDirectory() as tmp:
            config = validate_config({"endpoint": emu.endpoint, "model": "m", "auth_token": "sk-bench-cap-x",
                                      "request_timeout_ms": 60_000})
            prompt = "lorem ipsum dolor sit amet " * 420_000  # 11.3 MB
            start = time.perf_counter()
            result = run(Mission.adhoc(prompt), config, root=tmp, handle_signals=False, sandbox=False)
            end = time.perf_counter()
    finally:
        client_mod.HermesClient.send = original  # type: ignore[method-assign]
    errors = "; ".join(result.result.get("errors", []))
    return end - marks["response"], end - start, f"{result.status} ({errors})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1,10,50", help="answer sizes in MB, comma-separated")
    args = parser.parse_args(argv)
    sizes = [int(float(s) * MB) for s in args.sizes.split(",")]
    server = StreamServer()
    results: dict[int, tuple[float, int]] = {}
    ok = True
    try:
        with tempfile.TemporaryDirectory(prefix="hermes-nb-p5-") as tmp:
            floor_wall, floor_rss, status = hermes_run_rss(server.endpoint, 1000, Path(tmp))
            print(f"1 KB answer: {floor_wall:.2f} s, peak RSS {floor_rss / MB:.0f} MB ({status}) -- the RSS floor")
            for size in sizes:
                raw = raw_download(server.endpoint, size)
                wall, rss, status = hermes_run_rss(server.endpoint, size, Path(tmp))
                results[size] = (wall, rss)
                growth = (rss - floor_rss) / size
                print(f"{size / MB:5.0f} MB answer: hermes-nb run {wall:6.2f} s ({size / wall / MB:5.1f} MB/s), "
                      f"peak RSS {rss / MB:6.0f} MB (growth {growth:.2f}x the answer), {status}; "
                      f"raw httpx download {raw:5.2f} s")
                ok = ok and status == "passed"
    finally:
        server.close()
    after, whole, status = body_cap()
    print(f"11 MB prompt (10 MB cap): {status}; {after:.3f} s from the 413 to the result, {whole:.2f} s in all")
    if 10 * MB in results and 50 * MB in results:
        ratio = results[50 * MB][0] / results[10 * MB][0]
        net = (results[50 * MB][0] - floor_wall) / (results[10 * MB][0] - floor_wall)
        worst = max((rss - floor_rss) / size for size, (_, rss) in results.items())
        print(f"P5 time 50 MB / 10 MB = {ratio:.2f}, {net:.2f} without the 1 KB run's fixed cost (target 4-6); "
              f"peak RSS growth <= {worst:.2f}x the answer "
              f"(target <= 3); 413 classified {after:.3f} s after it arrived (target well under 1 s)")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
