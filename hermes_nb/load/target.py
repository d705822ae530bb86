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
from hermes_nb.emulator.scenarios import PROFILE_HEADER, SCENARIO_HEADER
from hermes_nb.load.report import TargetInfo
from hermes_nb.load.spec import LoadSpec
from hermes_nb.proxy.identity import PROBE_SCENARIO, UNKNOWN_VERSION, hermes_agent_version
from hermes_nb.wire.client import HermesClient

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
            "--scenario", spec.scenario or EMBEDDED_SCENARIO, "--first-delta", f"{spec.first_delta_s!r}",
            "--token-interval", f"{spec.token_interval_s!r}"]
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


def identify(config: HermesProxyRuntimeConfig) -> TargetInfo:
    """What answers at ``config.endpoint``: a scenario no emulator knows is answered 400 ``unknown_scenario`` by
    hermes_nb's emulator, naming its profile (:data:`PROFILE_HEADER`); its ``upstream`` profile behind a server
    with the hermes proxy's ``/health`` is the rig: a real proxy, the target, with the emulator as its upstream.
    A hermes proxy's release comes from its ``/health`` or the local ``hermes``."""
    with HermesClient(config) as client:
        answer = client.models(headers={SCENARIO_HEADER: PROBE_SCENARIO}, deadline_s=5.0)
        ours = answer.status == 400 and answer.envelope is not None and answer.envelope.code == "unknown_scenario"
        profile = {k.lower(): v for k, v in answer.headers.items()}.get(PROFILE_HEADER.lower())
        health = client.health(deadline_s=2.0) if not ours or profile in ("upstream", "minimal") else None
    proxy = health is not None and health.status == 200 and isinstance(health.json_body, dict) \
        and "upstream" in health.json_body
    if ours and not proxy:
        return TargetInfo(kind="emulator", evidence=f"{SCENARIO_HEADER}: {PROBE_SCENARIO} answered 400 "
                                                    f"unknown_scenario from the emulator's {profile} profile")
    release, source = hermes_agent_version(config.endpoint, deadline_s=2.0) if proxy else (UNKNOWN_VERSION, None)
    notes = [f"a hermes proxy in front of the emulator's {profile} profile" if ours else None,
             f"release from {source}" if source else None]
    return TargetInfo(kind="rig" if ours else "live", release=None if release == UNKNOWN_VERSION else release,
                      evidence=", ".join(n for n in notes if n) or None)
