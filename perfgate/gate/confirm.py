"""Confirmation: a suspect case is measured again in a fresh process, round by round, until every process
a verdict needs has shown the same thing or one has not (gate/decision.py charges these processes to the
run's false-alarm budget). One fresh process serves all of a round's suspects.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from perfgate.baseline import Baseline
from perfgate.config.settings import Settings
from perfgate.errors import PerfgateError
from perfgate.gate.compare import MEMORY_METRICS, compare_run
from perfgate.gate.decision import MAX_STAGES
from perfgate.model import CaseResult, GateResult, Run
from perfgate.report.progress import Progress, open_progress

# case ids -> each case as one fresh process measured it (PerfgateError when that process fails)
Confirmer = Callable[[Sequence[str]], Mapping[str, CaseResult]]


def suspects(gate: GateResult) -> list[str]:
    """Cases with a verdict that needs another process: beyond the threshold on every process so far
    (time, speedup, memory, a speedup target; regressions and improvements alike)."""
    return sorted({c.case_id for c in gate.comparisons if c.suspect})


def confirm_suspects(
    run: Run,
    baseline: Baseline | None,
    settings: Settings,
    confirmer: Confirmer,
    messages: list[str],
    clock: Callable[[], float] = time.monotonic,
    progress: Progress | None = None,
) -> Run:
    """Re-measure suspect cases in fresh processes, at least `confirm_runs` rounds for a case that stays
    suspect, more where its reference is too small for fewer to hold the budget (gate/decision.py:
    `stages_needed`). Only what every process shows becomes a verdict; a failed round keeps the processes
    measured so far (the decision then charges fewer processes at a stricter threshold). Each round shows
    while it runs (`progress`; by default the command's display on stderr, report/progress.py)."""
    if settings.confirm_runs <= 0:
        return run
    with contextlib.ExitStack() as stack:
        shown = progress if progress is not None else stack.enter_context(open_progress())
        for round_no in range(1, MAX_STAGES):
            gate = compare_run(run.results, baseline, run.environment, settings, intervals=False)
            todo = suspects(gate)
            if not todo:
                break
            rounds = max(settings.confirm_runs, *(c.stages - 1 for c in gate.comparisons if c.suspect))
            started = clock()
            what = f"confirmation round {round_no} of {rounds}: {len(todo)} suspect case(s)"
            try:
                with shown.task(what, total=len(todo)) as task:
                    fresh = confirmer(todo)
                    task.advance(steps=len(fresh))
            except PerfgateError as err:
                messages.append(f"perfgate: confirmation run failed, keeping the unconfirmed verdicts: {err}")
                break
            # the cost of a confirmation is part of the gate's wall time: shown so it can be budgeted
            messages.append(
                f"perfgate: confirmed {len(todo)} suspect case(s) in a fresh process "
                f"(round {round_no} of {rounds}): {clock() - started:.1f} s"
            )
            run = replace(
                run, results=tuple(confirmed(r, fresh[r.case_id]) if r.case_id in fresh else r for r in run.results)
            )
    return run


def confirmed(r: CaseResult, again: CaseResult) -> CaseResult:
    """`r` with one more process's values: its time median, speedup, cycles and peak memory."""
    speedups = r.confirmation_speedups
    if r.speedup is not None and again.speedup is not None:
        speedups += (again.speedup.median,)
    memory = r.confirmation_memory
    gated = next((m.name for m in r.metrics if m.name in MEMORY_METRICS), None)
    value = next((m.value for m in again.metrics if m.name == gated), None)
    if value is not None:
        memory += (value,)
    mcycles = r.confirmation_mcycles
    if r.cycles is not None and again.cycles is not None:
        mcycles += (again.cycles.median_mcycles,)
    return replace(
        r,
        confirmation_mcycles=mcycles,
        confirmation_medians_ms=r.confirmation_medians_ms + (again.timing.median_ms,),
        confirmation_speedups=speedups,
        confirmation_memory=memory,
    )
