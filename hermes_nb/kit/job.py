"""What a job notebook's cells call: ``job = kit.open_job(name, **parameters)``, ``job.check()`` (or ``probe()``,
``run()``), then ``job.finish(result)``. ``hermes-nb smoke`` hands in its ``target`` and ``config`` (the bearer in
``HERMES_NB_AUTH_TOKEN``); run alone, the notebook resolves and identifies them itself."""

import os
import tempfile
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from IPython.display import display

from hermes_nb.core.config import HermesProxyRuntimeConfig
from hermes_nb.core.errors import NotebookFailed
from hermes_nb.core.facts import ADAPTER_CHECK, E2E_SMOKE, ENV_AUTH_TOKEN, ERROR_PREFIX, VERDICTS, WIRE_SPIKE
from hermes_nb.core.model import Shown
from hermes_nb.core.records import StreamTimeline
from hermes_nb.core.redaction import Redactor
from hermes_nb.harness.prepare import prepare_mission
from hermes_nb.harness.run import RunResult, artifact_digests
from hermes_nb.nbrun import JOB_SPECS
from hermes_nb.proxy.check import CheckResult, CheckSpec, check
from hermes_nb.proxy.contracts import apply_contract, load_contract, resolve_contract
from hermes_nb.proxy.probe import probe
from hermes_nb.proxy.report import WireReport
from hermes_nb.receipts.verdict import VERDICT_MIME, operator_action, verdict_summary
from hermes_nb.target import Target, establish
from hermes_nb.views.htmlkit import esc, kv_html

#: the e2e notebook's ad-hoc prompt when it is given neither a mission nor a prompt
SMOKE_PROMPT = "Summarise in one sentence what a smoke test proves."


@dataclass
class Job(Shown):
    """One notebook job: its options, its target (identified once) and its config aimed at that target."""

    name: str
    spec: Any
    target: Target
    config: HermesProxyRuntimeConfig
    #: the config came from the runner, not from the parameters
    given_config: bool = False
    _stack: ExitStack = field(default_factory=ExitStack, repr=False)

    def _repr_text_(self) -> str:
        return (f"Job({self.name}: {self.target.kind} {self.target.endpoint}, provider {self.target.provider}, "
                f"release {self.target.release_label}, model {self.config.model})")

    def check(self) -> CheckResult:
        return check(self.config, spec=self.spec, target=self.target)

    def probe(self) -> WireReport:
        """Every route probed; compared with the spec's contract (the detected provider's)."""
        report = probe(self.config, budget_s=self.spec.budget_s, request_budget_s=self.spec.request_budget_s)
        if self.spec.compare:
            apply_contract(report, load_contract(resolve_contract(self.spec.compare, provider=report.provider)))
        return report

    def run(self) -> RunResult | CheckResult:
        """The mission (or prompt) run as ``hermes-nb run`` runs it, with the model the adapter check resolved: a
        model the proxy does not list is not sent and the check's verdict is the run's (both notebooks agree)."""
        spec = self.spec
        mission = spec.mission or None
        prepared = prepare_mission(mission, prompt=None if mission else (spec.prompt or SMOKE_PROMPT),
                                   root=spec.root, fallback_root=None, manifest=spec.manifest, endpoint=spec.endpoint,
                                   model=spec.model, provider=spec.provider)
        config = self.config if self.given_config else prepared.config
        if config.endpoint != self.target.endpoint:
            config = config.with_endpoint(self.target.endpoint, origin=f"target ({self.target.kind})")
        checked = check(config, spec=CheckSpec(budget_s=min(30.0, config.request_timeout_ms / 1000)),
                        target=self.target)
        if checked.models and checked.model not in checked.models:
            return checked
        config = config.model_copy(update={"model": checked.model or config.model,
                                           "provider": checked.provider or config.provider})
        root = prepared.root or Path(self._stack.enter_context(
            tempfile.TemporaryDirectory(prefix="hermes-nb-run-", ignore_cleanup_errors=True)))
        return prepared.replace(config=config, root=root).run(handle_signals=False)

    def finish(self, result: Any) -> None:
        """The verdict cell: stop what the job started, record the summary, raise unless it passed."""
        if self.name == WIRE_SPIKE:
            summary = wire_summary(result, target=self.target, model=self.config.model, contract=self.spec.compare)
        elif self.name == ADAPTER_CHECK:
            summary = check_summary(result, target=self.target)
        else:
            summary = run_summary(result, target=self.target, config=self.config)
        self.close()
        record_verdict(summary)

    def close(self) -> None:
        self._stack.close()


