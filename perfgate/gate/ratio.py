"""The A/B verdict: per-round ratios of head over base -> interval, what the case detects, the verdict (pure).

Each round measures both sides of a case back to back, so a drift (clocks, power, temperature, a
neighbour) moves both: the per-round log ratio x_r = ln(head_r / base_r) keeps the code's difference
and little else. For a lower-is-better time x_r is taken as is; for a higher-is-better speedup (against
the reference timed inside each worker) it is ln(base_r / head_r), so positive is always worse.

The rule, for one case and metric, with rounds grouped in stages (stage 1, then confirmation stages of
fresh rounds while the case is suspect, at most K = 1 + confirm_runs):

    wild   a round more than WILD_SDS robust standard deviations (1.4826 MAD) from the median of all its
           rounds is set aside, at most a quarter of them: a 40 ms window a neighbour or a clock event
           hit (on the H100, 1-10 rounds in 30-90 were 5-150% off while the rest agreed to 0.1-2%)
    s      the per-round noise: pooled standard deviation of the kept x about their mean (all stages: a
           stage that differs from the others is noise the pooled mean carries) and of the A/A's kept
           rounds about theirs (base against a second base process, ln(base'_r / base_r)); dof = the
           sum of (kept rounds - 1)
    se     sqrt(s^2 / n + p^2) for the n kept rounds so far; p is the A/A's process offset (below), or 0
    T      max(ln(1 + min_effect), c * se), c = Student's t quantile at 1 - alpha: what is called
    screen after a stage before the K-th: suspect when the pooled mean is beyond max(floor / 2, 1.28 se)
           either way (another stage of rounds will decide), otherwise unchanged

    REGRESSED     K stages measured and the pooled mean of all their kept rounds exceeds T
    IMPROVED      the mirror image: below -T, with the same screen and confirmation
    INCONCLUSIVE  not regressed, but the pooled change is above its 95% noise band and within a band of T
    UNCHANGED     otherwise

A verdict is only ever reached on the pooled rounds of all K stages, so the screens in between can only
make it rarer: P(regressed | unchanged code) <= P(pooled K-stage mean > T) = alpha, with one critical value
and no split over looks, and all K stages' rounds count toward the power (a 2% slowdown under 1.5% round
noise is caught on 30 rounds where three separate 10-round tests each had to pass). alpha is the case's
share of the run's false-alarm budget: false_alarm_pct / m over the run's m gated comparisons
(Bonferroni), so an unchanged A/B gate fails with probability under false_alarm_pct however many cases it
has.

Rounds cancel what changes in time, not what differs between two processes. Where the inputs sit in memory
is moved every round (placement.py); what remains (a library choosing an algorithm per process, ...) the
A/A tests: when the two base processes' mean ratio is beyond their rounds' noise (two-sided 0.1%), that
offset is a process effect and its square joins se^2. docs/ab.md has the derivation and the H100 numbers.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from perfgate.model import Verdict
from perfgate.stats import FloatArray
from perfgate.stats import t_quantile as _t_quantile

PROCESS_TEST_ALPHA = 0.001  # two-sided: does the A/A show a process offset beyond its rounds' noise?
WILD_SDS = 5.0  # a round this many robust standard deviations from the median is wild
WILD_SHARE = 0.25  # at most this share of a case's rounds is ever set aside
SCALE_FLOOR = 1e-4  # a robust scale under 0.01% (rounds with identical medians) is taken as 0.01%
NORMAL_975 = 1.959964
SCREEN_Z = 1.2816  # a stage is suspect beyond 1.28 se (one-sided 10%): another stage decides
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
        """From the A/A's per-round log ratios, its wild rounds set aside as in the verdict."""
        x = np.asarray(log_ratios, dtype=np.float64)
        x = x[np.isfinite(x)]
        x = x[tame(x)] if x.size else x
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
    stage_change_pct: tuple[float, ...] = ()  # each stage's mean change over its kept rounds (%)
    band_pct: float = 0.0  # the pooled change's 95% noise band (the inconclusive test's "above the noise")
    wild_rounds: int = 0  # rounds set aside as wild
    screen_pct: float = 0.0  # a stage before the K-th is suspect beyond this (%)
    fresh: RatioDecision | None = None  # the same case measured again by a fresh pair of processes
    first_pct: float | None = None  # with a fresh pair: the first pair's change (change_pct is both pairs')
    unrepeated: bool = False  # called, but the fresh pair could not measure it (it failed there, or vanished)
    # the test's own numbers, in log units, for combining with a fresh pair (with_fresh_pair)
    mean_log: float = 0.0
    rounds_se_log: float = 0.0  # s / sqrt(n): the rounds' part of se
    process_log2: float = 0.0  # the process offset's variance in se^2
    critical: float = 0.0  # c
    floor_log: float = 0.0
    alpha: float = 0.0
    dof: int = 0

    @property
    def ratio(self) -> float:
        """Head over base in the worse direction (1.02: 2% worse)."""
        return 1.0 + self.change_pct / 100.0


