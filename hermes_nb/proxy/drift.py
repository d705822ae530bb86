"""A difference between an observed wire report and a recorded contract, and a list of them that displays itself.

Each difference names its owner: the proxy's own behaviour (drift, a failure), whatever upstream answers behind it,
or nobody can tell (a relayed stream behind an upstream that is not hermes_nb's): the last two are information only
(``docs/wire-contract.md``, "Who owns a field"). The cards are :mod:`hermes_nb.views`'.
"""

from __future__ import annotations

from typing import Any, Literal

from hermes_nb.core.model import Shown, StrictModel

__all__ = ["Owner", "Drift", "DriftList", "NotJudged", "NotJudgedReason", "fmt"]

#: who a contract field describes: the proxy, whatever upstream answers behind it, or nobody can tell
Owner = Literal["proxy", "upstream", "unknown"]


class Drift(Shown, StrictModel):
    field: str
    expected: Any = None
    observed: Any = None
    #: who the field describes; only proxy-owned differences are drift
    owner: Owner = "proxy"

    def __str__(self) -> str:
        return f"{self.field}: {fmt(self.expected)} → {fmt(self.observed)}"

    def _repr_text_(self) -> str:
        return f"Drift({self})"


#: why a field was not judged: nothing answered, the local-only guard refused everything; the upstream was slow, down
#: (the proxy's own 502/504) or rate-limited (429); the probe's overall deadline ran out first
NotJudgedReason = Literal["unreachable", "not_local", "upstream_slow", "upstream_down", "rate_limited",
                          "probe_deadline"]


class NotJudged(StrictModel):
    """A contract field (or a whole route) left out of the judgement: the upstream's trouble is not drift."""

    field: str
    reason: NotJudgedReason
    detail: str = ""
    #: Retry-After of a rate-limited answer (seconds)
    retry_after_s: float | None = None

    def __str__(self) -> str:
        return f"{self.field}: not judged ({self.reason}{': ' + self.detail if self.detail else ''})"


class DriftList(Shown, list["Drift"]):
    """The drift of a report from a contract (``contract``: its ``target``): a plain list of :class:`Drift` that also
    displays itself."""

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


def fmt(value: Any) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, list):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return str(value)
