"""The emulator's pure parts: deterministic content and the upstream's answer to arbitrary input (property tests)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from hermes_nb.emulator import SCENARIOS, scenarios
from hermes_nb.emulator.scenarios import RESET, STALL, UPSTREAM_ROUTES, EmulatorSpec, Pause, upstream_answer
from hermes_nb.wire.sentinel import extract_final_message

JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)
BODIES = st.one_of(
    st.binary(max_size=200),
    JSONISH.map(lambda v: json.dumps(v).encode()),
    st.fixed_dictionaries({"model": st.text(max_size=12)}, optional={
        "messages": JSONISH, "prompt": JSONISH, "input": JSONISH, "stream": JSONISH, "stream_options": JSONISH,
        "encoding_format": st.sampled_from(["float", "base64", None]),
    }).map(lambda d: json.dumps(d).encode()),
)


@settings(max_examples=200, deadline=None)
@given(route=st.sampled_from([*UPSTREAM_ROUTES, "/files"]), method=st.sampled_from(["GET", "POST", "PUT"]),
       scenario=st.sampled_from(SCENARIOS), raw=BODIES, seed=st.integers(0, 2**31))
def test_upstream_answers_anything_without_crashing(route: str, method: str, scenario: str, raw: bytes,
                                                    seed: int) -> None:
    reply = upstream_answer(EmulatorSpec(seed=seed), scenario, route, method, raw)
    assert reply.status in {200, 400, 401, 404, 429, 500, 502}
    assert all(isinstance(p, (bytes, Pause)) or p in (STALL, RESET) for p in reply.parts)
    if reply.status != 200:
        assert reply.content_type in ("application/json; charset=utf-8", "text/html") and not reply.streamed
    assert upstream_answer(EmulatorSpec(seed=seed), scenario, route, method, raw).parts == reply.parts  # deterministic


@settings(max_examples=100, deadline=None)
@given(prompt=st.text(max_size=200), seed=st.integers(0, 10**6))
def test_reply_text_carries_one_extractable_sentinel(prompt: str, seed: int) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": prompt}]}
    text = scenarios.reply_text(seed, body)
    final = extract_final_message(text)
    assert final is not None and final.startswith("Emulator run ")
    assert extract_final_message(scenarios.reply_text(seed, body, sentinel=False)) is None
    assert "".join(scenarios.split_deltas(text)) == text
    assert scenarios.reply_text(seed, body) == text


def test_ids_and_created_depend_on_seed_and_body_only() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}

    def chat_id(seed: int, request: dict[str, object]) -> str:
        raw = json.dumps(request).encode()
        reply = upstream_answer(EmulatorSpec(seed=seed), "ok", "/chat/completions", "POST", raw)
        return str(json.loads(reply.parts[0])["id"])

    first = chat_id(1, body)
    assert first == chat_id(1, dict(reversed(list(body.items())))) and first.startswith("chatcmpl-emu")
    assert first != chat_id(2, body)
    assert scenarios.created_at(1) == scenarios.created_at(1) != scenarios.created_at(2)
    assert scenarios.BASE_CREATED <= scenarios.created_at(1) < scenarios.BASE_CREATED + 86_400
