"""One virtual environment per hermes-agent release, cached under the user's cache directory.

The proxy-version matrix (``hermes-nb matrix``, ``hermes-nb smoke --rig S --hermes-version V``) runs
the real ``hermes proxy`` of several releases. Each release gets its own venv (hermes-agent pins
its own pydantic, httpx and openai; it is never installed into the project's venv)::

    $HERMES_NB_CACHE_DIR/hermes-agent/<version>/bin/hermes
    (default cache dir: platformdirs' user cache dir for "hermes-nb", e.g. ~/.cache/hermes-nb;
     it honours XDG_CACHE_HOME)

Pins: 0.19.0 installs from the exact pins shipped in the package (``hermes_nb/data/pins/``, the same
bytes as the repository's ``requirements-hermes.lock``); other releases install
``hermes-agent==<version> aiohttp`` and let pip resolve the rest (no lock is kept for them: the
matrix is about the proxy's wire, and pip's resolution is recorded in each venv's ``pip freeze``).

Lookup (:func:`ensure_hermes`): a cached venv whose installed hermes-agent has that version; else a
``hermes`` found the usual way (``find_hermes_bin``: ``$HERMES_NB_HERMES_BIN``, ``.venv-hermes``,
PATH) that has that version is *adopted* — the cache entry becomes a symlink to its venv, so the
repository's ``.venv-hermes`` serves as the cache for 0.19.0 without reinstalling; else it is
installed (unless ``install=False``). Builds of one version are serialised with a file lock.

Which rig states each release supports (observed; ``docs/wire-contract.md``): ``stale`` and
``logged-out`` all of 0.16.0…0.19.0; ``live`` from 0.18.0 on — 0.16.0 and 0.17.0 ignore
``NOUS_INFERENCE_BASE_URL`` (https allowlist), so the rig refuses ``live`` for them rather than let
the proxy forward off the machine. :func:`unsupported_reason` says so before anything is installed;
the rig checks the installed source again (:func:`~hermes_nb.proxy.executable.live_supported`).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from hermes_nb.core.errors import RigError, UsageError
from hermes_nb.core.facts import ENV_PREFIX, contracts_dir, data_dir
from hermes_nb.proxy.executable import find_hermes_bin, hermes_version

__all__ = ["ENV_CACHE_DIR", "KNOWN_VERSIONS", "PINNED_VERSIONS", "cache_dir", "venv_dir", "pins_for",
           "observed_states", "unsupported_reason", "ensure_hermes", "cached_hermes", "support_table"]

ENV_CACHE_DIR = ENV_PREFIX + "CACHE_DIR"
#: the releases on PyPI whose ``hermes proxy`` runs (docs/wire-contract.md)
KNOWN_VERSIONS = ("0.16.0", "0.17.0", "0.18.0", "0.18.1", "0.18.2", "0.19.0")
#: releases installed from exact pins shipped in the package
PINNED_VERSIONS = ("0.19.0",)
_VERSION_RE = re.compile(r"^\d+\.\d+\.\d+([.-]?[0-9A-Za-z]+)*$")
STAMP = ".hermes-nb-installed"


def _check_version(version: str) -> str:
    if not _VERSION_RE.match(version or ""):
        raise UsageError(f"not a hermes-agent version: {version!r} (e.g. 0.19.0)")
    return version


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$HERMES_NB_CACHE_DIR``, else platformdirs' user cache dir for ``hermes-nb``."""
    env = os.environ if environ is None else environ
    if env.get(ENV_CACHE_DIR):
        return Path(env[ENV_CACHE_DIR]).expanduser().absolute()
    import platformdirs

    return Path(platformdirs.user_cache_dir("hermes-nb", appauthor=False))


def venv_dir(version: str, environ: Mapping[str, str] | None = None) -> Path:
    return cache_dir(environ) / "hermes-agent" / _check_version(version)


def pins_for(version: str) -> Path | list[str]:
    """The shipped exact pins (a requirements file) for a pinned release, else the requirement strings."""
    if version in PINNED_VERSIONS:
        return data_dir() / "pins" / f"hermes-agent-{version}.txt"
    return [f"hermes-agent=={_check_version(version)}", "aiohttp"]


