"""``hermes-nb probe``: the seed's wire-format spike against one endpoint, and drift from a contract.

The runtime config (endpoint, model, bearer, extra headers) comes from
:func:`hermes_nb.cli.options.config_from_args`, like every command's: manifest < ``HERMES_NB_*`` <
``--runtime-config-overrides`` < ``--endpoint``/``--model``.

Exit codes: 0 the probe ran (and, with ``--compare``, found no drift on a proxy-owned field);
1 drift found (differences on upstream-owned fields are listed, never counted);
2 usage (bad flags, unknown or invalid contract, invalid URL);
3 the endpoint is unreachable (no route got an HTTP answer: one line and the action, no drift), or, with
``--compare``, its upstream answered 429 or the proxy reported it down (not judged; a later retry).

``--compare hermes-agent-<v>`` compares with the contract of the provider the probe detected
(``hermes-agent-<v>-xai.json`` for an xai proxy).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from hermes_nb.cli.options import add_config_flags, config_from_args
from hermes_nb.cli.output import Output
from hermes_nb.core.errors import ArtifactError, UsageError
from hermes_nb.core.providers import PROXY_PROVIDERS, start_hint
from hermes_nb.proxy.contracts import (
    apply_contract,
    contract_document,
    dumps_contract,
    load_contract,
    resolve_contract,
)
from hermes_nb.proxy.probe import ROUTES, probe
from hermes_nb.proxy.report import WireReport


def register(sub: argparse._SubParsersAction, parent: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "probe", parents=[parent], help="probe a proxy's wire format; compare with a contract",
        description="Probe every route, the auth handoff and the stream-failure shape of a Hermes proxy.",
    )
    add_config_flags(p)
    p.add_argument("--compare", metavar="CONTRACT",
                   help="`seed`, a name in docs/wire-contract (hermes-agent-0.19.0) or a contract file")
    p.add_argument("--state", choices=("stale", "live"),
                   help="contract section to compare with (default: the state the probe detects)")
    p.add_argument("--out", metavar="FILE", help="also write the report (JSON) to FILE")
    p.add_argument("--write-contract", metavar="FILE",
                   help="write the observed contract (this probe as the only state section) to FILE")
    p.add_argument("--deadline", type=float, default=30.0, metavar="S", help="overall probe deadline (default 30)")
    p.add_argument("--provider", choices=PROXY_PROVIDERS,
                   help="the provider you expect the proxy to front (default: what it says; a mismatch warns)")
    p.set_defaults(handler=handle)


def handle(args: argparse.Namespace, out: Output) -> int:
    if not args.deadline > 0:
        raise UsageError(f"--deadline must be > 0 seconds, got {args.deadline:g}")
    for flag, target in (("--out", args.out), ("--write-contract", args.write_contract)):
        if target and not Path(target).resolve().parent.is_dir():
            raise UsageError(f"{flag} {target}: its directory does not exist")
    if args.compare:
        resolve_contract(args.compare)  # an unknown contract is a usage error before anything is sent
    config = config_from_args(args)
    report = probe(config, deadline_s=args.deadline, provider=args.provider)
    compared = None
    if args.compare:
        path = resolve_contract(args.compare, provider=report.provider)
        compared = args.compare if path.stem == args.compare or path.name == args.compare else \
            f"{args.compare} ({path.stem}, provider {report.provider})"
        apply_contract(report, load_contract(path), state=args.state)
    if args.out:
        _write(args.out, report.model_dump_json(indent=2) + "\n")
    if args.write_contract:
        doc = contract_document({report.state: report}, target=config.endpoint)
        _write(args.write_contract, dumps_contract(doc))
    for line in render(report, compared=compared):
        out.line(line)
    out.emit(report.summary())
    if not report.reachable:
        return 3
    if report.drift:
        return 1
    return 3 if {n.reason for n in report.not_judged} & {"rate_limited", "upstream_down"} else 0


#: `` (stream)`` / `` (1.5 MB body)``: tells the three chat rows apart in the table
_VARIANTS = {spec.name: f" ({spec.variant})" for spec in ROUTES if spec.variant}


def _write(path: str, text: str) -> None:
    try:
        Path(path).write_text(text, "utf-8")
    except OSError as exc:
        raise ArtifactError(f"cannot write {path}: {exc.strerror or exc}") from exc


def _cell(value: Any) -> str:
    return "-" if value is None else str(value)


def render(report: WireReport, *, compared: str | None = None) -> list[str]:
    """The human route table, auth handoff, headers and drift lines; an unreachable proxy is one line + the action."""
    if not report.reachable:
        why = report.routes[0].transport_error if report.routes else None
        return [f"endpoint {report.endpoint} unreachable ({why or 'no answer'}): nothing judged",
                f"action: {start_hint(report.provider)}"]
    provider = (f"{report.provider} ({report.upstream or report.provider_source})" if report.provider
                else _cell(report.upstream))
    lines = [f"endpoint {report.endpoint}  provider {provider}  state {report.state}  server {_cell(report.server)}"]
    rows = [("METHOD", "PATH", "STATUS", "CONTENT-TYPE", "ERROR", "OUTCOME", "ANSWERED-BY")]
    for r in report.routes:
        err = r.error_type or r.body_excerpt or r.transport_error
        rows.append((r.method, r.path + _VARIANTS.get(r.name, ""), _cell(r.status), _cell(r.content_type), _cell(err),
                     r.outcome, _cell(r.answered_by)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    auth = "; ".join(f"{c.header} → {_cell(c.status)} {c.error_type or c.outcome}" for c in report.auth)
    lines.append(f"auth handoff (GET /v1/models): {auth or '-'}")
    required = {True: "yes", False: "no", None: "unknown"}[report.bearer_required]
    lines.append(f"bearer required: {required}   stream failure shape: {report.stream_failure_shape}")
    lines.append(f"CORS headers: {', '.join(report.cors_headers) or 'none'}   "
                 f"rate-limit headers: {', '.join(report.rate_limit_headers) or 'none'}")
    lines += [f"warning: {w}" for w in report.warnings]
    if compared:
        lines.append(f"drift vs {compared}: {len(report.drift) or 'none'}")
        lines += [f"  {d}" for d in report.drift]
        if report.not_judged:
            lines.append(f"not judged (the upstream's trouble, not the proxy's): {len(report.not_judged)}")
            lines += [f"  {n}" for n in report.not_judged]
        if report.upstream_differences:
            lines.append(f"upstream differences (information, not drift): {len(report.upstream_differences)}")
            lines += [f"  {d}" for d in report.upstream_differences]
    return lines
