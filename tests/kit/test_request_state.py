"""The console's request state machine, without widgets or a browser (kit/session.py).

What once went wrong: "sending…" left on screen after a request that failed at once; a blank result with Stop enabled
and nothing running; the previous answer kept under "done" after a failure; failed streams saying "done";
a history entry's table shown with the newest answer. Each is a transition checked here.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import pytest

from hermes_nb import ConfigError, Exchange
from hermes_nb.core.records import RequestRecord, Timings
from hermes_nb.kit.session import (
    BLOCKED,
    DONE,
    FAILED,
    IDLE,
    SENDING,
    STOPPED,
    STREAMING,
    HistoryEntry,
    RequestState,
    status_of,
)


def _entry(number: int, verdict: str, reason: str, *, text: str = "", json_body: object = None,
           usage: dict | None = None, streamed: bool = True) -> HistoryEntry:
    ex = Exchange(request=RequestRecord(method="POST", url="http://127.0.0.1:1/v1/chat/completions"),
                  status=200 if verdict == "passed" else 401, text=text, json_body=json_body, usage=usage,
                  streamed=streamed, timings=Timings(started_at=datetime.now(UTC), first_delta_s=0.1,
                                                     last_byte_s=1.1, total_s=1.2))
    return HistoryEntry(number=number, route="chat", exchange=ex, verdict=verdict, reason=reason,
                        stopped=verdict == "stopped")


def test_idle_then_sending_then_streaming_then_done_with_the_buttons_to_match() -> None:
    state = RequestState()
    first = state.snapshot()
    assert (first.phase, first.status, first.running) == (IDLE, "idle", False)
    gen = state.begin()
    view = state.snapshot()
    assert (view.phase, view.status, view.running) == (SENDING, "sending…", True)
    assert state.delta(gen, "Hel") and state.delta(gen, "lo")
    view = state.snapshot()
    assert (view.phase, view.status, view.text, view.running) == (STREAMING, "streaming…", "Hello", True)
    entry = _entry(1, "passed", "ok", text="Hello", usage={"prompt_tokens": 3, "completion_tokens": 5})
    assert state.finish(gen, entry)
    view = state.snapshot()
    assert (view.phase, view.status, view.running) == (DONE, "done: passed (ok)", False)
    assert view.usage == "3 prompt + 5 completion = 8 tokens · 5.0 tokens/s"


@pytest.mark.parametrize(("verdict", "reason", "phase", "status"), [
    ("failed", "truncated", FAILED, "failed: truncated"),
    ("blocked", "unreachable", BLOCKED, "blocked: unreachable"),
    ("stopped", "stopped", STOPPED, "stopped: partial text kept"),
])
def test_the_status_names_the_verdict_and_a_failure_never_says_done(verdict, reason, phase, status) -> None:
    state = RequestState()
    gen = state.begin()
    state.finish(gen, _entry(1, verdict, reason))
    view = state.snapshot()
    assert (view.phase, view.status) == (phase, status) and "done" not in view.status
    assert not view.running  # Send enabled, Stop disabled


def test_an_end_without_an_exchange_is_a_failure_with_its_reason() -> None:
    state = RequestState()
    gen = state.begin()
    state.delta(gen, "partial")
    state.finish(gen, None, "RuntimeError: boom")
    view = state.snapshot()
    assert (view.phase, view.status, view.text) == (FAILED, "failed: RuntimeError: boom", "partial")
    assert not view.running


def test_nothing_outlives_its_request() -> None:
    """A request that ends at once, then late callbacks of it and of an older one: none reaches the screen."""
    state = RequestState()
    old = state.begin()
    state.finish(old, _entry(1, "passed", "ok", text="old answer"))
    new = state.begin()
    assert state.snapshot().text == "" and state.snapshot().entry is None  # a new request clears the old answer
    assert not state.delta(old, "late piece of the old stream")
    assert not state.finish(old, _entry(9, "passed", "ok", text="old again"))
    assert state.snapshot().phase == SENDING
    state.finish(new, _entry(2, "blocked", "unreachable"))  # failed at once
    assert not state.delta(new, "a delta after the end")
    assert not state.finish(new, _entry(3, "passed", "ok"))  # a second end of the same request
    view = state.snapshot()
    assert view.status == "blocked: unreachable" and view.entry.number == 2 and not view.running


def test_one_request_at_a_time_and_a_refused_one_leaves_no_trace() -> None:
    state = RequestState()
    gen = state.begin()
    with pytest.raises(ConfigError, match="still running"):
        state.begin()
    state.abandon(gen)  # refused before it was sent (e.g. the port is taken by another request)
    view = state.snapshot()
    assert (view.phase, view.text, view.running) == (IDLE, "", False)
    assert not state.delta(gen, "x")


def test_selecting_an_entry_shows_its_own_answer_usage_and_table_never_while_running() -> None:
    state = RequestState()
    first = _entry(1, "passed", "ok", text="first answer", usage={"prompt_tokens": 1, "completion_tokens": 2})
    second = _entry(2, "failed", "truncated", text="second")
    for entry in (first, second):
        state.finish(state.begin(), entry)
    assert state.select(first)
    view = state.snapshot()
    assert (view.text, view.entry, view.status) == ("first answer", first, "done: passed (ok)")
    assert view.usage.startswith("1 prompt + 2 completion = 3 tokens")
    assert state.select(first) and state.snapshot() == view  # the shown one again: nothing changes
    gen = state.begin()
    assert not state.select(second)  # while a request runs, the box belongs to it
    state.delta(gen, "live")
    assert state.snapshot().text == "live"


def test_non_streamed_answers_and_bodies_show_like_streamed_ones() -> None:
    state = RequestState()
    state.finish(state.begin(), _entry(1, "passed", "ok", text="whole answer", streamed=False))
    assert state.snapshot().text == "whole answer"
    state.finish(state.begin(), _entry(2, "passed", "forwarded", json_body={"data": [{"id": "m"}]}, streamed=False))
    assert '"id": "m"' in state.snapshot().text  # a /models body is the answer, not hidden in a collapsed "body"


def test_status_of_every_phase() -> None:
    assert status_of(SENDING) == "sending…" and status_of(STREAMING) == "streaming…" and status_of(IDLE) == "idle"
    assert status_of(FAILED, None, "x") == "failed: x"


def test_transitions_from_many_threads_stay_consistent() -> None:
    """Deltas of one request from its thread while the caller snapshots: every snapshot is one moment."""
    state = RequestState()
    gen = state.begin()
    pieces = [f"{i}," for i in range(500)]
    done = threading.Event()

    def stream() -> None:
        for p in pieces:
            state.delta(gen, p)
        state.finish(gen, _entry(1, "passed", "ok", text="".join(pieces)))
        done.set()

    threading.Thread(target=stream).start()
    seen = []
    while not done.is_set():
        view = state.snapshot()
        seen.append(view)
        assert view.running == (view.phase in (SENDING, STREAMING))
        assert "".join(pieces).startswith(view.text)
    final = state.snapshot()
    assert final.phase == DONE and final.text == "".join(pieces)
    assert [len(v.text) for v in seen] == sorted(len(v.text) for v in seen)  # never an older moment
