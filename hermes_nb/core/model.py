"""The one strict base of every pydantic document and record hermes_nb owns, and how a record shows itself.

Models that mirror someone else's loose document (UH's mission, which drops unknown keys as UH does)
derive from :class:`pydantic.BaseModel` with ``extra="ignore"`` instead; each says why.
"""

from __future__ import annotations

import importlib
from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["StrictModel", "Shown"]


class StrictModel(BaseModel):
    """A key the model does not know is rejected, naming it; an assignment is validated like a construction;
    a rejected value is never echoed in the error (it may be a token)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, hide_input_in_errors=True)


class Shown:
    """A record a cell can end with. Records know nothing of HTML: IPython asks ``_repr_html_``, which hands the
    record to :func:`hermes_nb.views.html` (loaded then, by name: the views sit above every record they draw).
    ``_repr_text_`` is the record's own one line."""

    def _repr_text_(self) -> str:
        return f"{type(self).__name__}(...)"

    def _repr_html_(self) -> str:
        views: Any = importlib.import_module("hermes_nb.views")
        return str(views.html(self))

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(f"{type(self).__name__}(...)" if cycle else self._repr_text_())
