"""One daemon thread for every deadline timer (instead of a ``threading.Timer`` thread per request).

``call_later(delay_s, fn)`` schedules ``fn`` to run on the shared timer thread once ``delay_s`` has passed
and returns a handle whose ``cancel()`` stops it (idempotent; a no-op once it ran). Starting a thread per
request cost a thread start, a handshake with the new thread and its teardown on every round trip (the
P2 benchmark, ``benchmarks/client_roundtrip.py``); here arming a timer is a heap push, and the thread is only
woken when the new deadline is the earliest one. Callbacks run on the timer thread, one at a time: they
must be short (the watchdog's is a ``socket.shutdown``). An exception in a callback is swallowed so
the other timers keep running.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable

__all__ = ["TimerHandle", "call_later"]


class TimerHandle:
    __slots__ = ("when", "fn", "cancelled")

    def __init__(self, when: float, fn: Callable[[], None]) -> None:
        self.when = when
        self.fn = fn
        self.cancelled = False

    def cancel(self) -> None:
        if not self.cancelled:
            self.cancelled = True
            _scheduler.note_cancel()


class _Scheduler:
    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._heap: list[tuple[float, int, TimerHandle]] = []
        self._seq = itertools.count()
        self._cancelled = 0
        self._thread: threading.Thread | None = None

    def add(self, delay_s: float, fn: Callable[[], None]) -> TimerHandle:
        handle = TimerHandle(time.monotonic() + max(0.0, delay_s), fn)
        with self._cond:
            heap = self._heap
            earliest = not heap or handle.when < heap[0][0]
            heapq.heappush(heap, (handle.when, next(self._seq), handle))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="hermes-nb-timers", daemon=True)
                self._thread.start()
            elif earliest:
                self._cond.notify()
        return handle

    def note_cancel(self) -> None:
        with self._cond:
            self._cancelled += 1
            heap = self._heap
            if self._cancelled > 64 and self._cancelled * 2 > len(heap):  # keep the heap small
                self._heap = [entry for entry in heap if not entry[2].cancelled]
                heapq.heapify(self._heap)
                self._cancelled = 0

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    heap = self._heap
                    while heap and heap[0][2].cancelled:
                        heapq.heappop(heap)
                        self._cancelled = max(0, self._cancelled - 1)
                    if not heap:
                        self._cond.wait()
                        continue
                    wait = heap[0][0] - time.monotonic()
                    if wait <= 0:
                        handle = heapq.heappop(heap)[2]
                        handle.cancelled = True  # ran: a later cancel() changes nothing
                        break
                    self._cond.wait(wait)
            try:
                handle.fn()
            except Exception:  # noqa: BLE001 -- one failing callback must not stop every other deadline
                pass


_scheduler = _Scheduler()


def call_later(delay_s: float, fn: Callable[[], None]) -> TimerHandle:
    """Run ``fn`` on the shared timer thread after ``delay_s`` seconds; ``.cancel()`` the handle to stop it."""
    return _scheduler.add(delay_s, fn)
