"""Re-run the measured cases in child pytest processes under each requested profiler; attach what they
found to the cases. The timing run has finished by now, so profiler overhead never touches timed numbers.
"""

from __future__ import annotations

import os
import sys
import time

from perfgate.errors import PerfgateError
from perfgate.fixture import PROFILE_CALLS
from perfgate.measure.profilers import CaseFindings, NcuProfiler, NsysProfiler, Profiler
from perfgate.model import Metric
from perfgate.session import MEASURE_CHILD_ENV, PROFILE_CHILD_ENV, PerfgateSession


def child_command(nodeids: list[str]) -> list[str]:
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--no-header", *nodeids]


def profilers_for(state: PerfgateSession) -> list[Profiler]:
    s = state.settings
    chosen: list[Profiler] = []
    if "nsys" in s.profile:
        chosen.append(NsysProfiler(PROFILE_CALLS))
    if "ncu" in s.profile:
        chosen.append(NcuProfiler(s.ncu_sections, s.ncu_metrics, s.ncu_set))
    return chosen


def profile_session(state: PerfgateSession) -> str:
    """Profile with each requested tool; attach metrics, notes or "profile failed" to every case. Returns
    the profiler settings line recorded with the run."""
    s = state.settings
    out_dir = (s.report_dir or state.rootdir / ".perfgate") / "profiles"
    nodeids = sorted({r.nodeid for r in state.results.values() if r.nodeid})
    case_ids = sorted(state.results)
    metrics: dict[str, list[Metric]] = {c: [] for c in case_ids}
    errors: dict[str, list[str]] = {c: [] for c in case_ids}
    notes: dict[str, list[str]] = {c: [] for c in case_ids}
    described = []
    env = {k: v for k, v in os.environ.items() if k != MEASURE_CHILD_ENV}
    for profiler in profilers_for(state):
        started = time.monotonic()
        try:
            found = profiler.profile(child_command(nodeids), out_dir, s.profile_timeout_s,
                                     {**env, PROFILE_CHILD_ENV: profiler.name}, state.rootdir, case_ids)
            described.append(found.settings)
            _attach(profiler.name, found, metrics, errors, notes)
        except PerfgateError as err:
            for case_id in case_ids:
                errors[case_id].append(f"{profiler.name}: {err}")
        state.messages.append(f"perfgate: {profiler.name} phase took {time.monotonic() - started:.1f} s")
    for case_id, res in list(state.results.items()):
        state.results[case_id] = res.with_metrics(tuple(metrics[case_id]), tuple(errors[case_id]),
                                                  tuple(notes[case_id]))
    return "; ".join(described)


def _attach(tool: str, found: CaseFindings, metrics: dict[str, list[Metric]], errors: dict[str, list[str]],
            notes: dict[str, list[str]]) -> None:
    for case_id in metrics:
        if case_id in found.metrics:
            metrics[case_id] += found.metrics[case_id]
        elif case_id in found.notes:
            notes[case_id].append(found.notes[case_id])
        else:
            errors[case_id].append(f"{tool}: no GPU work of this case in the {tool} report")

