"""The verdict for one gated metric of one case: this run's process values against the baseline's centre and
the case's between-process noise (gate/noise.py), at a false-alarm rate charged to the whole run.

Within a run, samples are tight; the median moves between processes (power state, allocation, library
state). So the unit of evidence is a process value (a time median, or the reciprocal of a speedup: lower
is better for both), and:

- the centre M is the mean of the baseline's calibration process values (n_c of them);
- the noise s is their relative spread together with the noise window's (gate/noise.py), on df degrees of
  freedom; a new process value's change d = 100 (x - M) / M has standard deviation s * a, a = sqrt(1 + 1/n_c);
- the run's false-alarm budget (`false_alarm_pct`, 1% by default) is divided over its m gated tests:
  alpha = budget / m per test (for noise of any shape only with enough reference processes: the cap below);
- a case fails only when every one of its k processes (the run's, then k - 1 fresh confirmation processes;
  k = 1 + confirm_runs) lies beyond T = max(floor, c_k * s * a, R), where c_k makes that event's probability
  alpha for unchanged code with normal process noise (stats.critical_value: the processes share M and s,
  so c_k is computed for the joint event, not as if they were independent), and R is the same guarantee
  without the normal assumption: a rank bound on the reference processes themselves (`rank_bound`). A
  case whose processes fall in two modes (a third of them 4% slower, say) is protected by R as soon as
  the reference holds one process of the slower mode; c_k alone would let the slow mode fail whenever all k
  processes draw it. The confirmation is charged to alpha, not an extra look. Where the window shows a
  process the calibration could not have (gate/noise.py), T also takes R_w, the same bound over the noise
  window's own processes, and k is enough for it (`window_stages`): R assumes the
  calibration saw the machine as the gate does, and where it missed a mode (or the mode came after it) only
  the window's processes are exchangeable with fresh ones (issue 31: ten fast calibration processes diluted
  two slow window processes below R's reach, and 0.4^6 of unchanged runs failed the case).

    REGRESSED     all k changes > T          (fewer than k processes measured: all > T_j of j stages)
    IMPROVED      all k changes < -T         (likewise)
    INCONCLUSIVE  the mean change is above the noise band b = t(0.95, df) * s * sqrt(1/j + 1/n_c),
                  and the mean + b reaches T: a regression of T cannot be ruled out
    UNCHANGED     otherwise

A case whose processes so far all lie beyond T but number fewer than k is a *suspect*: the gate measures
it again in a fresh process (gate/run.py). "Detects >= X%" is the shift the rule catches with 80% power:
X = T + s * a * z(0.8^(1/k)). The interval shown is the mean change +- t(0.975, df) * s * sqrt(1/j + 1/n_c),
between-process noise included.

With fewer than three reference processes there is no noise to judge by (an uncalibrated baseline and no
history yet): the case never fails; a change beyond `threshold_pct` that the within-run rank test also
sees is INCONCLUSIVE, with a finding that asks for calibration. An uncalibrated baseline (fewer than three
calibration processes) keeps the gross rule when its noise window gives it noise: a slowdown beyond GROSS_PCT
in every process fails it whatever the window says, and T never exceeds GROSS_PCT (issue 31: two runs of a
step, inconclusive, entered the window and lifted T to 279%; the step then read "unchanged").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

from perfgate.gate.noise import MIN_REFERENCE_PROCESSES
from perfgate.model import NoiseEstimate, Verdict
from perfgate.stats import critical_value, mann_whitney_p, t_quantile

POWER = 0.8  # "detects >= X%": the change caught this often
BAND_CONFIDENCE = 0.95
INTERVAL_CONFIDENCE = 0.95


MAX_STAGES = 8  # processes a failure may ask for, at most (the run's and 7 confirmations)
GROSS_PCT = 25.0  # without between-process noise, a change beyond this in every process fails (docs)


@dataclass(frozen=True)
class Rule:
    """What one decision needs beyond the data: the per-test alpha (the run's budget over its tests), the
    processes a failure needs at least, the most it may ask for (more where the reference is too small for
    the distribution-free bound to reach alpha: `stages_needed`), and the smallest change that matters."""

    alpha: float
    stages: int = 3
    floor_pct: float = 1.0
    max_stages: int = MAX_STAGES
    gross_pct: float = GROSS_PCT


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    change_pct: float | None  # mean over the processes
    threshold_pct: float  # T: what each process must exceed
    detects_pct: float | None  # the change caught with POWER (calibrated only)
    processes: int
    noise: NoiseEstimate | None = None
    ci_low_pct: float | None = None
    ci_high_pct: float | None = None
    score: float | None = None  # the mean change in units of its standard error
    suspect: bool = False  # beyond T on every process so far, fewer than `stages`: measure again
    p_value: float | None = None  # uncalibrated only: the within-run rank test
    stages: int = 1  # processes this case's failure needs (gate/confirm.py measures until then)
    gross: bool = False  # uncalibrated: beyond the gross threshold in every process so far


def decide(
    centre_values: Sequence[float],
    current: Sequence[float],
    noise: NoiseEstimate | None,
    rule: Rule,
    threshold_pct: float = 3.0,
    baseline_samples: Sequence[float] = (),
    current_samples: Sequence[float] = (),
    shift_pct: float = 0.0,
    shift_variance: float = 0.0,
) -> Decision:
    """The verdict for one metric (lower is better): `centre_values` are the baseline's calibration process
    values, `current` this run's process values (the run's first, then its confirmations). `shift_pct`: a
    common-mode shift of the run (gate/common.py) that moves the centre, its error `shift_variance` in
    units of the case's noise squared (calibrated cases only)."""
    if not current or not centre_values:
        raise ValueError("need current and baseline process values")
    centre = math.fsum(centre_values) / len(centre_values)
    raw = [100.0 * (x - centre) / centre for x in current]
    # an uncalibrated baseline (fewer than three calibration processes): its window cannot lift the threshold
    # above the gross one, and a slowdown beyond it in every process fails as it does without noise
    gross_limit = max(rule.gross_pct, threshold_pct)  # an explicit threshold_pct above it is the user's word
    gross = len(centre_values) < MIN_REFERENCE_PROCESSES and all(d > gross_limit for d in raw)
    if noise is None or gross:
        return _without_noise(raw, threshold_pct, rule, baseline_samples, current_samples)
    # a common-mode shift excuses a case only in its own direction: a regression must lie beyond T against
    # the centre moved up by a positive shift AND against the calibration's; an improvement likewise. A
    # case that did not move with a shift is then neither "improved" nor "regressed" by it.
    up = [100.0 * (x / (centre * (1.0 + max(shift_pct, 0.0) / 100.0)) - 1.0) for x in current]
    down = [100.0 * (x / (centre * (1.0 + min(shift_pct, 0.0) / 100.0)) - 1.0) for x in current]
    centre *= 1.0 + shift_pct / 100.0
    changes = [100.0 * (x - centre) / centre for x in current]
    mean_change = math.fsum(changes) / len(changes)
    n_c, j = len(centre_values), len(current)
    a = math.sqrt(1.0 + 1.0 / n_c + shift_variance)
    unit = noise.noise_pct * a
    n_ref = noise.processes or noise.df + 1
    most = max(rule.stages, rule.max_stages)
    k = stages_needed(n_ref, rule.alpha, rule.stages, most)
    if noise.window_upper_pct or noise.window_lower_pct:  # not on a run stored before R_w: it re-gates as it was
        k = max(k, window_stages(noise.window_runs, rule.alpha, most))
    t_k, down_k = _thresholds(noise, rule, n_c, unit, k)
    t_now, down_now = (t_k, down_k) if j >= k else _thresholds(noise, rule, n_c, unit, j)  # cut short: as measured
    if n_c < MIN_REFERENCE_PROCESSES:  # uncalibrated: a change the gross rule would fail cannot read unchanged
        t_k, t_now = min(t_k, gross_limit), min(t_now, gross_limit)
    se = noise.noise_pct * math.sqrt(1.0 / j + 1.0 / n_c + shift_variance)
    verdict = Verdict.UNCHANGED
    if all(d > t_now for d in up):
        verdict = Verdict.REGRESSED
    elif all(d < -down_now for d in down):
        verdict = Verdict.IMPROVED
    else:
        band = noise_band_pct(noise.noise_pct, noise.df, j, n_c)
        mean_up = math.fsum(up) / len(up)
        if min(mean_change, mean_up) > band and min(mean_change, mean_up) + band > t_k:
            verdict = Verdict.INCONCLUSIVE
    suspect = j < k and (all(d > t_k for d in up) or all(d < -down_k for d in down))
    half = t_quantile(0.5 + INTERVAL_CONFIDENCE / 2, noise.df) * se
    detects = t_k + unit * NormalDist().inv_cdf(POWER ** (1.0 / k))
    return Decision(
        verdict,
        mean_change,
        t_k,
        detects,
        j,
        noise,
        mean_change - half,
        mean_change + half,
        mean_change / se if se > 0 else None,
        suspect,
        stages=k,
    )


