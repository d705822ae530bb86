"""Run the real `hermes proxy start --provider P` of any release (--hermes-bin: hermes, hermesx; --package: a cached
venv) on 127.0.0.1 with a throwaway HERMES_HOME (never ~/.hermes).
The first stdout line is the endpoint; with --json the single JSON object is printed once the proxy is ready.
Ctrl-C or SIGTERM stops the proxy (and the live state's upstream) cleanly, exit 0; during start-up too (exit
130). Exit 3 when the proxy cannot be started (no hermes, logged-out, not ready), 1 when it dies while running."""

import signal
import threading
from types import FrameType

from hermes_nb.cli.app import Output
from hermes_nb.rig.executable import ensure_release
from hermes_nb.rig.rig import RigSpec, real_proxy

HELP = "run the real `hermes proxy start` on loopback (stale|live|logged-out|challenge; --provider nous|xai)"
SPEC = RigSpec


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def handle(args: RigSpec, out: Output) -> int:
    # SIGTERM stops the rig like Ctrl-C, from the start: the proxy runs in its own session and would outlive us
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _interrupt) if main_thread else None
    try:
        binary = ensure_release(args.package, progress=out.info) if args.package else args.hermes_bin
        with real_proxy(args.state, provider=args.provider, port=args.port, hermes_bin=binary,
                        upstream_scenario=args.scenario, upstream=args.upstream,
                        deadline_s=args.ready_budget_s) as rig:
            out.line(rig.endpoint)
            out.emit({
                "endpoint": rig.endpoint, "provider": rig.provider, "state": rig.state,
                "hermes_version": rig.hermes_version, "package": rig.install.package,
                "hermes_bin": str(rig.hermes_bin), "pid": rig.pid, "startup_s": round(rig.startup_s, 3),
                "upstream": rig.upstream, "upstream_kind": rig.upstream_kind,
            })
            out.info(f"{rig.install.label} proxy --provider {rig.provider} ({rig.state}) pid {rig.pid}, "
                     f"ready in {rig.startup_s:.2f}s; log {rig.log_path}")
            if rig.upstream is not None:
                out.info(f"upstream ({rig.upstream_kind}): {rig.upstream}")
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
