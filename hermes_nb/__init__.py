"""hermes_nb: prove a local Hermes proxy works as a UH runtime, and keep the evidence.

``from hermes_nb import …`` is the public surface (:data:`__all__`). It stays
light: each name loads its module on first use, and always resolves to the
same object, whatever was imported before. The package is layered, read
bottom-up (docs/architecture/layers.md): ``core`` → ``wire`` → ``emulator`` →
``proxy`` | ``harness`` → ``receipts`` → ``kit`` | ``nbrun`` → ``load`` (a wing) → ``cli``.
"""

# Nothing is imported here (not even __future__): this runs before ``hermes-nb`` owns Ctrl-C
# (hermes_nb/cli/__init__.py), and a signal during an import here would print a traceback
# (tests/cli/test_interrupt.py). Annotations are strings, never evaluated.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__version__ = "0.1.0"

#: public name -> its module, or (module, attribute) where the package names it apart from its module
_LAZY: dict[str, str | tuple[str, str]] = {
    # core: errors, config, manifest, records, redaction
    "HermesError": "core.errors", "ConfigError": "core.errors", "UnknownKeyError": "core.errors",
    "UsageError": "core.errors", "ArtifactError": "core.errors", "ProxyUnreachable": "core.errors",
    "ProxyTimeout": "core.errors", "ProxyStatusError": "core.errors", "ProtocolViolation": "core.errors",
    "RigError": "core.errors", "NotebookFailed": "core.errors", "SecretLeak": "core.errors",
    "PromotionRefused": "core.errors", "PublishError": "core.errors",
    "HermesProxyRuntimeConfig": "core.config", "merge_runtime_config": "core.config",
    "resolve_runtime_config": "core.resolve",
    "AdapterManifest": "core.manifest", "load_manifest": "core.manifest", "save_manifest": "core.manifest",
    "manifest_template": "core.manifest",
    "Exchange": "core.records", "Outcome": "core.records", "ErrorEnvelope": "core.records",
    "Redactor": "core.redaction",
    # wire
    "SSEDecoder": "wire.sse", "ServerSentEvent": "wire.sse", "HermesClient": "wire.client",
    "classify": "wire.classify", "extract_final_message": "wire.sentinel",
    "runtime_final_message_instruction": "wire.sentinel", "wrap_final_message": "wire.sentinel",
    # emulator
    "serve_emulator": ("emulator", "serve"), "EmulatorHandle": "emulator",
    # proxy: check, probe, contracts, real-proxy rig
    "adapter_check": "proxy.check", "CheckResult": "proxy.check", "probe_endpoint": ("proxy.probe", "probe"),
    "WireReport": "proxy.report", "compare_contract": ("proxy.contracts", "compare"),
    "load_contract": "proxy.contracts",
    "real_proxy": "proxy.rig", "find_hermes_bin": "proxy.executable",
    # the load probe (a wing: hermes_nb/load)
    "run_load": "load.run", "LoadReport": "load.report",
    # harness: missions and runs
    "Mission": "harness.mission", "load_mission": "harness.mission", "render_prompt": "harness.prompt",
    "plan_run": "harness.plan", "RunPlan": "harness.plan", "dry_run": "harness.run", "run_mission": "harness.run",
    "prepare_mission": "harness.prepare", "PreparedMission": "harness.prepare",
    "RunResult": "harness.results",
    # receipts, the notebook runner, the kernel-side kit
    "verify_receipts": "receipts.verify",
    "run_smoke": "nbrun.smoke", "SmokeTarget": "nbrun.smoke_target", "ProbeConsole": "kit.console",
    "smoke": "nbrun.jobs", "SmokeOutcome": "nbrun.jobs",
}

__all__ = ["__version__", "load_ipython_extension", "unload_ipython_extension", *sorted(_LAZY)]


def load_ipython_extension(ipython: "Any") -> None:
    """``%load_ext hermes_nb``: registers ``%hermes_check``, ``%hermes_probe``, ``%%hermes_chat``
    (:mod:`hermes_nb.kit.magics`, imported only now so that ``import hermes_nb`` stays light)."""
    import importlib

    importlib.import_module("hermes_nb.kit.magics").load_ipython_extension(ipython)


def unload_ipython_extension(ipython: "Any") -> None:
    """``%unload_ext hermes_nb``: stops the embedded emulators the magics started."""
    import importlib

    importlib.import_module("hermes_nb.kit.magics").unload_ipython_extension(ipython)


def _where(name: str) -> "tuple[str, str] | None":
    """``(module, attribute)`` of a public name."""
    found = _LAZY.get(name)
    if found is None:
        return None
    return found if isinstance(found, tuple) else (found, name)


def __getattr__(name: str) -> "Any":
    where = _where(name)
    if where is None:
        raise AttributeError(f"module 'hermes_nb' has no attribute {name!r}")
    module, attribute = where
    import importlib

    value = getattr(importlib.import_module(f"hermes_nb.{module}"), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
