"""The final-message sentinel: the prompt instruction and the extractor.

The model ends its answer with a fenced block tagged ``uh-runtime-final-message``;
its trimmed content is the run's final message (``runtime-final.txt``).

The extractor is a line scanner, not UH's lazy regex:

* an opening line is exactly ```` ```uh-runtime-final-message ```` plus optional
  spaces/tabs, followed by ``\\n`` or ``\\r\\n`` (case-sensitive, no suffix);
* inside a block, an unindented line starting with ```` ``` ```` plus an info
  string (```` ```python ````) opens an inner fence, and a bare ```` ``` ```` line
  closes the innermost open inner fence; a bare ```` ``` ```` line (not indented,
  trailing spaces/tabs allowed) with no inner fence open closes the block;
* a new opening line while a block is still open restarts from it, so an
  unclosed sentinel never swallows a later real one;
* the last complete block wins; its content is trimmed; CRLF is fine.
"""

from __future__ import annotations

import re

from hermes_nb.core.facts import SENTINEL_TAG

__all__ = [
    "SENTINEL_TAG",
    "runtime_final_message_instruction",
    "extract_final_message",
    "wrap_final_message",
]

_FENCE = "```"
_OPEN_RE = re.compile(r"```" + re.escape(SENTINEL_TAG) + r"[ \t]*")

_INSTRUCTION = f"""
## Runtime final message

When you are done, end your answer with a one-paragraph summary of what you did
and the outcome, inside a fenced block tagged `{SENTINEL_TAG}`, like this:

{_FENCE}{SENTINEL_TAG}
<one-paragraph summary of the outcome>
{_FENCE}

This block must come last in your answer; nothing may follow it. Its content is
copied to `runtime-final.txt`.
"""


def runtime_final_message_instruction() -> str:
    """The instruction appended to every mission prompt (starts with a newline)."""
    return _INSTRUCTION


def wrap_final_message(summary: str) -> str:
    """A sentinel block holding ``summary`` (trimmed), ending with a newline."""
    return f"{_FENCE}{SENTINEL_TAG}\n{summary.strip()}\n{_FENCE}\n"


def extract_final_message(text: str) -> str | None:
    """The trimmed content of the last complete sentinel block, or None."""
    if not text or SENTINEL_TAG not in text:
        return None
    best: str | None = None
    open_at: int | None = None  # offset where the open block's content starts
    depth = 0  # inner fences open inside the block
    pos = 0
    size = len(text)
    while True:
        nl = text.find("\n", pos)
        if not text.startswith(_FENCE, pos):  # only fence lines matter: never copy a (long) prose line (P5)
            if nl < 0:
                return best
            pos = nl + 1
            continue
        end = size if nl < 0 else nl
        line = text[pos:end]
        if line.endswith("\r"):
            line = line[:-1]
        if nl >= 0 and line.startswith(_FENCE) and _OPEN_RE.fullmatch(line):
            open_at, depth = nl + 1, 0
        elif open_at is not None and line.startswith(_FENCE):
            if line.rstrip(" \t") == _FENCE:
                if depth:
                    depth -= 1
                else:
                    best = text[open_at:max(open_at, pos - 1)].strip()
                    open_at = None
            else:
                depth += 1
        if nl < 0:
            return best
        pos = nl + 1