def _thresholds(noise: NoiseEstimate, rule: Rule, n_c: int, unit: float, stages: int) -> tuple[float, float]:
    """T above and below for `stages` processes: the floor, the normal-theory c_k * s * a, the rank bound R
    over the whole reference and R_w over the window's own processes."""
    n_ref = noise.processes or noise.df + 1
    normal = critical_value(stages, rule.alpha, n_c, noise.df) * unit

    def side(extremes: Sequence[float], own: Sequence[float]) -> float:
        ranks = rank_bound(extremes, n_ref, stages, rule.alpha)
        return max(rule.floor_pct, normal, ranks, rank_bound(own, noise.window_runs, stages, rule.alpha))

    up = side(noise.upper_pct, noise.window_upper_pct)
    return up, side([-d for d in noise.lower_pct], [-d for d in noise.window_lower_pct])


def _without_noise(
    changes: Sequence[float],
    threshold_pct: float,
    rule: Rule,
    baseline_samples: Sequence[float],
    current_samples: Sequence[float],
) -> Decision:
    """No between-process noise to judge by: a within-run test alone never fails a case. Only a gross
    slowdown does, beyond `rule.gross_pct` in the run's process and in every confirmation process (no
    process of unchanged code moves that far without a cause worth a red build: a first run is no place
    for a lottery). Smaller changes the rank test sees are INCONCLUSIVE, asking for calibration."""
    change = math.fsum(changes) / len(changes)
    p = mann_whitney_p(baseline_samples, current_samples)
    verdict = Verdict.INCONCLUSIVE if abs(change) > threshold_pct and p < rule.alpha else Verdict.UNCHANGED
    limit = max(rule.gross_pct, threshold_pct)  # an explicit threshold_pct above it is the user's word
    gross = all(d > limit for d in changes)
    k = max(1, rule.stages)
    if gross and len(changes) >= k:
        verdict = Verdict.REGRESSED
    return Decision(
        verdict,
        change,
        limit if gross else threshold_pct,
        None,
        len(changes),
        p_value=p,
        suspect=gross and len(changes) < k,
        stages=k,
        gross=gross,
    )


