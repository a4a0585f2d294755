"""A/B mode in pytest: the parent (`pytest --perfgate --perfgate-base REF`) runs no test itself and hands the
run to the library (perfgate.ab.run); a worker (PERFGATE_AB_WORKER set) runs its tree's perf tests and
serves each case to the coordinator (perfgate.ab.serve), telling it where it is after each test."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Generator, Sequence
from pathlib import Path
from typing import Any

import pytest

from perfgate.errors import PerfgateError, one_line
from perfgate.pytest_plugin.session import Mode, PerfgateSession

PERF_FIXTURES = ("perfgate", "benchmark")


def without_perfgate_flags(args: Sequence[str]) -> tuple[str, ...]:
    """The user's pytest arguments minus perfgate's own flags (the workers get their own)."""
    from perfgate.config.options import OPTIONS, Arg

    takes_value = {o.flag: o.arg not in (Arg.FLAG, Arg.NO_FLAG) for o in OPTIONS if o.flag}
    out: list[str] = []
    skip_next = False
    for arg in args:
        if skip_next:
            skip_next = False
            continue
        name = arg.split("=", 1)[0]
        if name in takes_value:
            skip_next = takes_value[name] and "=" not in arg
            continue
        out.append(arg)
    return tuple(out)


def run_parent(config: pytest.Config, state: PerfgateSession) -> None:
    """The A/B comparison, in place of this process's own test loop."""
    from perfgate.ab.protocol import PytestEnded
    from perfgate.ab.run import run_ab
    from perfgate.ab.setup import AbRequest

    request = AbRequest(
        ref=state.settings.base,
        pytest_args=without_perfgate_flags(config.invocation_params.args),
        settings=state.settings,
        invocation_dir=Path(config.invocation_params.dir),
        base_check=state.facts.base,
    )
    capture = config.pluginmanager.getplugin("capturemanager")
    try:  # the progress display talks to the terminal while the comparison runs, past pytest's capture
        with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
            outcome = run_ab(request)
    except PytestEnded as err:  # a worker's pytest ended early: its status (usage error 4, interrupted 2, ...)
        state.error = str(err)
        state.exit_code = err.exit_status
        return
    except PerfgateError as err:
        state.error = str(err)
        state.exit_code = int(pytest.ExitCode.USAGE_ERROR)
        return
    state.messages += outcome.messages
    state.terminal = list(outcome.terminal)
    state.gate = outcome.gate
    state.exit_code = outcome.exit_code


def register_ab_plugin(config: pytest.Config, state: PerfgateSession) -> None:
    plugin = AbParent(state) if state.mode is Mode.AB else AbWorker(state)
    config.pluginmanager.register(plugin, "perfgate-ab")


class AbParent:
    """Hooks of the A/B parent: it collects nothing and runs the comparison in place of the test loop."""

    def __init__(self, state: PerfgateSession) -> None:
        self.state = state

    def pytest_collection(self, session: pytest.Session) -> bool:
        return True  # the workers collect, each in its own tree

    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        run_parent(session.config, self.state)
        return True

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        session.exitstatus = self.state.exit_code  # no test ran here: the comparison's status is the run's


class AbWorker:
    """Hooks of a worker: perf tests only, and the coordinator told where the worker is after each."""

    def __init__(self, state: PerfgateSession) -> None:
        import os

        from perfgate.ab.protocol import WORKER_ENV
        from perfgate.ab.serve import CaseServer
        from perfgate.pytest_plugin.shared_host import this_worker_end

        self.state = state
        self.errors: list[tuple[str, str]] = []
        self.perf_nodeids: set[str] = set()
        state.ab_server = CaseServer(this_worker_end(os.environ[WORKER_ENV]))

    @pytest.hookimpl(hookwrapper=True)
    def pytest_collection(self, session: pytest.Session) -> Generator[None, Any, None]:
        outcome = yield
        error = outcome.excinfo[1] if outcome.excinfo else None
        if isinstance(error, pytest.UsageError):  # "file or directory not found: tests/perf", as pytest says it
            lines = [line for arg in error.args for line in str(arg).splitlines() if line.strip()]
            self.state.ab_server.ended_because = one_line(lines[0] if lines else "a usage error", 300)

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        self.state.ab_server.ended_because = crash_line(excinfo)

    def pytest_internalerror(self, excrepr: Any, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        self.state.ab_server.ended_because = crash_line(excinfo)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:  # the last line of pytest's report, without its "E   " margin
            lines = [line for line in str(report.longreprtext).strip().splitlines() if line.strip()]
            last = re.sub(r"^E\s+", "", lines[-1]) if lines else "failed"
            self.errors.append((report.nodeid or "collection", one_line(last, 200)))

    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        others = [i for i in items if not is_perf_item(i)]
        if others:  # they say nothing about speed, and would run in both trees
            items[:] = [i for i in items if is_perf_item(i)]
            config.hook.pytest_deselected(items=others)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        from perfgate.ab.protocol import Collected

        nodeids = tuple(i.nodeid for i in session.items if is_perf_item(i))
        self.perf_nodeids = set(nodeids)
        reply = self.state.ab_server.announce(Collected(nodeids, tuple(self.errors), self.state.environment))
        only = reply.get("only")
        if isinstance(only, list):  # a fresh pair: the called cases' tests alone run, no other test body
            wanted = {str(n) for n in only}
            dropped = [i for i in session.items if i.nodeid not in wanted]
            if dropped:
                session.items[:] = [i for i in session.items if i.nodeid in wanted]
                session.config.hook.pytest_deselected(items=dropped)
                self.perf_nodeids &= wanted

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """After a perf test's last phase (its outcome is in state.unmeasured by now, runtime.note_outcome)."""
        from perfgate.ab.protocol import TestDone

        if report.when != "teardown" or report.nodeid not in self.perf_nodeids:
            return
        unmeasured = self.state.unmeasured.get(report.nodeid)
        self.state.ab_server.announce(
            TestDone(report.nodeid, unmeasured.outcome if unmeasured else None, unmeasured.reason if unmeasured else "")
        )


def is_perf_item(item: pytest.Item) -> bool:
    return any(f in getattr(item, "fixturenames", ()) for f in PERF_FIXTURES)


def crash_line(excinfo: pytest.ExceptionInfo[BaseException]) -> str:
    """Why a session ended early, in one line: `pytest.exit`'s reason, or the exception and the innermost frame
    outside pytest's and pluggy's own code (the conftest or plugin that raised it)."""
    import _pytest
    import pluggy

    error = excinfo.value
    if isinstance(error, pytest.exit.Exception):
        return one_line(f"pytest.exit: {error.msg}", 300)
    own = (Path(_pytest.__file__).parent, Path(pluggy.__file__).parent)
    frames = [e for e in excinfo.traceback if not any(Path(e.path).is_relative_to(d) for d in own)]
    where = f"{frames[-1].path}:{frames[-1].lineno + 1}: " if frames else ""
    return one_line(f"{where}{excinfo.exconly()}", 300)
