"""The probe console's logic, without a browser: streaming off the main thread, Stop, history, body editor, auth.

Against the embedded emulator over loopback. Synchronisation uses events set by the callbacks, never sleeps.
"""

from __future__ import annotations

import json
import threading

import pytest

from hermes_nb.core.errors import ConfigError
from hermes_nb.kit.console import ProbeConsole
from hermes_nb.kit.session import ROUTES, ConsoleSession, check_body

pytest.importorskip("ipywidgets")

CANARY = "sk-canary-console-0123456789"


# --------------------------------------------------------------------------- body editor

def test_body_editor_explains_what_is_wrong() -> None:
    chat = ROUTES["chat"]
    bad = check_body('{"messages": [', chat)
    assert not bad.ok and bad.errors[0].startswith("invalid JSON at line 1, column")
    assert "non-empty list" in check_body('{"messages": []}', chat).errors[0]
    assert 'messages[0] needs "role" and "content"' in check_body('{"messages": [{"role": "user"}]}', chat).errors
    assert check_body("[1]", chat).errors == ("a chat body must be a JSON object",)
    assert check_body("", chat).ok and check_body("", chat).notes  # empty: built from the prompt
    good = check_body('{"messages": [{"role": "user", "content": "hi"}]}', ROUTES["chat (streamed)"])
    assert good.ok and good.value["messages"][0]["content"] == "hi"
    assert any('"stream": true' in n for n in good.notes)
    assert "GET sends no body" in check_body('{"a": 1}', ROUTES["models"]).errors[0]
    assert check_body('{"a": 1}', ROUTES["forwarded path"], method="POST").value == {"a": 1}


# --------------------------------------------------------------------------- streaming and Stop

@pytest.fixture
def session():
    s = ConsoleSession(delay_s=0.3)
    yield s
    s.close()


def test_stream_arrives_in_pieces_on_another_thread_and_stop_keeps_the_partial_text(session) -> None:
    seen: list[tuple[str, int]] = []
    two = threading.Event()

    def on_delta(piece: str) -> None:
        seen.append((threading.current_thread().name, len(session.job.text)))
        if len(seen) == 2:
            two.set()

    done = threading.Event()
    entries = []
    job = session.send("", "m", "slow", "chat (streamed)", prompt="count to ten",
                       on_delta=on_delta, on_done=lambda j, e: (entries.append(e), done.set()))
    assert two.wait(10), "no deltas arrived"
    session.stop()
    assert done.wait(10)
    assert all(name == "hermes-nb-console-stream" for name, _ in seen)  # never the caller's thread
    lengths = [n for _, n in seen]
    assert lengths == sorted(lengths) and lengths[0] < lengths[-1]  # the text grew delta by delta
    (entry,) = entries
    assert entry.stopped and entry.verdict == "stopped"
    assert job.text and entry.exchange.text == job.text  # the partial text is kept in the record too
    assert not entry.exchange.done  # it really was cut: no [DONE]
    full = ConsoleSession()
    try:
        whole = full.send("", "m", "ok", "chat (streamed)", prompt="count to ten")
        assert whole.wait(10)
    finally:
        full.close()
    assert len(job.text) < len(whole.text) and whole.text.startswith(job.text)


def test_unstopped_stream_is_classified_and_kept_in_history(session) -> None:
    job = session.send("", "m", "ok", "chat (streamed)", prompt="hello")
    assert job.wait(10)
    entry = session.history[0]
    assert (entry.verdict, entry.reason) == ("passed", "ok")
    assert entry.exchange.streamed and entry.exchange.done
    assert session.history.labels() == [(entry.label, 0)]
    assert entry.label.startswith("#1 POST chat (streamed) → 200 passed")


@pytest.mark.parametrize(("route", "expected"), [("models", ("passed", "forwarded")),
                                                 ("health", ("passed", "local")),
                                                 ("chat", ("passed", "ok"))])
def test_each_route_is_sent_and_judged(session, route: str, expected: tuple[str, str]) -> None:
    job = session.send("", "m", "ok", route, prompt="hi")
    assert job.wait(10)
    entry = session.history[-1]
    assert (entry.verdict, entry.reason) == expected
    assert entry.exchange.request.method == ROUTES[route].method


