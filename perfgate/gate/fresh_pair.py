"""A call judged again: one pair's ratio decision and a fresh pair's -> the two-pair verdict, with the gross
rule; or, where no fresh pair measured it, the first pair alone (pure; gate/ratio.py's module docstring has
the rule).
"""

from __future__ import annotations

import math
from dataclasses import replace

from perfgate.gate.decision import GROSS_PCT
from perfgate.gate.offset_bound import OffsetDraw, bound_threshold, offset_var, t_quantile
from perfgate.gate.pooled import pooled_d2
from perfgate.gate.ratio import CI_CONFIDENCE, RatioDecision, detects_log, finite_pct, pct
from perfgate.model import Verdict

GROSS_TWINS = 2.0  # the gross rule's limit is at least this many times the largest A/A twin's offset


def with_fresh_pair(first: RatioDecision, fresh: RatioDecision) -> RatioDecision:
    """A call (regressed / improved) judged again on both pairs of processes: m = (m1 + m2) / 2 against the
    two-pair threshold of the process mode (module docstring). The fresh pair brings two more draws of the
    offset (its own A/A twin, and the pairs' difference, in which the code's change cancels). The call
    stands when the fresh pair points the same way and m is beyond that threshold; otherwise a regression is
    inconclusive (something moved, but not in both pairs) and an improvement unchanged. On the H100 the
    12 us add's separate processes differ by 1-3%: in an A/A one pair said +2.65%, the fresh one +1.20%,
    and that is not a regression."""
    separate = first.separate or fresh.separate
    draws = (*first.draws, *fresh.draws, _pairs_apart(first, fresh))
    rounds_var = (first.rounds_var_log + fresh.rounds_var_log) / 4.0
    mean = (first.mean_log + fresh.mean_log) / 2.0
    p2 = offset_var(draws)
    threshold, half = _two_pair_bound(first, fresh, draws, rounds_var, p2, separate)
    verdict = first.verdict
    gross = separate and first.verdict is Verdict.REGRESSED and _gross(first, fresh)
    if gross:
        threshold = _gross_log(first, fresh)
    elif not ((fresh.mean_log > 0) == (first.mean_log > 0) and abs(mean) > threshold):
        verdict = Verdict.INCONCLUSIVE if first.verdict is Verdict.REGRESSED else Verdict.UNCHANGED
    return replace(
        first,
        verdict=verdict,
        fresh=fresh,
        change_pct=pct(mean),
        ci_low_pct=pct(mean - half),
        ci_high_pct=pct(mean + half),
        threshold_pct=pct(threshold),
        process_pct=pct(math.sqrt(p2)) if p2 > 0 else None,
        rounds=first.rounds + fresh.rounds,
        first_pct=first.change_pct,
        mean_log=mean,
        offset_var_log=p2,
        draws=draws,
        separate=separate,
        gross=gross,
        detects_pct=finite_pct(detects_log(replace(first, offset_var_log=p2, separate=separate), fresh_pair=True)),
    )


def _two_pair_bound(
    first: RatioDecision,
    fresh: RatioDecision,
    draws: tuple[OffsetDraw, ...],
    rounds_var: float,
    p2: float,
    separate: bool,
) -> tuple[float, float]:
    """The two-pair threshold T2 of the process mode and the half-width of the pair mean's interval (log)."""
    if separate:
        threshold = bound_threshold(rounds_var, 0.5, draws, first.alpha, first.floor_log, first.prior)
        var, bound_dof = pooled_d2([d.mean_log**2 for d in draws], first.prior)
        se = math.sqrt(rounds_var + 0.5 * var)
        return threshold, t_quantile(0.5 + CI_CONFIDENCE / 2, bound_dof) * se
    dof = first.dof + fresh.dof
    se = math.sqrt(rounds_var + p2 / 2.0)
    threshold = max(first.floor_log, t_quantile(1.0 - first.alpha, dof) * se)
    return threshold, t_quantile(0.5 + CI_CONFIDENCE / 2, dof) * se


def _gross_log(first: RatioDecision, fresh: RatioDecision) -> float:
    """The gross rule's limit: GROSS_PCT, or GROSS_TWINS times the largest offset an A/A twin showed."""
    twins = [abs(d.mean_log) for d in (*first.draws, *fresh.draws)]
    return max(math.log1p(GROSS_PCT / 100.0), GROSS_TWINS * max(twins, default=0.0))


def _gross(first: RatioDecision, fresh: RatioDecision) -> bool:
    """Beyond the gross limit in both pairs of processes, each pair's own round noise taken off its mean."""
    limit = _gross_log(first, fresh)
    return all(
        p.mean_log - t_quantile(1.0 - first.alpha, max(p.dof, 1)) * math.sqrt(p.rounds_var_log) > limit
        for p in (first, fresh)
    )


def on_one_pair(first: RatioDecision) -> RatioDecision:
    """A call no fresh pair measured (`ab_fresh_pair` off, or the fresh pair failed): in one shared process
    it stands; in separate processes it is judged on the first pair's own draws, K = 1 (module docstring),
    and a regression beyond what they bound is inconclusive, an improvement unchanged."""
    if not first.called:
        return first
    if not first.separate:
        return replace(first, unrepeated=True)
    threshold = bound_threshold(first.rounds_var_log, 1.0, first.draws, first.alpha, first.floor_log, first.prior)
    verdict = first.verdict
    if not abs(first.mean_log) > threshold:
        verdict = Verdict.INCONCLUSIVE if first.verdict is Verdict.REGRESSED else Verdict.UNCHANGED
    return replace(
        first,
        verdict=verdict,
        unrepeated=True,
        threshold_pct=pct(threshold),
        detects_pct=finite_pct(detects_log(first, fresh_pair=False)),
    )


def _pairs_apart(first: RatioDecision, fresh: RatioDecision) -> OffsetDraw:
    """(m1 - m2) / sqrt(2): a draw of the offset in which the code's change cancels."""
    return OffsetDraw(
        (first.mean_log - fresh.mean_log) / math.sqrt(2.0), (first.rounds_var_log + fresh.rounds_var_log) / 2.0
    )
