"""``hermes-nb check``: is the configured proxy ready? (one :func:`hermes_nb.proxy.check.adapter_check` call)

The runtime config comes from :func:`hermes_nb.cli.options.config_from_args`
(manifest < ``HERMES_NB_*`` < ``--runtime-config-overrides`` < ``--endpoint``/``--model``).
"""

from __future__ import annotations

import argparse
from typing import Any

from hermes_nb.cli.options import add_config_flags, config_from_args
from hermes_nb.cli.output import Output
from hermes_nb.core.errors import ConfigError
from hermes_nb.core.facts import exit_code_for
from hermes_nb.proxy.check import CheckResult, adapter_check

__all__ = ["register", "handle"]


def register(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "check", parents=[parent], help="check that the proxy is reachable, unlocked and lists the model",
        description="GET /health (the provider) and <endpoint>/models; report ready / locked / unreachable / "
                    "rate_limited / misconfigured / error.\n"
                    "exit: 0 ready, 1 error, 2 misconfigured, 3 locked, unreachable or rate_limited.",
    )
    add_config_flags(p)
    p.add_argument("--deadline", type=float, default=5.0, metavar="S",
                   help="one deadline in seconds for headers and body (default 5)")
    p.add_argument("--hermes-bin", metavar="PATH", help="the hermes executable whose version to report")
    p.set_defaults(handler=handle)


def _human(result: CheckResult, out: Output) -> None:
    where = result.endpoint or "(no endpoint)"
    if result.state == "ready":
        count = f" ({len(result.models)} model{'s' if len(result.models) != 1 else ''})"
        out.line(f"[READY] hermes-proxy adapter at {where}{count}")
    else:
        out.line(f"[{result.state.upper()}] hermes-proxy adapter at {where}")
    if result.provider or result.upstream:
        source = ", ".join(x for x in (result.upstream, f"from {result.provider_source}" if result.provider_source
                                       else None) if x)
        out.line(f"  provider: {result.provider or '?'}" + (f" ({source})" if source else ""))
    if result.model:
        origin = f" ({result.model_origin})" if result.model_origin and result.model_origin != "configured" else ""
        out.line(f"  model: {result.model}{origin}")
    for error in result.errors:
        out.line(f"  error: {error}")
    for warning in result.warnings:
        out.line(f"  warning: {warning}")
    if result.hint:
        out.line(f"  hint: {result.hint}")
    if result.hermes_version:
        out.line(f"  hermes: {result.hermes_version} ({result.hermes_bin})")


def handle(args: argparse.Namespace, out: Output) -> int:
    if args.deadline <= 0:
        raise ConfigError("--deadline must be > 0")
    try:
        config: Any = config_from_args(args)
    except ConfigError as exc:
        result = CheckResult.misconfigured(exc)
    else:
        result = adapter_check(config, deadline_s=args.deadline, hermes_bin=args.hermes_bin)
    _human(result, out)
    out.emit(result.model_dump(mode="json"))
    return exit_code_for(result.state)
