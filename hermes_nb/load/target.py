"""What is loaded: the embedded emulator, started in processes of its own, or what answers at a given endpoint.

The embedded emulator runs out of the generator's process: in a thread of it, both shared one interpreter and
the generator read its own queueing as the target's (at 256 streams, E2E 1.46 s where an emulator of its own
reads 0.56–0.59 s). One process serves about :data:`EMULATOR_RPS` answers a second on one core, so a level
that needs more gets more processes, sharing one port (``SO_REUSEPORT``; the kernel spreads the connections).
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

from hermes_nb.core.config import HermesProxyRuntimeConfig
from hermes_nb.core.errors import ProxyUnreachable
from hermes_nb.load.report import TargetInfo
from hermes_nb.load.spec import LoadSpec
from hermes_nb.target import UNKNOWN, release_of
from hermes_nb.target import identify as identify_target

__all__ = ["EMBEDDED_SCENARIO", "EMULATOR_RPS", "processes_for", "embedded_emulator", "identify"]

EMBEDDED_SCENARIO = "paced"
#: answers a second one emulator process serves on one core (docs/performance.md P6: it tops out near 400)
EMULATOR_RPS = 300


def processes_for(spec: LoadSpec) -> int:
    """Emulator processes for the top level: its answers a second at the paced floor, over :data:`EMULATOR_RPS`,
    at most one per CPU."""
    floor = spec.first_delta_s + spec.token_interval_s * (spec.max_tokens - 1)
    wanted = max(spec.concurrency) / max(floor, 0.05)
    return max(1, min(os.cpu_count() or 1, math.ceil(wanted / EMULATOR_RPS)))


def _start(spec: LoadSpec, port: int) -> tuple[subprocess.Popen[str], str]:
    argv = [sys.executable, "-m", "hermes_nb.emulator", "--port", str(port), "--reuse-port",
            "--scenario", spec.scenario or EMBEDDED_SCENARIO, "--first-delta-s", f"{spec.first_delta_s!r}",
            "--token-interval-s", f"{spec.token_interval_s!r}"]
    # a session of its own: the terminal's Ctrl-C is the generator's to handle, not the emulator's
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            start_new_session=True)
    assert proc.stdout is not None
    endpoint = proc.stdout.readline().strip()
    if not endpoint.startswith("http://"):
        _stop(proc)
        raise ProxyUnreachable(f"the embedded emulator did not start (exit {proc.returncode})")
    return proc, endpoint


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


@contextmanager
def embedded_emulator(spec: LoadSpec, processes: int) -> Iterator[str]:
    """``processes`` emulators on one loopback port (its endpoint), stopped on exit."""
    with ExitStack() as stack:
        first, endpoint = _start(spec, 0)
        stack.callback(_stop, first)
        port = int(endpoint.rsplit(":", 1)[1].split("/")[0])
        for _ in range(processes - 1):
            stack.callback(_stop, _start(spec, port)[0])
        yield endpoint


def identify(config: HermesProxyRuntimeConfig, hermes_bin: str | None = None) -> TargetInfo:
    """What answers at ``config.endpoint`` (the job's one identity step, :func:`hermes_nb.target.identify`): the
    emulator, a real proxy with the emulator as its upstream (the rig: the proxy is the target), or live; the
    release as the thing under test tells it, or as the executable the operator named (never a local install's)."""
    named = release_of(hermes_bin) if hermes_bin else (None, None, None)
    target = identify_target(config, ask_emulator=True, budget_s=5.0, release=named[0], release_source=named[1],
                             executable=named[2])
    return TargetInfo(kind=target.kind, release=None if target.release == UNKNOWN else target.release,
                      evidence=target.evidence)
