"""pytest-benchmark's `--benchmark-*` options and `@pytest.mark.benchmark(...)` under --perfgate.

Honoured: which tests run (--benchmark-skip, --benchmark-only, --benchmark-disable, --benchmark-enable),
what the timed region is (--benchmark-disable-gc, marker `disable_gc`), cProfile runs after the timing
(--benchmark-cprofile, -loops, -dump, marker `cprofile`) and the marker's `group`. Everything else
(pytest-benchmark's sampling, storage, comparison and display) is replaced by perfgate's sampling,
history, baselines and reports: each such option the user gave is named in one warning line, never
silently dropped.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

HONOURED_OPTIONS = frozenset(
    {
        "--benchmark-skip",
        "--benchmark-only",
        "--benchmark-disable",
        "--benchmark-enable",
        "--benchmark-disable-gc",
        "--benchmark-cprofile",
        "--benchmark-cprofile-loops",
        "--benchmark-cprofile-dump",
        # written or mapped onto perfgate's own (benchmark_cli.py)
        "--benchmark-json",
        "--benchmark-save",
        "--benchmark-autosave",
        "--benchmark-save-data",
        "--benchmark-storage",
        "--benchmark-compare",
        "--benchmark-compare-fail",
        "--benchmark-histogram",
    }
)
MARKER_KEYS = (
    "max_time",
    "min_rounds",
    "min_time",
    "precision",
    "confidence",
    "timer",
    "group",
    "disable_gc",
    "warmup",
    "warmup_iterations",
    "calibration_precision",
    "cprofile",
    "max_rounds",  # pytest-codspeed's marker (its other keys are pytest-benchmark's)
)
HONOURED_MARKER_KEYS = frozenset({"group", "disable_gc", "cprofile"})


@dataclass(frozen=True)
class BenchmarkOptions:
    """The pytest-benchmark settings perfgate honours, for the whole run."""

    skip: bool = False
    only: bool = False
    disabled: bool = False
    disable_gc: bool = False
    cprofile: bool = False
    cprofile_loops: int | None = 1  # None: as many as the timed loop ("auto")
    cprofile_dump: str = ""  # a file-name prefix; "" writes no .prof files
    ignored: tuple[str, ...] = ()  # options given on the command line or in addopts that perfgate does not use
    given: tuple[str, ...] = ()  # every pytest-benchmark (and pytest-codspeed) option given


def given_options(args: Iterable[str]) -> tuple[str, ...]:
    """The `--benchmark-*` and `--codspeed*` option names among pytest's arguments, sorted, once each."""
    return tuple(sorted({a.split("=", 1)[0] for a in args if a.startswith(("--benchmark-", "--codspeed"))}))


def pytest_arguments(config: pytest.Config) -> list[str]:
    """What pytest parsed: the ini file's addopts, PYTEST_ADDOPTS, then the command line."""
    return [
        *config.getini("addopts"),
        *shlex.split(os.environ.get("PYTEST_ADDOPTS", "")),
        *config.invocation_params.args,
    ]


def benchmark_options(config: pytest.Config) -> BenchmarkOptions:
    """Read pytest-benchmark's options (absent when it is not installed: its defaults then)."""
    opt = config.getoption
    only = bool(opt("benchmark_only", False))
    disabled = bool(opt("benchmark_disable", False)) and not opt("benchmark_enable", False)
    if disabled and only:
        raise pytest.UsageError("Can't have both --benchmark-only and --benchmark-disable options.")
    dump = opt("benchmark_cprofile_dump", [])
    given = given_options(pytest_arguments(config))
    return BenchmarkOptions(
        skip=bool(opt("benchmark_skip", False)) and not only,
        only=only,
        disabled=disabled,
        disable_gc=bool(opt("benchmark_disable_gc", False)),
        cprofile=bool(opt("benchmark_cprofile", None)),
        cprofile_loops=opt("benchmark_cprofile_loops", 1),
        cprofile_dump=str(dump[-1]) if dump else "",
        ignored=tuple(o for o in given if o not in HONOURED_OPTIONS),
        given=given,
    )


def marker_settings(node: pytest.Item) -> dict[str, Any]:
    """`@pytest.mark.benchmark(...)` of a test, checked as pytest-benchmark checks it."""
    marker = node.get_closest_marker("benchmark")
    if marker is None:
        return {}
    if marker.args:
        raise ValueError("benchmark mark can't have positional arguments.")
    for name in marker.kwargs:
        if name not in MARKER_KEYS:
            raise ValueError(f"benchmark mark can't have {name!r} keyword argument.")
    return dict(marker.kwargs)


def ignored_line(options: Sequence[str], marker_keys: Iterable[str]) -> str:
    """One warning line naming what was given and is not used; "" when nothing was."""
    keys = sorted(set(marker_keys) - HONOURED_MARKER_KEYS)
    named = list(options) + ([f"@pytest.mark.benchmark({', '.join(keys)})"] if keys else [])
    if not named:
        return ""
    return (
        "perfgate warning: pytest-benchmark settings not used under --perfgate (perfgate's sampling, "
        f"history, baselines and reports apply instead): {', '.join(named)}"
    )


def fixture_options(options: BenchmarkOptions, marker: Mapping[str, Any]) -> dict[str, Any]:
    """pytest-benchmark's per-fixture options dict (session options, the marker's on top)."""
    merged: dict[str, Any] = {
        "disable_gc": options.disable_gc,
        "cprofile": options.cprofile,
        "cprofile_loops": options.cprofile_loops,
        "cprofile_dump": options.cprofile_dump,
    }
    merged.update(marker)
    return merged
