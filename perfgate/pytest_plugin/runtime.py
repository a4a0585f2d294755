"""What the pytest hooks do once the run is configured (configure.py): each perf test's outcome, the
measurements handed on at the end (to the parent, the controller or the gate), the terminal's lines; kept
out of the hooks module (__init__.py) so the hooks stay a readable list."""

from __future__ import annotations

import json
import os
import time
from typing import Any

import pytest

from perfgate.errors import PerfgateError, one_line
from perfgate.model import TestOutcome, UnmeasuredTest
from perfgate.pytest_plugin.session import Mode, PerfgateSession

PERF_FIXTURES = ("perfgate", "benchmark")


def note_outcome(state: PerfgateSession, item: pytest.Item, report: pytest.TestReport) -> None:
    from perfgate.pytest_plugin.codspeed import WHOLE_TEST

    if not any(f in getattr(item, "fixturenames", ()) for f in PERF_FIXTURES) and not item.stash.get(WHOLE_TEST, False):
        return
    nodeid = state.case_id(item.nodeid)
    if report.skipped:
        longrepr = report.longrepr
        reason = str(longrepr[2]) if isinstance(longrepr, tuple) and len(longrepr) == 3 else ""
        reason = reason.removeprefix("Skipped: ")
        state.unmeasured[nodeid] = UnmeasuredTest(nodeid, TestOutcome.SKIPPED, one_line(reason, 200))
    elif report.failed:
        outcome = TestOutcome.FAILED if report.when == "call" else TestOutcome.ERROR
        crash = getattr(report.longrepr, "reprcrash", None)
        lines = [line for line in report.longreprtext.strip().splitlines() if line.strip()]
        reason = str(getattr(crash, "message", "")) or (lines[-1] if lines else "")
        state.unmeasured[nodeid] = UnmeasuredTest(nodeid, outcome, one_line(reason, 200))


def finish(config: pytest.Config, state: PerfgateSession, exitstatus: int) -> int:
    """Hand the measurements on: to the parent (child), the controller (worker) or the gate; `exitstatus` is
    pytest's. Returns the exit status the gate asks for (0 = nothing to add). A test's forked child hands
    nothing on (the hook does not call this there; the store and the child's output check again)."""
    if _handed_on(config, state, exitstatus):
        return 0
    if exitstatus == pytest.ExitCode.INTERRUPTED:
        state.messages.append("perfgate: run interrupted before anything was stored; no baseline touched")
        return 0
    if exitstatus == pytest.ExitCode.USAGE_ERROR:  # refused before any test ran: pytest's ERROR line says why
        return 0
    from perfgate.measure.phases import phase_line

    elapsed = time.monotonic() - state.started_monotonic
    state.messages.append(phase_line(elapsed, state.results.values(), state.before_s))
    try:
        return _gate(config, state, exitstatus != 0)
    except PerfgateError as err:
        state.error = str(err)
        return int(pytest.ExitCode.USAGE_ERROR)


def _handed_on(config: pytest.Config, state: PerfgateSession, exitstatus: int) -> bool:
    """A measurement child, an xdist worker or an A/B worker hands its measurements on (True); the gate does not."""
    if state.mode is Mode.MEASURE_CHILD:
        _write_child_output(state)
    elif state.mode is Mode.XDIST_WORKER:
        from perfgate.pytest_plugin.xdist import send_worker_results

        send_worker_results(config, state)
    elif state.mode is Mode.AB_WORKER:
        state.ab_server.finish(exitstatus)  # pytest's own: a usage error (4) or no perf test (5) told as such
    else:
        return False
    return True


def _gate(config: pytest.Config, state: PerfgateSession, tests_failed: bool) -> int:
    from perfgate.gate.run import GateRequest, build_run, run_gate

    if not state.owns_process:
        return 0
    assert state.environment is not None and state.baseline_path is not None  # set when the gate is enabled
    profile_settings = _profile(state)
    run = build_run(
        state.results.values(),
        state.unmeasured.values(),
        state.environment,
        state.rootdir,
        state.started_at,
        profile_settings,
    )
    outcome = run_gate(
        GateRequest(
            run=run,
            settings=state.settings,
            baseline=state.baseline,
            baseline_path=state.baseline_path,
            facts=state.facts,
            confirmer=_confirmer(state),
            may_write_baseline=not tests_failed,
        )
    )
    state.gate, state.run_id, state.exit_code = outcome.gate, outcome.run.run_id, outcome.exit_code
    state.messages += outcome.messages
    state.terminal = list(outcome.terminal)
    return outcome.exit_code


def _profile(state: PerfgateSession) -> str:
    """Run the profilers over the measured cases (their metrics join the cases); the settings line."""
    if not state.settings.profile or not state.results:
        return ""
    from perfgate.measure.profiling import profile_cases

    profiled = profile_cases(state.results, state.settings, state.rootdir)
    state.results = profiled.results
    state.messages += profiled.messages
    return profiled.settings_line


def _confirmer(state: PerfgateSession) -> Any:
    from perfgate.measure.processes import ChildRunner

    return ChildRunner(state.rootdir, state.settings, state.baseline_path).confirmer(state.results)


def _write_child_output(state: PerfgateSession) -> None:
    from perfgate.codec import case_to_dict, unmeasured_to_dict
    from perfgate.report.publish import write_text

    assert state.child_output is not None
    if not state.owns_process:
        return
    doc = {
        "nonce": state.child_nonce,
        "results": [case_to_dict(r) for r in state.results.values()],
        "unmeasured": [unmeasured_to_dict(u) for u in state.unmeasured.values()],
        "environment": state.environment.__dict__ if state.environment else None,
    }
    write_text(state.child_output, json.dumps(doc, allow_nan=False))


def last_line(state: PerfgateSession) -> str:
    """What the terminal ends with when perfgate fails the run: the gate's headline, or the error."""
    from perfgate.report.scrub import terminal_scrubber

    if state.error or not state.terminal:
        return (
            terminal_scrubber(os.environ).text(state.error.splitlines()[0]) if state.error else "perfgate: gate FAILED"
        )
    return state.terminal[-1]


def summary_lines(state: PerfgateSession) -> list[str]:
    """The terminal's perfgate section: the CI log is published too, so secrets are masked (paths and the
    hostname stay: the terminal is the user's own). The gate's own lines come scrubbed from its tail."""
    from perfgate.report.scrub import terminal_scrubber

    scrubber = terminal_scrubber(os.environ)
    lines = [scrubber.text(m) for m in state.messages]
    if state.error:
        return lines + [scrubber.text(state.error)]
    # a failed run's verdict is its last line (pytest_unconfigure, after pytest's own): said once, there
    return lines + (state.terminal[:-1] if state.exit_code else state.terminal)
