"""The `perfgate` fixture object: what a perf test calls."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import pytest

from perfgate.config.settings import MarkerOptions, Settings, bad_markers_line, marker_options, measure_for
from perfgate.errors import ConfigError, PerfgateError
from perfgate.model import CaseResult, Timer, TimingStats
from perfgate.pytest_plugin import arguments
from perfgate.pytest_plugin.session import Mode, PerfgateSession
from perfgate.stats import summarize

if TYPE_CHECKING:
    from perfgate.measure.rounds import FixedRounds


class PerfgateFixture:
    """`perfgate(fn, *args, **kwargs)` measures fn(*args, **kwargs) and returns its TimingStats.

    `perfgate.work(bytes_moved=..., flops=...)` declares the work of the *next* measurement (GB/s,
    TFLOP/s); `perfgate.measure(fn, args, kwargs, name="bf16", reference=torch_fn, min_speedup=1.2,
    check=True)` measures one named case, optionally against a reference timed alternately with it.
    The last case measured is `perfgate.last`.
    """

    def __init__(
        self,
        session: PerfgateSession | None,
        nodeid: str,
        marker: MarkerOptions | None,
        location: tuple[str, int] | None = None,
        test_file: str = "",
    ) -> None:
        self._session = session
        self._test_file = test_file  # absolute: the test module's file (the case's provenance)
        self._nodeid = nodeid
        self._marker = marker
        self._location = location
        self._work: tuple[int | None, int | None] = (None, None)
        self.last: CaseResult | None = None

    def work(self, bytes_moved: int | None = None, flops: int | None = None) -> PerfgateFixture:
        """Bytes read + written and floating-point operations of one call, for the next measurement."""
        with failing_the_test():
            self._work = (
                arguments.work_amount(bytes_moved, "perfgate.work bytes_moved"),
                arguments.work_amount(flops, "perfgate.work flops"),
            )
        return self

    def __call__(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> TimingStats:
        return self.measure(fn, args, kwargs)

    def measure(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...] = (),
        kwargs: Mapping[str, Any] | None = None,
        name: str | None = None,
        timer: Timer | None = None,
        *,
        reference: Callable[..., Any] | None = None,
        reference_name: str = "",
        min_speedup: float | None = None,
        check: bool = False,
        rtol: float | None = None,
        atol: float | None = None,
        bytes_moved: int | None = None,
        flops: int | None = None,
    ) -> TimingStats:
        with failing_the_test():
            call_args, call_kwargs = arguments.call_arguments(args, kwargs, "perfgate.measure")
            arguments.callable_or_none(fn, "perfgate.measure fn", required=True)
            arguments.callable_or_none(reference, "perfgate.measure reference", required=False)
            arguments.needs_reference(reference, "perfgate.measure", check=check, min_speedup=min_speedup)
            request = _Request(
                fn=fn,
                args=call_args,
                kwargs=call_kwargs,
                name=arguments.case_name(name, "perfgate.measure name"),
                timer=arguments.timer(timer, "perfgate.measure timer"),
                reference=reference,
                reference_name=arguments.case_name(reference_name or None, "perfgate.measure reference_name") or "",
                min_speedup=arguments.speedup_target(min_speedup, "perfgate.measure min_speedup"),
                check=arguments.flag(check, "perfgate.measure check"),
                rtol=arguments.tolerance(rtol, "perfgate.measure rtol"),
                atol=arguments.tolerance(atol, "perfgate.measure atol"),
                bytes_moved=arguments.work_amount(bytes_moved, "perfgate.measure bytes_moved"),
                flops=arguments.work_amount(flops, "perfgate.measure flops"),
            )
        return self._dispatch(request)

    def measure_rounds(self, plan: FixedRounds, timer: Timer | None = None) -> tuple[CaseResult | None, Any]:
        """pytest-benchmark's `pedantic` (pytest_plugin/benchmark.py): exactly the plan's calls
        (measure/rounds.py). Returns the case (None when nothing was measured) and the target's value."""
        session = self._session
        if session is not None and session.mode is Mode.PROFILE_CHILD:
            from perfgate.measure.in_profiler import run_under_profiler

            args, kwargs = plan.arguments()  # profiled like any case: the profiling child is not call-exact
            assert session.profile_child is not None  # set with the mode (configure.make_session)
            run_under_profiler(session.profile_child, self._nodeid, plan.target, args, dict(kwargs))
            return None, _once(plan, args, kwargs)
        if session is None or not session.measuring or not session.owns_process:
            args, kwargs = plan.arguments()
            return None, _once(plan, args, kwargs)
        with failing_the_test():
            session.check_new(self._nodeid)
        from perfgate.measure.case import measure_rounds_case

        spec = self._spec(session, self._nodeid, _Request(fn=plan.target, timer=timer))
        result, value = measure_rounds_case(spec, plan)
        if session.environment is not None and result.timing.timer is Timer.CUDA_EVENT:
            result = replace(result, device_uuid=session.environment.device_uuid)
        with failing_the_test():
            session.record(result)
        self.last = result
        return result, value

    def annotate(self, group: object, extra_info: object, params: tuple[tuple[str, Any], ...] = ()) -> None:
        """pytest-benchmark's `group` and `extra_info`, read when the test ends (users set them after the
        call too), and the test's parameters (arguments.params): kept with the last case measured."""
        if self.last is None or self._session is None or self.last.case_id not in self._session.results:
            return
        case_id = self.last.case_id
        try:
            checked_group = arguments.group(group, "benchmark.group")
            info = arguments.extra_info(extra_info, "benchmark.extra_info")
        except arguments.ArgumentError:
            del self._session.results[case_id]  # the test fails (below): its case is not half kept
            raise
        self.last = replace(self.last, group=checked_group, extra_info=tuple(info.items()), params=params)
        self._session.results[self.last.case_id] = self.last

    def _dispatch(self, q: _Request) -> TimingStats:
        work, self._work = self._work, (None, None)  # work() applies to one measurement only
        q = replace(
            q,
            bytes_moved=q.bytes_moved if q.bytes_moved is not None else work[0],
            flops=q.flops if q.flops is not None else work[1],
        )
        case_id = self._nodeid if q.name is None else f"{self._nodeid}::{q.name}"
        session = self._session
        if session is not None and not session.owns_process:
            return _single_call(q)  # a forked child: only the process that started the session measures
        if session is not None and session.mode is Mode.PROFILE_CHILD:
            from perfgate.measure.in_profiler import run_under_profiler

            assert session.profile_child is not None  # set with the mode (configure.make_session)
            ms = run_under_profiler(session.profile_child, case_id, q.fn, q.args, dict(q.kwargs))
            return summarize([ms], Timer.HOST)  # no extra call: it would add launches to the capture
        if session is None or not session.measuring:
            return _single_call(q)
        with failing_the_test():
            session.check_new(case_id)
        if session.mode is Mode.AB_WORKER:
            served: CaseResult | None = session.ab_server.serve_case(self._spec(session, case_id, q), session.device)
            if served is None:  # the coordinator did not need this case from this tree
                return _single_call(q)
            with failing_the_test():
                session.record(served)
            self.last = served
            return served.timing
        result = self._measured(session, case_id, q)
        with failing_the_test():
            session.record(result)
        self.last = result
        return result.timing

    def _measured(self, session: PerfgateSession, case_id: str, q: _Request) -> CaseResult:
        from perfgate.ab.provenance import checkout_code
        from perfgate.measure.case import measure_case

        spec = self._spec(session, case_id, q)
        result = measure_case(spec, session.device)
        # where the code came from, as A/B mode records it: the gate checks whether it changed (gate/untouched.py)
        code = checkout_code(spec.fn, spec.reference, self._test_file, str(session.rootdir), session.seen_modules)
        result = replace(result, code=code)
        if session.environment is not None and result.timing.timer is Timer.CUDA_EVENT:
            result = replace(result, device_uuid=session.environment.device_uuid)
        return result

    def _spec(self, session: PerfgateSession, case_id: str, q: _Request) -> Any:
        """The case as the library measures it (measure.case.CaseSpec), thresholds resolved once."""
        from perfgate.gate.thresholds import resolve_thresholds
        from perfgate.measure.case import CaseSpec

        thresholds = resolve_thresholds(session.settings, case_id, self._marker)
        if q.min_speedup is not None:  # checked at the call (arguments.speedup_target)
            thresholds = replace(thresholds, min_speedup=q.min_speedup)
        options = measure_for(session.settings, self._marker)
        timer = q.timer or session.timer  # decided once per session, not per case
        return CaseSpec(
            case_id=case_id,
            fn=q.fn,
            args=q.args,
            kwargs=q.kwargs,
            options=options,
            timer=timer,
            reference=q.reference,
            reference_name=q.reference_name,
            check=q.check,
            rtol=q.rtol,
            atol=q.atol,
            bytes_moved=q.bytes_moved,
            flops=q.flops,
            thresholds=thresholds,
            autotune_pins=session.autotune_pins(case_id),
            nodeid=self._nodeid,
            location=self._location,
            kernels=session.kernel_recorder(),
        )


