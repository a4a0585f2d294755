"""Where a gate's time goes: each case's phases (its first calls, which compile, autotune and build; the
compiled-kernel record; the samples; the memory pass), summed into one line after the timing phase, with the
slowest first calls named. A cold run says what it paid for: "first calls 58.2 s (test_rms_norm 41.0 s, ...)".
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Iterator

from perfgate.model import CaseResult

FIRST_CALLS = "first calls"  # compile, autotune, build, the output check
KERNELS = "compiled kernels"  # the hooked call and reading the cubins (compiled/record.py)
# inside KERNELS, counted apart: the one more call for the launches of a CUDA C++ module's kernels (CUPTI's launch
# callbacks; torch.profiler where they are unavailable, whose start is seconds per process); only a case that
# enters such a module pays it
LAUNCHES = "CUDA module launches"
SAMPLES = "sampling"
MEMORY = "memory"
ORDER = (FIRST_CALLS, KERNELS, LAUNCHES, SAMPLES, MEMORY)
NAMED = 3  # the slowest first calls named in the line


class Phases:
    """Seconds spent per phase of one case; `clock` is injectable (tests). A phase entered inside another is
    counted in its own name only (the outer one's seconds leave it out): each second is counted once."""

    def __init__(self, clock: Callable[[], float] = time.perf_counter) -> None:
        self.clock = clock
        self.spent: dict[str, float] = {}
        self._inner = 0.0  # seconds of phases nested in the one running now

    @contextlib.contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        started = self.clock()
        outer, self._inner = self._inner, 0.0
        try:
            yield
        finally:
            took = self.clock() - started
            self.spent[name] = self.spent.get(name, 0.0) + took - self._inner
            self._inner = outer + took

    def items(self) -> tuple[tuple[str, float], ...]:
        return tuple((name, round(self.spent[name], 4)) for name in ORDER if name in self.spent)


def phase_line(elapsed_s: float, results: Iterable[CaseResult], before_s: float | None = None) -> str:
    """`perfgate: timing phase took 71.3 s (10 case(s)): first calls 58.2 s (test_rms_norm 41.0 s, ...), ...`."""
    cases = list(results)
    totals: dict[str, float] = {}
    first: list[tuple[float, str]] = []
    for r in cases:
        spent = dict(r.phases_s)
        for name, seconds in spent.items():
            totals[name] = totals.get(name, 0.0) + seconds
        first.append((spent.get(FIRST_CALLS, 0.0), r.case_id.rsplit("/", 1)[-1]))
    line = f"perfgate: timing phase took {elapsed_s:.1f} s ({len(cases)} case(s))"
    if not totals:
        return line
    slowest = ", ".join(f"{name} {s:.1f} s" for s, name in sorted(first, reverse=True)[:NAMED] if s >= 0.05)
    parts = [
        f"{FIRST_CALLS} {totals[FIRST_CALLS]:.1f} s (compile, autotune, build" + (f": {slowest})" if slowest else ")")
    ]
    parts += [f"{name} {totals[name]:.1f} s" for name in ORDER[1:] if name in totals]
    parts.append(f"the tests' own code {max(0.0, elapsed_s - sum(totals.values())):.1f} s")
    if before_s is not None:
        parts.append(f"before it {before_s:.1f} s (python, imports, collection)")
    return f"{line}: " + ", ".join(parts)


def process_age_s() -> float | None:
    """Seconds since this process started (Linux: /proc), None where that cannot be read."""
    try:
        with open("/proc/self/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        with open("/proc/uptime", encoding="ascii") as f:
            uptime = float(f.read().split()[0])
        import os

        ticks = os.sysconf("SC_CLK_TCK")
        return max(0.0, uptime - int(fields[19]) / ticks)
    except (OSError, ValueError, IndexError):
        return None
