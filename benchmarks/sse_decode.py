"""SSE decode benchmark: hermes_nb vs the OpenAI SDK's decoder (not a test).

The same 20,000-event chat-completions stream (about 3.7 MB of realistic
``chat.completion.chunk`` data lines, then ``data: [DONE]``) is fed in 4 KiB
pieces to

* hermes_nb: :class:`hermes_nb.wire.sse.SSEDecoder` + :class:`hermes_nb.wire.payloads.ChatStream`
  (decode events, parse each payload with orjson, accumulate ``delta.content``);
* openai: ``openai._streaming.SSEDecoder().iter_bytes`` + ``json.loads`` of each
  payload + ``choices[0].delta.content`` accumulation (what ``Stream.__stream__``
  does, without building pydantic models), stopping at ``[DONE]``.

Both run in one process, interleaved, best of N runs each, timed in process
CPU time (``time.process_time``) so other load on a shared machine does not
count. Both must produce the same text.
The last line is ``P1 speedup vs openai: <x> (target >= 3)`` (x = openai time / hermes_nb time).

    .venv/bin/python benchmarks/sse_decode.py [--events 20000] [--runs 7]
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import time
from collections.abc import Callable

from hermes_nb.wire.payloads import ChatStream
from hermes_nb.wire.sse import SSEDecoder

PIECE = 4096
WORDS = (
    "the proxy forwards each request to the upstream provider and streams tokens back as server sent events "
    "while the harness records usage timings and the final message sentinel for the mission run receipt"
).split()


def build_stream(events: int, seed: int = 1) -> bytes:
    """A realistic stream: role chunk, content chunks, finish chunk, usage chunk, [DONE]."""
    rng = random.Random(seed)
    base = {
        "id": "chatcmpl-7f3a9c2e",
        "object": "chat.completion.chunk",
        "created": 1764680000,
        "model": "hermes-4-405b",
    }
    lines: list[str] = []
    for i in range(events - 2):
        if i == 0:
            delta: dict[str, object] = {"role": "assistant", "content": ""}
        else:
            n = rng.randint(1, 2)
            delta = {"content": "".join(" " + rng.choice(WORDS) for _ in range(n))}
        chunk = {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
        lines.append("data: " + json.dumps(chunk, separators=(",", ":")) + "\n\n")
    finish = {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    lines.append("data: " + json.dumps(finish, separators=(",", ":")) + "\n\n")
    usage = {**base, "choices": [], "usage": {"prompt_tokens": 1200, "completion_tokens": events,
                                              "total_tokens": 1200 + events}}
    lines.append("data: " + json.dumps(usage, separators=(",", ":")) + "\n\n")
    lines.append("data: [DONE]\n\n")
    return "".join(lines).encode()


def pieces(blob: bytes, size: int = PIECE) -> list[bytes]:
    return [blob[i : i + size] for i in range(0, len(blob), size)]


def run_hermes(chunks: list[bytes]) -> str:
    decoder = SSEDecoder()
    stream = ChatStream()
    feed = stream.feed
    for chunk in chunks:
        for event in decoder.feed(chunk):
            feed(event)
        if stream.finished:
            break
    return stream.text


def run_hermes_plain_json(chunks: list[bytes]) -> str:
    """Our decoder with plain ``json.loads`` per payload (shows what orjson buys)."""
    decoder = SSEDecoder()
    stream = ChatStream()
    for chunk in chunks:
        for event in decoder.feed(chunk):
            data = event.data
            if data.startswith("[DONE]"):
                return stream.text
            stream.feed_chunk(json.loads(data))
    return stream.text


def run_openai(chunks: list[bytes]) -> str:
    from openai._streaming import SSEDecoder as OpenAIDecoder

    parts: list[str] = []
    for sse in OpenAIDecoder().iter_bytes(iter(chunks)):
        data = sse.data
        if data.startswith("[DONE]"):
            break
        obj = json.loads(data)
        choices = obj.get("choices")
        if choices:
            content = choices[0].get("delta", {}).get("content")
            if content:
                parts.append(content)
    return "".join(parts)


def best_of(fn: Callable[[list[bytes]], str], chunks: list[bytes], runs: int) -> tuple[float, str]:
    best, out = float("inf"), ""
    for _ in range(runs):
        gc.collect()
        start = time.process_time()
        out = fn(chunks)
        best = min(best, time.process_time() - start)
    return best, out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args(argv)
    blob = build_stream(args.events)
    chunks = pieces(blob)
    print(f"stream: {args.events} events, {len(blob) / 1e6:.2f} MB, {len(chunks)} reads of {PIECE} bytes")
    # interleave so both see the same machine load
    ours, plain, theirs = float("inf"), float("inf"), float("inf")
    text_ours = text_plain = text_theirs = ""
    for _ in range(args.runs):
        t, text_ours = best_of(run_hermes, chunks, 1)
        ours = min(ours, t)
        t, text_plain = best_of(run_hermes_plain_json, chunks, 1)
        plain = min(plain, t)
        t, text_theirs = best_of(run_openai, chunks, 1)
        theirs = min(theirs, t)
    if not text_ours or not (text_ours == text_plain == text_theirs):
        print("MISMATCH: the decoders produced different text")
        return 1
    print(f"hermes_nb SSEDecoder + ChatStream: {ours * 1000:.1f} ms ({len(blob) / ours / 1e6:.0f} MB/s)")
    print(f"hermes_nb SSEDecoder + plain json.loads + ChatStream.feed_chunk: {plain * 1000:.1f} ms "
          f"(speedup {theirs / plain:.2f})")
    print(f"openai._streaming.SSEDecoder + json.loads: {theirs * 1000:.1f} ms ({len(blob) / theirs / 1e6:.0f} MB/s)")
    print(f"P1 speedup vs openai: {theirs / ours:.2f} (target >= 3)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
