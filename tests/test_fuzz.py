"""Fuzzing (Hypothesis) of the parsers and of the redaction shortcuts.

Each parser gets arbitrary input and must either answer or raise an error of the documented
``HermesError`` tree (never a crash, a hang or another exception type). CI runs the ``ci`` profile
(conftest: a few hundred examples per test, thousands in all); ``make fuzz`` runs the ``fuzz`` profile.
"""

from __future__ import annotations

import json
import re
import string
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes_nb.core.errors import HermesError
from hermes_nb.core.redaction import SHAPES, Redactor
from hermes_nb.core.stream_redaction import _tail_start
from hermes_nb.harness.artifacts import _surely_clean

# ----------------------------------------------------------------- redaction shortcuts (P5)

# letters that matter: the shapes' literals, case variants, the characters that match ASCII letters
# case-insensitively, whitespace of every kind, JSON's escaped characters
_ALPHABET = (string.ascii_letters[:12] + "bearrBEARReyJsk-_.~+/=0189 \t\n\u3000\u2028\u212a\u017f\u0131\u0130"
             + "\"\\\x00é")
_shape_text = st.text(alphabet=_ALPHABET, max_size=60) | st.lists(
    st.sampled_from(["Bearer ", "bEaReR\u3000", "sk-", "sk-abcdefgh1234", "sk-Q1w2e3r4t5y6", "eyJhbGciOi", ".eyJzdWIi", ".sig",
                     "token ", "x", " ", "\t", "abcDEF123", "\u212a", "-"]), max_size=8).map("".join)


@given(_shape_text)
def test_present_tests_never_hide_a_match(text: str) -> None:
    """A shape's ``present`` test is False only when its pattern finds nothing (so skipping is exact)."""
    for shape in SHAPES:
        if shape.present is not None and not shape.present(text):
            assert shape.pattern.search(text) is None, shape.name


@given(_shape_text)
def test_growing_tails_start_where_tail_start_says(text: str) -> None:
    """``_safe_cut`` searches growing patterns from ``_tail_start``: it must find what a full search finds."""
    start = _tail_start(text)
    for shape in SHAPES:
        for pattern in shape.growing:
            full, bounded = pattern.search(text), pattern.search(text, start)
            assert (full and full.span()) == (bounded and bounded.span()), (shape.name, pattern.pattern)


_leaf = _shape_text | st.integers() | st.none() | st.booleans()
_docs = st.recursive(_leaf, lambda c: st.lists(c, max_size=3) | st.dictionaries(_shape_text, c, max_size=3),
                     max_leaves=8)


@given(_docs, st.lists(_shape_text.filter(lambda s: len(s) >= 4), max_size=2))
def test_a_surely_clean_line_is_what_string_by_string_redaction_gives(doc: Any, secrets: list[str]) -> None:
    redactor = Redactor(secrets)
    line = json.dumps({"payload": doc}, ensure_ascii=False, separators=(",", ":"))
    if _surely_clean(line, redactor):
        assert json.dumps(redactor.data({"payload": doc}), ensure_ascii=False, separators=(",", ":")) == line


def test_tail_chars_cover_every_character_case_insensitive_ascii_matches() -> None:
    """The token set must hold every character ``(?i)[A-Za-z]`` matches (else a bearer tail is missed)."""
    from hermes_nb.core import stream_redaction

    folding = re.compile(r"(?i)[A-Za-z]")
    extra = {chr(c) for c in range(0x110000) if folding.match(chr(c))} - set(string.ascii_letters)
    assert extra <= set(stream_redaction._TOKEN_CHARS)
    spaces = {chr(c) for c in range(0x110000) if chr(c).isspace()}
    assert spaces <= set(stream_redaction._SPACE_CHARS)
