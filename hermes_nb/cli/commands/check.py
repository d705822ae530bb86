"""GET /health (the provider, the release) and <endpoint>/models; report ready / locked / unreachable / slow /
not_local / rate_limited / misconfigured / error.
exit: 0 ready, 1 error, 2 misconfigured, 3 locked, unreachable, slow, not_local or rate_limited."""

from hermes_nb.cli.app import Output
from hermes_nb.core.facts import exit_code_for
from hermes_nb.proxy.check import CheckSpec, check

HELP = "check that the proxy is reachable, unlocked and lists the model"
SPEC = CheckSpec


def handle(spec: CheckSpec, out: Output) -> int:
    r = check(spec=spec)
    count = f" ({len(r.models)} model{'s' if len(r.models) != 1 else ''})" if r.state == "ready" else ""
    out.line(f"[{r.state.upper()}] hermes-proxy adapter at {r.endpoint or '(no endpoint)'}{count}")
    if r.provider or r.upstream:
        source = ", ".join(x for x in (r.upstream, f"from {r.provider_source}" if r.provider_source else None) if x)
        out.line(f"  provider: {r.provider or '?'}" + (f" ({source})" if source else ""))
    if r.model:
        out.line(f"  model: {r.model}" + (f" ({r.model_origin})" if r.model_origin not in (None, "configured") else ""))
    out.line(f"  release: {r.release}" + (f" ({r.release_source})" if r.release_source else ""))
    for line in [f"  error: {e}" for e in r.errors] + [f"  warning: {w}" for w in r.warnings]:
        out.line(line)
    if r.hint:
        out.line(f"  hint: {r.hint}")
    out.emit(r.model_dump(mode="json"))
    return exit_code_for(r.state)
