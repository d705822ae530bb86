"""The hermes_nb error tree.

HTTP and network failures during a call are *not* raised: the client returns an
:class:`~hermes_nb.exchange.Exchange` that records them and the classifier turns
that into passed/failed/blocked. Exceptions are for programming, configuration
and orchestration errors::

    HermesError
    ├── ConfigError            invalid runtime_config / manifest / mission / overrides  (CLI exit 2)
    │   └── UnknownKeyError    a key the strict schema does not know
    ├── UsageError             bad CLI usage or argument combination                     (CLI exit 2)
    ├── ArtifactError          an artifact path escaping its directory, a symlink, unwritable root (exit 2)
    ├── ProxyUnreachable       raised only by helpers that *require* a server (rig, serve) (exit 3)
    ├── ProxyTimeout           also a builtin TimeoutError                              (exit 3)
    ├── ProxyStatusError       status + body kept                                       (exit 1)
    ├── ProtocolViolation      the peer broke the wire contract                         (exit 1)
    ├── RigError               the real proxy could not be started (e.g. not logged in) (exit 3)
    ├── NotebookFailed(cell, ename)                                                     (exit 1)
    └── SecretLeak             a secret was found where it must not be                  (exit 1)

Every error's ``str()`` is one line and never contains a secret.
"""

from __future__ import annotations

from hermes_nb.core.facts import EXIT_BLOCKED, EXIT_FAILED, EXIT_USAGE

__all__ = [
    "HermesError",
    "ConfigError",
    "UnknownKeyError",
    "UsageError",
    "ArtifactError",
    "ProxyUnreachable",
    "ProxyTimeout",
    "ProxyStatusError",
    "ProtocolViolation",
    "RigError",
    "NotebookFailed",
    "SecretLeak",
]


class HermesError(Exception):
    """Root of every error hermes_nb raises on purpose."""

    #: CLI exit code used when this error escapes to the command line.
    exit_code: int = EXIT_FAILED


class ConfigError(HermesError, ValueError):
    """Invalid configuration: one message per problem, one line each."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, *, problems: list[str] | None = None) -> None:
        self.problems = list(problems) if problems else [message]
        super().__init__(message)


class UnknownKeyError(ConfigError):
    """A key the strict schema does not know (``key`` and ``suggestion`` kept)."""

    def __init__(self, key: str, *, where: str = "", suggestion: str | None = None) -> None:
        self.key = key
        self.suggestion = suggestion
        loc = f"{where}: " if where else ""
        hint = f" (did you mean {suggestion!r}?)" if suggestion else ""
        super().__init__(f"{loc}unknown key {key!r}{hint}")


class UsageError(HermesError):
    exit_code = EXIT_USAGE


class ArtifactError(HermesError):
    exit_code = EXIT_USAGE


class ProxyUnreachable(HermesError, ConnectionError):
    exit_code = EXIT_BLOCKED


class ProxyTimeout(HermesError, TimeoutError):
    exit_code = EXIT_BLOCKED


class ProxyStatusError(HermesError):
    def __init__(self, message: str, *, status: int, body: str = "") -> None:
        self.status = status
        self.body = body
        super().__init__(message)


class ProtocolViolation(HermesError):
    pass


class RigError(HermesError):
    exit_code = EXIT_BLOCKED


class NotebookFailed(HermesError):
    """A notebook job ended other than passed (its verdict cell raises it, so papermill stops and reports it)."""

    def __init__(self, message: str, *, cell: int | None = None, ename: str | None = None) -> None:
        self.cell = cell
        self.ename = ename
        super().__init__(message)

    def _render_traceback_(self) -> list[str]:
        """IPython's hook for how an exception shows in a cell: one line, no traceback (the verdict card above it
        holds the reason and the operator action; a blocked notebook is an expected outcome, not a crash)."""
        return [f"{type(self).__name__}: {self}"]


class SecretLeak(HermesError):
    pass
