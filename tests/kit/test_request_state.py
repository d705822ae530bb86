"""What the console shows of a request, without widgets or a browser (``ConsoleSession.view``, kit/session.py).

What once went wrong: "sending…" left on screen after a request that failed at once; a blank result with Stop enabled
and nothing running; the previous answer kept under "done" after a failure; failed streams saying "done";
a history entry's table shown with the newest answer. Each is a transition checked here.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Any

import pytest

from hermes_nb import ConfigError, Exchange, resolve_runtime_config
from hermes_nb.core.records import RequestRecord, Timings
from hermes_nb.kit import session as session_module
from hermes_nb.kit.session import ConsoleSession, HistoryEntry, status_line
from hermes_nb.target import Target


def _exchange(status: int = 200, *, text: str = "", json_body: object = None, usage: dict | None = None,
              streamed: bool = True) -> Exchange:
    return Exchange(request=RequestRecord(method="POST", url="http://127.0.0.1:1/v1/chat/completions"),
                    status=status, text=text, json_body=json_body, usage=usage, streamed=streamed,
                    timings=Timings(started_at=datetime.now(UTC), first_delta_s=0.1, last_byte_s=1.1, total_s=1.2))


def _entry(number: int, verdict: str, reason: str, **exchange: Any) -> HistoryEntry:
    ex = _exchange(200 if verdict == "passed" else 401, **exchange)
    return HistoryEntry(number=number, route="chat", exchange=ex, verdict=verdict, reason=reason,
                        stopped=verdict == "stopped")


class _Job:
    """What the session reads of a :class:`~hermes_nb.kit.session.StreamJob`."""

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.running, self.error = True, None

    @property
    def text(self) -> str:
        return "".join(self.pieces)

    def start(self) -> _Job:
        return self

    def stop(self) -> None:
        pass

    def wait(self, _timeout: float | None = None) -> bool:
        return True

    def end(self, session: ConsoleSession, entry: HistoryEntry | None = None) -> None:
        session.shown, self.running = entry, False  # (the entry is shown before the job counts as ended)


@pytest.fixture
def session():
    s = ConsoleSession()
    yield s
    s.close()


def test_idle_then_sending_then_streaming_then_done_with_the_buttons_to_match(session) -> None:
    first = session.view()
    assert (first.phase, first.status, first.running) == ("idle", "idle", False)
    job = session.start(_Job())
    view = session.view()
    assert (view.phase, view.status, view.running) == ("sending", "sending…", True)
    job.pieces += ["Hel", "lo"]
    view = session.view()
    assert (view.phase, view.status, view.text, view.running) == ("streaming", "streaming…", "Hello", True)
    job.end(session, _entry(1, "passed", "ok", text="Hello", usage={"prompt_tokens": 3, "completion_tokens": 5}))
    view = session.view()
    assert (view.phase, view.status, view.running) == ("done", "done: passed (ok)", False)
    assert view.usage == "3 prompt + 5 completion = 8 tokens · 5.0 tokens/s"


@pytest.mark.parametrize(("verdict", "reason", "phase", "status"), [
    ("failed", "truncated", "failed", "failed: truncated"),
    ("blocked", "unreachable", "blocked", "blocked: unreachable"),
    ("stopped", "stopped", "stopped", "stopped: partial text kept"),
])
def test_the_status_names_the_verdict_and_a_failure_never_says_done(session, verdict, reason, phase, status) -> None:
    session.start(_Job()).end(session, _entry(1, verdict, reason))
    view = session.view()
    assert (view.phase, view.status) == (phase, status) and "done" not in view.status
    assert not view.running  # Send enabled, Stop disabled
    assert status_line(verdict, reason) == status


def test_an_end_without_an_exchange_is_a_failure_with_its_reason(session) -> None:
    job = session.start(_Job())
    job.pieces.append("partial")
    job.error = RuntimeError("boom")
    job.end(session)
    view = session.view()
    assert (view.phase, view.status, view.text, view.error) == ("failed", "failed: RuntimeError: boom", "partial",
                                                                "RuntimeError: boom")
    assert not view.running


def test_a_new_request_clears_the_old_answer_and_one_runs_at_a_time(session) -> None:
    session.start(_Job()).end(session, _entry(1, "passed", "ok", text="old answer"))
    session.start(_Job())
    view = session.view()
    assert (view.phase, view.text, view.entry) == ("sending", "", None)  # a new request clears the old answer
    with pytest.raises(ConfigError, match="still running"):
        session.start(_Job())


def test_selecting_an_entry_shows_its_own_answer_usage_and_table_never_while_running(session) -> None:
    first = _entry(1, "passed", "ok", text="first answer", usage={"prompt_tokens": 1, "completion_tokens": 2})
    second = _entry(2, "failed", "truncated", text="second")
    for entry in (first, second):
        session.start(_Job()).end(session, entry)
    assert session.select(first)
    view = session.view()
    assert (view.text, view.entry, view.status) == ("first answer", first, "done: passed (ok)")
    assert view.usage.startswith("1 prompt + 2 completion = 3 tokens")
    assert session.select(first) and session.view() == view  # the shown one again: nothing changes
    job = session.start(_Job())
    assert not session.select(second)  # while a request runs, the box belongs to it
    job.pieces.append("live")
    assert session.view().text == "live"


def test_non_streamed_answers_and_bodies_show_like_streamed_ones(session) -> None:
    session.start(_Job()).end(session, _entry(1, "passed", "ok", text="whole answer", streamed=False))
    assert session.view().text == "whole answer"
    session.start(_Job()).end(session, _entry(2, "passed", "forwarded", json_body={"data": [{"id": "m"}]},
                                              streamed=False))
    assert '"id": "m"' in session.view().text  # a /models body is the answer, not hidden in a collapsed "body"


def test_the_view_from_many_threads_stays_consistent(session, monkeypatch: pytest.MonkeyPatch) -> None:
    """Deltas of one request from its thread while the caller looks: every view is one moment, never an older one."""
    pieces = [f"{i}," for i in range(500)]

    class Streaming:
        endpoint = "http://127.0.0.1:9/v1"

        def __init__(self, _config: Any) -> None:
            pass

        def build_request(self, *_a: Any, **_k: Any) -> Any:
            return type("Request", (), {"extensions": {}})()

        def send(self, _request: Any, *, sse: bool, on_delta: Any) -> Exchange:
            for p in pieces:
                on_delta(p)
            return _exchange(text="".join(pieces), streamed=False)

        def close(self) -> None:
            pass

    config = resolve_runtime_config(endpoint=Streaming.endpoint, model="m", environ={})
    monkeypatch.setattr(session_module, "HermesClient", Streaming)
    monkeypatch.setattr(session, "config", lambda *_a: (Target(endpoint=Streaming.endpoint, kind="live"), config))
    done = threading.Event()
    session.send("", "m", "ok", "models", on_done=lambda _job: done.set())
    seen = []
    while not done.is_set():
        view = session.view()
        seen.append(view)
        assert view.running == (view.phase in ("sending", "streaming"))
        assert "".join(pieces).startswith(view.text) or view.entry is not None
    final = session.view()
    assert final.phase == "done" and final.status.startswith("done: passed (")
    assert final.text == "".join(pieces) and final.entry is session.history[0]
    running = [len(v.text) for v in seen if v.running]
    assert running == sorted(running)  # never an older moment
