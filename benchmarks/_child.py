"""A child process that prints its loopback endpoint on its first line (the emulator, or a benchmark's own
server): start it, read the endpoint, stop it with SIGTERM (then SIGKILL) however the benchmark ends."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

EMULATOR = [sys.executable, "-m", "hermes_nb.cli", "emulator", "--port", "0"]


@contextmanager
def endpoint_child(argv: Sequence[str] = EMULATOR) -> Iterator[tuple[subprocess.Popen[str], str]]:
    proc = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        endpoint = proc.stdout.readline().strip()
        if not endpoint.startswith("http://127.0.0.1:"):
            raise SystemExit(f"emulator did not start (first line {endpoint!r})")
        yield proc, endpoint
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
