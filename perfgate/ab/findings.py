"""What only A/B mode finds, one line each: a worker that failed, tests that did not collect, head tests that
failed with no base case to miss, cases not comparable, profiler failures, why a ratio is inconclusive (in
the numbers that were tested), autotune choices; and each ratio's pairs of processes for the ceiling.
Everything every way of measuring finds (cases not measured, what the pull request changed, the ceiling)
is gate/findings.py's, applied by gate/run.py's tail.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from perfgate.ab.aa import AaCases
from perfgate.ab.protocol import Side
from perfgate.ab.rounds import Measurement
from perfgate.errors import PYTEST_NO_TESTS_COLLECTED
from perfgate.gate.ceiling import ProcessChanges
from perfgate.gate.ratio import AaNoise, RatioDecision
from perfgate.metrics import TIME_METRIC
from perfgate.model import CaseResult, Finding, FindingKind, GateResult, TestOutcome, Verdict

Results = Mapping[tuple[Side, str], CaseResult]  # (side, case id) -> that side's case


def inconclusive_text(metric: str, d: RatioDecision) -> str:
    """Why a ratio comparison is inconclusive, in the numbers that were tested: the pooled change against
    the pooled threshold, or against the screen when the rounds ended before the confirmation stages."""
    ratio = "head/base" if metric == TIME_METRIC else "speedup base/head"
    pooled = f"{ratio} {d.change_pct:+.2f}%" + (f" over {d.stages} stages" if d.stages > 1 else "")
    if d.fresh is not None and d.first_pct is not None:
        return (
            f"{ratio}: the first pair of processes {d.first_pct:+.2f}%, a fresh pair {d.fresh.change_pct:+.2f}%; "
            f"together {d.change_pct:+.2f}%, not beyond what both pairs can call ({d.threshold_pct:.2f}%): "
            "a difference between processes, not confirmed as the code's"
        )
    if d.suspect:
        return (
            f"{pooled} is beyond its screen ({d.screen_pct:.2f}%), but the rounds ended before the "
            "confirmation stages that would decide it"
        )
    return (
        f"{pooled} is above its noise band ({d.band_pct:.2f}%) but not beyond what it can call ({d.threshold_pct:.2f}%)"
    )


def ab_findings(
    m: Measurement, gate: GateResult, results: Results, decisions: Mapping[tuple[str, str], RatioDecision]
) -> Iterator[Finding]:
    """What only A/B mode finds: a worker that failed, tests that did not collect, head tests that failed
    without a base case to miss (the tail reports those with one, and cases the head did not measure),
    cases not comparable, profiler failures, why a ratio is inconclusive, autotune choices."""
    head = [r for (side, _), r in results.items() if side is Side.HEAD]
    yield from _workers(m, gate, results)
    for c in gate.comparisons:
        if c.verdict is Verdict.NOT_COMPARABLE:
            yield Finding(FindingKind.NOT_COMPARABLE, f"{c.case_id}: {c.note}", c.case_id)
        elif c.verdict is Verdict.PROFILE_FAILED:
            yield Finding(FindingKind.PROFILE_FAILED, f"{c.case_id}: {c.note}", c.case_id)
        elif c.verdict is Verdict.INCONCLUSIVE and (c.case_id, c.metric) in decisions:
            text = inconclusive_text(c.metric, decisions[(c.case_id, c.metric)])
            yield Finding(FindingKind.INCONCLUSIVE, f"{c.case_id}: {c.metric} {text}", c.case_id)
    for r in head:
        for note in r.profile_notes:
            if note.startswith("autotune:"):
                yield Finding(FindingKind.AUTOTUNE_CHANGED, f"{r.case_id}: head {note}", r.case_id)


def _workers(m: Measurement, gate: GateResult, results: Results) -> Iterator[Finding]:
    """A worker that failed, or a head that measured nothing; files that did not collect; head tests that
    failed or errored where the base has no case (the tail reports those where it has one)."""
    if m.failure is not None:
        compared = sum(1 for c in gate.comparisons if c.metric == TIME_METRIC)
        yield Finding(FindingKind.NOT_COMPARABLE, f"{m.failure} ({compared} case(s) compared before it)")
    elif m.exitstatus.get(Side.HEAD) == PYTEST_NO_TESTS_COLLECTED:
        yield Finding(
            FindingKind.NO_CASES,
            "pytest collected no perf test in the head (exit status 5): the paths, -k and -m given select none",
        )
    elif not any(side is Side.HEAD for side, _ in results):
        yield Finding(FindingKind.NO_CASES, "no perf case was measured in the head")
    for side in (Side.HEAD, Side.BASE):
        for where, error in m.collect_errors.get(side, ()):
            yield Finding(FindingKind.TEST_ERRORED, f"{side.value}: {where} could not be collected: {error}")
    based = {r.nodeid for (side, _), r in results.items() if side is Side.BASE}
    for test in m.unmeasured.get(Side.HEAD, ()):
        if test.outcome is not TestOutcome.SKIPPED and test.nodeid not in based:
            why = f": {test.reason}" if test.reason else ""
            yield Finding(FindingKind.TEST_ERRORED, f"head: {test.nodeid} {test.outcome.value}{why}", test.nodeid)


def pair_changes(decisions: Mapping[tuple[str, str], RatioDecision]) -> dict[tuple[str, str], ProcessChanges]:
    """The ceiling's view of each ratio: the head against the base in each pair of processes (the first
    pair, and the fresh pair where one measured the case again), worse direction positive."""
    out = {}
    for key, d in decisions.items():
        if d.fresh is not None and d.first_pct is not None:
            changes: tuple[float, ...] = (d.first_pct, d.fresh.change_pct)
        else:
            changes = (d.change_pct,)
        out[key] = ProcessChanges(changes, where="pair(s) of processes (head against base)")
    return out


def aa_for_cache(cached: AaCases, measured: Mapping[str, Mapping[str, AaNoise]]) -> dict[str, dict[str, AaNoise]]:
    """The cache after this run: what it had, with this run's A/A measurements replacing theirs."""
    out = {cid: dict(v) for cid, v in cached.items()}
    for cid, metrics in measured.items():
        out.setdefault(cid, {}).update(metrics)
    return out
