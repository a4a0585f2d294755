"""Re-run the measured cases in child pytest processes under each requested profiler; attach what they
found to the cases. The timing run has finished by now, so profiler overhead never touches timed numbers.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from perfgate.config.settings import Settings
from perfgate.errors import PerfgateError
from perfgate.measure.handshake import MEASURE_CHILD_ENV
from perfgate.measure.processes import PROFILE_CHILD_ENV
from perfgate.measure.profilers import CaseFindings, Profiler, ProfilerOptions
from perfgate.model import CaseResult, Metric


@dataclass(frozen=True)
class Profiled:
    """The measured cases with what the profilers found attached, and what to tell the user."""

    results: dict[str, CaseResult]
    settings_line: str  # the profiler settings recorded with the run
    messages: tuple[str, ...]


def child_command(nodeids: list[str]) -> list[str]:
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--no-header", *nodeids]


def profilers_for(settings: Settings) -> tuple[Profiler, ...]:
    """The requested profilers, in the registry's order (measure/profiler_registry.py)."""
    from perfgate.measure.profiler_registry import profilers_named

    return profilers_named(settings.profile) if settings.profile else ()


def profiler_options(settings: Settings, rootdir: Path) -> ProfilerOptions:
    return ProfilerOptions(
        out_dir=(settings.report_dir or rootdir / ".perfgate") / "profiles",
        timeout_s=settings.profile_timeout_s,
        ncu_sections=settings.ncu_sections,
        ncu_metrics=settings.ncu_metrics,
        ncu_set=settings.ncu_set,
    )


def profile_cases(
    results: Mapping[str, CaseResult], settings: Settings, rootdir: Path, extra_env: Mapping[str, str] | None = None
) -> Profiled:
    """Profile the measured cases with each requested tool; attach metrics, notes or "profile failed" to
    every case. `extra_env`: for the children (an A/B base tree's build caches)."""
    options = profiler_options(settings, rootdir)
    nodeids = sorted({r.nodeid for r in results.values() if r.nodeid})
    case_ids = sorted(results)
    metrics: dict[str, list[Metric]] = {c: [] for c in case_ids}
    errors: dict[str, list[str]] = {c: [] for c in case_ids}
    notes: dict[str, list[str]] = {c: [] for c in case_ids}
    described, messages = [], []
    env = {k: v for k, v in os.environ.items() if k != MEASURE_CHILD_ENV} | dict(extra_env or {})
    for profiler in profilers_for(settings):
        started = time.monotonic()
        try:
            report = profiler.record(
                child_command(nodeids), options, {**env, PROFILE_CHILD_ENV: profiler.name}, rootdir
            )
            found = profiler.read(report, case_ids, options)
            described.append(found.settings)
            _attach(profiler.name, found, metrics, errors, notes)
        except PerfgateError as err:
            for case_id in case_ids:
                errors[case_id].append(f"{profiler.name}: {err}")
        messages.append(f"perfgate: {profiler.name} phase took {time.monotonic() - started:.1f} s")
    profiled = {
        case_id: res.with_metrics(tuple(metrics[case_id]), tuple(errors[case_id]), tuple(notes[case_id]))
        for case_id, res in results.items()
    }
    return Profiled(profiled, "; ".join(described), tuple(messages))


def _attach(
    tool: str,
    found: CaseFindings,
    metrics: dict[str, list[Metric]],
    errors: dict[str, list[str]],
    notes: dict[str, list[str]],
) -> None:
    for case_id in metrics:
        if case_id in found.metrics:
            metrics[case_id] += found.metrics[case_id]
        elif case_id in found.notes:
            notes[case_id].append(found.notes[case_id])
        else:
            errors[case_id].append(f"{tool}: no GPU work of this case in the {tool} report")
