"""The `perfgate` fixture object: what a perf test calls."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from perfgate.model import CaseResult, Timer, TimingStats
from perfgate.session import PerfgateSession
from perfgate.settings import MarkerOptions, MeasureOptions
from perfgate.stats import summarize

PROFILE_CALLS = 3  # calls inside the NVTX range under nsys: per-call metrics are totals / this


class PerfgateFixture:
    """`perfgate(fn, *args, **kwargs)` measures fn(*args, **kwargs) and returns its TimingStats.

    Declare work for throughput with `perfgate.work(bytes_moved=..., flops=...)` first; measure several
    cases in one test with `perfgate.measure(fn, args, kwargs, name="bf16")`.
    """

    def __init__(self, session: PerfgateSession | None, nodeid: str, marker: MarkerOptions | None) -> None:
        self._session = session
        self._nodeid = nodeid
        self._marker = marker
        self._bytes: int | None = None
        self._flops: int | None = None

    def work(self, bytes_moved: int | None = None, flops: int | None = None) -> "PerfgateFixture":
        """Bytes read + written and floating-point operations of one call (for GB/s and TFLOP/s)."""
        for key, value in (("bytes_moved", bytes_moved), ("flops", flops)):
            if value is not None and (not isinstance(value, int) or value < 0):
                raise ValueError(f"perfgate.work: {key} must be a non-negative int, got {value!r}")
        self._bytes, self._flops = bytes_moved, flops
        return self

    def __call__(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> TimingStats:
        return self.measure(fn, args, kwargs)

    def measure(self, fn: Callable[..., Any], args: tuple = (), kwargs: dict | None = None,
                name: str | None = None, timer: Timer | None = None) -> TimingStats:
        kwargs = kwargs or {}
        case_id = self._nodeid if name is None else f"{self._nodeid}::{name}"
        session = self._session
        if session is not None and session.child_tool:
            from perfgate.measure.profile_child import run_under_profiler

            ms = run_under_profiler(session.child_tool, case_id, fn, args, kwargs, PROFILE_CALLS)
            return summarize([ms], Timer.HOST)  # no extra call: it would add launches to the capture
        if session is None or not session.settings.enabled:
            return _single_call_stats(fn, args, kwargs)  # still run once: correctness failures surface
        from perfgate.measure.timer import measure

        options = self._options(session.settings.measure)
        m = measure(fn, args, kwargs, options, timer)
        stats = summarize(m.samples_ms, m.timer, self._bytes, self._flops)
        session.record(CaseResult(case_id=case_id, timing=stats, samples_ms=m.samples_ms, metrics=(),
                                  bytes_moved=self._bytes, flops=self._flops), self._nodeid, self._marker)
        return stats

    def _options(self, defaults: MeasureOptions) -> MeasureOptions:
        if self._marker is None or not self._marker.measure:
            return defaults
        return replace(defaults, **self._marker.measure)


def _single_call_stats(fn: Callable[..., Any], args: tuple, kwargs: dict) -> TimingStats:
    import time

    t0 = time.perf_counter_ns()
    fn(*args, **kwargs)
    ms = (time.perf_counter_ns() - t0) / 1e6
    return summarize([ms], Timer.HOST)
