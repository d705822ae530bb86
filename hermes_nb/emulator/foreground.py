"""The emulator in the foreground (``hermes-nb emulator``, ``python -m hermes_nb.emulator``).

The first stdout line is the endpoint (``http://127.0.0.1:<port>/v1``), flushed at once
(with ``--json``: one JSON object describing the server instead). One log line per
request goes to stderr. Ctrl-C or SIGTERM stops it cleanly with exit code 0.
Both entry points share :func:`add_arguments` and :func:`run`; this module
never imports the CLI.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from collections.abc import Callable
from typing import Any

from hermes_nb.core.errors import ConfigError, UsageError
from hermes_nb.core.providers import PROXY_PROVIDERS
from hermes_nb.emulator.content import MODELS_BY_PROVIDER
from hermes_nb.emulator.scenarios import ALL_SCENARIOS, PROFILES, PROXY_SCENARIOS

__all__ = ["DEFAULT_PORT", "add_arguments", "run"]

DEFAULT_PORT = 8645


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", default="127.0.0.1", help="bind address (loopback only; default 127.0.0.1)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT,
                   help=f"bind port, 0 = any free port (default {DEFAULT_PORT})")
    p.add_argument("--profile", choices=PROFILES, default="hermes-agent", help="what to emulate (default hermes-agent)")
    p.add_argument("--scenario", choices=ALL_SCENARIOS, default="ok",
                   help="upstream behaviour (default ok); upstream-unreachable/-timeout: the proxy's own 502/504")
    p.add_argument("--provider", choices=PROXY_PROVIDERS, default="nous",
                   help="what the proxy profiles front: its /health name, forwarded paths (xai adds /v1/responses) "
                        "and texts (default nous)")
    p.add_argument("--seed", type=int, default=0, help="seed of the deterministic ids/texts (default 0)")
    p.add_argument("--models", default=None, help="comma-separated model ids listed by /v1/models")
    p.add_argument("--delay", type=float, default=0.05, metavar="SECONDS", help="per-delta delay of the slow scenario")
    p.add_argument("--retry-after", type=int, default=2, metavar="SECONDS", help="Retry-After of rate-limited")
    p.add_argument("--first-delta", type=float, default=0.1, metavar="SECONDS",
                   help="paced, concurrency-limited: pause before the first delta (default 0.1)")
    p.add_argument("--token-interval", type=float, default=0.01, metavar="SECONDS",
                   help="paced, concurrency-limited: pause between the next deltas (default 0.01)")
    p.add_argument("--max-concurrent", type=int, default=4, metavar="N",
                   help="concurrency-limited: 429 with Retry-After beyond N chat requests in flight (default 4)")
    p.add_argument("--reasoning-tokens", type=int, default=0, metavar="N",
                   help="paced, concurrency-limited: reasoning deltas before the answer (default 0)")
    p.add_argument("--stall", type=float, default=0.0, metavar="SECONDS",
                   help="paced, concurrency-limited: a pause after half the answer (default 0)")
    p.add_argument("--trailer", type=float, default=0.0, metavar="SECONDS",
                   help="paced, concurrency-limited: a pause before the finish, usage and [DONE] chunks (default 0)")
    p.add_argument("--reuse-port", action="store_true",
                   help="bind with SO_REUSEPORT: several emulator processes share one port (the load probe's)")
    p.add_argument("--allow-non-loopback", action="store_true", help=argparse.SUPPRESS)


def _models(value: str | None) -> list[str] | None:
    if value is None:
        return None
    models = [m.strip() for m in value.split(",") if m.strip()]
    if not models:
        raise UsageError("--models: give at least one model id (comma-separated)")
    return models


def run(args: argparse.Namespace, *, line: Callable[[str], None], emit: Callable[[dict[str, Any]], None],
        info: Callable[[str], None]) -> int:
    """Serve until Ctrl-C/SIGTERM: ``line`` gets the endpoint, ``emit`` the JSON description, ``info`` progress."""
    from hermes_nb.core.endpoint_safety import is_loopback_host

    if not is_loopback_host(args.host) and not args.allow_non_loopback:
        raise UsageError(f"--host {args.host}: the emulator binds loopback only (127.0.0.1, ::1, localhost)")
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port}: must be 0..65535")
    if args.profile == "upstream" and args.scenario in PROXY_SCENARIOS:
        raise UsageError(f"--scenario {args.scenario} is a fault of the proxy; use --profile hermes-agent or seed")
    if args.profile == "minimal" and args.scenario != "ok":
        raise UsageError(f"--scenario {args.scenario}: the minimal profile has one scenario, ok")
    if min(args.delay, args.retry_after, args.first_delta, args.token_interval, args.reasoning_tokens, args.stall,
           args.trailer) < 0:
        raise UsageError("--delay, --retry-after, --first-delta, --token-interval, --reasoning-tokens, --stall and "
                         "--trailer must be >= 0")
    if args.max_concurrent < 1:
        raise UsageError(f"--max-concurrent must be >= 1, got {args.max_concurrent}")
    models = _models(args.models)
    log = logging.getLogger("hermes_nb.emulator")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("hermes-nb emulator: %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
    try:
        asyncio.run(_serve(args, models, line, emit, info))
    except OSError as exc:
        raise ConfigError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from exc
    finally:
        log.removeHandler(handler)
    return 0


async def _serve(args: argparse.Namespace, models: list[str] | None, line: Callable[[str], None],
                 emit: Callable[[dict[str, Any]], None], info: Callable[[str], None]) -> None:
    from aiohttp import web

    from hermes_nb.emulator.app import create_app

    app = create_app(profile=args.profile, scenario=args.scenario, seed=args.seed, models=models,
                     delay_s=args.delay, retry_after=args.retry_after, first_delta_s=args.first_delta,
                     token_interval_s=args.token_interval, max_concurrent=args.max_concurrent, provider=args.provider,
                     reasoning_tokens=args.reasoning_tokens, stall_s=args.stall, trailer_s=args.trailer)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=2.0)
    await runner.setup()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        site = web.TCPSite(runner, host=args.host, port=args.port, reuse_port=args.reuse_port or None)
        await site.start()
        port = int(runner.addresses[0][1])
        netloc = f"[{args.host}]" if ":" in args.host else args.host
        base_url = f"http://{netloc}:{port}"
        endpoint = f"{base_url}/v1"
        line(endpoint)
        emit({"endpoint": endpoint, "base_url": base_url, "port": port, "profile": args.profile,
              "provider": args.provider, "scenario": args.scenario, "seed": args.seed,
              "models": list(models or MODELS_BY_PROVIDER[args.provider])})
        info(f"hermes-nb emulator: {args.profile} profile ({args.provider}), scenario {args.scenario}, "
             f"seed {args.seed}; Ctrl-C to stop")
        await stop.wait()
        info("hermes-nb emulator: stopping")
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        await runner.cleanup()
