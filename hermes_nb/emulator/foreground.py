"""The emulator in the foreground (``hermes-nb emulator``, ``python -m hermes_nb.emulator``).

The first stdout line is the endpoint (``http://127.0.0.1:<port>/v1``), flushed at once
(with ``--json``: one JSON object describing the server instead). One log line per
request goes to stderr. Ctrl-C or SIGTERM stops it cleanly with exit code 0.
Both entry points share :class:`EmulatorSpec` and :func:`run`; this module
never imports the CLI.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from collections.abc import Callable
from typing import Annotated, Any, Literal

from aiohttp import web
from pydantic import Field, model_validator

from hermes_nb.core.config import Provider
from hermes_nb.core.errors import ConfigError
from hermes_nb.core.facts import is_loopback_host
from hermes_nb.core.spec import CommaList, Spec, conflict
from hermes_nb.emulator.app import create_app
from hermes_nb.emulator.content import MODELS_BY_PROVIDER
from hermes_nb.emulator.scenarios import check_profile

__all__ = ["DEFAULT_PORT", "EmulatorSpec", "run"]

DEFAULT_PORT = 8645
Profile = Literal["hermes-agent", "seed", "upstream", "minimal"]


class EmulatorSpec(Spec):
    """The emulator's options (``hermes-nb emulator``, ``python -m hermes_nb.emulator``)."""

    host: str = Field("127.0.0.1", description="bind address (loopback only)")
    port: int = Field(DEFAULT_PORT, ge=0, le=65535, description="bind port, 0 = any free port")
    profile: Profile = Field("hermes-agent", description="what to emulate")
    scenario: str = Field("ok", description="upstream behaviour; upstream-unreachable/-timeout: the proxy's own "
                                            "502/504 (see docs/emulator.md)")
    provider: Provider = Field("nous", description="what the proxy profiles front: its /health name, forwarded "
                                                   "paths (xai adds /v1/responses) and texts")
    seed: int = Field(0, description="seed of the deterministic ids and texts")
    models: Annotated[list[str] | None, CommaList] = Field(None, description="model ids listed by /v1/models "
                                                                             "(default: the provider's)")
    delay_s: float = Field(0.05, ge=0, description="per-delta pause of the slow scenario")
    retry_after_s: int = Field(2, ge=0, description="Retry-After of rate-limited")
    first_delta_s: float = Field(0.1, ge=0, description="paced, concurrency-limited: pause before the first delta")
    token_interval_s: float = Field(0.01, ge=0, description="paced, concurrency-limited: pause between the next "
                                                            "deltas")
    local_only: bool = Field(False, description="hermes-agent 0.22's guard before every route: 403 for a foreign "
                                                "Host (127.1), an Origin or a cross-site Sec-Fetch-Site")
    max_concurrent: int = Field(4, ge=1, description="concurrency-limited: 429 with Retry-After beyond N chat "
                                                     "requests in flight")
    reasoning_tokens: int = Field(0, ge=0, description="paced, concurrency-limited: reasoning deltas before the answer")
    stall_s: float = Field(0.0, ge=0, description="paced, concurrency-limited: a pause after half the answer")
    trailer_s: float = Field(0.0, ge=0, description="paced, concurrency-limited: a pause before the finish, usage "
                                                    "and [DONE] chunks")
    reuse_port: bool = Field(False, description="bind with SO_REUSEPORT: several emulator processes share one port "
                                                "(the load probe's)")

    @model_validator(mode="after")
    def _known(self) -> EmulatorSpec:
        if not is_loopback_host(self.host):
            raise conflict("host", why="is loopback only (127.0.0.1, ::1, localhost): the emulator is never exposed")
        if self.models is not None and not self.models:
            raise conflict("models", why="must name at least one model id (comma-separated)")
        try:
            check_profile(self.profile, self.scenario, self.provider)
        except ValueError as exc:
            raise conflict("profile", "scenario", why=f"do not fit: {exc}") from None
        return self


def run(spec: EmulatorSpec, *, line: Callable[[str], None], emit: Callable[[dict[str, Any]], None],
        info: Callable[[str], None]) -> int:
    """Serve until Ctrl-C/SIGTERM: ``line`` gets the endpoint, ``emit`` the JSON description, ``info`` progress."""
    log = logging.getLogger("hermes_nb.emulator")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("hermes-nb emulator: %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
    try:
        asyncio.run(_serve(spec, line, emit, info))
    except OSError as exc:
        raise ConfigError(f"cannot listen on {spec.host}:{spec.port}: {exc.strerror or exc}") from exc
    finally:
        log.removeHandler(handler)
    return 0


async def _serve(args: EmulatorSpec, line: Callable[[str], None], emit: Callable[[dict[str, Any]], None],
                 info: Callable[[str], None]) -> None:
    models = args.models or None
    app = create_app(profile=args.profile, scenario=args.scenario, seed=args.seed, models=models,
                     delay_s=args.delay_s, retry_after=args.retry_after_s, first_delta_s=args.first_delta_s,
                     token_interval_s=args.token_interval_s, max_concurrent=args.max_concurrent,
                     provider=args.provider, reasoning_tokens=args.reasoning_tokens, stall_s=args.stall_s,
                     trailer_s=args.trailer_s, local_only=args.local_only)
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
