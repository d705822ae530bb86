"""A difference between an observed wire report and a recorded contract, and a list of them that displays itself.

Each difference names its owner: the proxy's own behaviour (drift, a failure) or whatever upstream answers
behind it (information only; see ``docs/wire-contract.md``, "Who owns a field").
"""

from __future__ import annotations

from typing import Any, Literal

from hermes_nb.core.model import StrictModel

__all__ = ["Owner", "Drift", "DriftList", "drift_table"]

#: who a contract field describes: the proxy's own behaviour, or whatever upstream answers behind it
Owner = Literal["proxy", "upstream"]


class Drift(StrictModel):
    field: str
    expected: Any = None
    observed: Any = None
    #: who the field describes; upstream-owned differences are information, never drift
    owner: Owner = "proxy"

    def __str__(self) -> str:
        return f"{self.field}: {_fmt(self.expected)} → {_fmt(self.observed)}"

    def _repr_html_(self) -> str:
        return DriftList([self])._repr_html_()

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(f"Drift({self})")


class DriftList(list):  # type: ignore[type-arg]
    """The drift of a report from a contract: a plain list of :class:`Drift` that also displays itself.

    ``contract``: the contract compared with (its ``target``), named by the display.
    """

    def __init__(self, items: Any = (), contract: str | None = None) -> None:
        super().__init__(items)
        self.contract = contract

    @property
    def headline(self) -> str:
        """``no drift vs <contract>`` or ``drift: N proxy-owned lines vs <contract>``."""
        against = f" vs {self.contract}" if self.contract else ""
        if not self:
            return f"no drift{against}"
        return f"drift: {len(self)} proxy-owned line{'s' if len(self) != 1 else ''}{against}"

    def _repr_text_(self) -> str:
        if not self:
            return f"{self.headline}: the proxy matches the recorded wire contract"
        return f"{self.headline}:\n" + "\n".join(f"  {d}" for d in self)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text("DriftList(...)" if cycle else self._repr_text_())

    def _repr_html_(self) -> str:
        from hermes_nb.core.reprs import box, table_html

        if not self:
            return box("wire contract", "passed", "<div>the proxy matches the recorded wire contract.</div>",
                       headline=self.headline)
        return box("wire contract", "failed", drift_table(self), headline=self.headline)


def drift_table(drifts: Any) -> str:
    """One row per difference: field, expected, observed."""
    from hermes_nb.core.reprs import table_html

    rows = [{"field": d.field, "expected": _fmt(d.expected), "observed": _fmt(d.observed)} for d in drifts]
    return table_html(rows, ("field", "expected", "observed"))


def _fmt(value: Any) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, list):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return str(value)
