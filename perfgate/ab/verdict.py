"""The A/B verdict: per-round ratios of head over base -> interval, what the case detects, the verdict (pure).

Each round measures both sides of a case back to back, so a drift (clocks, power, temperature, a
neighbour) moves both: the per-round log ratio x_r = ln(head_r / base_r) keeps the code's difference
and little else. For a lower-is-better time x_r is taken as is; for a higher-is-better speedup (against
the reference timed inside each worker) it is ln(base_r / head_r), so positive is always worse.

The rule, for one case and metric, with rounds grouped in stages (stage 1, then confirmation stages of
fresh rounds for a suspect case, at most K = 1 + confirm_runs):

    s      the per-round noise: pooled standard deviation of x within each stage and of the A/A's
           rounds (base against a second base process, ln(base'_r / base_r)); dof = the sum of
           (rounds - 1)
    se_j   s / sqrt(R_j): the noise of stage j's mean ratio
    T_j    max(ln(1 + min_effect), c * se_j): what stage j can detect
    c      the critical value of the *joint* event: under unchanged code, the chance that every one of
           K stages exceeds its T_j is alpha (stages are independent rounds; they share s)

    REGRESSED     all K stages exceed T_j
    IMPROVED      all K stages fall below -T_j: the same confirmation and the same charge as a regression
                  (one stage below -T_1 is suspect and gets the next stage, as a stage above T_1 does), so
                  a process offset toward "faster" is no likelier to be called than one toward "slower"
    INCONCLUSIVE  not regressed, but the pooled change is above its 95% noise band and within a band of T
    UNCHANGED     otherwise

alpha is the case's share of the run's false-alarm budget: false_alarm_pct / m over the run's m gated
comparisons (Bonferroni), so an unchanged A/B gate fails with probability under false_alarm_pct however
many cases it has.

Rounds cancel what changes in time, not what differs between two processes (a cuBLAS algorithm chosen
per process, allocation placement). The A/A tests for that: when the two base processes' mean ratio is
beyond their rounds' noise (two-sided 1%), that offset is a process effect, its square joins se^2, and
stages (same processes) are no longer independent: the pooled mean over all rounds is tested against a
single-stage critical value, Bonferroni-split over the K looks. docs/ab.md has the derivation.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from perfgate.model import Verdict
from perfgate.stats import FloatArray
from perfgate.stats import t_quantile as _t_quantile

PROCESS_TEST_ALPHA = 0.01  # two-sided: does the A/A show a process offset beyond its rounds' noise?
BAND_CONFIDENCE = 0.95
CI_CONFIDENCE = 0.95
MIN_ROUNDS = 3


@dataclass(frozen=True)
class AaNoise:
    """One A/A measurement of a case and metric, as sufficient statistics of its per-round log ratios."""

    rounds: int
    mean_log: float
    ss_log: float  # sum of squared deviations of the rounds' log ratios about their mean

    @classmethod
    def of(cls, log_ratios: Sequence[float]) -> AaNoise:
        x = np.asarray(log_ratios, dtype=np.float64)
        mean = float(x.mean()) if x.size else 0.0
        return cls(int(x.size), mean, float(((x - mean) ** 2).sum()))


@dataclass(frozen=True)
class RatioRule:
    alpha: float  # this comparison's one-sided false-alarm rate (the run's budget / m)
    stages: int  # K: 1 + confirmation stages
    min_effect_pct: float = 1.0


@dataclass(frozen=True)
class RatioDecision:
    verdict: Verdict
    change_pct: float  # pooled over every round, as a % change of the worse direction (+ = worse)
    ci_low_pct: float
    ci_high_pct: float
    threshold_pct: float  # what stage 1 can detect ("detects >= T%")
    noise_pct: float  # one round's ratio noise, %
    rounds: int
    stages: int
    process_pct: float | None = None  # the A/A's process offset, when it showed one
    suspect: bool = False  # another stage of rounds would decide: ask for one
    # what was tested: each stage's mean change and threshold (%); with a process offset (process_pct) the
    # pooled change against threshold_pct instead, and these are empty
    stage_change_pct: tuple[float, ...] = ()
    stage_threshold_pct: tuple[float, ...] = ()
    band_pct: float = 0.0  # the pooled change's 95% noise band (the inconclusive test's "above the noise")

    @property
    def ratio(self) -> float:
        """Head over base in the worse direction (1.02: 2% worse)."""
        return 1.0 + self.change_pct / 100.0


@functools.lru_cache(maxsize=4096)
def t_quantile(p: float, dof: int) -> float:
    """Student's t quantile (perfgate.stats), remembered: a run asks the same few thousands of times."""
    return _t_quantile(p, dof)


def pct(log_ratio: float) -> float:
    return 100.0 * math.expm1(log_ratio)


