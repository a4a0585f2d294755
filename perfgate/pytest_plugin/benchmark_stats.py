"""`benchmark.stats` as pytest-benchmark hands it out, computed from perfgate's per-call samples: the same
fields, in seconds, with pytest-benchmark's own definitions (its quartiles are Wikipedia's methods 2 and
3, not numpy's interpolation), so a suite that asserts on `benchmark.stats.stats.min` or reads
`benchmark.stats["mean"]` reads what it always did. Checked against pytest_benchmark.stats.Stats in
tests/test_benchmark_fidelity.py."""

from __future__ import annotations

import statistics
from bisect import bisect_left, bisect_right
from collections.abc import Mapping, Sequence
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


class BenchmarkMetadata:
    """pytest-benchmark's `Metadata` (what `benchmark.stats` is): the case's names, options and Stats."""

    def __init__(self, bench: Any, data_s: Sequence[float], iterations: int, options: Mapping[str, Any]) -> None:
        self.name, self.fullname = bench.name, bench.fullname
        self.group, self.param, self.params = bench.group, bench.param, bench.params
        self.extra_info = bench.extra_info  # the same dict: later updates show here too, as upstream
        self.cprofile_stats: Any = None
        self.iterations = iterations
        self.options = dict(options)
        self.stats = BenchmarkStats(data_s)
        self.fixture = bench

    def __bool__(self) -> bool:
        return bool(self.stats)

    def __getitem__(self, key: str) -> Any:
        try:
            return getattr(self.stats, key)
        except AttributeError:
            return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return getattr(self.stats, key)
        except AttributeError:
            return getattr(self, key, default)

    @property
    def has_error(self) -> bool:
        return bool(self.fixture.has_error)

    def as_dict(self, include_data: bool = True, flat: bool = False, stats: bool = True) -> dict[str, Any]:
        result: dict[str, Any] = {
            "group": self.group,
            "name": self.name,
            "fullname": self.fullname,
            "params": self.params,
            "param": self.param,
            "extra_info": self.extra_info,
            "options": dict(self.options),
        }
        if stats:
            values = self.stats.as_dict()
            if include_data:
                values["data"] = self.stats.data
            values["iterations"] = self.iterations
            if flat:
                result.update(values)
            else:
                result["stats"] = values
        return result
