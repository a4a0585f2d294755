"""The A/A measurement, cached per GPU model and base commit.

The A/A is the base measured against a second process of itself, in the same rounds as the A/B: its
per-round ratios are what the ratio's noise looks like when nothing changed, and its mean says whether
two processes of the same code differ (gate/ratio.py). It depends on the base code and the GPU, not on the
head, so the first A/B run against a base commit measures it and later runs against the same commit, on
the same GPU model with the same selection and the same process mode, reuse it (warm runs start no third
worker). The process mode is part of the key: a twin in the base's own process (shared) shows next to no
offset, and reused by a run in separate processes it would understate theirs. The file sits
beside the base worktree's build caches (`aa.json`: one entry per GPU model); an unreadable one is
measured again, never trusted half-read.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from perfgate.atomic import atomic_write_text
from perfgate.gate.ratio import AaNoise

FORMAT = "perfgate-ab-aa"
VERSION = 2  # 2: each entry says its process mode (shared or separate)
FILE_NAME = "aa.json"

AaCases = Mapping[str, Mapping[str, AaNoise]]  # case id -> metric -> its A/A


@dataclass(frozen=True)
class AaEntry:
    """One GPU model's A/A of one base commit."""

    device_name: str
    pytest_args: tuple[str, ...]  # the base worker's selection when it was measured
    cases: dict[str, dict[str, AaNoise]] = field(default_factory=dict)
    base_cases: dict[str, tuple[str, ...]] = field(default_factory=dict)  # node id -> the base's cases, in order
    shared: bool = False  # measured with every side in one process (False: a process per side)

    def covers(self, pytest_args: Sequence[str], shared: bool) -> bool:
        """Measured for this selection in this process mode: every case it will meet has its A/A here."""
        return tuple(pytest_args) == self.pytest_args and self.shared == shared and bool(self.cases)


@dataclass(frozen=True)
class AaCache:
    path: Path
    base_commit: str
    entries: dict[str, AaEntry] = field(default_factory=dict)  # by device name
    problem: str = ""  # why a file that exists was not used

    def covering(self, pytest_args: Sequence[str], shared: bool) -> AaEntry | None:
        """An entry for this selection and process mode (any GPU model: the workers say which GPU only once
        started)."""
        return next((e for e in self.entries.values() if e.covers(pytest_args, shared)), None)


def read_cache(cache_dir: Path, base_commit: str) -> AaCache:
    path = cache_dir / FILE_NAME
    if not path.is_file():
        return AaCache(path, base_commit)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        if doc.get("format") != FORMAT or doc.get("version") != VERSION or doc["base_commit"] != base_commit:
            return AaCache(path, base_commit, problem=f"{path} is not this base's version {VERSION} A/A cache")
        entries = {str(name): _entry(str(name), e) for name, e in doc["devices"].items()}
        return AaCache(path, base_commit, entries)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        return AaCache(
            path,
            base_commit,
            problem=f"{path}: unreadable A/A cache ({type(err).__name__}: {err}); measuring the A/A again",
        )


def _entry(device_name: str, d: Any) -> AaEntry:
    cases = {str(cid): {str(metric): _noise(v) for metric, v in metrics.items()} for cid, metrics in d["cases"].items()}
    base_cases = {str(n): tuple(str(c) for c in ids) for n, ids in d.get("base_cases", {}).items()}
    shared = d["shared"]
    if not isinstance(shared, bool):
        raise ValueError(f"'shared' is {shared!r}, not true or false")
    return AaEntry(device_name, tuple(str(a) for a in d["pytest_args"]), cases, base_cases, shared)


def _noise(d: Any) -> AaNoise:
    rounds, mean, ss = int(d["rounds"]), float(d["mean_log"]), float(d["ss_log"])
    if rounds < 2 or not (math.isfinite(mean) and math.isfinite(ss)) or ss < 0:
        raise ValueError(f"implausible A/A {d!r}")
    return AaNoise(rounds, mean, ss)


def with_entry(cache: AaCache, entry: AaEntry) -> AaCache:
    return AaCache(cache.path, cache.base_commit, {**cache.entries, entry.device_name: entry})


def write_cache(cache: AaCache) -> None:
    doc = {
        "format": FORMAT,
        "version": VERSION,
        "base_commit": cache.base_commit,
        "devices": {
            name: {
                "pytest_args": list(e.pytest_args),
                "cases": {
                    cid: {metric: asdict(n) for metric, n in sorted(metrics.items())}
                    for cid, metrics in sorted(e.cases.items())
                },
                "base_cases": {n: list(ids) for n, ids in sorted(e.base_cases.items())},
                "shared": e.shared,
            }
            for name, e in sorted(cache.entries.items())
        },
    }
    atomic_write_text(cache.path, json.dumps(doc, indent=1, sort_keys=True) + "\n")
