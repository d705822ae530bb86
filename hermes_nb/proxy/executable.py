"""Finding the real ``hermes`` executable and what it can do, without running anything on the network.

Lookup order: ``--hermes-bin``, ``$HERMES_NB_HERMES_BIN``, a ``.venv-hermes`` beside the
interpreter's own venv (``make rig-venv`` puts it next to ``.venv``) or in the current
directory, then ``PATH``. The version comes from the hermes venv's package metadata
(:mod:`importlib.metadata`; ``hermes --version`` checks PyPI for updates, so it is the last resort).
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from hermes_nb.core.errors import ConfigError, HermesError, RigError
from hermes_nb.core.facts import ENV_HERMES_BIN

__all__ = ["wait_until_answers", "ENV_HERMES_BIN", "INSTALL_HINT", "MINIMUM_HERMES_PROXY_VERSION",
           "find_hermes_bin", "require_hermes_bin", "hermes_version", "version_tuple", "detect_hermes",
           "site_packages", "live_supported", "stop_process", "base_env", "release_of"]

INSTALL_HINT = (
    "no `hermes` found: run `make rig-venv` (creates .venv-hermes with hermes-agent==0.19.0), "
    f"or pass --hermes-bin PATH / set {ENV_HERMES_BIN}"
)
#: First hermes-agent release on PyPI with ``hermes proxy`` (the seed says 0.14.0, which PyPI never had).
MINIMUM_HERMES_PROXY_VERSION = "0.16.0"
HERMES_DIST = "hermes-agent"
_VERSION_RE = re.compile(r"v?(\d+\.\d+\.\d+(?:[.+-][0-9A-Za-z.]+)?)")


def base_env(*, home: Path | None = None) -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
           "PYTHONUNBUFFERED": "1"}
    if home is not None:
        env |= {"HOME": str(home), "HERMES_HOME": str(home / ".hermes-nb-none"), "TMPDIR": str(home)}
    return env


def stop_process(proc: subprocess.Popen[Any], *, grace_s: float = 5.0) -> int | None:
    """terminate → wait → kill → wait. Returns the exit code (None if it would not die)."""
    if proc.poll() is None:
        try:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            try:
                proc.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                return None
        except ProcessLookupError:
            pass
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()
    return proc.returncode


def wait_until_answers(proc: subprocess.Popen[Any], endpoint: str, ready: Callable[[Any], bool], *,
                       deadline_s: float, what: str) -> bool:
    """Ask ``ready(client)`` (a :class:`~hermes_nb.wire.client.HermesClient` on ``endpoint``) until it says
    True: True; False as soon as the child ``proc`` has exited; RigError ``<what> within N s`` at the deadline.

    The child's exit is the event waited on between two tries (50 ms apart), so an early exit is seen at once.
    """
    import time

    from hermes_nb.wire.client import HermesClient

    deadline = time.monotonic() + deadline_s
    with HermesClient(endpoint, connect_timeout_s=1.0) as client:
        while True:
            if proc.poll() is not None:
                return False
            if ready(client):
                return True
            if time.monotonic() >= deadline:
                raise RigError(f"{what} within {deadline_s:.0f}s")
            try:
                proc.wait(timeout=0.05)
            except subprocess.TimeoutExpired:
                pass


def _usable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def default_search_dirs() -> list[Path]:
    """Where a ``.venv-hermes`` is looked for: beside this interpreter's venv, then the current directory."""
    return list(dict.fromkeys([Path(sys.prefix).parent, Path.cwd()]))


