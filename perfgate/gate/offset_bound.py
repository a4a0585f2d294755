"""The process offset between two processes of the same code: its draws -> their variance beyond their own
rounds' noise, and the threshold that bounds a mean whose offsets are unknown (pure; gate/ratio.py's rule).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

from perfgate.gate.pooled import OffsetPrior, pooled_d2
from perfgate.stats import t_quantile as _t_quantile


@dataclass(frozen=True)
class OffsetDraw:
    """One draw of the offset between two processes of the same code: a mean log ratio, and the variance its
    own rounds' noise gives it."""

    mean_log: float
    rounds_var: float


@functools.lru_cache(maxsize=4096)
def t_quantile(p: float, dof: int) -> float:
    """Student's t quantile (perfgate.stats), remembered: a run asks the same few thousands of times."""
    return _t_quantile(p, dof)


def offset_var(draws: Sequence[OffsetDraw]) -> float:
    """p^2: the offset's variance the draws show beyond their own rounds' noise (0 when they show none)."""
    if not draws:
        return 0.0
    return max(0.0, math.fsum(d.mean_log**2 - d.rounds_var for d in draws) / len(draws))


def bound_threshold(
    rounds_var: float,
    weight: float,
    draws: Sequence[OffsetDraw],
    alpha: float,
    floor: float,
    prior: OffsetPrior | None = None,
) -> float:
    """T for a mean whose process offsets are unknown (separate processes): t(1 - alpha) at as many dof as there
    are draws, over sqrt(rounds_var + weight * mean(d^2)); `weight` is the offset's share in that mean (1 for
    one pair, 1/2 for two). With the run's `prior` (gate/pooled.py) mean(d^2) is moderated and the dof are
    d0 + draws. Infinite without a draw: nothing bounds the offset."""
    if not draws:
        return math.inf
    var, dof = pooled_d2([d.mean_log**2 for d in draws], prior)
    return max(floor, t_quantile(1.0 - alpha, dof) * math.sqrt(rounds_var + weight * var))
