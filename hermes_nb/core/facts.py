"""The small facts every layer shares, each written once: exit codes, our environment variables, defaults, the
notebooks, where shipped data and the manifest live, when an endpoint is safe for the bearer. Standard library only."""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Iterable, Mapping
from importlib.resources import files
from pathlib import Path
from urllib.parse import urlsplit

from hermes_nb.core.providers import DEFAULT_PROVIDER, default_model_for

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_BLOCKED = 0, 1, 2, 3
STATUS_EXIT: Mapping[str, int] = {
    "passed": EXIT_OK, "failed": EXIT_FAILED, "blocked": EXIT_BLOCKED, "cancelled": EXIT_FAILED,
    "ready": EXIT_OK, "error": EXIT_FAILED, "misconfigured": EXIT_USAGE, "locked": EXIT_BLOCKED,
    "unreachable": EXIT_BLOCKED, "rate_limited": EXIT_BLOCKED, "slow": EXIT_BLOCKED, "not_local": EXIT_BLOCKED,
}
#: the verdicts of a notebook job, best first; a receipt or a smoke may also end ``cancelled`` (worst)
VERDICTS = ("passed", "blocked", "failed")
OUTCOMES = (*VERDICTS, "cancelled")


def exit_code_for(status: str) -> int:
    return STATUS_EXIT.get(status, EXIT_FAILED)


def exit_code_for_signal(signum: int) -> int:
    """As a shell reports a command a signal stopped (Ctrl-C 130, SIGTERM 143)."""
    return 128 + int(signum)


def worst_verdict(verdicts: Iterable[str]) -> str:
    """cancelled wins over failed over blocked over passed (an unknown verdict counts as failed)."""
    return OUTCOMES[max((OUTCOMES.index(v if v in OUTCOMES else "failed") for v in verdicts), default=0)]


RUNTIME = "hermes-proxy"
#: every error line a classification writes starts with this (UH's prefix)
ERROR_PREFIX = "hermes-proxy: "
DEFAULT_ENDPOINT = "http://127.0.0.1:8645/v1"
DEFAULT_MODEL = default_model_for(DEFAULT_PROVIDER) or ""
#: the placeholder bearer (the real proxy ignores it and attaches its own credentials)
DEFAULT_AUTH_TOKEN = "hermes-proxy"
DEFAULT_TIMEOUT_MS = 300_000
CONNECT_TIMEOUT_S = 5.0
#: the fence tag of the final-message block (uh-contract §4)
SENTINEL_TAG = "uh-runtime-final-message"
#: the real proxy's request body cap (hermes_cli/proxy/server.py ``MAX_REQUEST_BYTES``; 413 above it)
PROXY_MAX_REQUEST_BYTES = 10_000_000
MAX_PROMPT_BYTES = 10 * 1024 * 1024
PROMPT_FILE = "prompt.md"
#: the run artifacts a receipt and a run's display carry digests (and a receipt copies) of
RUN_ARTIFACTS = ("runtime-result.yaml", "runtime.stdout.log", "runtime-final.txt", "prompt.md", "events.ndjson",
                 "request.json")

ENV_PREFIX = "HERMES_NB_"
ENV_CONFIG: Mapping[str, str] = {key: ENV_PREFIX + key.upper() for key in ("endpoint", "model", "auth_token",
                                                                         "provider")}
#: the bearer travels in HERMES_NB_AUTH_TOKEN, never as a notebook parameter
ENV_ENDPOINT, ENV_AUTH_TOKEN = ENV_CONFIG["endpoint"], ENV_CONFIG["auth_token"]
ENV_HERMES_BIN = ENV_PREFIX + "HERMES_BIN"
MINIMUM_HERMES_PROXY_VERSION = "0.16.0"


def env_secrets(environ: Mapping[str, str]) -> list[str]:
    token = environ.get(ENV_AUTH_TOKEN)
    return [token] if token else []


#: the smoke's three notebook jobs, in the order it reports them
NOTEBOOKS = ("wire_format_spike", "adapter_check", "e2e_smoke")
WIRE_SPIKE, ADAPTER_CHECK, E2E_SMOKE = NOTEBOOKS
#: the load receipt's notebook (``hermes-nb load --out``); never part of the smoke
LOAD_NOTEBOOK = "load"
TEMPLATED_NOTEBOOKS = NOTEBOOKS + (LOAD_NOTEBOOK,)
#: the guided notebooks: shipped and exported with the others, never run by the smoke
GUIDES = ("probe_console",)
SHIPPED_NOTEBOOKS = TEMPLATED_NOTEBOOKS + GUIDES
HARNESS_DIR = ".harness"
MISSIONS_RELPATH = Path(HARNESS_DIR) / "missions"
WORKFLOWS_RELPATH = Path(HARNESS_DIR) / "workflows"
AUDIT_RELPATH = Path(HARNESS_DIR) / "audit"
MANIFEST_RELPATH = Path(HARNESS_DIR) / "adapters" / "hermes-proxy.yaml"
#: where ``hermes-nb promote`` appends its records, and where ``hermes-nb smoke`` keeps receipts by default
SMOKE_RUNBOOK_RELPATH = Path("runbooks") / "hermes-proxy-smoke.md"
RECEIPTS_RELPATH = Path("runbooks") / "receipts"


def manifest_path(root: str | os.PathLike[str]) -> Path:
    return Path(root) / MANIFEST_RELPATH


def data_dir() -> Path:
    """The package data (notebooks, recorded wire contracts, nbval sanitize rules): installed as files, never zipped."""
    return Path(str(files("hermes_nb") / "data"))


def notebooks_dir() -> Path:
    return data_dir() / "notebooks"


def notebook_path(name: str) -> Path:
    if name not in SHIPPED_NOTEBOOKS:
        raise ValueError(f"unknown notebook {name!r}; known: {', '.join(SHIPPED_NOTEBOOKS)}")
    return notebooks_dir() / f"{name}.ipynb"


def contracts_dir() -> Path:
    return data_dir() / "contracts"


def sanitize_file() -> Path:
    return data_dir() / "nbval-sanitize.cfg"


def is_loopback_host(host: str) -> bool:
    """``localhost``, ``*.localhost`` or a loopback address however written (``::ffff:127.0.0.1``, ``0x7f.1``…)."""
    host = host.strip("[]").rstrip(".").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        if not host or not all(c in "0123456789abcdefx." for c in host):
            return False
        try:
            address = ipaddress.IPv4Address(socket.inet_aton(host))
        except OSError:
            return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


def plain_http_warning(endpoint: str | None) -> str | None:
    """A warning for a plain-http endpoint whose host is not loopback (the bearer would cross the network)."""
    try:
        url = urlsplit((endpoint or "").strip())
        host = url.hostname or ""
    except ValueError:
        return None
    if url.scheme.lower() != "http" or not host or is_loopback_host(host):
        return None
    return (f"endpoint {endpoint} is plain http to {host}, which is not loopback: the bearer and the "
            "subscription's traffic would cross the network unencrypted (use https, or the proxy on 127.0.0.1)")
