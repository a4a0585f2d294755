"""The time that measurement reads: the host's performance counter, or a stand-in a test installs.

The host timer, the CUDA sampling loop's chunk times, the NVML poller and the power protocol read the
time and wait through `current()`. Production gets `SYSTEM` (time.perf_counter_ns, time.sleep and a
polling thread), looked up once per case, never per sample: the timing loop binds time.perf_counter_ns
itself.

The host timers on CPU time (`host_timer`, measure/host_clock.py) read `thread_time_ns` / `process_time_ns` of
the same clock, so a test's stand-in can also say how much of the wall time a call spent on a CPU.

A test installs a deterministic stand-in (tests/manual_clock.py; trio.testing.MockClock is the model):
time moves only when a callable says how long it took (`clock.current().sleep(0.002)`), and periodic work
(the NVML poller) runs at the exact instants it is due, so samples are the same on an idle and on a busy
machine. In a pytest project it is installed from conftest.py: the gate's child processes (confirmation,
calibration) load the same conftest, so parent and children keep the same time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol


class Periodic(Protocol):
    def stop(self) -> None:
        """No further calls once this returns."""


class Clock(Protocol):
    def perf_counter_ns(self) -> int:
        """Monotonic nanoseconds (only differences mean anything)."""

    def thread_time_ns(self) -> int:
        """CPU time of the calling thread (ns): what it ran, not what it waited."""

    def process_time_ns(self) -> int:
        """CPU time of the whole process, every thread (ns)."""

    def sleep(self, seconds: float) -> None:
        """Let this much time pass."""

    def every(self, interval_s: float, action: Callable[[], None]) -> Periodic:
        """Call `action` now and every `interval_s` after, until stopped."""


class _PollingThread:
    """`action` on a daemon thread (pynvml calls release the GIL, so polling steals nothing measurable)."""

    def __init__(self, interval_s: float, action: Callable[[], None]) -> None:
        self._interval_s = interval_s
        self._action = action
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="perfgate-poll", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._action()
            self._stop.wait(self._interval_s)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)


class SystemClock:
    """The host's clock: the functions of the `time` module themselves, so reading costs nothing extra."""

    perf_counter_ns = staticmethod(time.perf_counter_ns)
    thread_time_ns = staticmethod(time.thread_time_ns)
    process_time_ns = staticmethod(time.process_time_ns)
    sleep = staticmethod(time.sleep)

    def every(self, interval_s: float, action: Callable[[], None]) -> Periodic:
        return _PollingThread(interval_s, action)


SYSTEM = SystemClock()
_current: list[Clock] = [SYSTEM]  # one slot: the clock in use


def current() -> Clock:
    """The clock measurement reads now (SYSTEM unless a test installed another)."""
    return _current[0]


def install(clock: Clock) -> Clock:
    """Make `clock` the one measurement reads; returns the one it replaces, for the caller to restore."""
    previous, _current[0] = _current[0], clock
    return previous
