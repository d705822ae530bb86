"""Where HTML is made: the toolkit, the stream timeline and the card of every record a cell can end with."""

from hermes_nb.views.cards import html

__all__ = ["html"]
