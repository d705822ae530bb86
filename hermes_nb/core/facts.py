"""The small facts every layer shares, each written down once.

Exit codes and what each status word means for them, the names of our
environment variables, the runtime's name, the default model and endpoint,
the three notebooks, and where the adapter manifest lives. Nothing here
imports anything beyond the standard library.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from hermes_nb.core.providers import DEFAULT_PROVIDER, default_model_for


def _default_provider_model() -> str:
    model = default_model_for(DEFAULT_PROVIDER)
    assert model is not None
    return model


__all__ = [
    "EXIT_OK", "EXIT_FAILED", "EXIT_USAGE", "EXIT_BLOCKED", "EXIT_INTERRUPTED", "EXIT_TERMINATED", "STATUS_EXIT",
    "exit_code_for", "exit_code_for_signal", "worst_verdict", "VERDICTS", "OUTCOMES", "RUNTIME", "ERROR_PREFIX",
    "DEFAULT_ENDPOINT", "DEFAULT_MODEL", "DEFAULT_AUTH_TOKEN", "DEFAULT_TIMEOUT_MS", "CONNECT_TIMEOUT_S",
    "ENV_PREFIX", "ENV_ENDPOINT", "ENV_MODEL", "ENV_AUTH_TOKEN", "ENV_PROVIDER", "ENV_HERMES_BIN", "ENV_CONFIG",
    "MINIMUM_HERMES_PROXY_VERSION",
    "env_secrets", "NOTEBOOKS", "WIRE_SPIKE", "ADAPTER_CHECK", "E2E_SMOKE", "LOAD_NOTEBOOK", "GUIDES",
    "TEMPLATED_NOTEBOOKS", "SHIPPED_NOTEBOOKS",
    "HARNESS_DIR", "MISSIONS_RELPATH",
    "WORKFLOWS_RELPATH", "AUDIT_RELPATH", "MANIFEST_RELPATH", "SMOKE_RUNBOOK_RELPATH",
    "RECEIPTS_RELPATH", "manifest_path", "SENTINEL_TAG", "RUN_ARTIFACTS",
    "PROXY_MAX_REQUEST_BYTES", "MAX_PROMPT_BYTES", "PROMPT_FILE",
]

# --------------------------------------------------------------------------- exit codes

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_BLOCKED = 0, 1, 2, 3
#: a command stopped by Ctrl-C (128 + SIGINT), as a shell reports it
EXIT_INTERRUPTED = 130
#: a command stopped by SIGTERM (128 + 15), e.g. a CI runner cancelling the job
EXIT_TERMINATED = 143

#: every status word a command can end with -> its exit code
STATUS_EXIT: Mapping[str, int] = {
    # verdicts (runs, smoke, notebooks) and run statuses
    "passed": EXIT_OK, "failed": EXIT_FAILED, "blocked": EXIT_BLOCKED, "cancelled": EXIT_FAILED,
    # adapter-check states
    "ready": EXIT_OK, "error": EXIT_FAILED, "misconfigured": EXIT_USAGE, "locked": EXIT_BLOCKED,
    "unreachable": EXIT_BLOCKED, "rate_limited": EXIT_BLOCKED, "slow": EXIT_BLOCKED, "not_local": EXIT_BLOCKED,
}

#: the verdicts of a notebook job, best first
VERDICTS = ("passed", "blocked", "failed")
#: what a receipt or a smoke can end with: a notebook's verdict, or ``cancelled`` (stopped by a signal while it
#: ran), worst last
OUTCOMES = (*VERDICTS, "cancelled")


def exit_code_for(status: str) -> int:
    """The documented exit code of a status word (unknown words count as failed)."""
    return STATUS_EXIT.get(status, EXIT_FAILED)


def exit_code_for_signal(signum: int) -> int:
    """128 + the signal's number, as a shell reports a command the signal stopped (SIGINT 130, SIGTERM 143)."""
    return 128 + int(signum)


def worst_verdict(verdicts: Iterable[str]) -> str:
    """cancelled wins over failed over blocked over passed (an unknown verdict counts as failed)."""
    worst = 0
    for verdict in verdicts:
        worst = max(worst, OUTCOMES.index(verdict) if verdict in OUTCOMES else VERDICTS.index("failed"))
    return OUTCOMES[worst]


# --------------------------------------------------------------------------- the runtime

