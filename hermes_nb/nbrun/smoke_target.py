"""Where the smoke's notebooks point, and the check that a "live" endpoint is not an emulator.

Target kinds: ``emulator`` (the embedded emulator, or an endpoint that turns out
to answer from it), ``rig`` (the real proxy rig) and ``live``. A ``live``
target is checked first (:func:`confirm_target`): the promotion gate only
accepts live receipts, so pointing ``--endpoint`` at an emulator must not
produce one.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from hermes_nb.proxy.identity import detect_emulator

if TYPE_CHECKING:
    import httpx  # annotations only: the client imports it when a request is made

__all__ = ["TARGET_KINDS", "SmokeTarget", "confirm_target"]

TARGET_KINDS = ("emulator", "rig", "live")


@dataclass
class SmokeTarget:
    """Where the notebooks point: ``endpoint`` None = each notebook gets its own emulator
    (:mod:`hermes_nb.nbrun.emulators`)."""

    kind: str = "emulator"
    endpoint: str | None = None
    model: str | None = None
    hermes_version: str | None = None
    secrets: list[str] = field(default_factory=list)
    #: why the kind is what it is when it was not taken as given (see :func:`confirm_target`)
    evidence: str | None = None
    #: where the endpoint came from (``argument``, ``env HERMES_NB_ENDPOINT``; None for the embedded emulator)
    endpoint_origin: str | None = None
    #: the provider the proxy fronts (the rig's ``--provider``, a live proxy's ``/health``; None: not known)
    provider: str | None = None


def confirm_target(target: SmokeTarget, *, transport: httpx.BaseTransport | None = None) -> SmokeTarget:
    """A ``live`` target whose endpoint answers from the emulator becomes kind ``emulator`` (with evidence)."""
    if target.kind != "live" or not target.endpoint:
        return target
    token = next((s for s in target.secrets if s), None)
    evidence = detect_emulator(target.endpoint, auth_token=token, transport=transport)
    if evidence is None:
        return target
    return replace(target, kind="emulator", hermes_version=None, evidence=evidence)
