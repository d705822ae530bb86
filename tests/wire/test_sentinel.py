"""The final-message sentinel: instruction text and the line-scanning extractor."""

from __future__ import annotations

import re

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from hermes_nb.core.facts import SENTINEL_TAG
from hermes_nb.wire.sentinel import (
    SENTINEL_PLACEHOLDERS,
    extract_final_message,
    runtime_final_message_instruction,
)
from tests.helpers import wrap_final_message

F = "```"
OPEN = F + SENTINEL_TAG


def test_instruction_follows_the_uh_outline() -> None:
    text = runtime_final_message_instruction()
    assert text.startswith("\n## Runtime final message\n")
    assert f"\n{OPEN}\n" in text and "runtime-final.txt" in text and "last" in text
    # the example block holds the placeholder, which is never a final message (an echoed instruction)
    assert extract_final_message(text) is None
    assert extract_final_message("real work\n" + wrap_final_message("done") + text) == "done"


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
        f"{OPEN}\nnever closed\n",
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
    opener = re.compile(F + SENTINEL_TAG + r"[ \t]*\r?$")
    return not any(line.lstrip(" \t").startswith(F) or opener.search(line) for line in lines)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(["`", "``", "a", " ", "\t", "\n", "\r", "\u2028", "é", SENTINEL_TAG]), max_size=40)
       .map("".join) | st.text(max_size=80))
def test_extract_of_wrap_is_strip(s: str) -> None:
    assume(_no_fence_line(s) and s.strip() not in SENTINEL_PLACEHOLDERS)
    assert extract_final_message(wrap_final_message(s)) == s.strip()
    assert extract_final_message("preamble\r\n" + wrap_final_message(s)) == s.strip()


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_extract_never_crashes(s: str) -> None:
    result = extract_final_message(s + "\n" + OPEN + "\n" + s)
    assert result is None or isinstance(result, str)


# ---------------------------------------------------------------- parity with UH
#
# The oracle is a port of UH's extractor (src/harness/runtime-final-message.ts,
# extractRuntimeFinalMessageSentinel): the last lazy match, trimmed; None -> "".
_UH_PATTERN = re.compile("```" + SENTINEL_TAG + r"[ \t]*\r?\n([\s\S]*?)\r?\n```")


def uh_runtime_final(text: str) -> str:
    last = None
    for m in _UH_PATTERN.finditer(text):
        last = m.group(1).strip()
    return "" if last is None else last


def ours_runtime_final(text: str) -> str:
    found = extract_final_message(text)
    return "" if found is None else found


def _lines(*parts: str) -> str:
    return "\n".join(parts)


# Every sentinel input of UH's own tests: tests/runtime-final-message.test.ts and the runner
# tests (hermes-proxy.test.ts, hermes.test.ts, codex.test.ts, oh-my-pi.test.ts, the team fixture).
UH_INPUTS = {
    "rfm-single-block": _lines("Some preamble.", "", OPEN,
                               "Wrote docs/codex-smoke.txt with a single ISO timestamp line.", F, ""),
    "rfm-last-wins": _lines(OPEN, "first draft", F, "", "More work.", "", OPEN, "final summary", F),
    "rfm-none": "Just a regular message with no sentinel.\n```yaml\nkey: value\n```\n",
    "rfm-trims": _lines(OPEN, "", "   indented body   ", "", F),
    "rfm-crlf": f"{OPEN}\r\nwindows summary\r\n{F}\r\n",
    "rfm-other-tags": _lines("```yaml", "schema_version: uh.runtime-result.v0", F, "```text", "not the sentinel", F),
    "rfm-unclosed": f"{OPEN}\nno closer",
    # hermes-proxy runner: two deltas joined, so the fence follows text on the same line
    "proxy-runner-happy-sse": "Done. " + f"{OPEN}\nMission complete.\n{F}",
    "proxy-orchestrator-passed": f"Mission accomplished.\n{OPEN}\nDone.\n{F}",
    "proxy-orchestrator-no-sentinel": "Just a regular response with no sentinel.",
    "proxy-orchestrator-empty": "",
    "hermes-yaml-then-sentinel": _lines("Some Hermes reasoning preamble.", "", "```yaml",
                                        "schema_version: uh.runtime-result.v0", "status: completed", F, "",
                                        OPEN, "Bounded Hermes summary.", F),
    "hermes-yaml-only": "```yaml\nschema_version: uh.runtime-result.v0\nstatus: completed\n```\n",
    "codex-last-message-file": _lines("Some preamble Codex emitted as its raw final message.", "",
                                      OPEN, "Bounded sentinel summary.", F, ""),
    "omp-message-content": f"{OPEN}\nBounded pi summary.\n{F}",
    "team-fixture-worker": f"{OPEN}\nwrote out/answer-w1.txt\n{F}",
}


