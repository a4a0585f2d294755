"""What the rounds say, for the whole run: every case, head against base -> comparison rows, the gate and its
findings (pure).

Time and, for cases timed against a reference in both trees, the speedup are judged on their per-round
ratios (ratios.py, gate/ratio.py's rule), each one of the run's m gated comparisons sharing the false-alarm
budget. Peak memory is compared head against base like any counter (the catalogue's tolerance); the rows of
a case are rows.py's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from perfgate.ab.aa import AaCases
from perfgate.ab.findings import ab_findings
from perfgate.ab.protocol import Side
from perfgate.ab.ratios import RATIO_METRICS, aa_noise, gated_count, has_metric, host_prior, judge_case, offsets_unknown
from perfgate.ab.rounds import CaseRounds, Measurement
from perfgate.ab.rows import Results, compiled_rows, other_rows, ratio_row, static_explanations
from perfgate.gate.pooled import OffsetPrior
from perfgate.gate.ratio import AaNoise, RatioDecision, RatioRule
from perfgate.gate.static import StaticRule
from perfgate.metrics import SPEEDUP_METRIC, TIME_METRIC
from perfgate.model import CaseResult, Comparison, Direction, GateResult, Verdict
from perfgate.stats import ratio_ci, summarize


@dataclass(frozen=True)
class AbRule:
    false_alarm_pct: float = 1.0  # the run's budget: P(an unchanged A/B gate fails) stays under this
    min_effect_pct: float = 1.0
    stages: int = 3  # 1 + confirmation stages
    strict: bool = False
    static: StaticRule = StaticRule()  # the static gate, head against base (gate/static.py)
    fresh_pair: bool = True  # a call is measured again by a fresh pair of processes (`ab_fresh_pair`)

    def for_comparisons(self, m: int, separate: bool = True, prior: OffsetPrior | None = None) -> RatioRule:
        """The ratio rule of one of the run's m comparisons; `separate`: base and head ran in processes of
        their own (False: threads of one shared process), which decides how process offsets are bounded;
        `prior`: the run's pooled offset variance that bound borrows (host_prior)."""
        return RatioRule(
            prior=prior if separate else None,
            alpha=self.false_alarm_pct / 100.0 / max(1, m),
            stages=self.stages,
            min_effect_pct=self.min_effect_pct,
            separate=separate,
            fresh_pair=self.fresh_pair,
        )


@dataclass(frozen=True)
class AbComparison:
    gate: GateResult
    head_results: tuple[CaseResult, ...]
    base_results: tuple[CaseResult, ...]
    decisions: dict[tuple[str, str], RatioDecision]  # (case id, metric) -> the decision
    aa_measured: AaCases  # the A/A measured in this run, for the cache


def side_results(m: Measurement) -> dict[tuple[Side, str], CaseResult]:
    """Each side's cases as CaseResults: every round's samples pooled (what the history stores)."""
    return {(side, c.case_id): _result(c, side) for c in m.cases for side in (Side.BASE, Side.HEAD) if side in c.sides}