def test_forwarded_path_and_error_classification(session) -> None:
    job = session.send("", "m", "ok", "forwarded path", method="GET", path="/no-such-route")
    assert job.wait(10)
    entry = session.history[-1]
    assert entry.exchange.status == 404 and entry.verdict == "failed"
    stale = session.send("", "m", "auth-stale", "chat (streamed)", prompt="hi")
    assert stale.wait(10)
    entry = session.history[-1]
    assert (entry.verdict, entry.reason) == ("blocked", "auth") and "hermes auth status" in entry.hint


def test_bad_inputs_are_refused_before_anything_is_sent(session) -> None:
    with pytest.raises(ConfigError, match="invalid JSON"):
        session.send("", "m", "ok", "chat", body="{nope")
    with pytest.raises(ConfigError, match="forwarded path"):
        session.send("", "m", "ok", "forwarded path", method="GET", path="")
    assert len(session.history) == 0 and session.job is None


# --------------------------------------------------------------------------- secrets

def test_token_from_the_environment_is_used_and_never_exported() -> None:
    session = ConsoleSession(environ={"HERMES_NB_AUTH_TOKEN": CANARY})
    try:
        _, config = session.config("", "m", "ok")
        assert config.auth_token.get_secret_value() == CANARY
        job = session.send("", "m", "ok", "chat", prompt=f"repeat {CANARY}")
        assert job.wait(10)
        assert session.history[0].exchange.request.headers["authorization"] == "Bearer <redacted>"
        exported = session.export(0)
    finally:
        session.close()
    assert CANARY not in exported
    assert json.loads(exported)["schema"] == "hermes-nb.console-exchange.v1"


def test_password_field_is_taken_and_emptied_never_echoed_or_stored() -> None:
    console = ProbeConsole()
    try:
        console.token.value = CANARY
        assert console.token.value == ""  # emptied at once: not in the widget state a notebook saves
        assert CANARY not in json.dumps(console.token.get_state())
        assert "password field" in console.token_status.value and CANARY not in console.token_status.value
        _, config = console.session.config("", "m", "ok")
        assert config.auth_token.get_secret_value() == CANARY
        console.prompt.value = f"say {CANARY}"
        console.route.value = "chat"
        assert console.send() is not None and console.wait(10)
        console.history.value = 0
        exported = console.export()
        shown = console.output.value + console.stream_view.value + console.export_view.value + exported
    finally:
        console.close()
    assert CANARY not in shown


# --------------------------------------------------------------------------- the widgets

def test_widgets_stream_stop_and_record_history() -> None:
    console = ProbeConsole(scenario="slow", delay_s=0.3)
    values: list[str] = []
    grown = threading.Event()

    def watch(change) -> None:
        values.append(change["new"])
        if "streaming" in change["new"] and len([v for v in values if "streaming" in v]) >= 2:
            grown.set()

    console.stream_view.observe(watch, names="value")
    try:
        console.send_button.click()
        assert console.send_button.disabled and not console.stop_button.disabled
        assert grown.wait(10)
        console.stop_button.click()
        assert console.wait(10)
        streaming = [v for v in values if "streaming" in v]
        assert len(streaming[0]) < len(streaming[-1])  # the view grew while streaming
        assert "stopped: partial text kept" in console.stream_view.value
        assert console.session.job.text[:20].replace('"', "&quot;") in console.stream_view.value
        assert ">stopped<" in console.output.value and "hermes-timeline" in console.output.value
        assert not console.send_button.disabled and console.stop_button.disabled
        assert [label for label, _ in console.history.options][0].startswith("#1 POST chat (streamed)")
        assert console.history.value == 0
    finally:
        console.close()


def test_body_editor_messages_and_route_pickers() -> None:
    console = ProbeConsole()
    try:
        console.body.value = "{oops"
        assert "invalid JSON" in console.body_message.value
        console.body.value = '{"messages": [{"role": "user", "content": "hi"}]}'
        assert "valid JSON" in console.body_message.value
        console.route.value = "forwarded path"
        assert not console.method.disabled and not console.path.disabled and console.prompt.disabled
        console.route.value = "models"
        assert console.method.disabled and console.method.value == "GET"
        assert "GET sends no body" in console.body_message.value
        assert console.send() is None and "GET sends no body" in console.output.value
    finally:
        console.close()