@pytest.mark.parametrize("text", list(UH_INPUTS.values()), ids=list(UH_INPUTS))
def test_runtime_final_equals_uh_on_uh_inputs(text: str) -> None:
    assert ours_runtime_final(text) == uh_runtime_final(text)


def test_uh_inputs_are_not_all_trivial() -> None:
    # the table exercises both outcomes of the oracle
    results = {uh_runtime_final(t) for t in UH_INPUTS.values()}
    assert "" in results and "Mission complete." in results and "final summary" in results


# ---------------------------------------------------------------- where we do better
ROBUST = [
    # (id, text, ours, same as UH?)
    ("fence-after-text-same-line", f"Here it is: {OPEN}\nthe summary\n{F}\n", "the summary", True),
    ("indented-closing-fence", f"{OPEN}\nthe summary\n   {F}\n", "the summary", False),
    ("indented-closing-fence-crlf", f"{OPEN}\r\nthe summary\r\n  {F}  \r\n", "the summary", False),
    ("nested-fences", f"{OPEN}\nI added:\n{F}python\nprint('hi')\n{F}\nand tests pass.\n{F}\n",
     f"I added:\n{F}python\nprint('hi')\n{F}\nand tests pass.", False),
    ("unclosed-then-closed", f"{OPEN}\nabandoned draft\n\nwork\n{OPEN}\nthe real summary\n{F}\n",
     "the real summary", False),
    ("empty-block", f"{OPEN}\n{F}\n", "", True),
    ("empty-block-blank-line", f"{OPEN}\n\n{F}\n", "", True),
    ("crlf-everywhere", f"text\r\n{OPEN}\r\nline one\r\nline two\r\n{F}\r\n", "line one\r\nline two", True),
    ("echoed-instruction-last",
     "Work done.\n" + wrap_final_message("real summary") + runtime_final_message_instruction(), "real summary", False),
    ("echoed-instruction-only", "I will follow:\n" + runtime_final_message_instruction(), "", False),
    ("echoed-uh-instruction", "ok\n" + wrap_final_message("mine") + f"{OPEN}\n"
     "<one-paragraph summary of what you did, what changed, and any caveats>\n" + F, "mine", False),
    ("nested-unclosed-inner-falls-back-to-uh", f"{OPEN}\nsummary\n{F}python\ncode\n", "summary", True),
]


@pytest.mark.parametrize(("text", "expected", "same_as_uh"), [r[1:] for r in ROBUST], ids=[r[0] for r in ROBUST])
def test_robust_cases(text: str, expected: str, same_as_uh: bool) -> None:
    assert ours_runtime_final(text) == expected
    assert (uh_runtime_final(text) == expected) is same_as_uh


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["`", F, "a", " ", "\n", "\r\n", "x ", OPEN, OPEN + "\n", F + "\n", "\n" + F]),
                max_size=30).map("".join))
def test_whenever_uh_finds_a_message_we_find_one(s: str) -> None:
    if uh_runtime_final(s) and uh_runtime_final(s) not in ("<one-paragraph summary of the outcome>",):
        assert extract_final_message(s) is not None
