"""StreamRedactor: a secret split across streamed pieces never reaches runtime.stdout.log or on_delta."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_nb.core.config import validate_config
from hermes_nb.core.redaction import Redactor, StreamRedactor
from hermes_nb.harness.mission import Mission
from hermes_nb.harness.run import run

CANARY = "sk-canary-stream-0123456789abcdef"
TEXT = (f"Here is the key {CANARY} as asked. A bearer header: Bearer sk-other-9876543210zz and a JWT "
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl end. Plain words: ask, bee, sky, eye.")


def stream_all(pieces: list[str], redactor: Redactor) -> str:
    sr = StreamRedactor(redactor)
    return "".join(sr.feed(p) for p in pieces) + sr.flush()


def split_at(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts})
    return [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=10_000), max_size=12))
def test_any_split_gives_the_whole_text_redaction(cuts: list[int]) -> None:
    redactor = Redactor([CANARY])
    out = stream_all(split_at(TEXT, cuts), redactor)
    assert out == redactor.text(TEXT)
    assert CANARY not in out and "sk-other" not in out and "eyJzdWIi" not in out


def test_each_piece_redacted_alone_would_leak() -> None:
    redactor = Redactor([CANARY])
    pieces = [TEXT[:30], TEXT[30:]]  # cuts the canary
    assert CANARY not in "".join(redactor.text(p) for p in pieces)
    assert CANARY[14:] in "".join(redactor.text(p) for p in pieces)  # its tail escapes piecewise redaction
    assert CANARY[14:] not in stream_all(pieces, redactor)


def test_prose_is_not_held_back() -> None:
    sr = StreamRedactor(Redactor([CANARY]))
    assert sr.feed("Hello there, ") == "Hello there, "
    assert sr.feed("the tests ran") == "the tests ran"
    assert sr.feed(" s") == " " and sr.flush() == "s"  # could start "sk-…": held until settled


def sse(pieces: list[str]) -> list[bytes]:
    chunks = [{"choices": [{"index": 0, "delta": {"content": p}}]} for p in pieces]
    return [f"data: {json.dumps(c)}\n\n".encode() for c in chunks] + [b"data: [DONE]\n\n"]


def test_run_never_writes_a_split_secret(tmp_path: Path) -> None:
    pieces = ["Your token is sk-canary-str", "eam-0123456789abcdef and Bear", "er sk-live-abc",
              "def0123456789 bye.\n", "```uh-runtime-final-message\ndone\n```\n"]

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=iter(sse(pieces)))

    config = validate_config({"endpoint": "http://127.0.0.1:9/v1", "model": "m", "auth_token": CANARY})
    seen: list[str] = []
    records: list[str] = []
    result = run(Mission.adhoc("hi"), config, root=tmp_path, transport=httpx.MockTransport(handler),
                 on_delta=seen.append, on_event=lambda rec: records.append(rec.data), handle_signals=False)
    log = (result.run_dir / "runtime.stdout.log").read_text()
    assert result.status == "passed"
    assert log == "".join(seen) == result.text
    assert log.startswith("Your token is <redacted> and Bearer <redacted> bye.")
    events = [json.loads(line) for line in (result.run_dir / "events.ndjson").read_text().splitlines()]
    contents = [e["payload"]["choices"][0]["delta"]["content"] for e in events
                if e["type"] == "hermes-proxy.sse" and isinstance(e["payload"], dict)]
    assert contents[:3] == ["Your token is <redacted>", "<redacted> and Bear", "er <redacted>"]
    assert [e["payload"] for e in events if e["type"] == "hermes-proxy.sse"][-1] == "[DONE]"
    assert len(records) == len(pieces) + 1 and "sk-" not in "".join(records)
    for path in tmp_path.rglob("*"):
        if path.is_file():
            body = path.read_text(errors="replace")
            assert "sk-canary" not in body and "0123456789abcdef" not in body and "sk-live" not in body, path


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=10_000), max_size=12))
def test_masked_pieces_hold_no_fragment_of_a_secret(cuts: list[int]) -> None:
    sr = StreamRedactor(Redactor([CANARY]))
    spans, offset = [], 0
    for piece in split_at(TEXT, cuts):
        sr.feed(piece)
        spans.append((offset, offset + len(piece)))
        offset += len(piece)
    sr.flush()
    masked = [sr.mask(a, b) for a, b in spans]
    grams = {CANARY[i:i + 4] for i in range(len(CANARY) - 3)}
    assert not any(g in m for g in grams for m in masked)
    assert "eyJzdWIi" not in "".join(masked) and "9876543210" not in "".join(masked)


def test_a_long_stream_keeps_a_small_window_and_still_masks_late_secrets() -> None:
    from hermes_nb.core.records import SSEEventRecord
    from hermes_nb.harness.run import RedactedStream

    pieces = [f"word{i} and more text " for i in range(3000)] + ["key sk-canary-str", "eam-0123456789abcdef ok"]
    out: list[str] = []
    events: list[str] = []
    stream = RedactedStream(Redactor([CANARY]), write_text=out.append,
                            write_event=lambda record, payload: events.append(
                                payload["choices"][0]["delta"]["content"]))
    for piece in pieces:
        stream.event(SSEEventRecord(data=json.dumps({"choices": [{"delta": {"content": piece}}]})))
        stream.piece(piece)
        assert len(stream.text._window) < 500  # not the whole answer
    stream.finish()
    text = "".join(out)
    assert text == Redactor([CANARY]).text("".join(pieces)) and text.endswith("key <redacted> ok")
    assert events[-2:] == ["key <redacted>", "<redacted> ok"] and len(events) == len(pieces)
    assert stream.text.raw == "".join(pieces)


def test_interrupting_hook_is_not_called_again_while_the_run_is_ended(tmp_path: Path) -> None:
    import pytest

    calls: list[str] = []

    def interrupt(text: str) -> None:
        calls.append(text)
        raise KeyboardInterrupt

    def handler(request: httpx.Request) -> httpx.Response:  # "s" is held back (it could start "sk-…")
        return httpx.Response(200, headers={"content-type": "text/event-stream"},
                              content=iter(sse(["Hello s", "ky is blue"])))

    config = validate_config({"endpoint": "http://127.0.0.1:9/v1", "model": "m", "auth_token": CANARY})
    with pytest.raises(KeyboardInterrupt):
        run(Mission.adhoc("hi"), config, root=tmp_path, transport=httpx.MockTransport(handler),
            on_delta=interrupt, handle_signals=False)
    assert calls == ["Hello "]
    mission_dir = tmp_path / ".harness" / "missions" / "adhoc"
    assert json.loads((mission_dir / "latest.json").read_text())["status"] == "cancelled"
    run_dir = next((mission_dir / "runs").glob("*/"))
    assert (run_dir / "runtime.stdout.log").read_text() == "Hello s"  # the held tail still reaches the log


def test_adopt_holds_the_whole_text_instead_of_the_pieces() -> None:
    """The runner hands over the client's joined text: one copy of a long answer, not pieces plus a join."""
    redactor = Redactor(["sk-canary-adopt-0123456789"])
    stream = StreamRedactor(redactor)
    out = [stream.feed(piece) for piece in ["Hello ", "sk-canary-", "adopt-0123456789", " world"]]
    assert not stream.adopt("Hello sk-canary-adopt-0123456789 worlD")  # differs: keeps its pieces
    assert not stream.adopt("Hello")
    whole = "Hello sk-canary-adopt-0123456789 world"
    assert stream.adopt(whole)
    assert stream.raw is whole
    out.append(stream.flush())
    assert "".join(out) == redactor.text(whole) and "canary" not in "".join(out)


