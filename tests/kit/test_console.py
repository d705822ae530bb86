"""The probe console's logic, without a browser: streaming off the main thread, Stop, history, body editor, auth.

Against the embedded emulator over loopback. Synchronisation uses events set by the callbacks, never sleeps.
"""

from __future__ import annotations

import json
import re
import threading

import pytest

from hermes_nb import ConfigError, ProbeConsole
from hermes_nb.kit import ConsoleSession
from hermes_nb.kit.session import ROUTES, check_body

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
                       on_delta=on_delta, on_done=lambda j: (entries.append(j.entry), done.set()))
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


# --------------------------------------------------------------------------- no stuck states

def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_ten_failing_sends_in_a_row_leave_no_sending_and_stop_disabled() -> None:
    """A request that fails at once ends before ``send()`` returns: its end must still be what shows."""
    console = ProbeConsole(endpoint=f"http://127.0.0.1:{_closed_port()}/v1", route="chat")
    try:
        for n in range(1, 11):
            assert console.send() is not None and console.wait(10)
            view = console.session.view()
            assert view.status == "blocked: unreachable" and "sending" not in console.stream_view.value
            assert ">done" not in console.stream_view.value
            assert console.stop_button.disabled and not console.send_button.disabled
            assert len(console.history.options) == n and console.history.value == n - 1
            assert "unreachable" in console.output.value  # the response panel: the verdict and its hint
    finally:
        console.close()


def test_a_new_request_clears_the_old_answer_and_a_failure_never_says_done() -> None:
    console = ProbeConsole(route="chat")
    try:
        assert console.send() is not None and console.wait(10)
        first = console.session.history[0]
        assert first.exchange.text and "done: passed (ok)" in console.stream_view.value
        assert first.exchange.text[:30].replace('"', "&quot;") in console.stream_view.value  # non-streamed: shown
        console.scenario.value = "auth-stale"
        assert console.send() is not None and console.wait(10)
        shown = console.stream_view.value
        assert "blocked: auth" in shown and "done" not in shown
        assert first.exchange.text[:30].replace('"', "&quot;") not in shown  # the old answer is gone
        assert "hermes auth status" in console.output.value
        console.history.value = 0  # the first entry: its own answer, usage and table
        assert "done: passed (ok)" in console.stream_view.value and "response #1" in console.output.value
        assert first.exchange.text[:30].replace('"', "&quot;") in console.stream_view.value
    finally:
        console.close()


def test_the_answer_is_markdown_by_default_raw_on_request_and_nothing_in_it_runs() -> None:
    hostile = '**bold** <img src=x onerror="alert(1)">'
    console = ProbeConsole(prompt=hostile)
    try:
        assert console.send() is not None and console.wait(10)
        rendered = console.stream_view.value
        assert "<strong>bold</strong>" in rendered and "<img" not in rendered and "&lt;img" in rendered
        assert re.search(r"\d+ prompt \+ \d+ completion = \d+ tokens", rendered)  # usage with the answer
        console.view.value = "raw"
        raw = console.stream_view.value
        assert "**bold**" in raw and "<strong>" not in raw and "<img" not in raw
        assert 'data-hermes-copy="answer"' in raw and 'data-hermes-source="answer"' in raw
    finally:
        console.close()


