"""Deadlines that fit streaming, end to end over loopback with the emulator.

``request_timeout_ms`` bounds the wait for the response to start and each silence, not a healthy stream;
``max_duration_ms`` is the optional overall cap. The emulator's ``slow`` scenario sends a delta every
``delay_s``; ``stall`` sends a little and then nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from hermes_nb import HermesClient, HermesProxyRuntimeConfig
from hermes_nb.emulator import SCENARIO_HEADER, EmulatorHandle, serve_emulator
from hermes_nb.wire.reading import classify

#: the slow scenario's gap between deltas: a sixth of REQUEST_TIMEOUT_MS (room for a loaded machine), while its
#: ~10 gaps add up to more than REQUEST_TIMEOUT_MS
DELAY_S = 0.15
REQUEST_TIMEOUT_MS = 1000


@pytest.fixture(scope="module")
def emu() -> Iterator[EmulatorHandle]:
    with serve_emulator(delay_s=DELAY_S) as handle:
        yield handle


def chat(emu: EmulatorHandle, scenario: str, **config: Any):  # type: ignore[no-untyped-def]
    conf = HermesProxyRuntimeConfig(endpoint=emu.endpoint, model="hermes-4-405b",
                                    extra_headers={SCENARIO_HEADER: scenario}, **config)
    with HermesClient(conf) as client:
        exchange = client.chat([{"role": "user", "content": "Do the mission."}])
    return exchange, classify(exchange, conf)


def test_a_stream_that_sends_steadily_outlasts_request_timeout_ms(emu: EmulatorHandle) -> None:
    exchange, outcome = chat(emu, "slow", request_timeout_ms=REQUEST_TIMEOUT_MS)
    assert (outcome.status, outcome.reason) == ("passed", "ok"), outcome.errors
    assert exchange.done and exchange.transport_error is None
    # the point of the test: the healthy stream ran longer than request_timeout_ms
    assert exchange.timings.total_s > REQUEST_TIMEOUT_MS / 1000


def test_a_silence_longer_than_request_timeout_ms_fails_as_timed_out(emu: EmulatorHandle) -> None:
    exchange, outcome = chat(emu, "stall", request_timeout_ms=REQUEST_TIMEOUT_MS)
    assert (outcome.status, outcome.reason) == ("failed", "read_timeout")
    assert exchange.transport_error is not None and exchange.transport_error.phase == "body"
    assert f"request timed out after {REQUEST_TIMEOUT_MS} ms of silence" in outcome.errors[0]
    assert exchange.text and "partial text kept" in outcome.errors[0]


def test_max_duration_ms_cuts_a_healthy_stream(emu: EmulatorHandle) -> None:
    exchange, outcome = chat(emu, "slow", request_timeout_ms=60_000, max_duration_ms=250)
    assert (outcome.status, outcome.reason) == ("failed", "deadline")
    assert "max_duration_ms (250 ms)" in outcome.errors[0]
    assert not exchange.done and exchange.text  # cut mid-stream, partial text kept


def test_max_duration_ms_is_left_out_of_the_uh_strict_export() -> None:
    conf = HermesProxyRuntimeConfig(model="m", max_duration_ms=1000, request_timeout_ms=5000)
    assert conf.to_document()["max_duration_ms"] == 1000
    strict = conf.to_document(uh_strict=True)
    assert "max_duration_ms" not in strict and strict["request_timeout_ms"] == 5000
    assert "max_duration_ms" not in HermesProxyRuntimeConfig(model="m").to_document()


def test_max_duration_ms_must_be_positive() -> None:
    from hermes_nb import ConfigError
    from hermes_nb.core.config import validate_config

    with pytest.raises(ConfigError, match="max_duration_ms"):
        validate_config({"model": "m", "max_duration_ms": 0})
