"""How long a spin after a case makes it N% slower, measured against the case itself (the A/B lab's injected
slowdowns: ab_accuracy.py --fixed-spin, ab_modes.py).

    python spin_calibration.py CASES_DIR MODULE NAMES_JSON LEVELS_JSON [--host]

Run in the throwaway project (CASES_DIR holds MODULE, which defines CASES {name: () -> (fn, args,
reference)} and spin_after(fn, cycles); with --host, host_spin_after(fn, seconds)). LEVELS_JSON maps a key
"<case>-<slot>" to the percent wanted. Prints one JSON line {key: {"cycles" (GPU) or "seconds" (host),
"case_ms", "measured_pct", "curve"}}.

A spin is not additive after a short kernel (a few hundred cycles after a 10 us kernel hide behind the next
launch, and CUDA events tick in 32 ns), so nothing is assumed: the case with a spin of c is measured against
the case with a spin of 0 (the same launches), interleaved in chunks so drift cancels, L2 flushed before each
call, on a grid of c; the ratio made monotone and the level's c interpolated where it crosses; then that c is
measured again on its own, and that measured effect is what a lab table reports as the injected size.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

GRID = (0.25, 0.5, 0.75, 1, 1.25, 1.5, 2, 2.5, 3, 4, 6, 8)  # multiples of the additive guess


class GpuClock:
    """CUDA events around each call, L2 flushed before it; spins of GPU cycles (torch.cuda._sleep)."""

    unit = "cycles"

    def __init__(self, cases: Any) -> None:
        import torch

        self.torch, self.cases = torch, cases
        self.flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
        sleep = cases.spin_after(lambda: None, 10_000_000)
        self.per_ms = 10_000_000 / sorted(self.samples(sleep, (), 9))[4]

    def samples(self, call: Callable[..., Any], args: tuple[Any, ...], reps: int) -> list[float]:
        torch, pairs = self.torch, []
        for _ in range(reps):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            self.flush.zero_()
            start.record()
            call(*args)
            end.record()
            pairs.append((start, end))
        torch.cuda.synchronize()
        return [s.elapsed_time(e) for s, e in pairs]

    def spun(self, fn: Callable[..., Any], units: float) -> Callable[..., Any]:
        return self.cases.spin_after(fn, int(units))  # type: ignore[no-any-return]

    def value(self, units: float) -> int:
        return int(units)


class HostClock:
    """perf_counter around each call; busy waits in microseconds (the plumbing without a GPU)."""

    unit = "seconds"
    per_ms = 1000.0  # microseconds

    def __init__(self, cases: Any) -> None:
        self.cases = cases

    def samples(self, call: Callable[..., Any], args: tuple[Any, ...], reps: int) -> list[float]:
        out = []
        for _ in range(reps):
            t0 = time.perf_counter()
            call(*args)
            out.append(1000 * (time.perf_counter() - t0))
        return out

    def spun(self, fn: Callable[..., Any], units: float) -> Callable[..., Any]:
        return self.cases.host_spin_after(fn, units / 1e6)  # type: ignore[no-any-return]

    def value(self, units: float) -> float:
        return units / 1e6


def trimmed_mean(values: list[float]) -> float:
    kept = sorted(values)[: max(1, int(len(values) * 0.95))]
    return sum(kept) / len(kept)


def ratio_at(
    clock: GpuClock | HostClock,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    units: float,
    per_chunk: int,
    chunks: int,
) -> float:
    """The case with `units` of spin against the case with a spin of 0, interleaved in chunks."""
    base: list[float] = []
    spun: list[float] = []
    for _ in range(chunks):
        base += clock.samples(clock.spun(fn, 0), args, per_chunk)
        spun += clock.samples(clock.spun(fn, units), args, per_chunk)
    return trimmed_mean(spun) / trimmed_mean(base)


def calibrate(clock: GpuClock | HostClock, names: list[str], levels: dict[str, float]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        fn, args, _ = clock.cases.CASES[name]()
        for _ in range(5):
            fn(*args)
        ms = sorted(clock.samples(clock.spun(fn, 0), args, 51))[25]
        per_chunk = max(10, min(100, int(1.0 / ms)))
        mine = {key: pct for key, pct in levels.items() if key.rsplit("-", 1)[0] == name and pct > 0}
        if not mine:
            continue
        top = max(mine.values())
        guess = max(50.0, top / 100 * ms * clock.per_ms)  # the top level, were spins additive
        curve, best = [(0.0, 1.0)], 1.0
        for m in GRID:
            best = max(best, ratio_at(clock, fn, args, guess * m, per_chunk, 8))
            curve.append((guess * m, best))
            if best >= 1 + 1.3 * top / 100:
                break
        for key, pct in mine.items():
            units = _crossing(curve, 1 + pct / 100)
            measured = ratio_at(clock, fn, args, units, per_chunk, 16)
            out[key] = {
                clock.unit: clock.value(units),
                "case_ms": ms,
                "measured_pct": 100 * (measured - 1),
                "curve": [[round(c, 1), round(r, 4)] for c, r in curve],
            }
    return out


def _crossing(curve: list[tuple[float, float]], target: float) -> float:
    """Where the monotone curve crosses `target`, interpolated (its last point when it never does)."""
    for (c0, r0), (c1, r1) in zip(curve, curve[1:]):
        if r0 < target <= r1:
            return c0 + (c1 - c0) * (target - r0) / (r1 - r0)
    return curve[-1][0]


def main() -> None:
    cases_dir, module, names, levels = sys.argv[1:5]
    sys.path[:0] = [cases_dir, os.getcwd()]  # the cases, and the project's root (its `kernels` package)
    cases = importlib.import_module(module)
    clock = HostClock(cases) if "--host" in sys.argv[5:] else GpuClock(cases)
    print(json.dumps(calibrate(clock, json.loads(names), json.loads(levels))))


if __name__ == "__main__":
    main()