def open_job(name: str, *, target: dict[str, Any] | Target | None = None, config: dict[str, Any] | None = None,
             environ: dict[str, str] | None = None, **options: Any) -> Job:
    """The job ``name`` with its parameters (see the module docstring)."""
    spec = JOB_SPECS[name].build("notebook", **{k: v for k, v in options.items() if v is not None})
    stack = ExitStack()
    if config is not None:  # the runner's, made whole again with the bearer from HERMES_NB_AUTH_TOKEN
        token = (os.environ if environ is None else environ).get(ENV_AUTH_TOKEN)
        resolved = HermesProxyRuntimeConfig.from_parameter(config, token)
    else:
        resolved = spec.runtime_config(environ=environ)
    if isinstance(target, dict):
        target = Target.from_parameter(target)
    if target is None:
        target, resolved = establish(resolved, stack, scenario=getattr(spec, "scenario", "ok"))
    elif target.endpoint != resolved.endpoint:
        resolved = resolved.with_endpoint(target.endpoint, origin=f"target ({target.kind})")
    return Job(name=name, spec=spec, target=target, config=resolved, given_config=config is not None, _stack=stack)


def verdict_html(summary: Mapping[str, Any]) -> str:
    """The verdict cell's view: stable fields only (no digests, no timings); a blocked job's operator action."""
    keys = ["job", "verdict", "reason", "target", "endpoint", "model"]
    shown = dict(summary)
    if summary.get("verdict") == "blocked":  # an expected outcome: what to do about it, not a traceback
        shown["operator action"] = operator_action(summary)
        keys.append("operator action")
    out = kv_html([(k, shown[k]) for k in keys if k in shown], badges=("verdict",), title="verdict")
    errors = list(summary.get("errors") or [])
    return out + (f"<p><b>errors</b></p><ul>{''.join(f'<li>{esc(e)}</li>' for e in errors)}</ul>" if errors else "")


def record_verdict(summary: Mapping[str, Any]) -> None:
    """Display the verdict output, then raise :class:`NotebookFailed` unless it passed."""
    line = f"verdict: {summary['verdict']} ({summary['reason']})"
    display({"text/plain": line, "text/html": verdict_html(summary)}, raw=True,
            metadata={VERDICT_MIME: dict(summary)})
    if summary["verdict"] != "passed":
        first = (summary.get("errors") or [summary["reason"]])[0]
        raise NotebookFailed(f"{summary['job']} {summary['verdict']}: {first}", notebook=str(summary["job"]))


