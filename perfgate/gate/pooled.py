"""The process offsets' variance pooled over one run's cases (empirical Bayes; pure).

A case on the host clock in a shared A/B process bounds its sides' offset from its own draws
(gate/offset_bound.py, `bound_threshold`): t(1 - alpha) at as many dof as draws, <= 3, which holds the budget
but detects little (docs/ab.md). limma's moderated t (Smyth 2004) lends it the run's other cases: with a prior
offset variance s0^2 worth d0 draws, a case's K draws give

    s_mod^2 = (d0 * s0^2 + sum(d^2)) / (d0 + K),   t at d0 + K dof.

d0 and s0^2 come from the distribution of the cases' own draws (one A/A twin each: d^2 / s0^2 ~ F(1, d0) when
the offsets' variances are scaled inverse chi^2 with d0 dof). limma's moment estimate trusted a light tail
the offsets did not have: on 63 recorded unchanged 100-case runs (the 2 us suite) it said d0 = inf in most
and would have called a case in 7 of them. So d0 here is the largest on a grid whose F(1, d0) explains both
the draws' upper decile (against their median) and their largest draw (at 1 - 0.025 / n): a heavy tail, or
one case far out, gives a small d0 and so little shrinkage. It assumes the offsets of one run's cases are
exchangeable (nothing known singles a case out before its draws are seen).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from perfgate.stats import t_quantile

MIN_CASES = 10  # fewer cases' draws estimate no prior: each case keeps its own test
PRIOR_DOFS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 128, 256, 1000)  # the d0 tried, largest kept
MAX_SHARE = 0.025  # the largest draw must lie within F(1, d0)'s 1 - MAX_SHARE / n quantile


@dataclass(frozen=True)
class OffsetPrior:
    """What the run's cases say of an offset's variance before a case's own draws: s0^2 worth d0 draws."""

    dof: int  # d0
    var_log: float  # s0^2, in squared log ratio


def offset_prior(draws_log: Sequence[float]) -> OffsetPrior | None:
    """The prior from one offset draw (a mean log ratio) per case; None under MIN_CASES finite draws, or when
    no d0 explains them (their median is 0, or even F(1, 1) cannot reach their largest)."""
    x = np.square(np.asarray(draws_log, dtype=np.float64))
    x = x[np.isfinite(x)]
    if x.size < MIN_CASES:
        return None
    median, decile, top = float(np.median(x)), float(np.quantile(x, 0.9)), float(x.max())
    if not median > 0:
        return None
    prior = None
    for d0 in PRIOR_DOFS:
        q75 = t_quantile(0.75, d0)  # F(1, d0)'s median is t(0.75, d0)^2
        s0 = median / q75**2
        tail_ok = decile / median <= (t_quantile(0.95, d0) / q75) ** 2
        top_ok = top / s0 <= t_quantile(1.0 - MAX_SHARE / x.size, d0) ** 2
        if tail_ok and top_ok:
            prior = OffsetPrior(d0, s0)
    return prior


def pooled_d2(draws_sq: Sequence[float], prior: OffsetPrior | None) -> tuple[float, int]:
    """(the offset's variance to bound with, its dof) from a case's squared draws: their mean at as many dof
    as draws, or with a prior the moderated s_mod^2 at d0 + K dof."""
    total, k = float(np.sum(draws_sq)), len(draws_sq)
    if prior is None:
        return total / k, k
    return (prior.dof * prior.var_log + total) / (prior.dof + k), prior.dof + k