@pytest.mark.parametrize("route", ["chat", "chat (streamed)"])
def test_copy_as_code_carries_an_environment_lookup_never_the_token_and_runs(route: str) -> None:
    """The httpx and openai snippets of an exchange, run as they are against the emulator (curl too)."""
    import shutil
    import subprocess
    import sys

    from hermes_nb.kit.console import snippets

    console = ProbeConsole(route=route, environ={"HERMES_NB_AUTH_TOKEN": CANARY})
    try:
        assert console.send() is not None and console.wait(10)
        html = console.snippets.value
        code = snippets(console.session.history[0].exchange.request, console.session.redactor)
        assert CANARY not in html and all(CANARY not in c for c in code.values())
        assert '"Authorization: Bearer $HERMES_NB_AUTH_TOKEN"' in code["curl"]
        assert 'os.environ["HERMES_NB_AUTH_TOKEN"]' in code["httpx"]
        assert 'os.environ.get("HERMES_NB_AUTH_TOKEN", "not-needed")' in code["openai"]
        env = {"PATH": "/usr/bin:/bin", "HERMES_NB_AUTH_TOKEN": "a-token-from-the-environment"}
        for kind in ("httpx", "openai"):
            proc = subprocess.run([sys.executable, "-c", code[kind]], capture_output=True, text=True, timeout=60,
                                  env=env)
            assert proc.returncode == 0, (kind, proc.stderr[-2000:])
            assert "Emulat" in proc.stdout or "emulator" in proc.stdout, (kind, proc.stdout)
        if shutil.which("curl"):
            proc = subprocess.run(["bash", "-c", code["curl"]], capture_output=True, text=True, timeout=60, env=env)
            assert proc.returncode == 0 and '"chat.completion' in proc.stdout, proc.stderr
    finally:
        console.close()


def test_the_model_picker_offers_the_listed_models_and_flags_an_unlisted_one(models_calls: list[str]) -> None:
    console = ProbeConsole()
    try:
        models = console.refresh_models()
        assert models and tuple(models) == console.model.options
        assert "listed by the proxy" in console.model_flag.value
        console.model.value = "no-such-model"
        assert "not listed by the proxy" in console.model_flag.value and "no-such-model" in console.model_flag.value
        console.model.value = models[0]
        assert "⚠" not in console.model_flag.value
        console.refresh_models()
        assert console.send() is not None and console.wait(10)
        assert len(models_calls) == 1  # one GET /models for the session's endpoint
    finally:
        console.close()


def test_history_file_keeps_the_exchanges_masked_and_a_new_console_reloads_them(tmp_path) -> None:
    path = tmp_path / "history.jsonl"
    console = ProbeConsole(route="chat", history=path)
    try:
        console.token.value = CANARY
        assert console.send() is not None and console.wait(10)
        console.route.value = "models"
        assert console.send() is not None and console.wait(10)
    finally:
        console.close()
    text = path.read_text()
    assert CANARY not in text and len(text.splitlines()) == 2
    again = ProbeConsole(history=path)  # e.g. after a kernel restart
    try:
        assert [label for label, _ in again.history.options][0].startswith("#2 GET models")
        again.history.value = 0  # the oldest entry
        assert "response #1" in again.output.value
        assert again.send() is not None and again.wait(10)
        assert again.session.history[-1].number == 3 and len(path.read_text().splitlines()) == 3
    finally:
        again.close()
    path.write_text("not json\n")
    with pytest.raises(ConfigError, match="line 1"):
        ProbeConsole(history=path)


def test_the_display_bundle_is_the_widget_plus_a_static_picture_and_the_page_script() -> None:
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    from hermes_nb.kit.console import CONSOLE_JS, KEYS_HINT, RESTART_NOTICE

    console = ProbeConsole()
    try:
        bundle = console._repr_mimebundle_()
        assert set(bundle) == {"application/vnd.jupyter.widget-view+json", "text/html", "text/plain"}
        assert "VBox" not in bundle["text/plain"] and "run this cell" in bundle["text/plain"]
        assert "static picture of the probe console" in bundle["text/html"]
        InteractiveShell.instance()  # a shell for display() to publish through
        with capture_output() as cap:
            console._ipython_display_()
        kinds = [sorted(o.data) for o in cap.outputs]
        assert kinds == [["application/vnd.jupyter.widget-view+json", "text/html", "text/plain"],
                         ["application/javascript"]]
        assert cap.outputs[1].data["application/javascript"] == CONSOLE_JS
        hint = console.keys_hint.value
        assert KEYS_HINT in hint and "jupyter-widgets-disconnected" in hint and RESTART_NOTICE in hint
        assert "run this cell again" in RESTART_NOTICE
    finally:
        console.close()