def compare_ab(
    m: Measurement,
    cached: AaCases,
    rule: AbRule,
    results: Results | None = None,
    fail_on_profile_error: bool = False,
    fresh: Mapping[str, CaseRounds] | None = None,
    incomparable: Mapping[str, str] | None = None,
) -> AbComparison:
    """`results`: the sides' cases when something was added to them (profiler metrics); default
    side_results(m). `fresh`: called cases measured again by a fresh pair of processes (case id -> its
    rounds there): a call stands only where that pair makes it too (gate/fresh_pair.py's with_fresh_pair).
    `incomparable`: case id -> why it cannot be compared although both sides measured it (provenance.py):
    one not-comparable row instead of its verdicts."""
    results = results if results is not None else side_results(m)
    gated = gated_count(m.cases)
    rows: list[Comparison] = []
    decisions: dict[tuple[str, str], RatioDecision] = {}
    measured_aa: dict[str, dict[str, AaNoise]] = {}
    unmeasured = _why_unmeasured(m)  # once: per case it was cases x collect errors each time
    priors = {metric: host_prior(m, cached, metric) for metric in RATIO_METRICS}
    for case in m.cases:
        why = (incomparable or {}).get(case.case_id)
        if why is not None:
            rows.append(Comparison(case.case_id, TIME_METRIC, "ms", Direction.LOWER, Verdict.NOT_COMPARABLE, note=why))
            continue
        for metric in RATIO_METRICS:
            here = aa_noise(case, metric)
            if here is not None:
                measured_aa.setdefault(case.case_id, {})[metric] = here
            if not has_metric(case, metric):
                continue
            cached_aa = cached.get(case.case_id, {}).get(metric)
            separate = offsets_unknown(case, m.shared)
            ratio_rule = rule.for_comparisons(gated, separate, priors[metric])  # None unless shared (host_prior)
            decision = judge_case(case, metric, cached_aa, ratio_rule, fresh)
            if decision is not None:
                decisions[(case.case_id, metric)] = decision
                rows.append(ratio_row(case, metric, decision, here is not None or cached_aa is not None))
        rows += other_rows(case, results, unmeasured)
        rows += compiled_rows(case, results, rule.static)
    gate = _gate(m, rows, rule, fail_on_profile_error)
    gate = replace(gate, findings=tuple(ab_findings(m, gate, results, decisions)))
    head = tuple(r for (side, _), r in results.items() if side is Side.HEAD)
    base = tuple(r for (side, _), r in results.items() if side is Side.BASE)
    return AbComparison(gate, head, base, decisions, measured_aa)


def _gate(m: Measurement, rows: list[Comparison], rule: AbRule, fail_on_profile_error: bool) -> GateResult:
    """The run's rows as a gate result: head against base, each side's environment, what fails it."""
    fail_on = {Verdict.REGRESSED, Verdict.BELOW_TARGET} | ({Verdict.PROFILE_FAILED} if fail_on_profile_error else set())
    return GateResult(
        comparisons=tuple(rows),
        current_env=m.environments.get(Side.HEAD),
        baseline_env=m.environments.get(Side.BASE),
        fail_on=frozenset(fail_on),
        strict=rule.strict,
        calibrated=True,
        explanations=static_explanations(rows),
    )


def _result(case: CaseRounds, side: Side) -> CaseResult:
    """A side's case as one CaseResult: every round's samples (the history stores both sides)."""
    sr = case.sides[side]
    skeleton = sr.prepared.case
    samples = [v for r in sr.rounds for v in r.samples_ms] or list(skeleton.samples_ms)
    refs = [v for r in sr.rounds for v in r.reference_samples_ms]
    speedup = skeleton.speedup
    metrics = tuple(mt for mt in skeleton.metrics if mt.name != SPEEDUP_METRIC)
    if refs and len(refs) == len(samples) and speedup is not None:
        median, lo, hi = ratio_ci(refs, samples)
        speedup = replace(speedup, reference_samples_ms=tuple(refs), median=median, ci_low=lo, ci_high=hi)
        metrics += (replace(next(mt for mt in skeleton.metrics if mt.name == SPEEDUP_METRIC), value=median),)
    timing = summarize(samples, skeleton.timing.timer, skeleton.bytes_moved, skeleton.flops)
    return replace(skeleton, timing=timing, samples_ms=tuple(samples), metrics=metrics, speedup=speedup)


def _why_unmeasured(m: Measurement) -> dict[tuple[Side, str], str]:
    """(side, node id) -> how that side's test ended without measuring (failed, skipped, errored), and for
    the tests of a file one side could not collect (it does not import there), why."""
    why = {
        (side, t.nodeid): f"{side.value}: test {t.outcome.value}" + (f": {t.reason}" if t.reason else "")
        for side, tests in m.unmeasured.items()
        for t in tests
    }
    for side, errors in m.collect_errors.items():
        for case in m.cases:
            for where, error in errors:
                if where and (case.nodeid == where or case.nodeid.startswith(where + "::")):
                    why.setdefault((side, case.nodeid), f"{side.value}: {where} could not be collected: {error}")
    return why
