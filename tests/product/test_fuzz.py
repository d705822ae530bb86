"""Fuzzing (Hypothesis) of the parsers and of the redaction shortcuts.

Each parser gets arbitrary input and must either answer or raise an error of the documented
``HermesError`` tree (never a crash, a hang or another exception type). CI runs the ``ci`` profile
(conftest: a few hundred examples per test, thousands in all); ``make fuzz`` runs the ``fuzz`` profile.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes_nb import HermesError
from hermes_nb.core.redaction import SHAPES, Redactor, _tail_start
from hermes_nb.harness.artifacts import _surely_clean

# ----------------------------------------------------------------- redaction shortcuts (P5)

# letters that matter: the shapes' literals, case variants, the characters that match ASCII letters
# case-insensitively, whitespace of every kind, JSON's escaped characters
_ALPHABET = (string.ascii_letters[:12] + "bearrBEARReyJsk-_.~+/=0189 \t\n\u3000\u2028\u212a\u017f\u0131\u0130"
             + "\"\\\x00é")
_shape_text = st.text(alphabet=_ALPHABET, max_size=60) | st.lists(
    st.sampled_from(["Bearer ", "bEaReR\u3000", "sk-", "sk-abcdefgh1234", "sk-Q1w2e3r4t5y6", "eyJhbGciOi",
                     ".eyJzdWIi", ".sig", "token ", "x", " ", "\t", "abcDEF123", "\u212a", "-"]),
    max_size=8).map("".join)


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
    from hermes_nb.core import redaction

    folding = re.compile(r"(?i)[A-Za-z]")
    extra = {chr(c) for c in range(0x110000) if folding.match(chr(c))} - set(string.ascii_letters)
    assert extra <= set(redaction._TOKEN_CHARS)
    spaces = {chr(c) for c in range(0x110000) if chr(c).isspace()}
    assert spaces <= set(redaction._SPACE_CHARS)


# ----------------------------------------------------------------- the parsers (no crash, no hang, no stray exception)

#: the ``fuzz`` profile (``make fuzz``) raises every test to its max_examples; CI keeps these sizes
_BIG = max(300, settings.default.max_examples)
_FILES = max(120, settings.default.max_examples // 4)
FUZZ = settings(max_examples=_BIG, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FUZZ_FILES = settings(max_examples=_FILES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12)
    | st.sampled_from(["choices", "delta", "content", "error", "message", "usage", "[DONE]", "sk-", "eyJ"]),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(
        st.sampled_from(["choices", "delta", "content", "message", "error", "usage", "model", "finish_reason",
                         "type", "code", "status", "param", "data", "id", "text"]) | st.text(max_size=6), c,
        max_size=5),
    max_leaves=15)
_texts = st.text(max_size=300) | _json_values.map(json.dumps) | st.binary(max_size=300).map(
    lambda b: b.decode("utf-8", "replace"))


def _allowed(fn: Callable[[], Any]) -> Any:
    """Run ``fn``; an exception must belong to the documented HermesError tree."""
    try:
        return fn()
    except HermesError:
        return None


@FUZZ
@given(st.lists(st.binary(max_size=200), max_size=12))
def test_sse_decoder_takes_any_bytes(reads: list[bytes]) -> None:
    from hermes_nb.wire.sse import ServerSentEvent, SSEDecoder

    decoder = SSEDecoder()
    for chunk in reads:
        assert all(isinstance(e, ServerSentEvent) for e in decoder.feed(chunk))


@FUZZ
@given(st.lists(st.tuples(st.sampled_from(["message", "error", "ping"]), _texts), max_size=10))
def test_chat_stream_takes_any_events(frames: list[tuple[str, str]]) -> None:
    from hermes_nb.wire.payloads import ChatStream
    from hermes_nb.wire.sse import ServerSentEvent

    stream = ChatStream()
    for event, data in frames:
        assert isinstance(stream.feed(ServerSentEvent(event, data)), str)
    assert isinstance(stream.text, str)


@FUZZ
@given(_texts | st.binary(max_size=300), st.sampled_from([None, "application/json", "text/html", "text/plain",
                                                          "application/problem+json", ""]), _json_values)
def test_envelope_and_completion_parsers_take_anything(body: Any, ctype: str | None, obj: Any) -> None:
    from hermes_nb.wire.payloads import envelope_from_json, parse_chat_completion, parse_error_body

    parse_error_body(body, ctype)
    envelope_from_json(obj)
    text, finish, usage, model = parse_chat_completion(obj)
    assert isinstance(text, str)


@FUZZ
@given(st.text(max_size=400) | st.lists(st.sampled_from(
    ["```uh-runtime-final-message\n", "```\n", "```", "text ", "\n", "~~~", "````", " uh-runtime-final-message",
     "summary", "\r\n"]), max_size=12).map("".join))
def test_sentinel_extractor_takes_any_text(text: str) -> None:
    from hermes_nb.wire.sentinel import extract_final_message

    found = extract_final_message(text)
    assert found is None or isinstance(found, str)


@FUZZ
@given(st.dictionaries(st.sampled_from(["retry-after", "Retry-After", "retry-after-ms", "x"]),
                       st.text(max_size=40) | st.sampled_from(["1", "-1", "1e309", "nan", "inf", "0.5",
                                                               "Wed, 21 Oct 2015 07:28:00 GMT", "Mon, 99 Foo"]),
                       max_size=3))
def test_retry_after_takes_any_header(headers: dict[str, str]) -> None:
    from hermes_nb.wire.payloads import parse_retry_after

    value = parse_retry_after(headers)
    assert value is None or (value >= 0 and value == value and value != float("inf"))


_config_keys = st.sampled_from(["endpoint", "model", "auth_token", "provider", "system_prompt", "temperature",
                                "max_tokens", "request_timeout_ms", "stream", "extra_headers", "endpont", ""])


@FUZZ
@given(st.dictionaries(_config_keys, _json_values | st.sampled_from(
    ["http://127.0.0.1:8645/v1", "https://x/v1", "ftp://x", "nous", 0, 2.5, -1, {"x-a": "b"}, {"a b": "c"}]),
    max_size=8), st.text(max_size=80))
def test_config_validation_takes_any_mapping(data: dict[str, Any], overrides: str) -> None:
    from hermes_nb.core.config import parse_overrides_json, validate_config

    _allowed(lambda: validate_config(data))
    _allowed(lambda: parse_overrides_json(overrides))
    _allowed(lambda: parse_overrides_json(json.dumps(data, default=str)))


_yaml_docs = st.one_of(
    st.text(max_size=200),
    _json_values.map(lambda v: json.dumps(v)),  # JSON is YAML
    st.lists(st.sampled_from(["id: hermes-proxy\n", "runtime: hermes-proxy\n", "config:\n", "  runtime_config:\n",
                              "    endpoint: http://127.0.0.1:8645/v1\n", "    model: m\n", "    bogus: 1\n",
                              "schema_version: uh.mission.v0\n", "objective: do it\n", "- a\n", "key: [\n",
                              "name: x\n", "status: experimental\n", "&a x: *a\n", "\t\n", "id: 1\n"]),
             max_size=10).map("".join),
    st.binary(max_size=100).map(lambda b: b.decode("latin-1")),
)


@FUZZ_FILES
@given(_yaml_docs)
def test_manifest_and_mission_loaders_take_any_file(text: str) -> None:
    import tempfile

    from hermes_nb.core.manifest import load_manifest
    from hermes_nb.harness.mission import load_mission

    with tempfile.TemporaryDirectory() as tmp:
        manifest = Path(tmp) / "hermes-proxy.yaml"
        manifest.write_text(text, encoding="utf-8", errors="surrogatepass")
        _allowed(lambda: load_manifest(manifest))
        mission = Path(tmp) / "mission.yaml"
        mission.write_bytes(text.encode("utf-8", "surrogatepass"))
        _allowed(lambda: load_mission(mission))


@FUZZ_FILES
@given(st.sampled_from(["index.json", "e2e_smoke.ipynb", "e2e_smoke.receipt.json", "e2e_smoke.html",
                        "README.md"]),
       st.one_of(st.binary(max_size=200), _json_values.map(lambda v: json.dumps(v).encode()),
                 st.just(b""), st.just(b"{}"), st.just(b'{"receipts": [{"path": "../../etc/passwd"}]}')),
       st.booleans())
def test_receipt_verifier_takes_any_damage(target: str, garbage: bytes, append: bool) -> None:
    """A receipts directory with one file replaced (or appended to) by garbage: a report, never a crash."""
    import tempfile

    import nbformat

    from hermes_nb import verify_receipts
    from hermes_nb.receipts.index import append_index, index_entry
    from hermes_nb.receipts.write import write_receipt

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell("x = 1")]
        meta = {"schema": "hermes-nb.receipt.v1", "notebook": "e2e_smoke", "run_id": "20260101T000000Z-abcdef",
                "verdict": "passed", "target_kind": "emulator", "endpoint": "http://127.0.0.1:1/v1", "model": "m",
                "started_at": "2026-01-01T00:00:00.000Z", "duration_s": 1.0}
        red = Redactor(["sk-fuzz-receipts-0123456789"])
        files = write_receipt(nb, root / "2026-01-01" / meta["run_id"], "e2e_smoke", meta, redactor=red,
                              page=True)
        append_index(root, [index_entry(root, files, meta)], redactor=red)
        assert verify_receipts(root).ok
        path = next(p for p in root.rglob(target) if p.is_file()) if target != "index.json" else root / target
        path.write_bytes((path.read_bytes() if append else b"") + garbage)
        report = _allowed(lambda: verify_receipts(root))
        assert report is None or isinstance(report.problems, list)
