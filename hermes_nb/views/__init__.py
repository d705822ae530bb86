"""The one place HTML is made: the toolkit (:mod:`~hermes_nb.views.htmlkit`), the stream timeline, and the card of
every record a cell can end with (:mod:`~hermes_nb.views.cards`). Records never import this package: IPython asks a
record's ``_repr_html_`` (:class:`hermes_nb.core.model.Shown`), which hands it to :func:`html`."""

from hermes_nb.views import cards as _cards  # noqa: F401  (registers the cards)
from hermes_nb.views.registry import card, html

__all__ = ["html", "card"]