def decide_ratio(stages: Sequence[Sequence[float]], aa: AaNoise | None, rule: RatioRule) -> RatioDecision:
    """The verdict for one case and metric from its stages of per-round log ratios (+ = worse)."""
    if not stages or any(len(s) < MIN_ROUNDS for s in stages):
        raise ValueError(f"every stage needs at least {MIN_ROUNDS} rounds")
    arrays = [np.asarray(s, dtype=np.float64) for s in stages]
    ss = sum(float(((a - a.mean()) ** 2).sum()) for a in arrays)
    dof = sum(a.size - 1 for a in arrays)
    if aa is not None and aa.rounds >= 2:
        ss, dof = ss + aa.ss_log, dof + aa.rounds - 1
    s = math.sqrt(ss / dof)
    process2 = _process_offset2(aa, s, dof)
    everything = np.concatenate(arrays)
    n, mean = everything.size, float(everything.mean())
    floor = math.log1p(rule.min_effect_pct / 100.0)
    se_all = math.sqrt(s * s / n + process2)
    if process2 == 0.0:
        c = joint_critical_value(rule.stages, rule.alpha, dof)
        thresholds = [max(floor, c * s / math.sqrt(a.size)) for a in arrays]
        means = [float(a.mean()) for a in arrays]
        worse = _staged_call([m > t for m, t in zip(means, thresholds)], rule.stages)
        better = _staged_call([m < -t for m, t in zip(means, thresholds)], rule.stages)
        threshold = thresholds[0]
        tested = (tuple(pct(m) for m in means), tuple(pct(t) for t in thresholds))
    else:  # the stages share the processes' offset: the pooled mean, one test per look
        threshold = max(floor, t_quantile(1.0 - rule.alpha / rule.stages, dof) * se_all)
        worse = _pooled_call(mean, threshold, len(arrays), rule.stages)
        better = _pooled_call(-mean, threshold, len(arrays), rule.stages)
        tested = ((), ())
    suspect = worse.suspect or better.suspect
    band = t_quantile(BAND_CONFIDENCE, dof) * se_all
    verdict = Verdict.UNCHANGED
    if worse.called:
        verdict = Verdict.REGRESSED
    elif better.called:
        verdict = Verdict.IMPROVED
    elif not suspect and mean > band and mean + band > threshold:
        verdict = Verdict.INCONCLUSIVE
    half = t_quantile(0.5 + CI_CONFIDENCE / 2, dof) * se_all
    return RatioDecision(
        verdict=verdict,
        change_pct=pct(mean),
        ci_low_pct=pct(mean - half),
        ci_high_pct=pct(mean + half),
        threshold_pct=pct(threshold),
        noise_pct=pct(s),
        rounds=n,
        stages=len(arrays),
        process_pct=pct(math.sqrt(process2)) if process2 else None,
        suspect=suspect,
        stage_change_pct=tested[0],
        stage_threshold_pct=tested[1],
        band_pct=pct(band),
    )


@dataclass(frozen=True)
class _Call:
    """One direction's test: called (every look it needs passed) or suspect (another stage would decide)."""

    called: bool
    suspect: bool


def _staged_call(beyond: Sequence[bool], stages: int) -> _Call:
    """Every one of the K stages beyond its threshold; suspect while all so far are and stages remain."""
    called = len(beyond) >= stages and all(beyond[:stages])
    return _Call(called, not called and all(beyond) and len(beyond) < stages)


def _pooled_call(change: float, threshold: float, measured: int, stages: int) -> _Call:
    """The pooled change (+ = this direction) beyond the threshold of one of K looks."""
    called = change > threshold
    return _Call(called, not called and change > threshold / 2 and measured < stages)


def _process_offset2(aa: AaNoise | None, s: float, dof: int) -> float:
    """The A/A's mean ratio squared, when it is beyond what its rounds' noise explains (else 0)."""
    if aa is None or aa.rounds < 2:
        return 0.0
    se = s / math.sqrt(aa.rounds)
    if se == 0.0:
        return aa.mean_log**2
    if abs(aa.mean_log) / se > t_quantile(1.0 - PROCESS_TEST_ALPHA / 2, dof):
        return aa.mean_log**2
    return 0.0


@functools.lru_cache(maxsize=256)
def joint_critical_value(stages: int, alpha: float, dof: int) -> float:
    """c with P(T_1 > c, ..., T_K > c) = alpha for T_j = Z_j / S: K independent standard normal stage means
    sharing one variance estimate S^2 ~ chi^2_dof / dof. One stage: Student's t quantile."""
    if stages < 1 or not 0.0 < alpha < 1.0 or dof < 1:
        raise ValueError("need stages >= 1, 0 < alpha < 1, dof >= 1")
    if stages == 1:
        return t_quantile(1.0 - alpha, dof)
    grid, weights = _chi_grid(dof)

    def joint(c: float) -> float:
        tail = 0.5 * _erfc(c * grid / math.sqrt(2.0))
        return float((weights * tail**stages).sum())

    lo, hi = 0.0, t_quantile(1.0 - alpha, dof)  # joint(0) = 2^-K > alpha for any alpha we allow; joint(hi) < alpha
    if joint(lo) <= alpha:
        return 0.0
    for _ in range(60):
        mid = (lo + hi) / 2.0
        if joint(mid) > alpha:
            lo = mid
        else:
            hi = mid
    return hi


def _erfc(x: FloatArray) -> FloatArray:
    """erfc for x >= 0, vectorised (Numerical Recipes' Chebyshev fit: relative error under 1.2e-7)."""
    t = 1.0 / (1.0 + 0.5 * x)
    poly = (
        -x * x
        - 1.26551223
        + t
        * (
            1.00002368
            + t
            * (
                0.37409196
                + t
                * (
                    0.09678418
                    + t
                    * (
                        -0.18628806
                        + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))
                    )
                )
            )
        )
    )
    result: FloatArray = t * np.exp(poly)
    return result


@functools.lru_cache(maxsize=64)
def _chi_grid(dof: int) -> tuple[FloatArray, FloatArray]:
    """Points and quadrature weights of S = sqrt(chi^2_dof / dof) (integrates to 1)."""
    width = 12.0 / math.sqrt(2.0 * dof)
    s = np.linspace(max(1e-6, 1.0 - width), 1.0 + width, 801) if dof > 50 else np.linspace(1e-6, 8.0, 2001)
    log_density = (
        math.log(2.0) + (dof / 2) * math.log(dof / 2) - math.lgamma(dof / 2) + (dof - 1) * np.log(s) - dof * s * s / 2
    )
    density = np.exp(log_density)
    weights = density * np.gradient(s)
    return s, weights / weights.sum()
