"""What a job notebook's cells call: ``job = kit.open_job(name, **parameters)``, then ``job.check()`` (or
``probe()``, ``run()``), then ``job.finish(result)`` (the verdict cell). ``hermes-nb smoke`` hands the target it
identified and the config it resolved in as ``target`` and ``config`` (the bearer in ``HERMES_NB_AUTH_TOKEN``);
run alone, the notebook resolves its config and identifies its target itself (an embedded emulator when no
endpoint is configured anywhere).
"""

from __future__ import annotations

import os
import tempfile
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes_nb.core.config import HermesProxyRuntimeConfig
from hermes_nb.core.facts import ADAPTER_CHECK, ENV_AUTH_TOKEN, WIRE_SPIKE
from hermes_nb.core.model import Shown
from hermes_nb.harness.prepare import prepare_mission
from hermes_nb.harness.results import RunResult
from hermes_nb.kit.verdicts import check_summary, record_verdict, run_summary, wire_summary
from hermes_nb.nbrun.templates import JOB_SPECS
from hermes_nb.proxy.check import CheckResult, CheckSpec, check
from hermes_nb.proxy.contracts import apply_contract, load_contract, resolve_contract
from hermes_nb.proxy.probe import probe
from hermes_nb.proxy.report import WireReport
from hermes_nb.target import Target, establish

__all__ = ["Job", "open_job", "notebook_config", "SMOKE_PROMPT"]

#: the e2e notebook's ad-hoc prompt when it is given neither a mission nor a prompt
SMOKE_PROMPT = "Summarise in one sentence what a smoke test proves."


def notebook_config(config: dict[str, Any], environ: dict[str, str] | None = None) -> HermesProxyRuntimeConfig:
    """The config the runner resolved, made whole again with the bearer from ``HERMES_NB_AUTH_TOKEN``."""
    env = os.environ if environ is None else environ
    return HermesProxyRuntimeConfig.from_parameter(config, env.get(ENV_AUTH_TOKEN))


@dataclass
class Job(Shown):
    """One notebook job: its options, its target (identified once) and its config aimed at that target."""

    name: str
    spec: Any
    target: Target
    config: HermesProxyRuntimeConfig
    #: the config came from the runner (resolved once there), not from the parameters
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

    def summary(self, result: Any) -> dict[str, Any]:
        """The verdict summary of this job's result (what the receipt records)."""
        if self.name == WIRE_SPIKE:
            return wire_summary(result, target=self.target, model=self.config.model, contract=self.spec.compare)
        if self.name == ADAPTER_CHECK:
            return check_summary(result, target=self.target)
        return run_summary(result, target=self.target, config=self.config)

    def finish(self, result: Any) -> None:
        """The verdict cell: stop what the job started, record the summary, raise unless it passed."""
        summary = self.summary(result)
        self.close()
        record_verdict(summary)

    def close(self) -> None:
        self._stack.close()


def open_job(name: str, *, target: dict[str, Any] | Target | None = None, config: dict[str, Any] | None = None,
             environ: dict[str, str] | None = None, **options: Any) -> Job:
    """The job ``name`` with its parameters (see the module docstring)."""
    spec = JOB_SPECS[name].build("notebook", **{k: v for k, v in options.items() if v is not None})
    stack = ExitStack()
    resolved = notebook_config(config, environ) if config is not None else spec.runtime_config(environ=environ)
    if isinstance(target, dict):
        target = Target.from_parameter(target)
    if target is None:
        target, resolved = establish(resolved, stack, scenario=getattr(spec, "scenario", "ok"))
    elif target.endpoint != resolved.endpoint:
        resolved = resolved.with_endpoint(target.endpoint, origin=f"target ({target.kind})")
    return Job(name=name, spec=spec, target=target, config=resolved, given_config=config is not None, _stack=stack)