def with_fresh_pair(first: RatioDecision, fresh: RatioDecision) -> RatioDecision:
    """A call (regressed / improved) judged again on both pairs of processes: an offset between two
    processes of the same code is what rounds cannot cancel and one A/A draw cannot bound; a fresh pair
    draws it anew, a change in the code it does not.

    When the pairs differ beyond their rounds' noise (two-sided 0.1%), the difference is a draw of the
    process offset: p^2 = max(what either pair's A/A showed (the fresh pair has its own twin), ((m1 - m2)^2 -
    se1^2 - se2^2) / 2) joins the noise of the
    pairs' mean m = (m1 + m2) / 2, whose se^2 is (se1^2 + se2^2) / 4 + p^2 / 2, against the first pair's c
    (a t at the one draw's dof would make a 1 GB copy, whose processes differ by 0.1-0.5%, blind). The call
    stands when the fresh pair points the same way and m is beyond max(floor, c se); otherwise a regression
    is inconclusive
    (not a pass: something moved, but not in both pairs) and an improvement unchanged. On the H100 the
    12 us add's processes differ by 1-3% (docs/ab.md): in an A/A one pair said +2.65%, the fresh one
    +1.20%, and that is not a regression. Simulated (tests/test_ab_verdict.py): pair offsets of 1.4% (sd)
    under 1.2% round noise call 11.5% of unchanged cases on one pair, about 2% on two: a case with such
    process noise is gated at a few percent per comparison, not at its share of the budget (docs/ab.md).
    """
    apart = first.mean_log - fresh.mean_log
    noise2 = first.rounds_se_log**2 + fresh.rounds_se_log**2
    process2 = max(first.process_log2, fresh.process_log2)  # each pair's own A/A, when it showed an offset
    apart_beyond = apart * apart > noise2 * t_quantile(1.0 - PROCESS_TEST_ALPHA / 2, first.dof) ** 2
    if apart_beyond:  # the pairs differ beyond their rounds' noise: a draw of the process offset
        process2 = max(process2, (apart * apart - noise2) / 2)
    mean = (first.mean_log + fresh.mean_log) / 2.0
    se = math.sqrt(noise2 / 4.0 + max(process2, 0.0) / 2.0)  # the pairs' mean: half of each pair
    threshold = max(first.floor_log, first.critical * se)
    same_way = (fresh.mean_log > 0) == (first.mean_log > 0)
    verdict = first.verdict
    if not (same_way and abs(mean) > threshold):
        verdict = Verdict.INCONCLUSIVE if first.verdict is Verdict.REGRESSED else Verdict.UNCHANGED
    half = NORMAL_975 * se  # the pooled offset's variance is an estimate of few draws: a normal band
    return replace(
        first,
        verdict=verdict,
        fresh=fresh,
        change_pct=pct(mean),
        ci_low_pct=pct(mean - half),
        ci_high_pct=pct(mean + half),
        threshold_pct=pct(threshold),
        process_pct=pct(math.sqrt(process2)) if process2 > 0 else first.process_pct,
        rounds=first.rounds + fresh.rounds,
        first_pct=first.change_pct,
        mean_log=mean,
        process_log2=process2,
    )


@functools.lru_cache(maxsize=4096)
def t_quantile(p: float, dof: int) -> float:
    """Student's t quantile (perfgate.stats), remembered: a run asks the same few thousands of times."""
    return _t_quantile(p, dof)


def pct(log_ratio: float) -> float:
    return 100.0 * math.expm1(log_ratio)


