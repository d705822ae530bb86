"""The one place HTML is made: the toolkit (:mod:`~hermes_nb.views.htmlkit`), the stream timeline, and the card of
every record a cell can end with. Records never import this package: IPython asks a record's ``_repr_html_``
(:class:`hermes_nb.core.model.Shown`), which hands it to :func:`html`, dispatched on the record's class name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hermes_nb.views.htmlkit import box, esc, kv_html
from hermes_nb.views.reprs import exchange_html

__all__ = ["html", "card"]

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


@card("CheckResult")
def check_card(result: Any) -> str:
    models = ", ".join(result.models[:8]) + (f", … ({len(result.models)} in all)" if len(result.models) > 8 else "")
    provider = result.provider or result.upstream
    if result.provider:
        extra = [x for x in (result.upstream, f"from {result.provider_source}" if result.provider_source else None)
                 if x]
        provider = result.provider + (f" ({', '.join(extra)})" if extra else "")
    model = None
    if result.model:
        origin = result.model_origin
        model = result.model + (f" ({origin})" if origin and origin != "configured" else "")
    release = result.release + (f" ({result.release_source})" if result.release_source else "")
    pairs: list[tuple[str, Any]] = [("state", result.state), ("verdict", result.verdict),
                                    ("endpoint", result.endpoint), ("provider", provider), ("model", model),
                                    ("models", models or None), ("HTTP status", result.http_status),
                                    ("release", release), ("hint", result.hint)]
    pairs += [("error", e) for e in result.errors] + [("warning", w) for w in result.warnings]
    return box("adapter check", result.state, kv_html(pairs, badges=("state", "verdict")))
