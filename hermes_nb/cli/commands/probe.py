"""Probe every route, the auth handoff, the admission layer (a foreign Host, an Origin, a cross-site fetch) and the
stream-failure shape of a Hermes proxy, and name the recorded releases it behaves as; with --compare, print each
difference from a recorded contract as `field: expected → observed`, against the detected provider's contract. Only
fields the proxy owns drift; what its upstream answers differently is information, and what it could not answer (too
slow, down, 429) is not judged.
exit: 0 no drift, 1 drift, 2 usage (bad flags, unknown contract, invalid URL), 3 unreachable or refused by the
proxy's local-only guard (one line and the action, no drift) or an upstream that is down or rate-limited (not
judged; a later retry)."""

from pathlib import Path
from typing import Any

from hermes_nb.cli.app import Output
from hermes_nb.core.errors import UsageError
from hermes_nb.core.io import write_atomic
from hermes_nb.core.providers import start_hint
from hermes_nb.proxy import contracts
from hermes_nb.proxy.probe import ProbeSpec, probe
from hermes_nb.proxy.report import ROUTES, WireReport
from hermes_nb.target import release_of

HELP = "probe a proxy's wire format; compare with a contract"
SPEC = ProbeSpec


def handle(spec: ProbeSpec, out: Output) -> int:
    for flag, target in (("--out", spec.out), ("--write-contract", spec.write_contract)):
        if target and not Path(target).resolve().parent.is_dir():
            raise UsageError(f"{flag} {target}: its directory does not exist")
    if spec.compare:
        contracts.resolve_contract(spec.compare)  # an unknown contract is a usage error before anything is sent
    config = spec.runtime_config()
    release = release_of(spec.hermes_bin) if spec.hermes_bin else None
    report = probe(config, budget_s=spec.budget_s, request_budget_s=spec.request_budget_s,
                   executable=release[2] if release else "hermes")
    report.release = f"{release[0]} ({release[1]})" if release else None
    compared = None
    if spec.compare:
        path = contracts.resolve_contract(spec.compare, provider=report.provider)
        compared = spec.compare if path.stem == spec.compare or path.name == spec.compare else \
            f"{spec.compare} ({path.name}, provider {report.provider})"
        contracts.apply_contract(report, contracts.load_contract(path), state=spec.state)
    if spec.out:  # whole or not at all: ArtifactError "cannot write <path>: <why>"
        write_atomic(spec.out, report.model_dump_json(indent=2) + "\n")
    if spec.write_contract:
        doc = contracts.contract_document({report.state: report}, target=config.endpoint)
        write_atomic(spec.write_contract, contracts.dumps_contract(doc))
    for line in render(report, compared=compared):
        out.line(line)
    out.emit(report.summary())
    if not report.reachable or report.state == "not_local":
        return 3
    if report.drift:
        return 1
    return 3 if {n.reason for n in report.not_judged} & {"rate_limited", "upstream_down"} else 0


#: `` (stream)`` / `` (1.5 MB body)``: tells the three chat rows apart in the table
_VARIANTS = {spec.name: f" ({spec.variant})" for spec in ROUTES if spec.variant}


def _cell(value: Any) -> str:
    return "-" if value is None else str(value)


def render(report: WireReport, *, compared: str | None = None) -> list[str]:
    """The human route table, auth handoff, headers and drift lines; an unreachable proxy is one line + the action."""
    if not report.reachable:
        why = report.routes[0].transport_error if report.routes else None
        return [f"endpoint {report.endpoint} unreachable ({why or 'no answer'}): nothing judged",
                f"action: {start_hint(report.provider)}"]
    if report.state == "not_local":
        refused = next((r for r in report.routes if r.error_type), None)
        return [f"endpoint {report.endpoint} refused by the proxy's local-only guard "
                f"(403 {refused.error_type if refused else 'host_not_allowed'}): nothing judged",
                f"action: {report.action}"]
    provider = (f"{report.provider} ({report.upstream or report.provider_source})" if report.provider
                else _cell(report.upstream))
    lines = [f"endpoint {report.endpoint}  provider {provider}  state {report.state}  server {_cell(report.server)}"]
    lines += [f"release: {report.release}"] if report.release else []
    lines.append(f"behaves as: {', '.join(report.matches) or 'no recorded release'}")
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
    admission = "; ".join(f"{c.header} → {_cell(c.status)} {c.error_type or c.outcome}" for c in report.admission)
    lines.append(f"admission (GET /health): {admission or '-'}")
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
            lines.append(f"differences the proxy does not own (information, not drift): "
                         f"{len(report.upstream_differences)}")
            lines += [f"  {d} ({d.owner})" for d in report.upstream_differences]
    return lines
