"""The strict base of every pydantic model hermes_nb owns, how a record shows itself, a running server's handle."""

from __future__ import annotations

import importlib
from typing import Any, Self

from pydantic import BaseModel, ConfigDict


class StrictModel(BaseModel):
    """Unknown keys rejected, assignments validated, a rejected value never echoed (it may be a token)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, hide_input_in_errors=True)


class Shown:
    """A record a cell can end with; the views are loaded by name (they sit above every record they draw)."""

    def _repr_text_(self) -> str:
        return f"{type(self).__name__}(...)"

    def _repr_html_(self) -> str:
        views: Any = importlib.import_module("hermes_nb.views")
        return str(views.html(self))

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(f"{type(self).__name__}(...)" if cycle else self._repr_text_())


class EndpointHandle(str):
    """A running server that *is* its endpoint string; every keyword becomes an attribute."""

    endpoint: str

    def __new__(cls, endpoint: str, **fields: Any) -> Self:
        obj = super().__new__(cls, endpoint)
        obj.endpoint = endpoint
        for key, value in fields.items():
            object.__setattr__(obj, key, value)
        return obj