def observed_states(version: str, provider: str = "nous") -> list[str] | None:
    """The rig states probed for a release and provider (its shipped observed contract), None when there is none."""
    from hermes_nb.proxy.contracts import contract_file_name

    path = contracts_dir() / f"{contract_file_name(f'hermes-agent-{version}', provider)}.json"
    if not path.is_file():
        return None
    states = json.loads(path.read_text(encoding="utf-8")).get("states") or {}
    return sorted(states) + ["logged-out"]


def unsupported_reason(version: str, state: str, provider: str = "nous") -> str | None:
    """Why ``state`` cannot be run on this release and provider (None: supported, or not known before installing)."""
    states = observed_states(version, provider)
    if states is None or state in states:
        return None
    if state == "live" and provider == "nous":
        return (f"hermes-agent {version} ignores NOUS_INFERENCE_BASE_URL (https allowlist): a live rig would "
                "forward off this machine, so it is refused")
    return f"hermes-agent {version} --provider {provider} was not observed in state {state}"


def support_table(versions: list[str] | tuple[str, ...] = KNOWN_VERSIONS,
                  provider: str = "nous") -> dict[str, dict[str, bool | None]]:
    """``{version: {state: supported}}`` from the shipped contracts (None: unknown release)."""
    table: dict[str, dict[str, bool | None]] = {}
    for v in versions:
        states = observed_states(v, provider)
        table[v] = {s: (None if states is None else s in states) for s in ("stale", "live", "logged-out")}
    return table


def _hermes_of(venv: Path) -> Path:
    return venv / "bin" / "hermes"


def cached_hermes(version: str, environ: Mapping[str, str] | None = None) -> Path | None:
    """The cached ``bin/hermes`` of ``version`` when its venv really holds that hermes-agent version."""
    binary = _hermes_of(venv_dir(version, environ))
    if binary.is_file() and os.access(binary, os.X_OK) and hermes_version(binary) == version:
        return binary
    return None


def _adopt(version: str, environ: Mapping[str, str] | None) -> Path | None:
    """Make a ``hermes`` of this version found the usual way the cache entry (a symlink to its venv)."""
    try:
        found = find_hermes_bin(environ=environ)
    except RigError:
        found = None
    if found is None or hermes_version(found) != version:
        return None
    venv = found.resolve().parent.parent
    target = venv_dir(version, environ)
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_symlink() or not target.exists():
        if target.is_symlink():
            target.unlink()
        target.symlink_to(venv, target_is_directory=True)
    return cached_hermes(version, environ)


Runner = Callable[..., Any]


def ensure_hermes(version: str, *, install: bool = True, adopt: bool = True,
                  environ: Mapping[str, str] | None = None, python: str | None = None, run: Runner = subprocess.run,
                  progress: Callable[[str], None] | None = None) -> Path:
    """``bin/hermes`` of hermes-agent ``version``: cached, adopted (unless ``adopt=False``), or installed now."""
    _check_version(version)
    found = cached_hermes(version, environ) or (_adopt(version, environ) if adopt else None)
    if found is not None:
        return found
    if not install:
        raise RigError(f"hermes-agent {version} is not in the cache ({venv_dir(version, environ)}); "
                       "run without --no-install to build it")
    venv = venv_dir(version, environ)
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f".{version}.lock", "w") as lock:  # one build per version at a time
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = cached_hermes(version, environ)
        if found is not None:  # another process built it while we waited
            return found
        if venv.is_symlink():
            venv.unlink()
        elif venv.exists():
            shutil.rmtree(venv)
        if progress:
            progress(f"installing hermes-agent {version} into {venv}")
        pins = pins_for(version)
        args = ["-r", str(pins)] if isinstance(pins, Path) else list(pins)
        steps = [[python or sys.executable, "-m", "venv", str(venv)],
                 [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", *args]]
        for cmd in steps:
            done = run(cmd, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                shutil.rmtree(venv, ignore_errors=True)
                tail = " | ".join((done.stderr or done.stdout or "").strip().splitlines()[-3:])
                raise RigError(f"installing hermes-agent {version} failed ({' '.join(cmd[:3])}…): {tail}")
        (venv / STAMP).write_text(version + "\n", encoding="utf-8")
    found = cached_hermes(version, environ)
    if found is None:
        raise RigError(f"hermes-agent {version} installed into {venv} but no matching `hermes` is there")
    return found


