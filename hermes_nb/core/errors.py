"""The hermes_nb error tree: every error class the package defines, drawn once.

HTTP and network failures during a call are *not* raised: the client returns an
:class:`~hermes_nb.core.records.Exchange` that records them and the classifier turns
that into passed/failed/blocked. Exceptions are for programming, configuration and
orchestration errors, and for callers that *require* an answer
(:meth:`Exchange.raise_for_status <hermes_nb.core.records.Exchange.raise_for_status>`)::

    HermesError                                                                  (CLI exit 1 unless said)
    ├── ConfigError            invalid runtime_config / manifest / mission / overrides  (exit 2)
    │   └── UnknownKeyError    a key the strict schema does not know
    ├── UsageError             bad CLI usage or argument combination                     (exit 2)
    ├── ArtifactError          an artifact path escaping its directory, a symlink, unwritable root (exit 2)
    ├── ProxyUnreachable       no server where one is required: the emulator cannot listen (serve),
    │                          a required exchange found no proxy (raise_for_status); also ConnectionError (exit 3)
    ├── ProxyTimeout           the emulator did not start in time (serve), a required exchange timed out;
    │                          also a builtin TimeoutError                                (exit 3)
    ├── ProxyStatusError       a required exchange answered an error status (status, body kept)
    ├── ProtocolViolation      a required exchange broke the wire format (malformed stream or body)
    ├── RigError               the real proxy could not be started (e.g. not logged in) (exit 3)
    ├── NotebookFailed         a notebook job did not pass (notebook, cell, ename kept where known)
    ├── SecretLeak             a secret was found where it must not be (a receipt refuses to be written)
    ├── PromotionRefused       the receipt does not justify a promotion (reasons kept)
    └── PublishError           receipts could not be uploaded to shared storage

    outside the tree, never escaping to a caller:
    Cancelled (BaseException)  harness/signals.py: a signal ending a run, turned into a cancelled result

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
    "PromotionRefused",
    "PublishError",
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
    """Bad command-line usage or argument combination."""

    exit_code = EXIT_USAGE


class ArtifactError(HermesError):
    """An artifact path that escapes its directory, a symlink in the way, an unwritable root."""

    exit_code = EXIT_USAGE


class ProxyUnreachable(HermesError, ConnectionError):
    """No server where one is required (an emulator that cannot listen, a required exchange with no proxy)."""

    exit_code = EXIT_BLOCKED


class ProxyTimeout(HermesError, TimeoutError):
    """A server that was required did not start or answer in time."""

    exit_code = EXIT_BLOCKED


class ProxyStatusError(HermesError):
    """A required exchange answered an error: ``status`` (HTTP, or the in-band error's) and ``body`` (redacted)."""

    def __init__(self, message: str, *, status: int, body: str = "") -> None:
        self.status = status
        self.body = body
        super().__init__(message)


class ProtocolViolation(HermesError):
    """A required exchange broke the wire format: malformed SSE frames, a body that is neither JSON nor a stream,
    a connection broken mid-answer."""


class RigError(HermesError):
    """The real proxy (or the upstream behind it) could not be started."""

    exit_code = EXIT_BLOCKED


class NotebookFailed(HermesError):
    """A notebook job did not pass. ``notebook``: its name; ``cell``/``ename``: the failing cell's index and its
    exception's name, set by a runner that saw the cell error (None inside the kernel, where the raising
    cell is the verdict cell itself). The verdict cell raises it so papermill stops and reports the notebook;
    in the cell it shows as one line (:meth:`_render_traceback_`)."""

    def __init__(self, message: str, *, notebook: str | None = None, cell: int | None = None,
                 ename: str | None = None) -> None:
        self.notebook = notebook
        self.cell = cell
        self.ename = ename
        super().__init__(message)

    def _render_traceback_(self) -> list[str]:
        """IPython's hook for how an exception shows in a cell: one line, no traceback (the verdict card above it
        holds the reason and the operator action; a blocked notebook is an expected outcome, not a crash)."""
        return [f"{type(self).__name__}: {self}"]


class SecretLeak(HermesError):
    """A secret was found where it must not be; nothing was written."""


class PromotionRefused(HermesError):
    """The receipt does not justify a promotion (exit 1); ``reasons`` lists why, ``problems`` one line each."""

    def __init__(self, reasons: list[str]) -> None:
        self.problems = [f"promotion refused: {r}" for r in reasons]
        self.reasons = reasons
        super().__init__(self.problems[0] if len(reasons) == 1 else f"promotion refused: {'; '.join(reasons)}")


class PublishError(HermesError):
    """Receipts could not be uploaded (exit 1); they are kept in a local directory the message names."""
