"""A difference between an observed wire report and a recorded contract, and a list of them that displays itself.

Each difference names its owner: the proxy's own behaviour (drift, a failure) or whatever upstream answers
behind it (information only; see ``docs/wire-contract.md``, "Who owns a field").
"""

from __future__ import annotations

from typing import Any, Literal

from hermes_nb.core.model import StrictModel

__all__ = ["Owner", "Drift", "DriftList", "drift_table", "NotJudged", "NotJudgedReason"]

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


#: why a field was not judged: nothing answered (``unreachable``); the upstream did not answer in time
#: (``upstream_slow``), the proxy reported it down (``upstream_down``: its own 502/504), it refused for now
#: (``rate_limited``: 429); the probe's overall deadline ran out first (``probe_deadline``)
NotJudgedReason = Literal["unreachable", "upstream_slow", "upstream_down", "rate_limited", "probe_deadline"]


class NotJudged(StrictModel):
    """A contract field (or a whole route) left out of the judgement: the upstream's trouble is not drift."""

    field: str
    reason: NotJudgedReason
    detail: str = ""
    #: Retry-After of a rate-limited answer (seconds)
    retry_after_s: float | None = None

    def __str__(self) -> str:
        return f"{self.field}: not judged ({self.reason}{': ' + self.detail if self.detail else ''})"


class DriftList(list["Drift"]):
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
        from hermes_nb.views.reprs import box

        if not self:
            return box("wire contract", "passed", "<div>the proxy matches the recorded wire contract.</div>",
                       headline=self.headline)
        return box("wire contract", "failed", drift_table(self), headline=self.headline)


def drift_table(drifts: Any) -> str:
    """One row per difference: field, expected, observed."""
    from hermes_nb.views.reprs import table_html

    rows = [{"field": d.field, "expected": _fmt(d.expected), "observed": _fmt(d.observed)} for d in drifts]
    return table_html(rows, ("field", "expected", "observed"))


def _fmt(value: Any) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, list):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return str(value)
