"""The rounds: the coordinator walks the workers through their perf tests together and, at every case both
trees have, has each side measure one short round in turn (base, head, and for the A/A a second base
process), in an order that changes every round (schedule.py). Only one worker touches the GPU at a time;
the others wait at their case.

A suspect case gets another stage of rounds right away, while both workers still hold its inputs
(`needs_stage` decides, gate/ratio.py's rule behind it): confirmation by more rounds, no new process.

A fresh pair of processes re-measuring the called cases gets `only_tests`: each worker then runs those
tests alone (the rest are deselected after collection), not every test body to reach a few cases. Where it
is, which case and which stage, goes to a progress task (report/progress.py) as it happens.
"""

from __future__ import annotations

import contextlib
import random
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from perfgate.ab.protocol import (
    PYTEST_ENDED,
    CaseReady,
    Collected,
    End,
    Event,
    Failed,
    Prepared,
    PytestEnded,
    RoundSamples,
    Side,
    TestDone,
    WorkerFailed,
    decode,
)
from perfgate.ab.rounds import CaseRounds, Measurement, NeedsStage, RoundPlan, SideRounds, WantsAa
from perfgate.ab.schedule import Positions, Step, next_step, round_orders
from perfgate.ab.workers import Worker
from perfgate.model import Timer, UnmeasuredTest
from perfgate.report.progress import Progress, QuietProgress, Task

ONE_SIDED_ROUNDS = 3  # a case only one tree has: measured for the report, never compared
SAME_CODE_ROUND_OVERHEAD_MS = 5.0  # a round's warm-up (serve.ROUND_WARMUP_MS), counted in the time saved


