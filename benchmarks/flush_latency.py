"""P3 flush latency (not a test): emulator writes a delta -> the delta is in runtime.stdout.log and on_delta fired.

An emulator process (scenario ``slow``: a pause of ``--delay`` seconds before each delta, so every delta is
its own write) logs ``time.monotonic_ns()`` and the bytes of every body write just before handing them to
aiohttp. This process runs ``hermes_nb.harness.run.run`` ``--runs`` times against it with an ``on_delta``
hook that notes ``time.monotonic_ns()`` and checks that ``runtime.stdout.log`` already holds everything the
hook was given (the runner appends and flushes before it calls the hook). ``CLOCK_MONOTONIC`` is one clock
for every process on Linux, so the two stamps compare directly.

For each delta the emulator sent, the latency is: the first ``on_delta`` call after which the run's streamed
text covers that delta, minus the emulator's send stamp. Text the stream redactor holds back (a tail that
could still become a secret) shows up as latency, as it should.

Baseline, in the same run: the same requests read by raw ``httpx`` (``iter_raw``, no SSE decoding, no file),
stamping each read: the transport's own latency on this machine.

The last line reads ``P3 flush latency p99 <x> ms (target <= 10 ms)``.

    .venv/bin/python benchmarks/flush_latency.py [--runs 40] [--delay 0.01]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from _child import endpoint_child
from hermes_nb.core.config import validate_config
from hermes_nb.harness.mission import Mission
from hermes_nb.harness.run import run
from hermes_nb.wire.sse import SSEDecoder

CHILD = r"""
import json, sys, time
from aiohttp import web
log = open(sys.argv[1], "w", buffering=1)
_write = web.StreamResponse.write
async def write(self, data):
    log.write(json.dumps([time.monotonic_ns(), bytes(data).decode("utf-8", "replace")]) + "\n")
    return await _write(self, data)
web.StreamResponse.write = write
from hermes_nb.cli.app import main
sys.exit(main(["emulator", "--port", "0", "--scenario", "slow", "--delay", sys.argv[2]]))
"""


def sent_deltas(lines: list[str], *, in_bytes: bool = False) -> list[tuple[int, int]]:
    """(send stamp ns, cumulative text length after this delta) for every content delta written.

    ``in_bytes``: the cumulative body length in bytes after the write instead (for the raw baseline).
    """
    decoder, out, total, size = SSEDecoder(), [], 0, 0
    for line in lines:
        stamp, data = json.loads(line)
        size += len(data.encode())
        for event in decoder.feed(data.encode()):
            if event.data.startswith("[DONE]"):
                continue
            for choice in json.loads(event.data).get("choices") or []:
                piece = (choice.get("delta") or {}).get("content")
                if piece:
                    total += len(piece)
                    out.append((stamp, size if in_bytes else total))
    return out


def latencies(sent: list[tuple[int, int]], seen: list[tuple[int, int]]) -> list[float]:
    """Milliseconds from each send to the first arrival mark that covers it."""
    out, j = [], 0
    for stamp, end in sent:
        while j < len(seen) and seen[j][1] < end:
            j += 1
        if j == len(seen):
            raise SystemExit(f"a delta never arrived (text up to {end} characters)")
        out.append((seen[j][0] - stamp) / 1e6)
    return out


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def delta_recorder(out_file: Path) -> tuple[Callable[[str], None], list[tuple[int, int]]]:
    """An on_delta hook, and what it records: (arrival ns, characters so far) per delta, each checked to be in
    ``out_file`` already."""
    seen: list[tuple[int, int]] = []
    given = [0]

    def on_delta(text: str) -> None:
        now = time.monotonic_ns()
        given[0] += len(text)
        if out_file.stat().st_size < len(text.encode()):  # flushed before the hook: never true
            raise SystemExit("on_delta fired before runtime.stdout.log held the delta")
        seen.append((now, given[0]))

    return on_delta, seen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--delay", type=float, default=0.01, help="emulator pause before each delta, seconds")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="hermes-nb-p3-") as tmp:
        log_path = Path(tmp) / "writes.ndjson"
        (Path(tmp) / "root").mkdir()
        with endpoint_child([sys.executable, "-c", CHILD, str(log_path), str(args.delay)]) as (_, endpoint):
            ours: list[float] = []
            raw: list[float] = []
            consumed = 0
            config = validate_config({"endpoint": endpoint, "model": "hermes-agent", "auth_token": "sk-bench-p3-x",
                                      "request_timeout_ms": 30_000})
            http = httpx.Client(trust_env=False, timeout=30)
            body = {"model": "hermes-agent", "stream": True,
                    "messages": [{"role": "user", "content": "Flush latency."}]}
            for i in range(args.runs):
                # hermes_nb: run() with an on_delta hook
                rid = f"p3-{i:04d}"
                out_file = Path(tmp) / "root" / ".harness" / "missions" / "adhoc" / "runs" / rid / "runtime.stdout.log"
                on_delta, seen = delta_recorder(out_file)
                result = run(Mission.adhoc("Flush latency."), config, root=Path(tmp) / "root", run_id=rid,
                             on_delta=on_delta, handle_signals=False, sandbox=False)
                if result.status != "passed":
                    print(f"run {rid} ended {result.status}")
                    return 1
                lines = log_path.read_text().splitlines()
                ours += latencies(sent_deltas(lines[consumed:]), seen)
                consumed = len(lines)
                # baseline: raw httpx reads, no decoding, no file
                arrivals: list[tuple[int, int]] = []
                with http.stream("POST", endpoint + "/chat/completions", json=body,
                                 headers={"authorization": "Bearer sk-bench-p3-x"}) as r:
                    got = b""
                    for chunk in r.iter_raw():
                        now = time.monotonic_ns()
                        got += chunk
                        arrivals.append((now, len(got)))
                lines = log_path.read_text().splitlines()
                mine = lines[consumed:]
                consumed = len(lines)
                raw += latencies(sent_deltas(mine, in_bytes=True), arrivals)
    for name, values in (("hermes_nb run (stdout.log + on_delta)", ours), ("raw httpx iter_raw (baseline)", raw)):
        print(f"{name:40s} n={len(values):4d}  p50 {pct(values, 50):6.2f} ms  p99 {pct(values, 99):6.2f} ms  "
              f"max {max(values):6.2f} ms")
    print(f"P3 flush latency p99 {pct(ours, 99):.2f} ms (target <= 10 ms); p50 {pct(ours, 50):.2f} ms, "
          f"max {max(ours):.2f} ms; raw httpx p99 {pct(raw, 99):.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
