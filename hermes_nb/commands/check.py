"""``hermes-nb check``: is the configured proxy ready? (one :func:`hermes_nb.check.adapter_check` call)

Also home of :func:`resolve_config`, the one place CLI flags become a runtime
config. Layers, lowest first (shallow merge, then strict validation):

1. the manifest's ``config.runtime_config`` (``--manifest`` or
   ``<root>/.harness/adapters/hermes-proxy.yaml`` when present), else the
   defaults with model ``nousresearch/hermes-4-405b`` (the ``adapter add`` template's);
2. the mission's ``runtime_config_overrides`` (``run`` only);
3. ``HERMES_NB_ENDPOINT`` / ``HERMES_NB_MODEL`` / ``HERMES_NB_AUTH_TOKEN`` / ``HERMES_NB_PROVIDER``;
4. ``--runtime-config-overrides JSON`` (an object);
5. ``--endpoint`` / ``--model``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Mapping

from ..check import CheckResult, adapter_check, check_manifest_path
from ..config import (
    DEFAULT_MODEL,
    HermesProxyRuntimeConfig,
    env_overrides,
    load_manifest,
    merge_runtime_config,
    parse_overrides_json,
)
from ..errors import ConfigError

__all__ = ["register", "handle", "add_config_flags", "resolve_config", "root_of"]

STATE_EXIT = {"ready": 0, "error": 1, "misconfigured": 2, "locked": 3, "unreachable": 3}


def add_config_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--root", metavar="DIR", help="project root holding .harness/ (default: current directory)")
    p.add_argument("--manifest", metavar="PATH",
                   help="adapter manifest (default: <root>/.harness/adapters/hermes-proxy.yaml if present)")
    p.add_argument("--endpoint", metavar="URL", help="proxy endpoint including /v1 (wins over everything)")
    p.add_argument("--model", metavar="M", help="model id sent verbatim (wins over everything)")
    p.add_argument("--runtime-config-overrides", metavar="JSON",
                   help="a JSON object merged over the manifest, mission and environment")


def root_of(args: argparse.Namespace) -> Path:
    return Path(args.root) if getattr(args, "root", None) else Path.cwd()


def resolve_config(args: argparse.Namespace, *, mission_overrides: Mapping[str, Any] | None = None,
                   where: str = "runtime_config") -> HermesProxyRuntimeConfig:
    """Flags + manifest + environment -> one validated config (see the module docstring)."""
    manifest_path = check_manifest_path(root_of(args), getattr(args, "manifest", None))
    base: dict[str, Any] = {"model": DEFAULT_MODEL}
    if manifest_path is not None:
        manifest = load_manifest(manifest_path)
        if manifest.runtime != "hermes-proxy":
            raise ConfigError(f"{manifest_path}: runtime is {manifest.runtime!r}, expected 'hermes-proxy'")
        base.update(manifest.config.runtime_config if manifest.config else {})
    layers: list[Mapping[str, Any] | None] = [mission_overrides, env_overrides()]
    if getattr(args, "runtime_config_overrides", None) is not None:
        layers.append(parse_overrides_json(args.runtime_config_overrides))
    flags = {k: v for k in ("endpoint", "model") if (v := getattr(args, k, None)) is not None}
    layers.append(flags)
    return merge_runtime_config(base, *layers, where=where)


def register(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "check", parents=[parent], help="check that the proxy is reachable, unlocked and lists the model",
        description="GET <endpoint>/models and report ready / locked / unreachable / misconfigured / error.\n"
                    "exit: 0 ready, 1 error, 2 misconfigured, 3 locked or unreachable.",
    )
    add_config_flags(p)
    p.add_argument("--deadline", type=float, default=5.0, metavar="S",
                   help="one deadline in seconds for headers and body (default 5)")
    p.add_argument("--hermes-bin", metavar="PATH", help="the hermes executable whose version to report")
    p.set_defaults(handler=handle)


def _human(result: CheckResult, out: Any) -> None:
    where = result.endpoint or "(no endpoint)"
    if result.state == "ready":
        count = f" ({len(result.models)} model{'s' if len(result.models) != 1 else ''})"
        out.line(f"[READY] hermes-proxy adapter at {where}{count}")
    else:
        out.line(f"[{result.state.upper()}] hermes-proxy adapter at {where}")
    for error in result.errors:
        out.line(f"  error: {error}")
    for warning in result.warnings:
        out.line(f"  warning: {warning}")
    if result.hint:
        out.line(f"  hint: {result.hint}")
    if result.hermes_version:
        out.line(f"  hermes: {result.hermes_version} ({result.hermes_bin})")


def handle(args: argparse.Namespace, out: Any) -> int:
    if args.deadline <= 0:
        raise ConfigError("--deadline must be > 0")
    try:
        config: Any = resolve_config(args)
    except ConfigError as exc:
        result = CheckResult.misconfigured(exc)
    else:
        result = adapter_check(config, deadline_s=args.deadline, hermes_bin=args.hermes_bin)
    _human(result, out)
    out.emit(result.model_dump(mode="json"))
    return STATE_EXIT[result.state]