@contextlib.contextmanager
def failing_the_test() -> Iterator[None]:
    """A bad argument fails the test that passed it, in one line (no perfgate traceback, no chained one)."""
    try:
        yield
    except arguments.ArgumentError as err:
        failed = pytest.fail.Exception(str(err), pytrace=False)
        raise failed from None


@dataclass(frozen=True)
class _Request:
    """One measurement as the test asked for it."""

    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    name: str | None = None
    timer: Timer | None = None
    reference: Callable[..., Any] | None = None
    reference_name: str = ""
    min_speedup: float | None = None
    check: bool = False
    rtol: float | None = None
    atol: float | None = None
    bytes_moved: int | None = None
    flops: int | None = None


def _single_call(q: _Request) -> TimingStats:
    """Without --perfgate: run once, so correctness failures (and the output check) still surface."""
    t0 = time.perf_counter_ns()
    out = q.fn(*q.args, **q.kwargs)
    ms = (time.perf_counter_ns() - t0) / 1e6
    if q.check:
        if q.reference is None:
            raise ValueError("perfgate: check=True needs a reference= callable to compare with")
        from perfgate.measure.check import check_outputs

        check_outputs(out, q.reference(*q.args, **q.kwargs), q.rtol, q.atol)
    return summarize([ms], Timer.HOST)