class Coordinator:
    def __init__(
        self,
        workers: Mapping[Side, Worker],
        plan: RoundPlan,
        needs_stage: NeedsStage,
        wants_aa: WantsAa,
        base_cases: Mapping[str, tuple[str, ...]] | None = None,
        wanted: frozenset[str] | None = None,
        only_tests: frozenset[str] | None = None,
        progress: Progress | None = None,
        label: str = "A/B",
    ) -> None:
        self.workers = dict(workers)
        self.wanted = wanted  # measure only these case ids (a fresh pair re-measuring called cases); None: all
        self.only_tests = only_tests  # the workers run only these tests (node ids); None: every one collected
        self.progress: Progress = progress or QuietProgress()
        self.label = label
        self.task: Task | None = None
        self.plan = plan
        self.needs_stage = needs_stage
        self.wants_aa = wants_aa
        self.base_cases = base_cases
        self.rng = random.Random(plan.seed)  # noqa: S311 (an order of rounds, not a secret)
        self.m = Measurement()
        self.waiting: dict[Side, Event] = {}

    @contextlib.contextmanager
    def _cost(self, phase: str) -> Iterator[None]:
        started = time.monotonic()
        try:
            yield
        finally:
            self.m.costs_s[phase] += time.monotonic() - started

    def run(self) -> Measurement:
        """Walk both trees to their end. A base or head worker that fails ends the walk (recorded in
        `failure`); an A/A worker that fails is dropped and the walk goes on; a base or head pytest session
        that ends early (a usage error, an interruption, an internal error) raises PytestEnded."""
        try:
            with self._cost("start"), self.progress.task(f"{self.label}: starting the workers"):
                self._collect()
            for side in (Side.BASE, Side.HEAD):  # a tree with none of the selected tests has no worker
                self.waiting.setdefault(side, End(0))
            head_tests = self.m.collected.get(Side.HEAD, ())
            where = Positions(
                {n: i for i, n in enumerate(head_tests)},
                frozenset(self.m.collected.get(Side.BASE, ())),
                self.base_cases,
            )
            with self.progress.task(f"{self.label}: tests", total=len(head_tests)) as self.task:
                while True:
                    step = next_step(self.waiting[Side.BASE], self.waiting[Side.HEAD], where)
                    if step is Step.FINISHED:
                        break
                    self._take(step)
        except WorkerFailed as err:
            if err.side is Side.AA:
                raise  # not reached: the A/A worker's failures are handled where they happen
            self.m.failure = err
        return self.m

    # --- moving the workers on ----------------------------------------------------------------------

    def _collect(self) -> None:
        for side in list(self.workers):
            if side is Side.AA:
                self._guarded(side, lambda: self._collected(Side.AA))
            else:
                self._collected(side)
        only = {} if self.only_tests is None else {"only": sorted(self.only_tests)}
        for side in list(self.workers):
            self._advance(side, "continue", only)

    def _collected(self, side: Side) -> None:
        event = self._event(side, self.workers[side].receive(self.plan.collect_timeout_s, "collecting its tests"))
        if not isinstance(event, Collected):
            raise WorkerFailed(side, f"said {type(event).__name__} before collecting its tests")
        nodeids = event.nodeids
        if self.only_tests is not None:  # the worker runs these alone (it was told so when it goes on)
            nodeids = tuple(n for n in nodeids if n in self.only_tests)
        self.m.collected[side] = nodeids
        self.m.collect_errors[side] = event.errors
        if event.environment is not None:
            self.m.environments[side] = event.environment
        self.waiting[side] = event

    def _advance(self, side: Side, command: str | None = "continue", extra: Mapping[str, Any] | None = None) -> None:
        """Let a worker go on (continue / done / skip; None: it is already on its way, its case failed) and
        wait for where it stops next."""
        worker = self.workers.get(side)
        if worker is None:
            return
        try:
            with self._cost("tests"):
                if command is not None:
                    worker.send({"cmd": command, **(extra or {})}, f"going on from {self._where(side)}")
                message = worker.receive(self.plan.timeout_s, f"running the tests after {self._where(side)}")
            event = self._event(side, message)
        except WorkerFailed as err:
            if side is not Side.AA:
                raise
            self._drop_aa(err)
            return
        self.waiting[side] = event
        if isinstance(event, TestDone) and side is Side.HEAD and self.task is not None:
            self.task.advance(event.nodeid)
        if isinstance(event, TestDone) and event.outcome is not None:
            self.m.unmeasured[side].append(UnmeasuredTest(event.nodeid, event.outcome, event.reason))
        if isinstance(event, End):
            self.m.exitstatus[side] = event.exitstatus
            if event.exitstatus in PYTEST_ENDED and side is not Side.AA:  # no comparison: pytest's own words
                raise PytestEnded(side, event.exitstatus, event.reason)

    def _where(self, side: Side) -> str:
        event = self.waiting.get(side)
        if isinstance(event, CaseReady):
            return event.case_id
        if isinstance(event, TestDone):
            return event.nodeid
        return "collection" if event is None or isinstance(event, Collected) else "the end"

    def _event(self, side: Side, message: dict[str, Any]) -> Event:
        try:
            decoded = decode(message)
        except ValueError as err:
            raise WorkerFailed(side, f"sent a bad message: {err}") from err
        if not isinstance(decoded, (Collected, CaseReady, TestDone, End)):
            raise WorkerFailed(side, f"sent a reply ({type(decoded).__name__}) where an event was due")
        return decoded

    def _drop_aa(self, err: WorkerFailed) -> None:
        worker = self.workers.pop(Side.AA, None)
        if worker is not None:
            worker.stop()
        self.waiting.pop(Side.AA, None)
        self.m.notes.append(f"{err}; the A/A measurement goes on without it (cached A/A where there is one)")

    def _take(self, step: Step) -> None:
        base, head = self.waiting[Side.BASE], self.waiting[Side.HEAD]
        at = head if step in (Step.PAIR, Step.HEAD_ONLY) else base if step is Step.BASE_ONLY else None
        if isinstance(at, CaseReady) and self.wanted is not None and at.case_id not in self.wanted:
            self._finish(CaseRounds(at.case_id, at.nodeid))  # every worker at it skips it: nothing measured
        elif step is Step.PAIR:
            assert isinstance(head, CaseReady)
            self._pair(head)
        elif step is Step.HEAD_ONLY:
            assert isinstance(head, CaseReady)
            self._alone(Side.HEAD, head)
        elif step is Step.BASE_ONLY:
            assert isinstance(base, CaseReady)
            self._alone(Side.BASE, base)
        elif step is Step.ADVANCE_HEAD:
            self._advance(Side.HEAD)
        elif step is Step.ADVANCE_BASE:
            self._advance_base("continue")
        else:
            self._advance_base("continue")
            self._advance(Side.HEAD)

    def _advance_base(self, command: str | None) -> None:
        """The base and its A/A twin go on together (same code, same events)."""
        self._advance_twin(command)
        self._advance(Side.BASE, command)

    def _advance_twin(self, command: str | None) -> None:
        """The A/A twin follows the base; one that is somewhere else has diverged and is dropped."""
        if Side.AA not in self.workers:
            return
        twin, base = self.waiting.get(Side.AA), self.waiting[Side.BASE]
        if twin != base:
            self._drop_aa(WorkerFailed(Side.AA, f"was at {twin} where the base was at {base}"))
            return
        self._advance(Side.AA, command)

    # --- measuring ------------------------------------------------------------------------------------

    def _prepare(self, side: Side, case: CaseRounds, pins: Mapping[str, str], settle: bool = False) -> None:
        """First calls, output check, memory; `settle`: then wait for the GPU's power state (once per case:
        the rounds alternate, so whatever the state does after that, it does to both sides)."""
        worker = self.workers[side]
        with self._cost("prepare"):
            worker.send({"cmd": "prepare", "pins": dict(pins), "settle": settle}, f"preparing {case.case_id}")

    def _prepared(self, side: Side, case: CaseRounds) -> None:
        worker = self.workers[side]
        with self._cost("prepare"):
            message = worker.receive(self.plan.timeout_s, f"compiling and checking {case.case_id}")
        try:
            reply = decode(message)
        except ValueError as err:
            raise WorkerFailed(side, f"sent a bad message: {err}") from err
        if isinstance(reply, Failed):
            case.failed[side] = reply.error
        elif isinstance(reply, Prepared):
            case.sides[side] = SideRounds(reply)
        else:
            raise WorkerFailed(side, f"answered prepare with {type(reply).__name__}")

    def _pair(self, ready: CaseReady) -> None:
        case = CaseRounds(ready.case_id, ready.nodeid)
        self.m.cases.append(case)
        self._tell(f"{case.case_id}: compiling and checking both sides")
        self._prepare(Side.BASE, case, {}, settle=True)
        self._prepared(Side.BASE, case)
        if Side.BASE not in case.failed:
            pins = dict(case.sides[Side.BASE].prepared.case.autotune)  # the head (and the A/A) tune like the base
            twin = Side.AA in self.workers and self.waiting.get(Side.AA) == ready and self.wants_aa(ready.case_id)
            self._prepare(Side.HEAD, case, pins)  # head and A/A compile at once: only rounds need the GPU alone
            if twin:
                self._guarded(Side.AA, lambda: self._prepare(Side.AA, case, pins))
            self._prepared(Side.HEAD, case)
            if twin:
                self._guarded(Side.AA, lambda: self._prepared(Side.AA, case))
            sides = [s for s in (Side.BASE, Side.HEAD, Side.AA) if s in case.sides]
            if case.paired and not self._same_code(case, sides):
                self._stages(case, sides)
        self._finish(case)

    def _same_code(self, case: CaseRounds, sides: list[Side]) -> bool:
        """Skip the rounds of a case whose base and head run the same compiled code (compiled/same_code.py),
        unless asked to measure anyway; say so, and what it saved."""
        if not self.plan.skip_same_code:
            return False
        from perfgate.compiled.same_code import same_code

        found = same_code(case.sides[Side.BASE].prepared.case.compiled, case.sides[Side.HEAD].prepared.case.compiled)
        if not found.same:
            return False
        per_call = max(case.sides[s].prepared.per_call_ms for s in sides if s is not Side.AA)
        n = self.plan.samples_for(per_call, _timer(case))
        case.same_code = found.why
        case.saved_ms = self.plan.rounds * len(sides) * (n * per_call + SAME_CODE_ROUND_OVERHEAD_MS)
        return True

    def _guarded(self, side: Side, action: Callable[[], None]) -> None:
        """Run a step with a worker; the A/A worker failing drops it instead of ending the walk."""
        if side not in self.workers:
            return
        try:
            action()
        except WorkerFailed as err:
            if side is not Side.AA:
                raise
            self._drop_aa(err)

    def _finish(self, case: CaseRounds) -> None:
        """Every worker waiting at this case goes on: done (measured), skip (not asked to), or nothing
        (its case failed: the test is already failing in that worker)."""

        def command(side: Side) -> str | None:
            return None if side in case.failed else "done" if side in case.sides else "skip"

        at_case = {s for s, e in self.waiting.items() if isinstance(e, CaseReady) and e.case_id == case.case_id}
        if Side.BASE in at_case:
            self._advance_twin(command(Side.AA))
            self._advance(Side.BASE, command(Side.BASE))
        if Side.HEAD in at_case:
            self._advance(Side.HEAD, command(Side.HEAD))

    def _stages(self, case: CaseRounds, sides: list[Side]) -> None:
        per_call = max(case.sides[s].prepared.per_call_ms for s in sides if s is not Side.AA)
        n = self.plan.samples_for(per_call, _timer(case))
        for stage in range(self.plan.stages):
            # the A/A twin, when it measures, stays for every stage: an A/A of as many rounds as the A/B is a
            # draw of the process offset as precise as the mean it bounds (gate/ratio.py)
            what = "rounds" if stage == 0 else f"confirmation stage {stage}"
            for k, order in enumerate(round_orders(sides, self.plan.rounds, self.rng)):
                self._tell(f"{case.case_id}: {what}, round {k + 1} of {self.plan.rounds}")
                case.orders.append(self._one_round(case, order, n, "rounds" if stage == 0 else "confirmation"))
            case.stage_ends.append(len(case.orders))
            if stage + 1 >= self.plan.stages or not self.needs_stage(case, self.m):
                break

    def _one_round(self, case: CaseRounds, order: tuple[Side, ...], n: int, phase: str) -> tuple[Side, ...]:
        """Each side of `order` measures n samples in turn; the sides that did (an A/A worker may drop)."""
        measured = []
        for side in order:
            if side not in self.workers:
                continue
            if side is Side.AA:
                self._guarded(side, lambda: self._round(Side.AA, case, n, "A/A"))
            else:
                self._round(side, case, n, phase)
            if side in self.workers:
                measured.append(side)
        return tuple(measured)

    def _round(self, side: Side, case: CaseRounds, n: int, phase: str) -> None:
        worker = self.workers[side]
        with self._cost(phase):
            message = worker.request(
                {"cmd": "round", "samples": n}, self.plan.timeout_s, f"measuring a round of {case.case_id}"
            )
        try:
            reply = decode(message)
        except ValueError as err:
            raise WorkerFailed(side, f"sent a bad message: {err}") from err
        if not isinstance(reply, RoundSamples):
            raise WorkerFailed(side, f"answered a round with {type(reply).__name__}")
        case.sides[side].rounds.append(reply)

    def _tell(self, what: str) -> None:
        if self.task is not None:
            self.task.update(what)

    def _alone(self, side: Side, ready: CaseReady) -> None:
        """A case one tree has: a few rounds for the report (new / removed), then on."""
        case = CaseRounds(ready.case_id, ready.nodeid)
        self.m.cases.append(case)
        self._tell(f"{case.case_id}: {side.value} only")
        self._prepare(side, case, {}, settle=True)
        self._prepared(side, case)
        if side in case.sides:
            n = self.plan.samples_for(case.sides[side].prepared.per_call_ms, _timer(case))
            for _ in range(ONE_SIDED_ROUNDS):
                self._round(side, case, n, "rounds")
                case.orders.append((side,))
            case.stage_ends.append(len(case.orders))
        self._finish(case)


def _timer(case: CaseRounds) -> Timer:
    """What times the case's samples (every side prepared it with the same timer options)."""
    return next(iter(case.sides.values())).prepared.case.timing.timer
