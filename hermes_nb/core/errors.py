"""Every error class of the package, drawn once; each ``str()`` is one line, never a secret. A call's HTTP and
network failures are recorded in an :class:`~hermes_nb.core.records.Exchange`, raised only on request::

    HermesError            (exit 1 unless said)
    ├── ConfigError        a bad runtime_config, manifest, mission or overrides (exit 2)
    │   └── UnknownKeyError    a key the strict schema does not know
    ├── UsageError         bad command-line usage (exit 2)
    ├── ArtifactError      an artifact path escaping its directory, a symlink, an unwritable root (exit 2)
    ├── ProxyUnreachable   no server where one is required; also a ConnectionError (exit 3)
    ├── ProxyTimeout       a server did not start or answer in time; also a TimeoutError (exit 3)
    ├── ProxyStatusError   a required exchange answered an error status
    ├── ProtocolViolation  a required exchange broke the wire format
    ├── RigError           the real proxy could not be started (exit 3)
    ├── NotebookFailed     a notebook job did not pass
    ├── SecretLeak         a secret was found where it must not be (nothing written)
    ├── PromotionRefused   the receipt does not justify a promotion
    └── PublishError       receipts could not be uploaded to shared storage

    never escaping to a caller: Cancelled (harness/signals.py, a signal ending a run)
"""

from __future__ import annotations

from hermes_nb.core.facts import EXIT_BLOCKED, EXIT_FAILED, EXIT_USAGE


class HermesError(Exception):
    #: the CLI's exit code when this error escapes to the command line
    exit_code: int = EXIT_FAILED


class ConfigError(HermesError, ValueError):
    exit_code = EXIT_USAGE

    def __init__(self, message: str, *, problems: list[str] | None = None) -> None:
        self.problems = list(problems) if problems else [message]
        super().__init__(message)


class UnknownKeyError(ConfigError):
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
    """``status``: HTTP, or the in-band error's; ``body``: redacted."""

    def __init__(self, message: str, *, status: int, body: str = "") -> None:
        self.status = status
        self.body = body
        super().__init__(message)


class ProtocolViolation(HermesError):
    pass


class RigError(HermesError):
    exit_code = EXIT_BLOCKED


class NotebookFailed(HermesError):
    """``cell``/``ename``: the failing cell's index and exception name, when a runner saw it."""

    def __init__(self, message: str, *, notebook: str | None = None, cell: int | None = None,
                 ename: str | None = None) -> None:
        self.notebook = notebook
        self.cell = cell
        self.ename = ename
        super().__init__(message)

    def _render_traceback_(self) -> list[str]:
        """IPython's hook: one line, no traceback (the verdict card above holds the reason: no crash)."""
        return [f"{type(self).__name__}: {self}"]


class SecretLeak(HermesError):
    pass


class PromotionRefused(HermesError):
    def __init__(self, reasons: list[str]) -> None:
        self.problems = [f"promotion refused: {r}" for r in reasons]
        self.reasons = reasons
        super().__init__(self.problems[0] if len(reasons) == 1 else f"promotion refused: {'; '.join(reasons)}")


class PublishError(HermesError):
    """The receipts are kept in a local directory the message names."""