def wire_summary(report: Any, *, target: Target, model: str, contract: str | None) -> dict[str, Any]:
    """Spike verdict, from proxy-owned facts only: unreachable, refused, rate-limited or upstream down → blocked;
    drift → failed; else passed (what a slow upstream could not answer: not judged)."""
    drift_lines = [str(d) for d in report.drift]
    skipped = list(report.not_judged)
    reasons = {n.reason for n in skipped}
    provider, warnings, hint = report.provider, list(report.warnings), report.action
    if not report.reachable or report.state == "not_local":
        status, reason = "blocked", "unreachable" if not report.reachable else "not_local"
        errors = [f"{ERROR_PREFIX}{report.headline}"]
        warnings = []  # the one line and the one action say it all
    elif drift_lines:
        status, reason = "failed", "drift"
        errors = [f"wire drift from {contract}: {line}" for line in drift_lines]
    elif "rate_limited" in reasons:
        status, reason = "blocked", "rate_limited"
        errors = [f"{ERROR_PREFIX}the upstream answered 429 (rate limited): the wire could not be judged"]
    elif "upstream_down" in reasons:
        first = next(n for n in skipped if n.reason == "upstream_down")
        status, reason = "blocked", "upstream_down"
        errors = [f"{ERROR_PREFIX}the proxy reports its upstream down: {first.detail}"]
    else:
        status, reason, errors, hint = "passed", "matches-contract", [], None
    if skipped and status == "passed":
        warnings.append(f"{len(skipped)} not judged (the upstream's trouble, not the proxy's): "
                        + "; ".join(str(n) for n in skipped[:3]) + (" …" if len(skipped) > 3 else ""))
    return verdict_summary(
        WIRE_SPIKE, status, reason=reason, errors=errors, warnings=warnings, endpoint=target.endpoint, model=model,
        target=target.kind, hermes_version=target.release, provider=provider,
        details={"contract": contract, "state": report.state, "provider": provider, "upstream": report.upstream,
                 "release_source": target.release_source, "matches": list(report.matches),
                 "bearer_required": report.bearer_required, "stream_failure_shape": report.stream_failure_shape,
                 "server": report.server, "drift": drift_lines, "hint": hint,
                 "not_judged": [str(n) for n in skipped], "timeline": report.timelines.get("chat_stream"),
                 "upstream_differences": [str(d) for d in report.upstream_differences]},
    )


def check_summary(result: CheckResult, *, target: Target) -> dict[str, Any]:
    """Adapter-check verdict: ready → passed; locked/unreachable → blocked; misconfigured/error → failed."""
    return verdict_summary(
        ADAPTER_CHECK, result.verdict, reason=str(result.state), errors=list(result.errors),
        warnings=list(result.warnings), endpoint=target.endpoint, model=result.model, target=target.kind,
        hermes_version=target.release, provider=result.provider,
        details={"models": list(result.models), "hint": result.hint, "http_status": result.http_status,
                 "provider": result.provider, "upstream": result.upstream, "model_origin": result.model_origin,
                 "retry_after_s": result.retry_after_s},
    )


def run_summary(result: RunResult | CheckResult, *, target: Target,
                config: HermesProxyRuntimeConfig) -> dict[str, Any]:
    """E2E verdict: the run's status (cancelled counts as failed); a ``CheckResult`` (model not listed, not sent)
    is failed."""
    common: dict[str, Any] = {"endpoint": config.endpoint, "target": target.kind, "hermes_version": target.release,
                              "redactor": Redactor(config.secrets())}
    if isinstance(result, CheckResult):
        provider = result.provider or target.provider or config.provider
        return verdict_summary(
            E2E_SMOKE, "failed", reason="model-not-listed", errors=list(result.errors),
            warnings=list(result.warnings), model=result.model, provider=provider, **common,
            details={"hint": result.hint, "models": list(result.models), "provider": provider,
                     "model_origin": result.model_origin, "not_sent": True})
    doc, exchange, outcome = result.result, result.exchange, result.outcome
    provider = target.provider or config.provider
    timeline = StreamTimeline.from_exchange(exchange).to_dict() if exchange is not None and exchange.streamed else None
    status = str(doc.get("status", "failed"))
    return verdict_summary(
        E2E_SMOKE, status if status in VERDICTS else "failed",
        reason=str(doc.get("reason") or (outcome.reason if outcome is not None else None) or status),
        errors=list(doc.get("errors") or []), warnings=list(doc.get("warnings") or []),
        model=(exchange.model if exchange is not None else None) or config.model, provider=provider,
        artifacts=artifact_digests(result.run_dir), run_dir=str(result.run_dir), **common,
        details={"run_id": result.run_id, "exit_code": result.exit_code,
                 "final_message": outcome.final_message if outcome is not None else None, "usage": doc.get("usage"),
                 "hint": doc.get("hint"), "provider": provider, "timeline": timeline})
