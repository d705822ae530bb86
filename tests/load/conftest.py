"""The load tests' servers: the emulator with scaled-down pacing, and one tiny server of known timing that answers
one request at a time (its throughput cannot grow with concurrency: a saturated target)."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import threading
from collections.abc import Iterator

import pytest
from aiohttp import web
from pydantic import TypeAdapter

from hermes_nb.load.report import Sample

#: scaled-down pacing: the first delta after 20 ms, then a token every 2 ms
FAST = {"first_delta_s": 0.02, "token_interval_s": 0.002}


def csv_samples(text: str) -> list[Sample]:
    """The samples of a ``load-samples.csv`` file's text (``gaps_ms`` space-separated, an empty cell None)."""
    rows = [{k: v.split() if k == "gaps_ms" else v or None for k, v in row.items()}
            for row in csv.DictReader(io.StringIO(text))]
    return TypeAdapter(list[Sample]).validate_python(rows)


def _chunk(delta: dict) -> bytes:
    return b"data: " + json.dumps({"object": "chat.completion.chunk", "choices": [
        {"index": 0, "delta": delta, "finish_reason": None}]}).encode() + b"\n\n"


@pytest.fixture
def serial_server() -> Iterator[str]:
    """A streaming server that answers one request at a time (4 tokens, 5 ms apart after 10 ms): its endpoint."""
    ready, holder, one = threading.Event(), {}, web.AppKey("one", asyncio.Semaphore)

    async def chat(request: web.Request) -> web.StreamResponse:
        await request.read()
        async with request.app[one]:
            response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
            await response.prepare(request)
            await asyncio.sleep(0.01)
            for _ in range(4):
                await response.write(_chunk({"content": "tok "}))
                await asyncio.sleep(0.005)
            await response.write(b'data: {"choices": [], "usage": {"completion_tokens": 4}}\n\ndata: [DONE]\n\n')
            await response.write_eof()
            return response

    async def main() -> None:
        app = web.Application()
        app[one] = asyncio.Semaphore(1)
        app.router.add_post("/v1/chat/completions", chat)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        holder["port"], holder["stop"] = runner.addresses[0][1], asyncio.Event()
        ready.set()
        await holder["stop"].wait()
        await runner.cleanup()

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    ready.wait(10)
    try:
        yield f"http://127.0.0.1:{holder['port']}/v1"
    finally:
        loop.call_soon_threadsafe(holder["stop"].set)
        thread.join(10)
        loop.close()
