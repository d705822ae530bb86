"""The minimal upstream: an OpenAI-compatible server unlike the emulator's own ``upstream`` profile."""

from __future__ import annotations

import httpx
import pytest

from hermes_nb import HermesClient, HermesProxyRuntimeConfig
from hermes_nb.emulator import serve_emulator
from hermes_nb.emulator.app import MINIMAL_MAX_BYTES, MINIMAL_MODELS


@pytest.fixture(scope="module")
def minimal() -> object:
    with serve_emulator(profile="minimal") as emu:
        yield emu


def _post(emu: object, path: str, body: object) -> httpx.Response:
    return httpx.post(f"{emu}{path}", json=body, trust_env=False, timeout=10)


def test_lists_its_own_models_and_has_only_two_routes(minimal: object) -> None:
    models = httpx.get(f"{minimal}/models", trust_env=False).json()
    assert [m["id"] for m in models["data"]] == list(MINIMAL_MODELS) and models["object"] == "list"
    for path in ("/embeddings", "/completions"):
        resp = _post(minimal, path, {"model": "x", "input": "x", "prompt": "x"})
        assert (resp.status_code, resp.text) == (404, "404: Not Found"), path


def test_chat_body_has_the_openai_floor_but_no_system_fingerprint(minimal: object) -> None:
    body = _post(minimal, "/chat/completions", {"model": "any-model", "messages": [{"role": "user", "content": "hi"}]}
                 ).json()
    assert {"id", "object", "created", "model", "choices"} <= set(body) and "system_fingerprint" not in body
    assert body["id"].startswith("min-") and body["model"] == "any-model"


def test_body_cap_is_one_mib(minimal: object) -> None:
    over = _post(minimal, "/chat/completions", {"model": "m", "messages": [
        {"role": "user", "content": "x" * MINIMAL_MAX_BYTES}]})
    assert over.status_code == 413 and "1048576" in over.text
    under = _post(minimal, "/chat/completions", {"model": "m", "messages": [
        {"role": "user", "content": "x" * (MINIMAL_MAX_BYTES - 1000)}]})
    assert under.status_code == 200


def test_stream_is_crlf_with_comments_between_events(minimal: object) -> None:
    raw = _post(minimal, "/chat/completions", {"model": "m", "stream": True,
                                                "messages": [{"role": "user", "content": "hi"}]}).content
    assert raw.startswith(b": minimal upstream\r\n\r\n") and raw.endswith(b"data: [DONE]\r\n\r\n")
    assert b"\r\n\r\n: keep-alive\r\n\r\ndata: " in raw
    assert b"\n" not in raw.replace(b"\r\n", b"") and b"system_fingerprint" not in raw


def test_our_client_reads_its_stream_whole(minimal: object) -> None:
    config = HermesProxyRuntimeConfig(endpoint=str(minimal), model=MINIMAL_MODELS[0], stream=True)
    with HermesClient(config) as client:
        ex = client.chat([{"role": "user", "content": "Say hello."}])
    assert ex.status == 200 and ex.done and ex.finish_reason == "stop" and not ex.protocol_errors
    json_config = config.model_copy(update={"stream": False})
    with HermesClient(json_config) as client:
        whole = client.chat([{"role": "user", "content": "Say hello."}])
    assert ex.text == whole.text and "uh-runtime-final-message" in ex.text


def test_only_scenario_ok() -> None:
    with pytest.raises(ValueError, match="one scenario, ok"):
        serve_emulator(profile="minimal", scenario="truncated")


def test_it_is_still_recognised_as_hermes_nb_emulator(minimal: object) -> None:
    from hermes_nb.core.resolve import resolve_runtime_config
    from hermes_nb.target import identify

    # a "live" receipt must never come from our own emulator, whichever profile
    target = identify(resolve_runtime_config(environ={}, endpoint=str(minimal)), ask_emulator=True)
    assert target.kind == "emulator" and target.evidence is not None


def test_cli_refuses_other_scenarios_for_minimal(capsys: pytest.CaptureFixture[str]) -> None:
    from hermes_nb.cli import main

    assert main(["emulator", "--profile", "minimal", "--scenario", "stall"]) == 2
    assert "the minimal profile has one scenario, ok" in capsys.readouterr().err
