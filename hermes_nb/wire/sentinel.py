"""The final-message sentinel (``runtime-final.txt``): a superset of UH's lazy regex: inner fences nest, the last
complete block that is not a placeholder wins, and when none is found UH's regex decides."""

from __future__ import annotations

import re

from hermes_nb.core.facts import SENTINEL_TAG

_FENCE = "```"
_PLACEHOLDER = "<one-paragraph summary of the outcome>"
#: the example contents of our instruction and of UH's: never a final message
SENTINEL_PLACEHOLDERS = frozenset({_PLACEHOLDER,
                                   "<one-paragraph summary of what you did, what changed, and any caveats>"})
_OPEN_RE = re.compile(r"```" + re.escape(SENTINEL_TAG) + r"[ \t]*$")
_CLOSE_RE = re.compile(r"[ \t]*`{3,}[ \t]*")
_INNER_RE = re.compile(r"[ \t]*```+[^`\s][^`]*")
#: UH's extractor (src/harness/runtime-final-message.ts), the fallback
_UH_RE = re.compile(r"```" + re.escape(SENTINEL_TAG) + r"[ \t]*\r?\n([\s\S]*?)\r?\n```")



def runtime_final_message_instruction() -> str:
    """The instruction appended to every mission prompt (starts with a newline)."""
    return f"""
## Runtime final message

When you are done, end your answer with a one-paragraph summary of what you did
and the outcome, inside a fenced block tagged `{SENTINEL_TAG}`, like this:

{_FENCE}{SENTINEL_TAG}
{_PLACEHOLDER}
{_FENCE}

This block must come last in your answer; nothing may follow it. Its content is
copied to `runtime-final.txt`.
"""


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
        # only lines holding a fence matter: jump to the next one, never copy a (long) prose line (P5)
        fence_at = text.find(_FENCE, pos)
        if fence_at < 0:
            break
        pos = max(pos, text.rfind("\n", 0, fence_at) + 1)
        nl = text.find("\n", pos)
        end = size if nl < 0 else nl
        line = text[pos:end]
        if line.endswith("\r"):
            line = line[:-1]
        if nl >= 0 and SENTINEL_TAG in line and _OPEN_RE.search(line):
            open_at, depth = nl + 1, 0
        elif open_at is not None and _FENCE in line:
            if _CLOSE_RE.fullmatch(line):
                if depth:
                    depth -= 1
                else:
                    found = text[open_at:max(open_at, pos - 1)].strip()
                    if found not in SENTINEL_PLACEHOLDERS:
                        best = found
                    open_at = None
            elif _INNER_RE.fullmatch(line):
                depth += 1
        if nl < 0:
            break
        pos = nl + 1
    if best is not None:
        return best
    matches = [m.group(1).strip() for m in _UH_RE.finditer(text)]  # UH's rule: the last lazy match
    return next((m for m in reversed(matches) if m not in SENTINEL_PLACEHOLDERS), None)
