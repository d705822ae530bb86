"""The endpoint a notebook, the console or a magic talks to, and its runtime config.

The config is resolved once (:func:`runtime_config`, or :func:`hermes_nb.kit.jobs.prepare_job` for a
mission: both through :func:`hermes_nb.core.resolve.resolve_runtime_config`); :func:`start_target` then
talks to the endpoint it names — an explicit one, ``HERMES_NB_ENDPOINT``, the manifest's, the mission's —
or, when none was configured anywhere, to an embedded emulator started for the session (stopped by
:meth:`Target.close`) or handed in already running (``emulator=``: the smoke's runner starts each notebook's own),
the config pointed at it (:meth:`Target.point`). The token is read from
``HERMES_NB_AUTH_TOKEN`` inside the kernel, never a parameter.
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

__all__ = ["Target", "start_target", "runtime_config", "timeout_ms"]


@dataclass
class Target:
    """The endpoint a notebook talks to; ``close()`` stops an embedded emulator."""

    endpoint: str
    kind: Literal["emulator", "given"]
    #: the runtime config, its endpoint this target's (None for a target made by hand)
    config: HermesProxyRuntimeConfig | None = None
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

    def point(self, config: HermesProxyRuntimeConfig) -> HermesProxyRuntimeConfig:
        """``config`` aimed at this target: unchanged for a given endpoint, the emulator's for an emulator."""
        if self.kind == "given":
            return config
        return config.with_endpoint(self.endpoint, origin="emulator")

    def temp_dir(self, prefix: str = "hermes-nb-") -> str:
        """A temporary directory removed by :meth:`close`."""
        path = tempfile.mkdtemp(prefix=prefix)
        self._stack.callback(shutil.rmtree, path, True)
        return path

    def close(self) -> None:
        self._stack.close()

    def __enter__(self) -> Target:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def runtime_config(endpoint: str | None = None, model: str | None = None, *, manifest: str | None = None,
                   request_timeout_s: float | None = None,
                   environ: Mapping[str, str] | None = None, auth_token: str | None = None) -> HermesProxyRuntimeConfig:
    """The kernel's runtime config: arguments over ``HERMES_NB_*`` over the manifest over the defaults."""
    from hermes_nb.core.resolve import resolve_runtime_config

    return resolve_runtime_config(manifest=manifest, environ=environ, endpoint=endpoint or None, model=model or None,
                                  request_timeout_ms=timeout_ms(request_timeout_s), auth_token=auth_token or None)


def timeout_ms(request_timeout_s: float | None) -> int | None:
    """A notebook's ``request_timeout_s`` as runtime_config's ``request_timeout_ms`` (None: not given)."""
    if request_timeout_s is None:
        return None
    if request_timeout_s <= 0:
        raise ConfigError(f"request_timeout_s must be > 0, got {request_timeout_s}")
    return int(request_timeout_s * 1000)


def start_target(config: HermesProxyRuntimeConfig | None = None, *, profile: str = "hermes-agent",
                 scenario: str = "ok", seed: int = 0, delay_s: float | None = None,
                 environ: Mapping[str, str] | None = None, provider: str = "nous",
                 emulator: str | None = None) -> Target:
    """The target of a resolved ``config`` (see the module docstring); an emulator when it names no endpoint
    (fronting ``provider``: ``xai`` forwards ``/v1/responses`` too).

    ``config`` None: :func:`runtime_config` with nothing given (``environ``: its environment). ``emulator``: the
    endpoint of an emulator already running for this caller with ``profile``, ``scenario`` and ``seed`` (``hermes-nb
    smoke`` starts each notebook's own, :mod:`hermes_nb.nbrun.smoke`): used instead of starting one here, still
    only when the config names no endpoint; :meth:`Target.close` leaves it to its owner.
    """
    if config is None:
        config = runtime_config(environ=environ)
    if config.origin("endpoint") != "default":
        return Target(endpoint=config.endpoint, kind="given", config=config, origin=config.origin("endpoint"))
    if emulator:
        from hermes_nb.core.config import endpoint_of

        target = Target(endpoint=endpoint_of(emulator, where="emulator"), kind="emulator", profile=profile,
                        scenario=scenario, origin="emulator")
        target.config = target.point(config)
        return target
    from hermes_nb.emulator import serve_emulator

    stack = ExitStack()
    extra = {} if delay_s is None else {"delay_s": delay_s}  # the slow scenario's pause before each delta
    handle = stack.enter_context(serve_emulator(profile=profile, scenario=scenario, seed=seed, provider=provider,
                                                **extra))
    target = Target(endpoint=handle.endpoint, kind="emulator", profile=profile, scenario=scenario, handle=handle,
                    origin="emulator", _stack=stack)
    target.config = target.point(config)
    return target
