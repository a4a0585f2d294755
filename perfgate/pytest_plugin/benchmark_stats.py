"""`benchmark.stats` as pytest-benchmark hands it out, computed from perfgate's per-call samples: the same
fields, in seconds, with pytest-benchmark's own definitions (parse/pytest_benchmark_stats.py), so a suite
that asserts on `benchmark.stats.stats.min` or reads `benchmark.stats["mean"]` reads what it always did."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from perfgate.parse.pytest_benchmark_stats import FIELDS, BenchmarkStats

__all__ = ["FIELDS", "BenchmarkMetadata", "BenchmarkStats"]


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
