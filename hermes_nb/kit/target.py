"""The endpoint a notebook, the console or a magic talks to, and its runtime config.

:func:`start_target`: an explicit endpoint, else ``HERMES_NB_ENDPOINT``, else
the manifest's endpoint when a manifest is given, else an embedded emulator
started for the session (stopped by :meth:`Target.close`). The runtime config
comes from the one resolver (:func:`hermes_nb.core.resolve.resolve_runtime_config`);
the token is read from ``HERMES_NB_AUTH_TOKEN`` inside the kernel, never a parameter.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from hermes_nb.core.errors import ConfigError

if TYPE_CHECKING:  # pydantic/httpx load on first use (the smoke's kernels start faster)
    from hermes_nb.core.config import HermesProxyRuntimeConfig

__all__ = ["Target", "start_target", "runtime_config"]


@dataclass
class Target:
    """The endpoint a notebook talks to; ``close()`` stops an embedded emulator."""

    endpoint: str
    kind: Literal["emulator", "given"]
    profile: str | None = None
    scenario: str | None = None
    handle: Any = None
    #: where the endpoint came from (``argument``, ``env HERMES_NB_ENDPOINT``, ``manifest …``, ``emulator``)
    origin: str = "argument"
    _stack: ExitStack = field(default_factory=ExitStack, repr=False)

    @property
    def hermes_bin(self) -> Literal[False] | None:
        """For ``adapter_check``: look up the local hermes only for a real proxy (``False`` skips it)."""
        return None if self.kind == "given" else False

    def temp_dir(self, prefix: str = "hermes-nb-") -> str:
        """A temporary directory removed by :meth:`close`."""
        path = tempfile.mkdtemp(prefix=prefix)
        self._stack.callback(shutil.rmtree, path, True)
        return path

    def close(self) -> None:
        self._stack.close()

    def __enter__(self) -> "Target":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def runtime_config(endpoint: str | None = None, model: str | None = None, *, manifest: str | None = None,
                   request_timeout_s: float | None = None,
                   environ: Mapping[str, str] | None = None, auth_token: str | None = None) -> HermesProxyRuntimeConfig:
    """The kernel's runtime config: arguments over ``HERMES_NB_*`` over the manifest over the defaults."""
    from hermes_nb.core.resolve import resolve_runtime_config

    timeout_ms = None
    if request_timeout_s is not None:
        if request_timeout_s <= 0:
            raise ConfigError(f"request_timeout_s must be > 0, got {request_timeout_s}")
        timeout_ms = int(request_timeout_s * 1000)
    return resolve_runtime_config(manifest=manifest, environ=environ, endpoint=endpoint or None, model=model or None,
                                  request_timeout_ms=timeout_ms, auth_token=auth_token or None)


def start_target(endpoint: str | None = None, *, profile: str = "hermes-agent", scenario: str = "ok",
                 seed: int = 0, manifest: str | None = None,
                 environ: Mapping[str, str] | None = None, delay_s: float | None = None,
                 provider: str = "nous") -> Target:
    """The target for ``endpoint`` (see the module docstring); an emulator when no endpoint is configured
    (fronting ``provider``: ``xai`` forwards ``/v1/responses`` too)."""
    from hermes_nb.core.resolve import resolve_runtime_config

    config = resolve_runtime_config(manifest=manifest, environ=environ, endpoint=endpoint or None)
    if config.origin("endpoint") != "default":
        return Target(endpoint=config.endpoint, kind="given", origin=config.origin("endpoint"))
    from hermes_nb.emulator import serve

    stack = ExitStack()
    extra = {} if delay_s is None else {"delay_s": delay_s}  # the slow scenario's pause before each delta
    handle = stack.enter_context(serve(profile=profile, scenario=scenario, seed=seed, provider=provider, **extra))
    return Target(endpoint=handle.endpoint, kind="emulator", profile=profile, scenario=scenario, handle=handle,
                  origin="emulator", _stack=stack)