def marker_for(node: pytest.Item, settings: Settings) -> MarkerOptions | None:
    """Closest `perfgate` marker wins (function over class over module)."""
    mark = node.get_closest_marker("perfgate")
    if mark is None:
        return None
    if mark.args:
        raise ConfigError(f"perfgate: {node.nodeid}: the perfgate marker takes keyword arguments only")
    return marker_options(dict(mark.kwargs), node.nodeid, settings.ncu_metrics)


def check_markers(items: Sequence[pytest.Item], settings: Settings) -> None:
    """Every perfgate marker of the run checked, alone and with the configured options, before any test runs: a
    bad one is bad configuration, one line and exit 4 (pytest.UsageError), not an error in each test that has
    it. Tests with the same marker share its problem (a module's `pytestmark`: named once)."""
    bad: dict[str, tuple[str, list[str]]] = {}
    for item in items:
        mark = item.get_closest_marker("perfgate")
        if mark is None:
            continue
        try:
            measure_for(settings, marker_for(item, settings))
        except PerfgateError as err:
            bad.setdefault(repr((mark.args, mark.kwargs)), (str(err), []))[1].append(item.nodeid)
    if bad:
        raise pytest.UsageError(bad_markers_line(list(bad.values())))


def fixture_for(request: pytest.FixtureRequest, state: PerfgateSession | None) -> Any:
    node = request.node
    marker = None
    if state is not None and state.measuring:
        try:
            marker = marker_for(node, state.settings)
        except PerfgateError as err:
            pytest.fail(str(err), pytrace=False)
    path, line = node.location[0], node.location[1]
    nodeid = state.case_id(node.nodeid) if state is not None else node.nodeid
    path = state.case_id(path) if state is not None else path
    test_file = str(getattr(node, "path", "") or "")
    return PerfgateFixture(state, nodeid, marker, (path, line + 1) if line is not None else None, test_file)


def _once(plan: FixedRounds, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> Any:
    result = plan.target(*args, **kwargs)
    if plan.teardown is not None:
        plan.teardown(*args, **kwargs)
    return result
