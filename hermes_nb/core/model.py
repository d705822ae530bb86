"""The one strict base of every pydantic document and record hermes_nb owns: an unknown key is an error.

Models that mirror someone else's loose document (UH's mission, which drops unknown keys as UH does)
derive from :class:`pydantic.BaseModel` with ``extra="ignore"`` instead; each says why.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["StrictModel"]


class StrictModel(BaseModel):
    """A key the model does not know is rejected, naming it; an assignment is validated like a construction;
    a rejected value is never echoed in the error (it may be a token)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, hide_input_in_errors=True)