RUNTIME = "hermes-proxy"
#: every error line a classification writes starts with this (UH's prefix)
ERROR_PREFIX = "hermes-proxy: "
DEFAULT_ENDPOINT = "http://127.0.0.1:8645/v1"
#: the model when none is configured and the provider is not known: the default provider's (core.providers)
DEFAULT_MODEL = _default_provider_model()
#: the placeholder bearer (the real proxy ignores it and attaches its own credentials)
DEFAULT_AUTH_TOKEN = "hermes-proxy"
DEFAULT_TIMEOUT_MS = 300_000
#: the longest wait for a TCP connection to the proxy, seconds (every client, the run plan, the probe)
CONNECT_TIMEOUT_S = 5.0
#: the fence tag of the final-message block (uh-contract §4)
SENTINEL_TAG = "uh-runtime-final-message"
#: the real proxy's request body cap (hermes_cli/proxy/server.py ``MAX_REQUEST_BYTES``; 413 above it)
PROXY_MAX_REQUEST_BYTES = 10_000_000
#: the default cap on prompt input (``--prompt-file``, ``--prompt -``): just above the proxy's body cap, so
#: no prompt the proxy could accept is refused and nothing near the size of ``/dev/zero`` is ever read
MAX_PROMPT_BYTES = 10 * 1024 * 1024
#: the one file of a run that holds the prompt; every other record refers to it by digest and size
PROMPT_FILE = "prompt.md"
#: the run artifacts whose digests a receipt and a run's display carry and which a receipt keeps copies of
#: (uh-contract §3, plus the prompt, the event log and the request sent: method, URL, headers masked, body)
RUN_ARTIFACTS = ("runtime-result.yaml", "runtime.stdout.log", "runtime-final.txt", "prompt.md", "events.ndjson",
                 "request.json")
# operator actions (start the proxy, log in, re-authenticate) are per provider: hermes_nb.core.providers

# --------------------------------------------------------------------------- environment

ENV_PREFIX = "HERMES_NB_"
ENV_ENDPOINT = ENV_PREFIX + "ENDPOINT"
ENV_MODEL = ENV_PREFIX + "MODEL"
#: never a notebook parameter, never printed
ENV_AUTH_TOKEN = ENV_PREFIX + "AUTH_TOKEN"
ENV_PROVIDER = ENV_PREFIX + "PROVIDER"
ENV_HERMES_BIN = ENV_PREFIX + "HERMES_BIN"
#: the first hermes-agent release with `hermes proxy`
MINIMUM_HERMES_PROXY_VERSION = "0.16.0"
#: the runtime_config keys the environment sets, each with its variable (the resolver's env layer)
ENV_CONFIG: Mapping[str, str] = {"endpoint": ENV_ENDPOINT, "model": ENV_MODEL, "auth_token": ENV_AUTH_TOKEN,
                                 "provider": ENV_PROVIDER}


def env_secrets(environ: Mapping[str, str]) -> list[str]:
    """The secrets our environment carries (the token), for redaction and scans."""
    token = environ.get(ENV_AUTH_TOKEN)
    return [token] if token else []


# --------------------------------------------------------------------------- notebooks and files

#: the three notebook jobs, in the order the smoke reports them
NOTEBOOKS = ("wire_format_spike", "adapter_check", "e2e_smoke")
WIRE_SPIKE, ADAPTER_CHECK, E2E_SMOKE = NOTEBOOKS
#: the load receipt's notebook (``hermes-nb load --out``); never part of the smoke
LOAD_NOTEBOOK = "load"
#: the notebooks built from templates (``make notebooks`` refreshes them): the smoke's three and the load receipt's
TEMPLATED_NOTEBOOKS = NOTEBOOKS + (LOAD_NOTEBOOK,)
#: the guided notebooks (nbrun/guides.py): shipped and exported with the others, never run by the smoke
GUIDES = ("probe_console",)
#: every notebook the package ships (``hermes-nb notebooks list|export``)
SHIPPED_NOTEBOOKS = TEMPLATED_NOTEBOOKS + GUIDES
#: UH's directory in a project root, and what hermes_nb reads and writes in it (relative to the root)
HARNESS_DIR = ".harness"
MISSIONS_RELPATH = Path(HARNESS_DIR) / "missions"
WORKFLOWS_RELPATH = Path(HARNESS_DIR) / "workflows"
AUDIT_RELPATH = Path(HARNESS_DIR) / "audit"
#: the adapter manifest (UH's place for it)
MANIFEST_RELPATH = Path(HARNESS_DIR) / "adapters" / "hermes-proxy.yaml"


#: where ``hermes-nb promote`` appends its records (relative to the project root)
SMOKE_RUNBOOK_RELPATH = Path("runbooks") / "hermes-proxy-smoke.md"
#: where ``hermes-nb smoke`` keeps receipts by default (``<this>/<target kind>/``)
RECEIPTS_RELPATH = Path("runbooks") / "receipts"


def manifest_path(root: str | os.PathLike[str]) -> Path:
    """``<root>/.harness/adapters/hermes-proxy.yaml``."""
    return Path(root) / MANIFEST_RELPATH
