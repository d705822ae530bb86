"""Redaction of text that arrives in pieces (the run's streamed answer).

Redacting each delta alone lets a secret split across two deltas through
(``"sk-canary-01"`` + ``"23456789abcdef"``). :class:`StreamRedactor` holds back
the shortest tail that could still become a secret — a proper prefix of a
known secret, or a token that could grow into a secret *shape* (``sk-…``,
a JWT, ``Bearer …``) — and releases it once the next piece settles it.
Ordinary prose ends its pieces at a space, so little or nothing is held.

It also remembers where the secrets of the settled text are, so the SSE
event that carried one piece can be logged with its share of a split secret
masked (:meth:`StreamRedactor.mask`; used by :mod:`hermes_nb.harness.stream_log`).

Property (tested): however the text is split, the concatenated output equals
``redactor.text(whole)`` and never contains a known secret.
"""

from __future__ import annotations

import bisect
import string

from hermes_nb.core.redaction import REDACTED, Redactor

__all__ = ["StreamRedactor"]

#: A growing shape's tail (redaction.SHAPES) is a run of token characters at the very end (``sk-…``, a JWT,
#: ``Bearer``'s first letters), or ``bearer`` + whitespace + such a run. Token characters: the classes of
#: the shapes plus the letters that match ASCII ones case-insensitively (Kelvin sign, long s, dotless i,
#: dotted I). :func:`_tail_start` finds where such a tail can begin, so ``_safe_cut`` searches a few
#: characters instead of the whole pending text (30 µs per ``…$`` pattern per delta: P5). Property-tested
#: against the unbounded search for every growing pattern (tests/product/test_fuzz.py).
_TOKEN_CHARS = string.ascii_letters + string.digits + "._~+/=-" + "\u212a\u017f\u0131\u0130"
_SPACE_CHARS = "".join(chr(c) for c in range(0x3000 + 1) if chr(c).isspace())


def _tail_start(buffer: str) -> int:
    """The earliest place a growing shape can match ``…$`` in ``buffer``."""
    run = len(buffer.rstrip(_TOKEN_CHARS))  # the trailing token run starts here
    spaces = len(buffer[:run].rstrip(_SPACE_CHARS))  # the whitespace before it
    return max(0, spaces - len("bearer"))


class StreamRedactor:
    """Feed pieces, get redacted text that is safe to write now; :meth:`flush` at the end.

    ``settled`` counts the raw characters already released; ``mask(start, end)``
    returns ``raw[start:end]`` (settled text only) with the parts that belong to
    a secret replaced by ``<redacted>``. Only a window of recent text is kept
    for that (:meth:`forget` moves its start), so a long answer costs linear time.
    """

    #: characters kept before the window start, so ``\b`` in the shapes sees the previous character
    MARGIN = 64

    def __init__(self, redactor: Redactor) -> None:
        self.redactor = redactor
        self.length = 0
        self.settled = 0
        self._pieces: list[str] = []
        self._window = ""  # raw[self._wstart:]
        self._wstart = 0
        self._spans: list[tuple[int, int]] = []

    @property
    def raw(self) -> str:
        """Everything fed so far (joined on demand)."""
        if len(self._pieces) > 1:
            self._pieces = ["".join(self._pieces)]
        return self._pieces[0] if self._pieces else ""

    def adopt(self, whole: str) -> bool:
        """If ``whole`` equals everything fed so far, hold it instead of the pieces (no join, one copy).

        True when adopted; :attr:`raw` is then ``whole`` itself. A long answer is otherwise held twice
        (the pieces and the client's joined text) and joined a third time for :attr:`raw`.
        """
        if len(whole) != self.length:
            return False
        pos = 0
        for piece in self._pieces:
            if not whole.startswith(piece, pos):
                return False
            pos += len(piece)
        self._pieces = [whole] if whole else []
        return True

    @property
    def kept(self) -> int:
        """How many raw characters the mask window holds."""
        return len(self._window)

    @property
    def pending(self) -> str:
        return self._window[self.settled - self._wstart:]

    def feed(self, piece: str) -> str:
        self._pieces.append(piece)
        self._window += piece
        self.length += len(piece)
        return self._release(self.settled + self._safe_cut(self.pending))

    def flush(self) -> str:
        return self._release(self.length)

    def forget(self, before: int) -> None:
        """Text before ``before`` (and before ``settled``) will not be masked again: drop it from the window."""
        cut = min(before, self.settled) - self.MARGIN
        if cut > self._wstart:
            self._window = self._window[cut - self._wstart:]
            self._wstart = cut
            drop = bisect.bisect_left(self._spans, (cut, -1))
            del self._spans[:max(0, drop - 1)]

    def _text(self, start: int, end: int) -> str:
        return self._window[start - self._wstart:end - self._wstart]

    def mask(self, start: int, end: int) -> str:
        """``raw[start:end]`` with every character inside a secret replaced (one marker per secret)."""
        if end > self.settled or start < self._wstart:
            raise ValueError("mask() of text that is not settled yet or already forgotten")
        out: list[str] = []
        pos = start
        first = bisect.bisect_left(self._spans, (start, -1))
        if first and self._spans[first - 1][1] > start:
            first -= 1
        for s_start, s_end in self._spans[first:]:
            if s_start >= end:
                break
            if s_start > pos:
                out.append(self._text(pos, s_start))
            out.append(REDACTED)
            pos = max(pos, min(s_end, end))
        out.append(self._text(pos, end))
        return self.redactor.text("".join(out))

    def _release(self, upto: int) -> str:
        start = self.settled
        if upto <= start:
            return ""
        self._record_spans(start, upto)
        self.settled = upto
        return self.redactor.text(self._text(start, upto))

    def _record_spans(self, start: int, end: int) -> None:
        found: list[tuple[int, int]] = []
        window, base = self._window, self._wstart
        for secret in self.redactor.secrets:
            at = window.find(secret, start - base, end - base)
            while at != -1:
                found.append((base + at, base + at + len(secret)))
                at = window.find(secret, at + len(secret), end - base)
        for shape in self.redactor.shapes:
            # a shape with groups (``bearer <token>``) keeps its prefix: only the last group is secret
            found.extend((base + m.start(m.lastindex or 0), base + m.end(m.lastindex or 0))
                         for m in shape.finditer(window, start - base, end - base))
        for span in sorted(found):  # merge overlaps; spans never straddle a release point
            if self._spans and span[0] < self._spans[-1][1]:
                self._spans[-1] = (self._spans[-1][0], max(self._spans[-1][1], span[1]))
            else:
                self._spans.append(span)

    def _safe_cut(self, buffer: str) -> int:
        cut = len(buffer)
        for secret in self.redactor.secrets:  # the longest tail that starts a known secret
            for size in range(min(len(secret) - 1, len(buffer)), 0, -1):
                if buffer.endswith(secret[:size]):
                    cut = min(cut, len(buffer) - size)
                    break
        tail = _tail_start(buffer)
        for shape in self.redactor.shapes:
            for pattern in shape.growing:
                match = pattern.search(buffer, tail)
                if match:
                    cut = min(cut, match.start())
        while True:  # never cut through a secret or a shape that is already complete
            moved = self._straddling(buffer, cut)
            if moved is None:
                return cut
            cut = moved

    def _straddling(self, buffer: str, cut: int) -> int | None:
        for secret in self.redactor.secrets:
            start = buffer.find(secret, max(0, cut - len(secret) + 1))
            if start != -1 and start < cut:
                return start
        for shape in self.redactor.shapes:
            for match in shape.finditer(buffer):
                if match.start() < cut < match.end():
                    return match.start()
        return None
