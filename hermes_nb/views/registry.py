"""Which card draws which record, by the record's class name (records never import the views)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hermes_nb.views.htmlkit import esc
from hermes_nb.views.reprs import exchange_html

__all__ = ["card", "html"]

_CARDS: dict[str, Callable[[Any], str]] = {"Exchange": exchange_html}


def card(name: str) -> Callable[[Callable[[Any], str]], Callable[[Any], str]]:
    """Register the card of the record class ``name`` (a decorator)."""
    def register(func: Callable[[Any], str]) -> Callable[[Any], str]:
        _CARDS[name] = func
        return func
    return register


def html(record: Any) -> str:
    """The record's card; a record with none shows its one line."""
    draw = _CARDS.get(type(record).__name__)
    return draw(record) if draw is not None else f"<pre>{esc(record._repr_text_())}</pre>"
