"""pytest-benchmark's saved JSON (`--benchmark-json` / `--benchmark-autosave`) -> a Run for the history.

Times are seconds there and milliseconds here; raw samples are present only when the suite saved them
(`--benchmark-save-data`). The run's identity comes from the file's content, so importing the same file
twice stores it once.

Refused in one line: no benchmarks (a run of 0 cases is no measurement), a `datetime` that is not an ISO
8601 time (it becomes the run's started_at, which `db prune --older-than` must be able to read; a time
without an offset is UTC, as pytest-benchmark writes it), statistics that contradict their data (min, max,
mean, median, quartiles, stddev, iqr, total, ops recomputed as pytest-benchmark defines them) or each other
when the file keeps no data (iqr = q3 - q1, total = mean x rounds, ops = 1 / mean, a stddev no `rounds`
values in [min, max] can have). Texts (branch, commit, host, names) have their
control characters replaced: `perfgate history` prints them.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
from itertools import pairwise
from pathlib import Path
from typing import Any

from perfgate.errors import ReportFileError
from perfgate.inputs import parse_json, read_bytes
from perfgate.model import CaseResult, Environment, Run, RunInfo, Timer, TimingStats
from perfgate.parse.invariants import INT64_MAX, as_finite, printable
from perfgate.parse.pytest_benchmark_stats import contradictions

_STATS = ("min", "max", "mean", "stddev", "median", "q1", "q3")


MAX_ITERATIONS = 2**31  # calls per round; pytest-benchmark calibrates a few thousand at most


def read_pytest_benchmark(path: Path) -> Run:
    path = Path(path)
    data = read_bytes(path, ReportFileError)
    doc = parse_json(data, path, ReportFileError)
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list) or "machine_info" not in doc:
        raise ReportFileError(path, "not a pytest-benchmark JSON file (no machine_info and benchmarks list)")
    machine = _dict(path, doc, "machine_info")
    commit: dict[str, Any] = doc["commit_info"] if isinstance(doc.get("commit_info"), dict) else {}
    if not doc["benchmarks"]:
        raise ReportFileError(path, "no benchmarks in it (an empty benchmarks list): nothing to import")
    results = tuple(_case(path, i, b) for i, b in enumerate(doc["benchmarks"]))
    ids = [r.case_id for r in results]
    if len(set(ids)) != len(ids):
        raise ReportFileError(path, "two benchmarks share a fullname")
    cpu: dict[str, Any] = machine["cpu"] if isinstance(machine.get("cpu"), dict) else {}
    env = Environment(
        device_kind="host",
        device_name=_text(cpu.get("brand_raw") or machine.get("processor") or "unknown"),
        python_version=_text(machine.get("python_version", "")),
        hostname=_text(machine.get("node", "")),
        platform=_text(machine.get("system", "")) + "-" + _text(machine.get("machine", "")),
    )
    when = _started_at(path, doc.get("datetime"))
    info = RunInfo(
        started_at=when,
        finished_at=when,
        git_commit=_text(commit.get("id", "")),
        git_branch=_text(commit.get("branch", "")),
        git_dirty=bool(commit.get("dirty", False)),
        hostname=env.hostname,
        argv=f"perfgate import-benchmark {path.name}",
        run_uid="pytest-benchmark-" + hashlib.sha256(data).hexdigest()[:32],
    )
    return Run(info=info, environment=env, results=results)


def _dict(path: Path, doc: dict[str, Any], key: str) -> dict[str, Any]:
    value = doc.get(key)
    if not isinstance(value, dict):
        raise ReportFileError(path, f'"{key}" must be an object')
    return value


def _text(value: Any) -> str:
    return printable(value if isinstance(value, str) else str(value)[:200])


def _started_at(path: Path, value: Any) -> str:
    """The file's `datetime` as perfgate stores a run's start: ISO 8601, UTC, whole seconds."""
    try:
        when = dt.datetime.fromisoformat(value)
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.timezone.utc)
        return when.astimezone(dt.timezone.utc).isoformat(timespec="seconds")
    except (TypeError, ValueError, OverflowError):  # not a string, not a time, or past year 9999 in UTC
        raise ReportFileError(
            path, f'"datetime" must be an ISO 8601 time (pytest-benchmark writes one), got {_text(value)[:40]!r}'
        ) from None


def _case(path: Path, i: int, b: Any) -> CaseResult:
    """One benchmark, refused (one line) unless its statistics can be true: finite non-negative seconds
    that stay finite in milliseconds, min <= q1 <= median <= q3 <= max, the mean within [min, max] and
    every sample within it too. pytest-benchmark computes them all from one list of timings, so a file
    that breaks one was edited or damaged; storing it would put impossible numbers in the history."""
    where = f"benchmarks[{i}]"
    if not isinstance(b, dict) or not isinstance(b.get("fullname") or b.get("name"), str):
        raise ReportFileError(path, f"{where}: needs a fullname")
    stats = b.get("stats")
    if not isinstance(stats, dict):
        raise ReportFileError(path, f"{where}: needs a stats object")
    ms = {k: _ms(path, where, k, stats.get(k)) for k in _STATS}
    rounds = stats.get("rounds")
    if isinstance(rounds, bool) or not isinstance(rounds, int) or not 1 <= rounds <= INT64_MAX:
        raise ReportFileError(path, f"{where}: stats.rounds must be a positive integer")
    data = stats.get("data", [])
    if not isinstance(data, list):
        raise ReportFileError(path, f"{where}: stats.data must be a list")
    if data and len(data) != rounds:  # pytest-benchmark keeps one time per round
        raise ReportFileError(path, f"{where}: stats.rounds is {rounds:,} but stats.data holds {len(data):,} times")
    iterations = stats.get("iterations", 1)
    if isinstance(iterations, bool) or not isinstance(iterations, int) or not 1 <= iterations < MAX_ITERATIONS:
        raise ReportFileError(path, f"{where}: stats.iterations must be an integer from 1 to 2**31 - 1")
    samples = tuple(_ms(path, where, f"data[{j}]", v) for j, v in enumerate(data))
    for low, high in pairwise(("min", "q1", "median", "q3", "max")):
        if ms[low] > ms[high]:
            raise ReportFileError(
                path, f"{where}: stats.{low} ({ms[low]:g} ms) is above stats.{high} ({ms[high]:g} ms)"
            )
    outside = [v for v in (ms["mean"], *samples) if not ms["min"] <= v <= ms["max"]]
    if outside:
        raise ReportFileError(
            path,
            f"{where}: {outside[0]:g} ms (the mean or a sample) lies outside "
            f"[min, max] = [{ms['min']:g}, {ms['max']:g}] ms",
        )
    wrong = contradictions(stats, [float(v) for v in data])
    if wrong:
        raise ReportFileError(path, f"{where}: {wrong[0]} (pytest-benchmark computes them from one list of times)")
    timing = TimingStats(
        timer=Timer.PYTEST_BENCHMARK,
        n_samples=rounds,
        median_ms=ms["median"],
        mean_ms=ms["mean"],
        stdev_ms=ms["stddev"],
        min_ms=ms["min"],
        max_ms=ms["max"],
        q1_ms=ms["q1"],
        q3_ms=ms["q3"],
    )
    case_id = printable(b.get("fullname") or b["name"])
    return CaseResult(case_id=case_id, timing=timing, samples_ms=samples, nodeid=case_id)


def _ms(path: Path, where: str, key: str, value: Any) -> float:
    """Seconds in the file, milliseconds here: 1e306 s is finite, 1e309 ms is not."""
    seconds = as_finite(value)
    if seconds is None or seconds < 0 or not math.isfinite(seconds * 1e3):
        raise ReportFileError(
            path,
            f"{where}: {key} must be a finite number of seconds >= 0 (and finite in "
            f"milliseconds), got {str(value)[:40]}",
        )
    return seconds * 1e3
