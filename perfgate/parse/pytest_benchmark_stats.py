"""pytest-benchmark's statistics with its own definitions (its quartiles are Wikipedia's methods 2 and 3, not
numpy's interpolation): what the `benchmark` fixture hands out (pytest_plugin/benchmark_stats.py) and what a
pytest-benchmark file's statistics must agree with when it keeps its data (parse/pytest_benchmark.py).
Checked against pytest_benchmark.stats.Stats in tests/test_benchmark_fidelity.py."""

from __future__ import annotations

import statistics
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from typing import Any

FIELDS = (
    "min",
    "max",
    "mean",
    "stddev",
    "rounds",
    "median",
    "iqr",
    "q1",
    "q3",
    "iqr_outliers",
    "stddev_outliers",
    "outliers",
    "ld15iqr",
    "hd15iqr",
    "ops",
    "total",
)


class BenchmarkStats:
    """pytest-benchmark's `Stats`: per-call durations (seconds) and their summary."""

    def __init__(self, data_s: Sequence[float]) -> None:
        if not data_s:
            raise ValueError("benchmark stats need at least one round")
        self.data = list(data_s)
        self.sorted_data = sorted(self.data)
        n = self.rounds = len(self.data)
        self.total = sum(self.data)
        self.min, self.max = self.sorted_data[0], self.sorted_data[-1]
        self.mean = statistics.mean(self.data)
        self.stddev = statistics.stdev(self.data) if n > 1 else 0
        self.median = statistics.median(self.data)
        self.q1, self.q3 = _quartiles(self.sorted_data)
        self.iqr = self.q3 - self.q1
        self.ops = n / self.total if self.total else 0

    def __bool__(self) -> bool:
        return bool(self.data)

    @property
    def stddev_outliers(self) -> int:
        lo, hi = self.mean - self.stddev, self.mean + self.stddev
        return sum(1 for v in self.data if v < lo or v > hi)

    @property
    def iqr_outliers(self) -> int:
        lo, hi = self.q1 - 1.5 * self.iqr, self.q3 + 1.5 * self.iqr
        return sum(1 for v in self.data if v < lo or v > hi)

    @property
    def outliers(self) -> str:
        return f"{self.stddev_outliers};{self.iqr_outliers}"

    @property
    def ld15iqr(self) -> float:
        if self.rounds == 1:
            return self.data[0]
        return self.sorted_data[bisect_left(self.sorted_data, self.q1 - 1.5 * self.iqr)]

    @property
    def hd15iqr(self) -> float:
        return self.sorted_data[bisect_right(self.sorted_data, self.q3 + 1.5 * self.iqr) - 1]

    def as_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in FIELDS}


def _quartiles(data: Sequence[float]) -> tuple[float, float]:
    n = len(data)
    if n == 1:
        return data[0], data[0]
    if n % 2 == 0:  # method 2: medians of the halves
        return statistics.median(data[: n // 2]), statistics.median(data[n // 2 :])
    k, r = divmod(n, 4)  # method 3
    if r == 1:
        return 0.25 * data[k - 1] + 0.75 * data[k], 0.75 * data[3 * k] + 0.25 * data[3 * k + 1]
    return 0.75 * data[k] + 0.25 * data[k + 1], 0.25 * data[3 * k + 1] + 0.75 * data[3 * k + 2]


# How far a statistic in a file may sit from the one its data give: pytest-benchmark writes floats in full
# (repr), so the order statistics agree exactly and sums to the last bits of their summation order.
REL_TOLERANCE = 1e-6
ABS_TOLERANCE_S = 1e-12


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= max(REL_TOLERANCE * max(abs(a), abs(b)), ABS_TOLERANCE_S)


def contradictions(stats: dict[str, Any], data_s: Sequence[float]) -> list[str]:
    """Where a pytest-benchmark `stats` object disagrees with itself or with its data (seconds): the first
    few, each "name: what". Fields the file left out are not judged."""
    given = {k: v for k, v in stats.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    out = []
    if data_s:
        ref = BenchmarkStats(data_s).as_dict()
        for key in ("min", "max", "mean", "median", "q1", "q3", "stddev", "iqr", "total", "ops"):
            if key in given and not _close(float(given[key]), float(ref[key])):
                out.append(f"stats.{key} is {given[key]:.6g} but its data give {ref[key]:.6g}")
        return out
    rounds = given.get("rounds", 0)
    if "iqr" in given and "q1" in given and "q3" in given and not _close(given["iqr"], given["q3"] - given["q1"]):
        out.append(f"stats.iqr is {given['iqr']:.6g}, not q3 - q1 = {given['q3'] - given['q1']:.6g}")
    if "total" in given and "mean" in given and rounds and not _close(given["total"], given["mean"] * rounds):
        out.append(f"stats.total is {given['total']:.6g}, not mean x rounds = {given['mean'] * rounds:.6g}")
    if "ops" in given and given.get("mean") and not _close(given["ops"], 1 / given["mean"]):
        out.append(f"stats.ops is {given['ops']:.6g}, not 1 / mean = {1 / given['mean']:.6g}")
    if "stddev" in given and "min" in given and "max" in given and rounds:
        # the sample standard deviation of `rounds` values in [min, max] is at most half the range, scaled
        bound = 0.0 if rounds == 1 else (given["max"] - given["min"]) / 2 * (rounds / (rounds - 1)) ** 0.5
        if given["stddev"] > bound * (1 + REL_TOLERANCE) + ABS_TOLERANCE_S:
            out.append(f"stats.stddev {given['stddev']:.6g} is more than {rounds} values in [min, max] can have")
    return out
