"""Flags shared by the commands that need a runtime config, and the one call that resolves it."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hermes_nb.core.config import HermesProxyRuntimeConfig
from hermes_nb.core.facts import HARNESS_DIR, MANIFEST_RELPATH

__all__ = ["add_config_flags", "root_of", "config_from_args"]


def add_config_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--root", metavar="DIR", help=f"project root holding {HARNESS_DIR}/ (default: current directory)")
    p.add_argument("--manifest", metavar="PATH",
                   help=f"adapter manifest (default: <root>/{MANIFEST_RELPATH.as_posix()} if present)")
    p.add_argument("--endpoint", metavar="URL", help="proxy endpoint including /v1 (wins over everything)")
    p.add_argument("--model", metavar="M", help="model id sent verbatim (wins over everything)")
    p.add_argument("--runtime-config-overrides", metavar="JSON",
                   help="a JSON object merged over the manifest, mission and environment")


def root_of(args: argparse.Namespace) -> Path:
    return Path(args.root) if getattr(args, "root", None) else Path.cwd()


def config_from_args(args: argparse.Namespace, *, mission_overrides: Mapping[str, Any] | None = None
                     ) -> HermesProxyRuntimeConfig:
    """:func:`hermes_nb.core.resolve.resolve_runtime_config` with this command's flags."""
    from hermes_nb.core.resolve import resolve_runtime_config

    return resolve_runtime_config(
        root=root_of(args), manifest=getattr(args, "manifest", None), mission_overrides=mission_overrides,
        overrides=getattr(args, "runtime_config_overrides", None),
        endpoint=getattr(args, "endpoint", None), model=getattr(args, "model", None))
