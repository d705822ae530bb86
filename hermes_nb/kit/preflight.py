"""The e2e notebook's model preflight: the adapter check's own answer, so both notebooks send one model.

The run then also knows the provider the proxy fronts (``config.provider``: its hints, its runtime-result).

With no model configured the model is the provider's default (:func:`hermes_nb.proxy.detect.resolve_model`:
the proxy's ``/health`` says which provider it fronts). The e2e notebook asks :func:`adapter_check` —
the same call the adapter-check notebook makes — and runs with the model it resolved; when nobody chose
the model, the provider's default is resolved; when the check finds the model absent from the proxy's list —
the default or a configured one — the e2e run is not sent and its verdict is the check's (failed, the
listed models and a suggestion named), so the two notebooks never disagree about a model. ``hermes-nb run``
still sends a configured model as configured (a provider may serve models its ``/models`` omits); the
smoke's two notebooks judge it as one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes_nb.core.config import HermesProxyRuntimeConfig
    from hermes_nb.proxy.check import CheckResult

__all__ = ["ModelPreflight", "model_preflight"]


@dataclass
class ModelPreflight:
    """The check's verdict on the model, and the config to run with (its model resolved)."""

    check: CheckResult
    config: HermesProxyRuntimeConfig

    @property
    def model_listed(self) -> bool:
        """False only when the proxy lists models and the resolved one is not among them."""
        return not (self.check.models and self.check.model not in self.check.models)

    @property
    def runnable(self) -> bool:
        """False when the proxy lists models and the resolved one (default or configured) is not among
        them: the check's ``misconfigured`` is the run's verdict too, so adapter_check and e2e agree."""
        return self.model_listed

    def _repr_html_(self) -> str:
        return self.check._repr_html_()

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text("ModelPreflight(...)" if cycle else f"ModelPreflight(runnable={self.runnable}, "
               f"model={self.config.model!r}, provider={self.check.provider!r}; {self.check._repr_text_()})")


def model_preflight(config: HermesProxyRuntimeConfig, *, deadline_s: float | None = None) -> ModelPreflight:
    """Ask the adapter check which provider and model; the config with that model.

    ``deadline_s``: the check's deadline (default: the run's own wait, ``request_timeout_ms``, at most 30 s).
    """
    from hermes_nb.core.config import is_provider
    from hermes_nb.proxy.check import adapter_check

    wait = deadline_s if deadline_s is not None else min(30.0, config.request_timeout_ms / 1000.0)
    check = adapter_check(config, deadline_s=wait, hermes_bin=False)
    resolved = config.model_copy()
    if check.model and check.model != config.model:
        resolved.model = check.model
    if is_provider(check.provider) and check.provider != config.provider:
        resolved.provider = check.provider  # what the proxy fronts: its hints, its record
    return ModelPreflight(check=check, config=resolved)