def tame(x: FloatArray) -> np.ndarray[tuple[int], np.dtype[np.bool_]]:
    """Which rounds to keep: all but those more than WILD_SDS robust sds from the median (the farthest
    WILD_SHARE of the rounds at most)."""
    keep = np.ones(x.size, dtype=bool)
    if x.size < MIN_ROUNDS:
        return keep
    median = float(np.median(x))
    distance = np.abs(x - median)
    # MAD as an sd; where half the rounds tie (MAD 0: a coarse timer) the mean absolute deviation instead
    mad = float(np.median(distance))
    scale = max(1.4826 * mad if mad > 0 else 1.2533 * float(distance.mean()), SCALE_FLOOR)
    wild = np.flatnonzero(distance > WILD_SDS * scale)
    most = int(WILD_SHARE * x.size)
    if wild.size > most:
        wild = wild[np.argsort(-distance[wild], kind="stable")[:most]]
    keep[wild] = False
    return keep


def decide_ratio(stages: Sequence[Sequence[float]], aa: AaNoise | None, rule: RatioRule) -> RatioDecision:
    """The verdict for one case and metric from its stages of per-round log ratios (+ = worse)."""
    if not stages or any(len(s) < MIN_ROUNDS for s in stages):
        raise ValueError(f"every stage needs at least {MIN_ROUNDS} rounds")
    arrays = [np.asarray(s, dtype=np.float64) for s in stages]
    finite = [a[np.isfinite(a)] for a in arrays]  # a round with no usable median (0 or inf) is wild
    unusable = sum(a.size - f.size for a, f in zip(arrays, finite))
    arrays = [f for f in finite if f.size]
    if not arrays:
        raise ValueError("no round has a finite ratio")
    keep = tame(np.concatenate(arrays))
    bounds = np.cumsum([0] + [a.size for a in arrays])
    kept = [a[keep[lo:hi]] for a, lo, hi in zip(arrays, bounds[:-1], bounds[1:])]
    everything = np.concatenate(kept)
    n, mean = everything.size, float(everything.mean())
    # about the pooled mean, not each stage's: a stage that differs from the others (a neighbour busy for
    # a whole stage) is noise the pooled mean carries, so it widens s instead of hiding in a stage mean
    ss, dof = float(((everything - mean) ** 2).sum()), n - 1
    if aa is not None and aa.rounds >= 2:
        ss, dof = ss + aa.ss_log, dof + aa.rounds - 1
    dof = max(dof, 1)
    s = math.sqrt(ss / dof)
    process2 = _process_offset2(aa, s, dof)
    floor = math.log1p(rule.min_effect_pct / 100.0)
    c = t_quantile(1.0 - rule.alpha, dof)
    se = math.sqrt(s * s / n + process2)
    complete = len(arrays) >= rule.stages
    if complete:
        threshold = max(floor, c * se)
    else:  # what K stages of rounds like these would call: the case's "detects"
        planned = n * rule.stages / len(arrays)
        threshold = max(floor, c * math.sqrt(s * s / planned + process2))
    screen = max(floor / 2.0, SCREEN_Z * se)
    suspect = not complete and abs(mean) > screen
    band = t_quantile(BAND_CONFIDENCE, dof) * se
    verdict = Verdict.UNCHANGED
    if complete and mean > threshold:
        verdict = Verdict.REGRESSED
    elif complete and -mean > threshold:
        verdict = Verdict.IMPROVED
    elif not suspect and mean > band and mean + band > threshold:
        verdict = Verdict.INCONCLUSIVE
    half = t_quantile(0.5 + CI_CONFIDENCE / 2, dof) * se
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
        stage_change_pct=tuple(pct(float(k.mean())) for k in kept if k.size),
        band_pct=pct(band),
        wild_rounds=int(keep.size - keep.sum()) + unusable,
        screen_pct=pct(screen),
        mean_log=mean,
        rounds_se_log=s / math.sqrt(n),
        process_log2=process2,
        critical=c,
        floor_log=floor,
        alpha=rule.alpha,
        dof=dof,
    )


def _process_offset2(aa: AaNoise | None, s: float, dof: int) -> float:
    """The A/A's mean ratio squared less what its rounds' noise alone gives it, when the offset is beyond
    that noise (two-sided 0.1%: at 1% one case in a hundred widened on noise alone); else 0."""
    if aa is None or aa.rounds < 2:
        return 0.0
    se2 = s * s / aa.rounds
    if se2 == 0.0:
        return aa.mean_log**2
    if abs(aa.mean_log) / math.sqrt(se2) > t_quantile(1.0 - PROCESS_TEST_ALPHA / 2, dof):
        return aa.mean_log**2 - se2
    return 0.0
