"""JSON Schemas of the runtime config and the manifest (``hermes-nb schema``, ``docs/schema/``)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from hermes_nb.core.config import HermesProxyRuntimeConfig
from hermes_nb.core.io import write_atomic
from hermes_nb.core.manifest import AdapterManifest

__all__ = ["schema_documents", "write_schemas"]


def schema_documents() -> dict[str, dict[str, Any]]:
    """JSON Schemas keyed by file name (``docs/schema/<name>``)."""
    runtime = HermesProxyRuntimeConfig.model_json_schema(mode="validation")
    runtime["$id"] = "https://hermes-nb.invalid/schema/hermes-proxy-runtime-config.schema.json"
    manifest = AdapterManifest.model_json_schema(mode="validation")
    manifest["$id"] = "https://hermes-nb.invalid/schema/adapter-manifest.schema.json"
    return {
        "hermes-proxy-runtime-config.schema.json": runtime,
        "adapter-manifest.schema.json": manifest,
    }


def write_schemas(directory: str | os.PathLike[str]) -> list[Path]:
    out = []
    d = Path(directory)
    for name, doc in schema_documents().items():
        out.append(write_atomic(d / name, json.dumps(doc, indent=2, sort_keys=True) + "\n", what="schema"))
    return out