def stages_needed(n_ref: int, alpha: float, least: int, most: int) -> int:
    """The fewest processes (at least `least`, at most `most`) for which the distribution-free bound reaches
    alpha at the SECOND most extreme of n_ref reference processes: all k fresh processes of unchanged code
    beyond the j-th most extreme has probability C(j - 1 + k, k) / C(n_ref + k, k), whatever the noise's
    shape (a second mode, heavy tails), and j = 2 (C(k + 1, k) = k + 1) keeps one wild or unrepresentative
    reference process from deciding the threshold. With six calibration processes and alpha = 1e-4 (a
    100-case suite) that is 20 (MAX_STAGES caps it at 8: a bound of 3.3e-4 at the most extreme process for
    the worst-shaped noise); with a full window (36 reference processes) it is 4."""
    k = max(1, least)
    while k < most and math.comb(n_ref + k, k) * alpha < k + 1:  # C(k + 1, k) = k + 1: the second extreme
        k += 1
    return k


def window_stages(window: int, alpha: float, most: int) -> int:
    """The fewest processes (at most `most`) for which the rank bound over the window's own `window` processes
    reaches alpha at their most extreme: all k fresh processes of unchanged code beyond the largest of n
    exchangeable ones has probability 1 / C(n + k, k). That bound is the one that holds when the calibration
    did not see the machine as the gate does (a mode it missed, or one that appeared after it), and only the
    window's processes are exchangeable with the fresh ones. 0 (no demand) when no `most` reach it: the
    window is too short to say anything alone (at alpha = 1e-4, 8 processes need 8, 5 cannot)."""
    for k in range(1, most + 1):
        if math.comb(window + k, k) * alpha >= 1.0:
            return k
    return 0


def noise_band_pct(noise_pct: float, df: int, processes: int, n_centre: int) -> float:
    """The noise band b: a mean change within it is unchanged, however far it lies beyond T."""
    return t_quantile(BAND_CONFIDENCE, df) * noise_pct * math.sqrt(1.0 / processes + 1.0 / n_centre)


def rank_bound(extremes: Sequence[float], n_ref: int, stages: int, alpha: float) -> float:
    """The distribution-free side of the threshold. The reference processes and k fresh processes of unchanged
    code are exchangeable, so the chance that all k land above the j-th most extreme of n reference
    processes is C(j - 1 + k, k) / C(n + k, k), whatever the noise's shape (a second mode included). The
    threshold is at least the j-th most extreme deviation for the largest j that keeps this chance within
    alpha; when even j = 1 cannot, it is the most extreme one: no process further out than one that unchanged
    code already produced can fail a case. `extremes`: the most extreme deviations, largest first (%)."""
    if not extremes:
        return 0.0
    total = math.comb(n_ref + stages, stages)
    j = 0
    while j < len(extremes) and math.comb(j + stages, stages) <= alpha * total:
        j += 1
    return float(extremes[max(j, 1) - 1])


def per_test_alpha(false_alarm_pct: float, gated_tests: int) -> float:
    """The run's false-alarm budget divided over its gated tests (Bonferroni: holds whatever their
    dependence)."""
    return false_alarm_pct / 100.0 / max(1, gated_tests)


def reference_processes_needed(alpha: float, most: int = MAX_STAGES) -> int:
    """The fewest reference processes n for which the distribution-free bound can reach alpha at all, with
    the most processes a failure may ask for: all `most` fresh processes of unchanged code beyond the most
    extreme of n has probability 1 / C(n + most, most) whatever the noise's shape. Below it the per-test
    rate for the worst-shaped noise (a second mode) is that, not alpha: six calibration processes give
    1 / C(14, 8) = 3.3e-4, above the alpha of a suite of more than 30 gated tests at a 1% budget."""
    n = 1
    while math.comb(n + most, most) * alpha < 1.0:
        n += 1
    return n
