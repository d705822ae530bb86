"""Where HTML is made: the toolkit, the stream timeline and the card of every record a cell can end with."""

from hermes_nb.views import cards as _cards  # noqa: F401  (registers the cards)
from hermes_nb.views.registry import card, html

__all__ = ["html", "card"]
