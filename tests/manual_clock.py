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
    callable that declares no time still takes one tick and a loop that waits on the clock ends.

    CPU time (`thread_time_ns`, `process_time_ns`) moves with it, except during `preempt`: wall time that the
    measuring thread spent waiting for a CPU (another process ran)."""

    def __init__(self, tick_ns: int = 0) -> None:
        self._now_ns = 0
        self._waited_ns = 0  # wall time the thread did not run (preempt)
        self._tick_ns = tick_ns
        self._due: list[_Due] = []
        self._running = False

    def perf_counter_ns(self) -> int:
        if self._tick_ns:
            self.advance_ns(self._tick_ns)
        return self._now_ns

    def thread_time_ns(self) -> int:
        return self.perf_counter_ns() - self._waited_ns

    def process_time_ns(self) -> int:
        return self.thread_time_ns()

    def sleep(self, seconds: float) -> None:
        self.advance_ns(round(seconds * 1e9))

    def preempt(self, seconds: float) -> None:
        """Wall time passes while the thread waits for a CPU: the wall clock reads it, CPU time does not."""
        ns = round(seconds * 1e9)
        self._waited_ns += ns
        self.advance_ns(ns)

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


class FakeSm:
    """A stand-in SM clock (perfgate.measure.sm_clock's probe, for a test): its cycle counter runs at the
    frequency the test sets (`mhz`, or a schedule of (seconds after start, MHz) steps, like a power cap that
    lands part-way), on the manual clock's time. `compute(mcycles)` is a compute-bound kernel: it takes that many
    million cycles, so its time follows the clock; `wait(ms)` is a memory-bound one: its time does not."""

    def __init__(self, clock: ManualClock, mhz: float, schedule: tuple[tuple[float, float], ...] = ()) -> None:
        self.clock = clock
        self.mhz = mhz
        self._schedule = sorted(schedule)
        self._start_ns = clock.perf_counter_ns()
        self._since_ns = self._start_ns
        self._cycles_before = 0.0

    def cycles_now(self) -> tuple[int, float]:
        """(clock ns, cycles counted so far), after any scheduled change of frequency that fell due."""
        now = self.clock.perf_counter_ns()
        while self._schedule and now >= self._start_ns + self._schedule[0][0] * 1e9:
            at_ns = int(self._start_ns + self._schedule[0][0] * 1e9)
            self._cycles_before += (at_ns - self._since_ns) * self.mhz / 1e3
            self._since_ns, self.mhz = at_ns, self._schedule.pop(0)[1]
        return now, self._cycles_before + (now - self._since_ns) * self.mhz / 1e3

    def compute(self, mcycles: float) -> None:
        self.cycles_now()
        self.clock.sleep(mcycles / self.mhz)  # 1e6 cycles / (MHz x 1e6 / s)

    def wait(self, ms: float) -> None:
        self.clock.sleep(ms / 1e3)

    def probe(self, timer: object = None) -> FakeSmProbe:
        return FakeSmProbe(self)


class FakeSmProbe:
    """perfgate.measure.sm_clock.ClockProbe on a FakeSm: stamps of (ns, cycles), the mean clock between two."""

    def __init__(self, sm: FakeSm) -> None:
        self.sm = sm
        self.stamps: list[tuple[int, float] | None] = []

    def begin(self, stamps: int) -> None:
        self.stamps = [None] * stamps

    def stamp(self, index: int) -> None:
        self.stamps[index] = self.sm.cycles_now()

    def mhz(self, first: int, second: int) -> float | None:
        a, b = self.stamps[first], self.stamps[second]
        if a is None or b is None or b[0] <= a[0]:
            return None
        return 1e3 * (b[1] - a[1]) / (b[0] - a[0])
