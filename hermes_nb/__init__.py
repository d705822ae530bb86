"""hermes_nb: prove a local Hermes proxy works as a UH runtime, and keep the evidence.

``import hermes_nb`` stays light: heavy modules (emulator, receipts, widgets)
load on first use of their names.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_LAZY = {
    # errors
    "HermesError": "errors", "ConfigError": "errors", "UnknownKeyError": "errors", "UsageError": "errors",
    "ArtifactError": "errors", "ProxyUnreachable": "errors", "ProxyTimeout": "errors",
    "ProxyStatusError": "errors", "ProtocolViolation": "errors", "RigError": "errors",
    "NotebookFailed": "errors", "SecretLeak": "errors",
    # config
    "HermesProxyRuntimeConfig": "config", "AdapterManifest": "config", "load_manifest": "config",
    "save_manifest": "config", "merge_runtime_config": "config", "manifest_template": "config",
    # records
    "Exchange": "records", "Outcome": "records", "ErrorEnvelope": "records",
    # redaction
    "Redactor": "redact",
    # emulator
    "serve_emulator": "emulator", "EmulatorHandle": "emulator",
    # wire core + client
    "SSEDecoder": "sse", "ServerSentEvent": "sse", "HermesClient": "client", "classify": "classify",
    "extract_final_message": "sentinel", "runtime_final_message_instruction": "sentinel",
    "wrap_final_message": "sentinel",
    # check, missions, runs
    "adapter_check": "check", "CheckResult": "check", "Mission": "mission", "load_mission": "mission",
    "render_prompt": "mission", "plan_run": "run", "dry_run": "run", "run_mission": "run", "RunPlan": "run",
    "RunResult": "run",
    # probe, contracts, real-proxy rig
    "probe_endpoint": "probe", "WireReport": "probe", "compare_contract": "wire_contract", "load_contract": "wire_contract",
    "real_proxy": "rig", "find_hermes_bin": "rig",
    # notebooks: smoke runner, receipts, promotion gate, widgets
    "run_smoke": "smoke", "SmokeTarget": "smoke", "verify_receipts": "receipts",
    "PromotionRefused": "promote", "Console": "widgets",
}

__all__ = ["__version__", *sorted(_LAZY)]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'hermes_nb' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"hermes_nb.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
