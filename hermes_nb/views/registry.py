"""Which card draws which record, by the record's class name (the table is :mod:`hermes_nb.views.cards`')."""

from hermes_nb.views.cards import card, html

__all__ = ["card", "html"]
