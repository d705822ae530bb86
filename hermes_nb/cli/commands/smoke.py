"""``hermes-nb smoke``: run the three notebooks headlessly and keep the receipts.

Target: the embedded emulator (default; each notebook starts its own), a live
proxy (``--endpoint``, else ``HERMES_NB_ENDPOINT``; an endpoint that answers from
hermes_nb's emulator gives emulator receipts, see
:func:`hermes_nb.proxy.identity.detect_emulator`) or the real proxy rig
(``--rig stale|live``). Receipts go to ``--out`` (default
``runbooks/receipts/<target kind>/``; emulator and rig receipts are
git-ignored, live ones are meant to be committed).

Exit: 0 all passed, 1 any failed, 3 any blocked (none failed), 2 usage.
"""

from __future__ import annotations

import argparse
import logging
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from hermes_nb.core.errors import ConfigError, UsageError
from hermes_nb.core.facts import NOTEBOOKS, RECEIPTS_RELPATH, exit_code_for

DEFAULT_TIMEOUT_S = 120.0


def register(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "smoke", parents=[parent], help="run the notebooks headlessly into receipt notebooks",
        description="Execute wire_format_spike, adapter_check and e2e_smoke concurrently through papermill "
                    "(fresh kernel each) and write receipts: <out>/<UTC date>/<run id>/<notebook>.ipynb + .html "
                    "+ .receipt.json, and <out>/index.json + README.md.",
    )
    target = p.add_mutually_exclusive_group()
    target.add_argument("--endpoint", metavar="URL",
                        help="a live proxy (http://127.0.0.1:8645/v1); default: $HERMES_NB_ENDPOINT, else the emulator")
    target.add_argument("--rig", choices=("stale", "live"), help="start the real proxy rig in this auth state")
    p.add_argument("--upstream", metavar="emulator|minimal|CMD",
                   help="with --rig live: what answers behind the proxy (default emulator; see `hermes-nb rig`)")
    p.add_argument("--model", metavar="M", help="model id (default: $HERMES_NB_MODEL, else the notebooks' default)")
    p.add_argument("--out", metavar="DIR", help=f"receipts directory (default: {RECEIPTS_RELPATH}/<target kind>)")
    p.add_argument("--only", metavar="NAME", action="append", choices=NOTEBOOKS,
                   help="run only this notebook (repeatable)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="S",
                   help=f"execution timeout per cell, seconds (default {DEFAULT_TIMEOUT_S:g})")
    p.add_argument("--no-html", action="store_true", help="skip the HTML renders")
    p.set_defaults(handler=handle)


def _live_hermes_version(endpoint: str) -> str:
    """The live proxy's hermes-agent version: its ``/health``, else the local `hermes`, else "unknown"."""
    from hermes_nb.proxy.identity import hermes_agent_version

    return hermes_agent_version(endpoint)[0]


def handle(args: argparse.Namespace, out: Any) -> int:
    from hermes_nb.core.resolve import resolve_runtime_config
    from hermes_nb.nbrun.smoke import run_smoke
    from hermes_nb.nbrun.smoke_target import SmokeTarget, confirm_target

    if args.timeout <= 0:
        raise UsageError(f"--timeout must be > 0, got {args.timeout:g}")
    if args.upstream is not None and args.rig != "live":
        raise UsageError("--upstream needs --rig live (it chooses what answers behind the rig's proxy)")
    if args.model is not None and not args.model.strip():
        raise UsageError("--model must not be empty")
    try:
        config = resolve_runtime_config(endpoint=args.endpoint, model=args.model)
    except ConfigError as exc:
        raise UsageError(str(exc).replace("runtime_config: endpoint: ", "--endpoint: ")) from None
    # papermill/nbclient log cell errors and timeouts themselves; our progress line says the same once
    for name in ("papermill", "nbclient", "traitlets"):
        logging.getLogger(name).setLevel(logging.CRITICAL)
    secrets = config.secrets()
    model = config.model if config.origin("model") != "default" else None
    with ExitStack() as stack:
        if args.rig:
            from hermes_nb.proxy.rig import real_proxy

            out.info(f"starting the real proxy rig ({args.rig})")
            rig = stack.enter_context(real_proxy(args.rig, upstream=args.upstream or "emulator"))
            target = SmokeTarget("rig", rig.endpoint, model, hermes_version=rig.hermes_version,
                                 secrets=secrets + rig.redactor.secrets)
        elif config.origin("endpoint") != "default":
            target = confirm_target(SmokeTarget("live", config.endpoint, model, secrets=secrets,
                                                endpoint_origin=config.origin("endpoint")))
            if target.kind == "live":  # else: an emulator behind the endpoint (run_smoke says so)
                target.hermes_version = _live_hermes_version(config.endpoint)
        else:
            target = SmokeTarget("emulator", None, model, secrets=secrets)
        out_dir = Path(args.out) if args.out else RECEIPTS_RELPATH / target.kind
        say = None if out.json_mode else out.info
        result = run_smoke(target, out_dir=out_dir, only=args.only, timeout_s=args.timeout,
                           html=not args.no_html, progress=say, confirm=False)
    for r in result.runs:
        out.line(f"[{r.verdict.upper()}] {r.name}: {r.reason}" + (f"  {r.receipt_path}" if r.receipt_path else ""))
        details = (r.summary or {}).get("details") or {}
        out_lines = [f"  drift: {line}" for line in details.get("drift") or []]
        if details.get("upstream_differences"):
            out_lines.append(f"  upstream differences (information): {len(details['upstream_differences'])}")
        for line in out_lines:
            out.line(line)
    out.line(f"smoke {result.verdict} in {result.duration_s:.2f} s; receipts in {result.out_dir} (run {result.run_id})")
    out.emit(result.to_dict())
    return exit_code_for(result.verdict)
