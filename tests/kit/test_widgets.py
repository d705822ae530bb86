"""The widgets console: callbacks driven without a browser (Button.click), against the emulator."""

from __future__ import annotations

import pytest

from hermes_nb import ProbeConsole
from hermes_nb.kit import ConsoleSession

pytest.importorskip("ipywidgets")

CANARY = "sk-canary-widgets-0123456789"


@pytest.fixture
def console():
    c = ProbeConsole()
    yield c
    c.close()


def test_check_button_shows_ready_against_the_embedded_emulator(console: ProbeConsole) -> None:
    console.check_button.click()
    assert "adapter check" in console.output.value
    assert ">ready<" in console.output.value
    assert [t.kind for t in console.session.emulators.values()] == ["emulator"]


def test_probe_button_shows_the_wire_report(console: ProbeConsole) -> None:
    console.probe_button.click()
    assert "wire-format report" in console.output.value
    assert "routes" in console.output.value


def test_run_button_runs_the_prompt_and_never_shows_the_token(console: ProbeConsole, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("HERMES_NB_AUTH_TOKEN", CANARY)
    console.prompt.value = "Say hello"
    console.run_button.click()
    html = console.output.value
    assert "runtime result" in html and ">passed<" in html
    assert "Say hello" in html  # the emulator echoes the prompt's first line
    assert CANARY not in html


def test_scenario_change_restarts_the_emulator_and_shows_the_new_outcome(console: ProbeConsole) -> None:
    console.check_button.click()
    console.scenario.value = "auth-stale"
    console.check_button.click()
    assert [scenario for scenario, _ in console.session.emulators] == ["ok", "auth-stale"]  # one emulator each
    assert ">locked<" in console.output.value


def test_bad_endpoint_shows_one_error_instead_of_raising() -> None:
    actions = ConsoleSession()
    try:
        html = actions.check("ftp://nope", "m", "ok")
    finally:
        actions.close()
    assert "error" in html and "endpoint" in html


def test_unreachable_endpoint_is_reported_not_raised() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    actions = ConsoleSession()
    try:
        html = actions.check(f"http://127.0.0.1:{port}/v1", "m", "ok")
    finally:
        actions.close()
    assert ">unreachable<" in html