PROSE = ["bearer handling is documented", "Bearer Authentication", "the Bearer token-less mode",
         "bearer pass-through.", "a bearer tokens list", "Bearer auth-header-only handling"]
SECRETS = ["Bearer sk-live-0123456789", "bearer eyJhbGciOi.eyJzdWIiOi.abc", "Bearer abcDEFghi1",
           "Bearer 0a1b2c3d4e5f", "bearer aVeryLongOpaqueValueXyz"]


@pytest.mark.parametrize("text", PROSE)
def test_prose_about_bearers_is_left_alone_whole_and_streamed(text: str) -> None:
    from hermes_nb.core.redaction import Redactor

    assert Redactor().text(text) == text
    stream = StreamRedactor(Redactor())
    out = "".join(stream.feed(text[i:i + 3]) for i in range(0, len(text), 3)) + stream.flush()
    assert out == text


@pytest.mark.parametrize("text", SECRETS)
def test_secret_shaped_bearers_are_masked_whole_and_streamed(text: str) -> None:
    from hermes_nb.core.redaction import REDACTED, Redactor

    masked = Redactor().text(text)
    assert REDACTED in masked and masked.split()[0] == text.split()[0]
    stream = StreamRedactor(Redactor())
    out = "".join(stream.feed(text[i:i + 3]) for i in range(0, len(text), 3)) + stream.flush()
    assert out == masked
