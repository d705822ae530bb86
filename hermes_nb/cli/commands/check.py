"""GET /health (the provider, the release) and <endpoint>/models; report ready / locked / unreachable / slow /
not_local / rate_limited / misconfigured / error.
exit: 0 ready, 1 error, 2 misconfigured, 3 locked, unreachable, slow, not_local or rate_limited."""

from __future__ import annotations

from hermes_nb.cli.output import Output
from hermes_nb.core.facts import exit_code_for
from hermes_nb.proxy.check import CheckResult, CheckSpec, check

HELP = "check that the proxy is reachable, unlocked and lists the model"
SPEC = CheckSpec


def lines(result: CheckResult) -> list[str]:
    """The human report of a check."""
    where = result.endpoint or "(no endpoint)"
    count = f" ({len(result.models)} model{'s' if len(result.models) != 1 else ''})" if result.state == "ready" else ""
    out = [f"[{result.state.upper()}] hermes-proxy adapter at {where}{count}"]
    if result.provider or result.upstream:
        source = ", ".join(x for x in (result.upstream, f"from {result.provider_source}" if result.provider_source
                                       else None) if x)
        out.append(f"  provider: {result.provider or '?'}" + (f" ({source})" if source else ""))
    if result.model:
        origin = f" ({result.model_origin})" if result.model_origin and result.model_origin != "configured" else ""
        out.append(f"  model: {result.model}{origin}")
    out.append(f"  release: {result.release}" + (f" ({result.release_source})" if result.release_source else ""))
    out += [f"  error: {e}" for e in result.errors] + [f"  warning: {w}" for w in result.warnings]
    return out + ([f"  hint: {result.hint}"] if result.hint else [])


def handle(spec: CheckSpec, out: Output) -> int:
    result = check(spec=spec)
    for line in lines(result):
        out.line(line)
    out.emit(result.model_dump(mode="json"))
    return exit_code_for(result.state)
