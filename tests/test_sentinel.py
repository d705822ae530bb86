"""The final-message sentinel: instruction text and the line-scanning extractor."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from hermes_nb.wire.sentinel import (
    SENTINEL_TAG,
    extract_final_message,
    runtime_final_message_instruction,
    wrap_final_message,
)

F = "```"
OPEN = F + SENTINEL_TAG


def test_instruction_follows_the_uh_outline() -> None:
    text = runtime_final_message_instruction()
    assert text.startswith("\n## Runtime final message\n")
    assert f"\n{OPEN}\n" in text and "runtime-final.txt" in text and "last" in text
    # the example block is itself extractable: its placeholder is what a model would replace
    example = extract_final_message(text)
    assert example is not None and example.startswith("<") and example.endswith(">")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"answer\n{OPEN}\n  the summary  \n{F}\n", "the summary"),
        (f"answer\r\n{OPEN}\r\nline one\r\nline two\r\n{F}\r\n", "line one\r\nline two"),
        (f"{OPEN} \t\nspaces after the tag\n{F}", "spaces after the tag"),
        (f"{OPEN}\nfirst\n{F}\nmore text\n{OPEN}\nsecond\n{F}\n", "second"),
        (f"{OPEN}\n{F}\n", ""),
        (f"{OPEN}\n\n{F}\n", ""),
        (f"{OPEN}\nclosing fence may have trailing spaces\n{F}  \n", "closing fence may have trailing spaces"),
    ],
    ids=["basic", "crlf", "tag-trailing-ws", "last-wins", "empty", "empty-blank", "close-trailing-ws"],
)
def test_extracts(text: str, expected: str) -> None:
    assert extract_final_message(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "no block at all",
        "",
        f"{F}uh-runtime-final-messages\nsuffix on the tag\n{F}\n",
        f"{F}UH-RUNTIME-FINAL-MESSAGE\ncase matters\n{F}\n",
        f"  {OPEN}\nindented opener\n{F}\n",
        f"{OPEN}\nnever closed\n",
        f"{OPEN}\nindented closer only\n  {F}\n",
        f"inline {OPEN} not a line\n{F}\n",
        f"{OPEN}",
    ],
)
def test_no_complete_block_gives_none(text: str) -> None:
    assert extract_final_message(text) is None


def test_nested_fence_does_not_truncate_the_block() -> None:
    text = f"{OPEN}\nI added:\n{F}python\nprint('hi')\n{F}\nand tests pass.\n{F}\n"
    assert extract_final_message(text) == f"I added:\n{F}python\nprint('hi')\n{F}\nand tests pass."


def test_unclosed_sentinel_does_not_swallow_a_later_real_block() -> None:
    text = f"{OPEN}\ndraft that was abandoned\n\nwork...\n{F}python\nx = 1\n{F}\n{OPEN}\nthe real summary\n{F}\n"
    assert extract_final_message(text) == "the real summary"


def test_a_later_unclosed_block_leaves_the_earlier_complete_one() -> None:
    text = f"{OPEN}\ncomplete\n{F}\n\n{OPEN}\ncut off by max_tokens"
    assert extract_final_message(text) == "complete"


def test_indented_inner_fences_are_content() -> None:
    text = f"{OPEN}\n- step:\n  {F}sh\n  make test\n  {F}\ndone\n{F}\n"
    assert extract_final_message(text) == f"- step:\n  {F}sh\n  make test\n  {F}\ndone"


def test_wrap_round_trip_simple() -> None:
    assert wrap_final_message("  summary\n") == f"{OPEN}\nsummary\n{F}\n"
    assert extract_final_message("Done.\n\n" + wrap_final_message("  summary\n")) == "summary"


def _no_fence_line(s: str) -> bool:
    lines = s.split("\n") + s.strip().split("\n") + s.splitlines()
    return not any(line.startswith(F) for line in lines)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(["`", "``", "a", " ", "\t", "\n", "\r", "\u2028", "é", SENTINEL_TAG]), max_size=40)
       .map("".join) | st.text(max_size=80))
def test_extract_of_wrap_is_strip(s: str) -> None:
    assume(_no_fence_line(s))
    assert extract_final_message(wrap_final_message(s)) == s.strip()
    assert extract_final_message("preamble\r\n" + wrap_final_message(s)) == s.strip()


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_extract_never_crashes(s: str) -> None:
    result = extract_final_message(s + "\n" + OPEN + "\n" + s)
    assert result is None or isinstance(result, str)
