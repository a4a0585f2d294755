"""One pair of worker processes (and an A/A twin) measuring: started, walked through their tests by the
coordinator, stopped; and the screen that asks a suspect case for another stage of rounds."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from perfgate.ab import aa as aa_cache
from perfgate.ab.compare import AbRule
from perfgate.ab.coordinator import Coordinator
from perfgate.ab.protocol import SharingEnded, Side
from perfgate.ab.ratios import RATIO_METRICS, aa_noise, decide_case, has_metric, offsets_unknown
from perfgate.ab.rounds import CaseRounds, Measurement, NeedsStage, RoundPlan
from perfgate.ab.workers import Launcher, Worker, WorkerSpec, stop_all
from perfgate.report.progress import Progress


def measure_pair(
    specs: Sequence[WorkerSpec],
    launcher: Launcher,
    log_dir: Path,
    plan: RoundPlan,
    rule: AbRule,
    covered: aa_cache.AaEntry | None,
    wanted: frozenset[str] | None = None,
    cached: aa_cache.AaCases | None = None,
    base_first: bool = False,
    shared: bool = False,
    only_tests: frozenset[str] | None = None,
    progress: Progress | None = None,
    label: str = "A/B",
) -> Measurement:
    """The workers' rounds. `wanted`: only these cases (a fresh pair), `only_tests`: and only these tests run
    (their node ids); `cached`: A/A known beyond `covered`; `base_first`: the base worker starts before the
    head's (the A/A twin always last); `shared`: every side in one process (perfgate/ab/host/), measured
    again in a process per tree when a side breaks its contract (`Measurement.sharing_ended` says why)."""
    walk = _Walk(covered, wanted, cached, base_first, only_tests, progress, label)
    m = _measure(specs, launcher, log_dir, plan, rule, walk, shared)
    if not (shared and isinstance(m.failure, SharingEnded)):
        return m
    why = m.failure.why
    if covered is not None and covered.shared:  # a twin in the shared process shows no separate offset
        walk, specs = replace(walk, covered=None), _with_twin(specs)
    again = _measure(specs, launcher, log_dir / "separate", plan, rule, walk, False)
    again.sharing_ended = why
    again.notes.insert(0, f"perfgate: A/B: the shared comparison ended ({why}): measured in a process per tree")
    return again


def _with_twin(specs: Sequence[WorkerSpec]) -> list[WorkerSpec]:
    """The specs with an A/A twin (a second base process), when they have none."""
    if any(spec.side is Side.AA for spec in specs):
        return list(specs)
    return [*specs, *(replace(spec, side=Side.AA) for spec in specs if spec.side is Side.BASE)]


@dataclass(frozen=True)
class _Walk:
    """How the coordinator walks the workers (measure_pair's arguments)."""

    covered: aa_cache.AaEntry | None
    wanted: frozenset[str] | None
    cached: aa_cache.AaCases | None
    base_first: bool
    only_tests: frozenset[str] | None
    progress: Progress | None
    label: str


def _measure(
    specs: Sequence[WorkerSpec],
    launcher: Launcher,
    log_dir: Path,
    plan: RoundPlan,
    rule: AbRule,
    walk: _Walk,
    shared: bool,
) -> Measurement:
    workers: dict[Side, Worker] = {}
    order = (Side.BASE, Side.HEAD, Side.AA) if walk.base_first else (Side.HEAD, Side.BASE, Side.AA)
    ordered = sorted(specs, key=lambda spec: order.index(spec.side))
    spawned = time.monotonic()
    measured: Measurement | None = None
    try:
        if shared:
            workers = {w.side: w for w in Worker.start_shared(ordered, launcher, log_dir)}
        else:
            for spec in ordered:  # one at a time: those started are stopped below if a later one cannot start
                workers[spec.side] = Worker.start(spec, launcher, log_dir)
        spawned = time.monotonic() - spawned
        covered = walk.covered
        known = {**(covered.cases if covered is not None else {}), **(walk.cached or {})}
        coordinator = Coordinator(
            workers,
            plan,
            screen(rule, known, shared),
            wants_aa=lambda case_id: case_id not in known,
            base_cases=covered.base_cases if covered is not None else None,
            wanted=walk.wanted,
            only_tests=walk.only_tests,
            progress=walk.progress,
            label=walk.label,
        )
        measured = coordinator.run()
        measured.shared = shared
        measured.costs_s["start"] += spawned  # starting the processes, before they import and collect
        return measured
    finally:
        stopping = time.monotonic()
        stop_all(list(workers.values()))
        if measured is not None:
            measured.costs_s["stop"] += time.monotonic() - stopping  # the workers finishing and exiting


def screen(rule: AbRule, cached: aa_cache.AaCases, shared: bool = False) -> NeedsStage:
    """Does a case need another stage of rounds? Judged with the run's m not yet known: the head's perf tests
    so far, a count never above the final m, so the screen is never stricter than the verdict."""

    def needs_stage(case: CaseRounds, m: Measurement) -> bool:
        tests = max(1, len(m.collected.get(Side.HEAD, ())))
        ratio_rule = rule.for_comparisons(tests, separate=offsets_unknown(case, shared))
        for metric in RATIO_METRICS:
            if has_metric(case, metric):
                aa = aa_noise(case, metric) or cached.get(case.case_id, {}).get(metric)
                decision = decide_case(case, metric, aa, ratio_rule, with_detects=False)
                if decision is not None and decision.suspect:
                    return True
        return False

    return needs_stage
