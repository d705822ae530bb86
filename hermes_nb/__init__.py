"""hermes_nb: prove a local Hermes proxy works as a UH runtime, and keep the evidence.

``from hermes_nb import …`` is the public surface (:data:`__all__`); each name loads its module on first use. The
layers: docs/architecture/layers.md."""

# Nothing is imported here (not even __future__): this runs before ``hermes-nb`` owns Ctrl-C, and a signal during
# an import here would print a traceback. Annotations are strings, never evaluated.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__version__ = "0.1.0"

#: public name -> its module; everything else is imported from its subpackage
_LAZY: dict[str, str] = {
    "check": "proxy.check", "CheckResult": "proxy.check",
    "probe": "proxy.probe", "WireReport": "proxy.report",
    "run_mission": "harness.prepare", "RunResult": "harness.run",
    "smoke": "nbrun.jobs", "SmokeOutcome": "nbrun.jobs",
    "run_load": "load.run", "LoadReport": "load.report",
    "Target": "target",
    "HermesProxyRuntimeConfig": "core.config", "resolve_runtime_config": "core.resolve",
    "HermesClient": "wire.client", "Exchange": "core.records",
    "serve_emulator": "emulator",
    "verify_receipts": "receipts.verify",
    "ProbeConsole": "kit.console",
    "HermesError": "core.errors", "ConfigError": "core.errors", "UsageError": "core.errors",
    "ProxyUnreachable": "core.errors", "ProxyTimeout": "core.errors", "ProxyStatusError": "core.errors",
    "ProtocolViolation": "core.errors", "NotebookFailed": "core.errors", "RigError": "core.errors",
}

__all__ = ["__version__", "load_ipython_extension", "unload_ipython_extension", *sorted(_LAZY)]


def load_ipython_extension(ipython: "Any") -> None:
    """``%load_ext hermes_nb``: registers ``%hermes_check``, ``%hermes_probe``, ``%%hermes_chat``
    (:mod:`hermes_nb.kit.magics`, imported only now so that ``import hermes_nb`` stays light)."""
    __import__("hermes_nb.kit.magics", fromlist=["_"]).load_ipython_extension(ipython)


def unload_ipython_extension(ipython: "Any") -> None:
    """``%unload_ext hermes_nb``: stops the embedded emulators the magics started."""
    __import__("hermes_nb.kit.magics", fromlist=["_"]).unload_ipython_extension(ipython)


def __getattr__(name: str) -> "Any":
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'hermes_nb' has no attribute {name!r}")
    value = getattr(__import__(f"hermes_nb.{module}", fromlist=[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
