"""Upstream trouble that is not the proxy's: an upstream that is slow to start answering, or slow to finish.

Two scenarios of the upstream behind a proxy (issue 18, "upstream trouble is not proxy drift"):

``slow-first-byte``
    every answer's status line comes after ``Settings.first_byte_s`` (default 6 s): an upstream that thinks
    before it answers. The proxy waits (its own read timeout is 300 s) and relays it.
``slow-answer``
    generated answers (chat, completions, responses) take ``Settings.answer_s`` in all (default 25 s): the
    status line at once, the body spread evenly over the time (a stream: pauses between deltas);
    ``/models`` and ``/embeddings`` answer at once.

Neither is a fault: a probe must not call it drift and a smoke must pass (the e2e run waits up to
``request_timeout_ms``). Kept apart from :mod:`.scenarios` (the list checked against the real proxy's
pass-through): these take seconds by design.
"""

from __future__ import annotations

from .scenarios import TROUBLE_SCENARIOS, Part, Pause, Reply

__all__ = ["TROUBLE_SCENARIOS", "first_byte_delay", "stretch"]

_GENERATED = frozenset({"/chat/completions", "/completions", "/responses"})


def first_byte_delay(scenario: str, first_byte_s: float) -> float:
    """Seconds to wait before the status line (0: none)."""
    return first_byte_s if scenario == "slow-first-byte" else 0.0


def stretch(reply: Reply, scenario: str, route: str, answer_s: float) -> Reply:
    """``slow-answer``: the body of a generated 2xx answer spread over ``answer_s`` seconds."""
    if scenario != "slow-answer" or route not in _GENERATED or not 200 <= reply.status < 300:
        return reply
    pieces = [p for p in reply.parts if isinstance(p, bytes)]
    if len(pieces) < 2:  # one JSON body: all of it after the wait, sent chunked so the headers go first
        return Reply(reply.status, reply.content_type, [Pause(answer_s), *reply.parts], dict(reply.headers),
                     streamed=True)
    gap = answer_s / (len(pieces) - 1)
    parts: list[Part] = [pieces[0]]
    for piece in pieces[1:]:
        parts += [Pause(gap), piece]
    return Reply(reply.status, reply.content_type, parts, dict(reply.headers), streamed=True)
