"""The shared timer thread behind the deadline watchdog (one thread for every request's deadline)."""

from __future__ import annotations

import threading

from hermes_nb.wire.timers import call_later


def test_timers_run_in_deadline_order_and_cancelled_ones_never_run() -> None:
    ran: list[str] = []
    done = threading.Event()
    last = call_later(0.06, lambda: (ran.append("c"), done.set()))
    call_later(0.03, lambda: ran.append("b"))
    cancelled = call_later(0.02, lambda: ran.append("cancelled"))
    call_later(0.0, lambda: ran.append("a"))
    cancelled.cancel()
    cancelled.cancel()  # idempotent
    assert done.wait(5)
    assert ran == ["a", "b", "c"]
    last.cancel()  # after it ran: a no-op
    assert ran == ["a", "b", "c"]


def test_a_failing_callback_does_not_stop_later_timers() -> None:
    done = threading.Event()

    def boom() -> None:
        raise RuntimeError("callback failed")

    call_later(0.0, boom)
    call_later(0.01, done.set)
    assert done.wait(5)


def test_many_cancelled_timers_do_not_pile_up() -> None:
    from hermes_nb.wire import timers

    handles = [call_later(3600, lambda: None) for _ in range(500)]
    for handle in handles:
        handle.cancel()
    assert len(timers._scheduler._heap) < 200
