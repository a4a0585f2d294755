"""A/B mode's rule: per-round ratios of head over base -> the verdict, its interval, what the case detects (pure).

Each round measures both sides of a case back to back, so a drift (clocks, power, temperature, a
neighbour) moves both: the per-round log ratio x_r = ln(head_r / base_r) keeps the code's difference
and little else. For a lower-is-better time x_r is taken as is; for a higher-is-better speedup (against
the reference timed inside each worker) it is ln(base_r / head_r), so positive is always worse.

What rounds cannot cancel is an offset between processes: two processes of the same code may differ by a
steady amount for their whole life (on the H100, in separate processes, a 12 us add's by 1-3%, long
kernels' by ~0.1-0.5%; docs/evidence/ab-noise.md). Each pair of processes is one draw of it. Its draws
(`OffsetDraw`, gate/offset_bound.py) are the A/A (the base against a second base process,
ln(base'_r / base_r): the same code, so its mean is an offset and nothing else) and, once a call is measured
again by a fresh pair, the difference between the two pairs' means (the code's change cancels in it). Every
draw enters the noise, significant or not.

One pair (the rounds grouped in stages: stage 1, then confirmation stages while the case is suspect, at
most K = 1 + confirm_runs):

    wild   a round more than WILD_SDS robust standard deviations (1.4826 MAD) from the median of all its
           rounds is set aside, at most a quarter of them (a window a neighbour or a clock event hit)
    s      the per-round noise: pooled standard deviation of the kept x about their mean (all stages) and of
           the A/A's kept rounds about theirs; dof = the sum of (kept rounds - 1)
    p^2    the offset's variance as the draws show it: mean(d^2 - v) over the draws, at least 0 (v: what
           the draw's own rounds give it, s^2 / its rounds)
    se     sqrt(s^2 / n + p^2) for the n kept rounds so far
    T      max(ln(1 + min_effect), c * se), c = Student's t at 1 - alpha, dof
    screen after a stage before the K-th: suspect beyond max(floor / 2, 1.28 se) either way (another stage
           decides), otherwise unchanged

    called        K stages measured and the pooled mean beyond T (regressed: +; improved: -)
    INCONCLUSIVE  not called, but the pooled change above its 95% noise band and within a band of T
    UNCHANGED     otherwise

Two pairs (`with_fresh_pair`, gate/fresh_pair.py: a call measured again by a fresh base, head and A/A
twin): m = (m1 + m2) / 2 and the draws d = (the first pair's A/A, the fresh pair's A/A, (m1 - m2) / sqrt(2)).
The call stands when the fresh pair points the same way and m is beyond T2 = max(floor, c2 * se2); a
regression that does not is INCONCLUSIVE (not a pass, not a failure), an improvement UNCHANGED. How c2 and
se2 are formed depends on the process mode, because what makes the bound hold is different:

    shared     base and head are threads of one process: what makes processes differ is the same for both
               (measured on the H100: the A/A twin and the head within their rounds' noise of the base,
               0 of 212 A/A comparisons called). se2^2 = (se_r1^2 + se_r2^2) / 4 + p^2 / 2 with p^2 from the
               three draws, c2 = t(1 - alpha) at the rounds' dof. The first pair's call alone already holds
               alpha (p ~ 0), the fresh pair only makes it stricter.
    separate   each process carries an offset of unknown size (per case: 1-3% or 0.1%), and the only
               evidence of it is the K draws (K <= 3). The first pair's call is then only a screen for the
               fresh pair; the verdict is the two-pair test se2^2 = (se_r1^2 + se_r2^2) / 4 + mean(d^2) / 2,
               c2 = t(1 - alpha) at K dof. mean(d^2) is not reduced by the draws' round noise, so its
               expectation is at least the offset's variance; when offsets dominate, m / se2 is Student's t
               at K dof (m and the draws are independent normal), otherwise it is more concentrated: so
               P(called | unchanged) <= alpha whatever the offsets' size. A case whose offsets are large
               pays for it in what it detects (the 12 us add: ~10x its offset's sd), not in false alarms.
               Host-clock cases in one shared process (`RatioRule.prior`) borrow the run's other cases'
               draws: mean(d^2) moderated by a prior worth d0 draws, t at d0 + K dof (gate/pooled.py).

The gross rule (separate processes): the two-pair test pays for its bound with few draws (K <= 3 dof), so a
gross slowdown whose pairs disagree in size (a loaded host: 3.0x in one pair, 4.0x in the other) would make
its own difference a huge "offset" and end inconclusive. Like baseline mode's first-run rule
(gate/decision.py), a regression beyond GROSS_PCT in every pair of processes is called whatever the draws:
each pair's mean, less its own rounds' threshold (t(1 - alpha) over its rounds' se), beyond
max(ln(1 + GROSS_PCT / 100), GROSS_TWINS * the largest A/A twin's offset). Processes of the same code were
measured at most 6% apart (docs/evidence/ab-noise.md), so an unchanged case needs two independent offsets
of 4x that to be called; the rates with it are in docs/ab.md (scripts/ab_rates.py).

Without a fresh pair (`ab_fresh_pair = false`, or it could not measure the case: `on_one_pair`,
gate/fresh_pair.py), a separate call is judged on the first pair's draws alone (K = 1: c = t(1 - alpha) at
one dof).

alpha is the case's share of the run's false-alarm budget: false_alarm_pct / m over the run's m gated
comparisons (Bonferroni), so an unchanged A/B gate fails with probability under false_alarm_pct however
many cases it has. The screens between stages can only make a call rarer: every test is on the pooled
rounds, one critical value, no split over looks.

"Detects >= X%" means what it means in baseline mode (gate/decision.py): the change caught with 80% power,
the noise taken as estimated (s, p), the whole chain counted (the first pair's call at K stages, then,
with a fresh pair, the two-pair test at its predicted threshold): `detects_log`.

Tested as a guarantee by seeded simulation on the shipped functions (tests/test_ab_rates.py,
scripts/ab_rates.py): whole runs of 10 and 100 cases with offsets drawn as measured, heavy-tailed and wild
rounds; docs/ab.md has the rates.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from statistics import NormalDist

import numpy as np

from perfgate.gate.decision import POWER
from perfgate.gate.offset_bound import OffsetDraw, bound_threshold, offset_var, t_quantile
from perfgate.gate.pooled import OffsetPrior, pooled_d2
from perfgate.model import Verdict
from perfgate.stats import FloatArray, normal_sf

WILD_SDS = 5.0  # a round this many robust standard deviations from the median is wild
WILD_SHARE = 0.25  # at most this share of a case's rounds is ever set aside
SCALE_FLOOR = 1e-4  # a robust scale under 0.01% (rounds with identical medians) is taken as 0.01%
NORMAL_975 = 1.959964
SCREEN_Z = 1.2816  # a stage is suspect beyond 1.28 se (one-sided 10%): another stage decides
BAND_CONFIDENCE = 0.95
CI_CONFIDENCE = 0.95
MIN_ROUNDS = 3
Z_POWER = 0.8416212335729143  # the normal quantile at POWER (0.8)


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
    separate: bool = True  # base and head in processes of their own (False: threads of one shared process)
    fresh_pair: bool = True  # a call is measured again by a fresh pair of processes (`ab_fresh_pair`)
    prior: OffsetPrior | None = None  # separate: the run's pooled offset variance (gate/pooled.py)


@dataclass(frozen=True)
class RatioDecision:
    verdict: Verdict
    change_pct: float  # pooled over every round, as a % change of the worse direction (+ = worse)
    ci_low_pct: float
    ci_high_pct: float
    threshold_pct: float  # T: what the pooled change must exceed to be called (after a fresh pair: both pairs')
    noise_pct: float  # one round's ratio noise, %
    rounds: int
    stages: int
    process_pct: float | None = None  # the process offset's sd as the draws show it (p), when above 0
    suspect: bool = False  # another stage of rounds would decide: ask for one
    stage_change_pct: tuple[float, ...] = ()  # each stage's mean change over its kept rounds (%)
    band_pct: float = 0.0  # the pooled change's 95% noise band (the inconclusive test's "above the noise")
    wild_rounds: int = 0  # rounds set aside as wild
    screen_pct: float = 0.0  # a stage before the K-th is suspect beyond this (%)
    detects_pct: float | None = None  # the change caught with 80% power (None: no bound on the offset)
    fresh: RatioDecision | None = None  # the same case measured again by a fresh pair of processes
    first_pct: float | None = None  # with a fresh pair: the first pair's change (change_pct is both pairs')
    unrepeated: bool = False  # called, but no fresh pair measured it (it failed there, or it is turned off)
    # the test's own numbers, in log units, for a fresh pair (with_fresh_pair) and the reports
    mean_log: float = 0.0
    rounds_var_log: float = 0.0  # s^2 / n: the rounds' part of se^2
    round_var_log: float = 0.0  # s^2: one round's variance
    offset_var_log: float = 0.0  # p^2
    draws: tuple[OffsetDraw, ...] = ()  # this pair's draws of the process offset (its A/A)
    alpha: float = 0.0
    dof: int = 0
    floor_log: float = 0.0
    separate: bool = True
    planned_rounds: float = 0.0  # the rounds K stages would have (what "detects" assumes)
    gross: bool = False  # separate: called by the gross rule (beyond threshold_pct in every pair of processes)
    prior: OffsetPrior | None = None  # separate: the run's pooled offset variance the bound borrows

    @property
    def ratio(self) -> float:
        """Head over base in the worse direction (1.02: 2% worse)."""
        return 1.0 + self.change_pct / 100.0

    @property
    def called(self) -> bool:
        return self.verdict in (Verdict.REGRESSED, Verdict.IMPROVED)


def pct(log_ratio: float) -> float:
    return 100.0 * math.expm1(log_ratio) if math.isfinite(log_ratio) else math.inf


def finite_pct(log_ratio: float) -> float | None:
    return pct(log_ratio) if math.isfinite(log_ratio) else None


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


def decide_ratio(
    stages: Sequence[Sequence[float]], aa: AaNoise | None, rule: RatioRule, with_detects: bool = True
) -> RatioDecision:
    """One pair's decision for one case and metric from its stages of per-round log ratios (+ = worse);
    `with_detects=False` leaves `detects_pct` out (the screen between stages asks only whether it is suspect)."""
    kept, wild = _kept_stages(stages)
    everything = np.concatenate(kept)
    n, mean = everything.size, float(everything.mean())
    s2, dof, draws, p2 = _noise(everything, mean, aa, rule)
    floor = math.log1p(rule.min_effect_pct / 100.0)
    c = t_quantile(1.0 - rule.alpha, dof)
    se = math.sqrt(s2 / n + p2)
    complete = len(kept) >= rule.stages
    planned = n if complete else n * rule.stages / len(kept)  # what K stages of rounds like these would have
    threshold = max(floor, c * math.sqrt(s2 / planned + p2))
    screen = max(floor / 2.0, SCREEN_Z * se)
    suspect = not complete and abs(mean) > screen
    band = t_quantile(BAND_CONFIDENCE, dof) * se
    verdict = _verdict(mean, threshold, band, complete, suspect)
    half = t_quantile(0.5 + CI_CONFIDENCE / 2, dof) * se
    decision = RatioDecision(
        verdict=verdict,
        change_pct=pct(mean),
        ci_low_pct=pct(mean - half),
        ci_high_pct=pct(mean + half),
        threshold_pct=pct(threshold),
        noise_pct=pct(math.sqrt(s2)),
        rounds=n,
        stages=len(kept),
        process_pct=pct(math.sqrt(p2)) if p2 > 0 else None,
        suspect=suspect,
        stage_change_pct=tuple(pct(float(k.mean())) for k in kept if k.size),
        band_pct=pct(band),
        wild_rounds=wild,
        screen_pct=pct(screen),
        mean_log=mean,
        rounds_var_log=s2 / n,
        round_var_log=s2,
        offset_var_log=p2,
        draws=draws,
        alpha=rule.alpha,
        dof=dof,
        floor_log=floor,
        separate=rule.separate,
        planned_rounds=planned,
        prior=rule.prior,
    )
    if not with_detects:
        return decision
    return replace(decision, detects_pct=finite_pct(detects_log(decision, rule.fresh_pair)))


def _verdict(mean: float, threshold: float, band: float, complete: bool, suspect: bool) -> Verdict:
    """Called once every stage is measured and the pooled mean is beyond T; inconclusive when not suspect and the
    change is above its noise band and within a band of T; else unchanged."""
    if complete and mean > threshold:
        return Verdict.REGRESSED
    if complete and -mean > threshold:
        return Verdict.IMPROVED
    if not suspect and mean > band and mean + band > threshold:
        return Verdict.INCONCLUSIVE
    return Verdict.UNCHANGED


def _kept_stages(stages: Sequence[Sequence[float]]) -> tuple[list[FloatArray], int]:
    """Each stage's rounds less the wild ones (tame, over all the stages' rounds; a stage with no finite round
    dropped), and how many rounds were set aside (a round with no usable median, 0 or inf, is wild)."""
    if not stages or any(len(s) < MIN_ROUNDS for s in stages):
        raise ValueError(f"every stage needs at least {MIN_ROUNDS} rounds")
    arrays = [np.asarray(s, dtype=np.float64) for s in stages]
    finite = [a[np.isfinite(a)] for a in arrays]
    unusable = sum(a.size - f.size for a, f in zip(arrays, finite))
    arrays = [f for f in finite if f.size]
    if not arrays:
        raise ValueError("no round has a finite ratio")
    keep = tame(np.concatenate(arrays))
    bounds = np.cumsum([0] + [a.size for a in arrays])
    kept = [a[keep[lo:hi]] for a, lo, hi in zip(arrays, bounds[:-1], bounds[1:])]
    return kept, int(keep.size - keep.sum()) + unusable


def _noise(
    everything: FloatArray, mean: float, aa: AaNoise | None, rule: RatioRule
) -> tuple[float, int, tuple[OffsetDraw, ...], float]:
    """s^2 and its dof (the kept rounds and the A/A's), the A/A's draw of the process offset, and p^2."""
    # about the pooled mean, not each stage's: a stage that differs from the others (a neighbour busy for
    # a whole stage) is noise the pooled mean carries, so it widens s instead of hiding in a stage mean
    ss, dof = float(((everything - mean) ** 2).sum()), everything.size - 1
    if aa is not None and aa.rounds >= 2:
        ss, dof = ss + aa.ss_log, dof + aa.rounds - 1
    dof = max(dof, 1)
    s2 = ss / dof
    draws = (OffsetDraw(aa.mean_log, s2 / aa.rounds),) if aa is not None and aa.rounds >= 2 else ()
    p2 = offset_var(draws)
    if rule.separate and rule.prior is not None and draws:
        # the screen and the band too take the run's pooled offset variance, less the twin's own rounds' part
        p2 = max(0.0, pooled_d2([d.mean_log**2 for d in draws], rule.prior)[0] - draws[0].rounds_var)
    return s2, dof, draws, p2


# --- what a case detects ---------------------------------------------------------------------------------


def detects_log(d: RatioDecision, fresh_pair: bool) -> float:
    """The change (log ratio) the whole rule catches with 80% power, the noise taken as estimated: each pair's
    mean ~ N(change, s^2 / planned rounds + p^2); the first pair's call at K stages and, with a fresh pair,
    the two-pair test at the threshold the fresh pair's draws will make it (its twin's A/A, as many rounds as
    its A/B, and the pairs' difference, which also moves the first pair's mean: m1 = m + d / sqrt(2)), over
    their distribution. Infinite where nothing bounds the offset."""
    rounds_var = d.round_var_log / max(d.planned_rounds, 1.0)
    p2 = d.offset_var_log
    one_pair = math.sqrt(rounds_var + p2)
    first = max(d.floor_log, t_quantile(1.0 - d.alpha, d.dof) * one_pair)
    if not fresh_pair:
        if d.separate:
            first = bound_threshold(rounds_var, 1.0, d.draws, d.alpha, d.floor_log, d.prior)
        return first + Z_POWER * one_pair
    twin_abs, apart = _draw_nodes()
    d2 = (math.sqrt(p2 + rounds_var) * twin_abs)[:, None] ** 2  # the fresh twin's draw, squared
    d3 = one_pair * apart[None, :]  # the pairs' difference / sqrt(2)
    known = math.fsum(x.mean_log**2 for x in d.draws)
    draws = len(d.draws) + 2
    if d.separate:
        d0, s0 = (d.prior.dof, d.prior.var_log) if d.prior is not None else (0, 0.0)
        spread = rounds_var / 2.0 + (d0 * s0 + known + d2 + d3**2) / (2.0 * (d0 + draws))
        second = np.maximum(d.floor_log, t_quantile(1.0 - d.alpha, d0 + draws) * np.sqrt(spread))
    else:
        excess = known - math.fsum(x.rounds_var for x in d.draws) + d2 + d3**2 - 2.0 * rounds_var
        spread = rounds_var / 2.0 + np.maximum(excess / draws, 0.0) / 2.0
        second = np.maximum(d.floor_log, t_quantile(1.0 - d.alpha, 2 * d.dof) * np.sqrt(spread))
    # the pair mean m ~ N(change, one_pair^2 / 2) must be beyond the two-pair threshold, beyond what puts the
    # first pair's mean m + d3 / sqrt(2) past its own threshold, and beyond d3 / sqrt(2) (the fresh pair's
    # mean m - d3 / sqrt(2) the same way)
    needed = np.maximum(np.maximum(second, first - d3 / math.sqrt(2.0)), d3 / math.sqrt(2.0))
    return _detects(needed.ravel(), one_pair / math.sqrt(2.0), first)


def _detects(needed: FloatArray, sd: float, start: float) -> float:
    """The change with POWER of P(m > needed) averaged over the nodes, m ~ N(change, sd^2): the power rises
    with the change, so a grid of candidates and then, twice, a finer grid in the cell where it crosses."""
    if not np.all(np.isfinite(needed)) or not math.isfinite(start):
        return math.inf
    top = float(needed.max())
    if sd <= 0.0:
        return top
    lo, hi = min(start, float(needed.min())) - sd, top + 10.0 * sd
    for _ in range(4):
        grid = np.linspace(lo, hi, 33)
        power = normal_sf((needed[None, :] - grid[:, None]) / sd).mean(axis=1)
        above = np.flatnonzero(power >= POWER)
        i = int(above[0]) if above.size else grid.size - 1
        lo, hi = float(grid[max(i - 1, 0)]), float(grid[i])
    return hi


@functools.lru_cache(maxsize=1)
def _draw_nodes() -> tuple[FloatArray, FloatArray]:
    """Equal-probability nodes: |Z| for a draw that enters squared (8), Z for the pairs' difference (24)."""
    normal = NormalDist()
    twin = np.array([normal.inv_cdf(0.5 + (i + 0.5) / 16.0) for i in range(8)])
    apart = np.array([normal.inv_cdf((j + 0.5) / 24.0) for j in range(24)])
    return twin, apart
