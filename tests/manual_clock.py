"""A clock for tests that moves only when told (perfgate.measure.clock's stand-in for the host's).

A stand-in kernel says how long it takes (`clock.current().sleep(0.002)` is exactly 2 ms), periodic work
(the NVML poller) runs at the instants it falls due, in the thread that moves the clock, and nothing
depends on how busy the machine is. tests/helpers.py writes this file into generated projects' conftest.py,
so it imports nothing but the standard library.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class _Due:
    at_ns: int
    interval_ns: int
    action: Callable[[], None]
    stopped: bool = False

    def stop(self) -> None:
        self.stopped = True


class ManualClock:
    """A clock that moves only when told: `sleep` and `advance_ns` move it, periodic actions run at the
    instants they fall due (in the thread that moves the clock), and each reading moves it `tick_ns`, so a
    callable that declares no time still takes one tick and a loop that waits on the clock ends."""

    def __init__(self, tick_ns: int = 0) -> None:
        self._now_ns = 0
        self._tick_ns = tick_ns
        self._due: list[_Due] = []
        self._running = False

    def perf_counter_ns(self) -> int:
        if self._tick_ns:
            self.advance_ns(self._tick_ns)
        return self._now_ns

    def sleep(self, seconds: float) -> None:
        self.advance_ns(round(seconds * 1e9))

    def advance_ns(self, ns: int) -> None:
        if ns < 0:
            raise ValueError(f"ManualClock: time does not go back ({ns} ns)")
        target = self._now_ns + ns
        if self._running:  # an action reading the clock moves it; due actions wait for the outer advance
            self._now_ns = target
            return
        self._running = True
        try:
            while (nxt := self._next_due(target)) is not None:
                self._now_ns = max(self._now_ns, nxt.at_ns)
                nxt.at_ns += nxt.interval_ns
                nxt.action()
            self._now_ns = max(self._now_ns, target)
        finally:
            self._running = False

    def _next_due(self, target_ns: int) -> _Due | None:
        self._due = [d for d in self._due if not d.stopped]
        due = min(self._due, key=lambda d: d.at_ns, default=None)
        return due if due is not None and due.at_ns <= target_ns else None

    def every(self, interval_s: float, action: Callable[[], None]) -> _Due:
        interval_ns = max(1, round(interval_s * 1e9))
        entry = _Due(self._now_ns + interval_ns, interval_ns, action)
        self._due.append(entry)
        action()
        return entry
