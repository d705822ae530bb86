"""``hermes-nb rig``: run the real ``hermes proxy`` in the foreground with a throwaway HERMES_HOME.

The first stdout line is the endpoint (``http://127.0.0.1:<port>/v1``); with
``--json`` the single JSON object is printed once the proxy is ready. Ctrl-C
or SIGTERM stops the proxy (and the live state's upstream emulator) cleanly,
exit 0; during startup too (the proxy is stopped, the temp dir removed; exit 130).
Exit 3 when the proxy cannot be started (no hermes, logged-out, not ready),
1 when it dies while running.
"""

from __future__ import annotations

import argparse
import signal
import threading
from types import FrameType
from typing import Any

from hermes_nb.cli.output import Output
from hermes_nb.core.errors import UsageError
from hermes_nb.emulator import UPSTREAM_SCENARIOS
from hermes_nb.proxy.rig import PROVIDERS, STATES, real_proxy


def register(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "rig", parents=[parent],
        help="run the real `hermes proxy start` on loopback (stale|live|logged-out; --provider nous|xai)",
        description="Run the real `hermes proxy start --provider P` on 127.0.0.1 with a throwaway HERMES_HOME.",
    )
    p.add_argument("--provider", choices=PROVIDERS, default="nous",
                   help="`hermes proxy start --provider` (default nous); xai: its credential pool points at the "
                        "loopback upstream")
    p.add_argument("--state", choices=STATES, default="live",
                   help="auth state: stale (401 upstream_auth_failed), live (forwards to the emulator), "
                        "logged-out (proxy refuses to start)")
    p.add_argument("--port", type=int, default=0, help="proxy port (default: a free loopback port)")
    p.add_argument("--hermes-bin", metavar="PATH",
                   help="the `hermes` executable (default: $HERMES_NB_HERMES_BIN, .venv-hermes/bin/hermes, PATH)")
    p.add_argument("--scenario", default="ok", choices=UPSTREAM_SCENARIOS,
                   help="upstream emulator scenario in the live state (default: ok; paced and concurrency-limited "
                        "for `hermes-nb load`; slow-first-byte, slow-answer: a slow upstream)")
    p.add_argument("--upstream", default="emulator", metavar="emulator|minimal|CMD",
                   help="what answers behind the proxy in the live state: emulator (default), minimal "
                        "(a deliberately different OpenAI-compatible upstream) or a command line with {port} "
                        "that starts an OpenAI-compatible server on 127.0.0.1:{port}/v1")
    p.add_argument("--deadline", type=float, default=30.0, metavar="S", help="readiness deadline in seconds")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace, out: Output) -> int:
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be 0..65535, got {args.port}")
    if not args.deadline > 0:
        raise UsageError(f"--deadline must be > 0 seconds, got {args.deadline:g}")
    previous = _sigterm_as_interrupt()  # from the start: a SIGTERM during startup must still stop the proxy
    try:
        with real_proxy(args.state, provider=args.provider, port=args.port, hermes_bin=args.hermes_bin,
                        upstream_scenario=args.scenario, upstream=args.upstream,
                        deadline_s=args.deadline) as rig:
            out.line(rig.endpoint)
            out.emit({
                "endpoint": rig.endpoint, "provider": rig.provider, "state": rig.state,
                "hermes_version": rig.hermes_version,
                "hermes_bin": str(rig.hermes_bin), "pid": rig.pid, "startup_s": round(rig.startup_s, 3),
                "upstream": _upstream(rig.upstream), "upstream_kind": rig.upstream_kind,
            })
            out.info(f"hermes proxy {rig.hermes_version or '?'} --provider {rig.provider} ({rig.state}) pid {rig.pid}, "
                     f"ready in {rig.startup_s:.2f}s; log {rig.log_path}")
            if rig.upstream is not None:
                out.info(f"upstream ({rig.upstream_kind}): {_upstream(rig.upstream)}")
            out.info("Ctrl-C stops")
            try:
                code = rig.wait()
            except KeyboardInterrupt:
                out.info("stopping")
                return 0
            out.info(f"hermes proxy exited {code} unexpectedly: {rig.log_text().strip().splitlines()[-1:]}")
            return 1
    finally:  # an interrupt before the proxy was ready has already stopped it (real_proxy's cleanup): exit 130
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _sigterm_as_interrupt() -> Any:
    """SIGTERM stops the rig like Ctrl-C (the proxy runs in its own session and would outlive us)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, _interrupt)


def _upstream(emu: Any) -> str | None:
    if emu is None:
        return None
    return str(getattr(emu, "endpoint", emu))
