"""An A/B run's cost: each phase's seconds on the monotonic clock, in the order the phases come; the total is
the whole run and the phases add up to it (what no phase covers is "other").
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

PHASES = (
    "worktree",
    "start",
    "tests",
    "prepare",
    "A/A",
    "rounds",
    "confirmation",
    "stop",
    "profilers",
    "fresh pair",
    "verdicts",
    "finish",
)


class Costs:
    """Each phase's seconds on the monotonic clock; the total is the whole run, the phases add up to it."""

    def __init__(self, t0: float) -> None:
        self.t0 = t0
        self.seconds: dict[str, float] = {}

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        started = time.monotonic()
        try:
            yield
        finally:
            self.add(name, time.monotonic() - started)

    def add(self, name: str, seconds: float) -> None:
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds

    def shown(self) -> tuple[tuple[str, float], ...]:
        return tuple((name, self.seconds[name]) for name in PHASES if self.seconds.get(name))

    def total(self) -> tuple[tuple[str, float], ...]:
        """Every phase, what no phase covers ("other"), and the total since the run began."""
        total = time.monotonic() - self.t0
        other = total - sum(self.seconds.values())
        return (*self.shown(), *((("other", other),) if other > 0 else ()), ("total", total))
