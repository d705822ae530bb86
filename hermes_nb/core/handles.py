"""The one handle shape: a running server that *is* its endpoint string.

``with serve() as emu:`` / ``with real_proxy() as endpoint:`` hand back a :class:`EndpointHandle`: its string
value is the endpoint (``http://127.0.0.1:<port>/v1``), so it goes wherever an endpoint does, and it carries
the server's facts as attributes. The emulator's, the rig's and a command upstream's handles derive from it.
"""

from __future__ import annotations

from typing import Any, TypeVar

__all__ = ["EndpointHandle"]

H = TypeVar("H", bound="EndpointHandle")


class EndpointHandle(str):
    """A string equal to ``endpoint``; every keyword becomes an attribute of the handle."""

    endpoint: str

    def __new__(cls: type[H], endpoint: str, **fields: Any) -> H:
        obj = super().__new__(cls, endpoint)
        obj.endpoint = endpoint
        for key, value in fields.items():
            object.__setattr__(obj, key, value)
        return obj
