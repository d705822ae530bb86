"""The real OpenAI Python SDK works against the emulator unchanged."""

from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest
from openai import OpenAI

from hermes_nb.emulator import SCENARIO_HEADER, serve_emulator
from hermes_nb.wire.sentinel import extract_final_message

MESSAGES = [{"role": "user", "content": "Do the mission."}]


@pytest.fixture(scope="module", params=["hermes-agent", "upstream"])
def client(request: pytest.FixtureRequest) -> Iterator[OpenAI]:
    with serve_emulator(profile=request.param) as emu:
        sdk = OpenAI(base_url=emu.endpoint, api_key="x", max_retries=0)
        yield sdk
        sdk.close()


def test_chat_non_streaming(client: OpenAI) -> None:
    completion = client.chat.completions.create(model="hermes-4-405b", messages=MESSAGES)
    assert completion.choices[0].finish_reason == "stop"
    assert extract_final_message(completion.choices[0].message.content or "")
    assert completion.usage is not None and completion.usage.total_tokens > 0


def test_chat_streaming_with_usage(client: OpenAI) -> None:
    pieces, usage, finish = [], None, None
    stream = client.chat.completions.create(model="hermes-4-405b", messages=MESSAGES, stream=True,
                                            stream_options={"include_usage": True})
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for choice in chunk.choices:
            pieces.append(choice.delta.content or "")
            finish = choice.finish_reason or finish
    text = "".join(pieces)
    assert finish == "stop" and usage is not None and usage.completion_tokens > 0
    assert text == client.chat.completions.create(model="hermes-4-405b", messages=MESSAGES).choices[0].message.content


def test_models_embeddings_completions(client: OpenAI) -> None:
    assert [m.id for m in client.models.list()][0] == "nousresearch/hermes-4-405b"
    emb = client.embeddings.create(model="m", input=["a", "b"])  # the SDK asks for base64 and decodes it
    assert len(emb.data) == 2 and len(emb.data[0].embedding) == 8
    assert isinstance(emb.data[0].embedding[0], float)
    comp = client.completions.create(model="m", prompt="p")
    assert comp.choices[0].text and comp.choices[0].finish_reason == "stop"


@pytest.mark.parametrize("scenario,error,status", [
    ("rate-limited", openai.RateLimitError, 429),
    ("model-missing", openai.NotFoundError, 404),
    ("server-error", openai.InternalServerError, 500),
    ("bad-gateway", openai.InternalServerError, 502),
])
def test_error_scenarios_raise_the_sdk_errors(client: OpenAI, scenario: str, error: type[Exception],
                                              status: int) -> None:
    with pytest.raises(error) as info:
        client.chat.completions.create(model="hermes-4-405b", messages=MESSAGES,
                                       extra_headers={SCENARIO_HEADER: scenario})
    assert info.value.status_code == status  # type: ignore[attr-defined]


def test_auth_stale_is_an_authentication_error_with_the_proxy_envelope() -> None:
    with serve_emulator(scenario="auth-stale") as emu:
        sdk = OpenAI(base_url=emu.endpoint, api_key="x", max_retries=0)
        with pytest.raises(openai.AuthenticationError) as info:
            list(sdk.chat.completions.create(model="m", messages=MESSAGES, stream=True))
        sdk.close()
    assert info.value.code == "upstream_auth_failed" and info.value.type == "upstream_auth_failed"


def test_in_band_stream_error_raises_mid_stream(client: OpenAI) -> None:
    seen = []
    with pytest.raises(openai.APIError, match="failed while generating"):
        for chunk in client.chat.completions.create(model="m", messages=MESSAGES, stream=True,
                                                    extra_headers={SCENARIO_HEADER: "stream-error-event"}):
            seen.extend(c.delta.content or "" for c in chunk.choices)
    assert "".join(seen)


def test_emulator_handle_is_usable_as_a_base_url_string() -> None:
    with serve_emulator() as emu:
        assert isinstance(emu, str) and emu == emu.endpoint
        sdk = OpenAI(base_url=emu, api_key="x", max_retries=0)
        assert sdk.models.list().data
        sdk.close()