def find_hermes_bin(
    explicit: str | os.PathLike[str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    search_dirs: Sequence[Path] | None = None,
) -> Path | None:
    """``explicit`` (--hermes-bin), ``$HERMES_NB_HERMES_BIN``, a ``.venv-hermes`` (beside this venv, or in
    the current directory), then PATH.

    An explicit path or env value that is not an executable file is an error
    the caller asked for, so it raises :class:`RigError` rather than falling through.
    """
    env = os.environ if environ is None else environ
    for source, value in (("--hermes-bin", explicit), (ENV_HERMES_BIN, env.get(ENV_HERMES_BIN))):
        if value:
            path = Path(value).expanduser().absolute()
            if not _usable(path):
                raise RigError(f"{source}: {path} is not an executable file")
            return path
    for root in default_search_dirs() if search_dirs is None else search_dirs:
        candidate = Path(root) / ".venv-hermes" / "bin" / "hermes"
        if _usable(candidate):
            return candidate
    found = shutil.which("hermes", path=env.get("PATH"))
    return Path(found).absolute() if found else None


def require_hermes_bin(explicit: str | os.PathLike[str] | None = None) -> Path:
    path = find_hermes_bin(explicit)
    if path is None:
        raise RigError(INSTALL_HINT)
    return path


def hermes_version(bin_path: str | os.PathLike[str], *, timeout_s: float = 10.0) -> str | None:
    """The hermes-agent version of ``bin_path``, without network.

    ``hermes --version`` checks PyPI for updates, so it is the last resort:
    first the package metadata in the binary's venv (read with :mod:`importlib.metadata`
    from here), then the script's interpreter asked the same, then the CLI.
    """
    path = Path(bin_path)
    sites = [str(site) for site in site_packages(path)]
    if sites:
        found = next(iter(importlib.metadata.distributions(name=HERMES_DIST, path=sites)), None)
        if found is not None:
            return found.version
    interpreter = _shebang_python(path)
    if interpreter is not None:
        try:
            done = subprocess.run(
                [str(interpreter), "-c", "import importlib.metadata as m; print(m.version('hermes-agent'))"],
                capture_output=True, text=True, timeout=timeout_s, env=base_env(), check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            done = None
        if done is not None and done.returncode == 0 and done.stdout.strip():
            return done.stdout.strip()
    return _version_from_cli(path, timeout_s=timeout_s)


def _shebang_python(path: Path) -> Path | None:
    try:
        with path.open("rb") as fh:
            first = fh.readline(512).decode("utf-8", "replace").strip()
    except OSError:
        return None
    if not first.startswith("#!"):
        return None
    parts = first[2:].split()
    if not parts or "python" not in Path(parts[-1] if parts[0].endswith("env") else parts[0]).name:
        return None
    exe = Path(parts[0]) if not parts[0].endswith("env") else Path(shutil.which(parts[-1]) or parts[-1])
    return exe if _usable(exe) else None


def _version_from_cli(path: Path, *, timeout_s: float) -> str | None:
    """First line of ``hermes --version`` ("Hermes Agent v0.19.0 (…)"); stop before its update check."""
    with tempfile.TemporaryDirectory(prefix="hermes-nb-ver-") as tmp:
        try:
            proc = subprocess.Popen(
                [str(path), "--version"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                env=base_env(home=Path(tmp)), text=True, start_new_session=True,
            )
        except OSError:
            return None
        # a binary that prints no full line would block readline forever: kill its whole
        # session (children hold the pipe too) when the time is up; readline then sees EOF
        timer = threading.Timer(timeout_s, _kill_session, (proc,))
        timer.daemon = True
        timer.start()
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
        finally:
            timer.cancel()
            _kill_session(proc)
            stop_process(proc, grace_s=1.0)
    match = _VERSION_RE.search(line) if "hermes" in line.lower() else None
    return match.group(1) if match else None


def _kill_session(proc: subprocess.Popen[Any]) -> None:
    """SIGKILL the process group of a child started with ``start_new_session=True``."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):  # already gone (or reaped and reused: not ours)
        pass


def site_packages(bin_path: str | os.PathLike[str]) -> list[Path]:
    """The site-packages directories of the venv holding ``bin_path`` (empty when it is not a venv)."""
    path = Path(bin_path)
    venv = path.resolve().parent.parent if path.exists() else path.parent.parent
    return sorted(venv.glob("lib/python*/site-packages"))


def live_supported(bin_path: str | os.PathLike[str], provider: str = "nous") -> bool | None:
    """Does this hermes' proxy forward ``provider`` to a loopback upstream? None when it cannot be told.

    nous: releases before the env overlay in the Nous adapter (0.16.0 and 0.17.0) validate the
    inference URL against an https host allowlist and fall back to the production API, ignoring
    ``NOUS_INFERENCE_BASE_URL``. xai: the adapter sends to the pooled credential's ``base_url``
    (``runtime_base_url``), every release so far. Where the source says otherwise, a live rig would
    send requests off the machine, so it must refuse instead.
    """
    adapter, needles = {"nous": ("nous_portal.py", ("_nous_inference_env_override", "NOUS_INFERENCE_BASE_URL")),
                        "xai": ("xai.py", ("runtime_base_url",))}.get(provider, (None, ()))
    if adapter is None:
        return None
    for site in site_packages(bin_path):
        path = site / "hermes_cli" / "proxy" / "adapters" / adapter
        if path.is_file():
            text = path.read_text("utf-8", "replace")
            return any(needle in text for needle in needles)
    return None


def version_tuple(version: str) -> tuple[int, ...]:
    """``"0.16.0rc1"`` -> ``(0, 16, 0)``; non-numeric tails ignored."""
    return tuple(int(p) for p in re.findall(r"\d+", version.split("+", 1)[0])[:3])


def detect_hermes(hermes_bin: str | os.PathLike[str] | None = None) -> tuple[str | None, str | None, list[str]]:
    """``(bin, version, warnings)`` of the reachable ``hermes`` (all None/empty when there is none)."""
    try:
        path = find_hermes_bin(hermes_bin)
    except RigError as exc:
        return None, None, [str(exc)]
    if path is None:
        return None, None, []
    version = hermes_version(path)
    if version is None:
        return str(path), None, [f"could not read the version of {path}"]
    warnings = []
    if version_tuple(version) < version_tuple(MINIMUM_HERMES_PROXY_VERSION):
        warnings.append(f"hermes {version} at {path} is older than {MINIMUM_HERMES_PROXY_VERSION}, "
                        "the first release with `hermes proxy`; upgrade hermes-agent")
    return str(path), version, warnings


def release_of(hermes_bin: str | Path) -> tuple[str, str, str]:
    """(release, source, executable name) of an executable the operator named; raises HermesError if unusable."""
    path = Path(hermes_bin)
    if not (path.is_file() and os.access(path, os.X_OK)):
        raise ConfigError(f"--hermes-bin {path}: not an executable file")
    version = hermes_version(path)
    if version is None:
        raise HermesError(f"--hermes-bin {path}: cannot tell its hermes-agent release")
    return version, f"--hermes-bin {path}", path.name
