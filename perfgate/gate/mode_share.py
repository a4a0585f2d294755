"""The share of processes in modes the calibration did not see, from the whole run, and the confirmation
processes a suspect needs against it (issue 31, requirements 1 and 4).

A case fails when all k of its processes lie beyond T. Where a slower mode that the calibration never saw
draws a share s of the processes, an unchanged case whose reference holds none of that mode (its window is
still clean) or too few of it (its window is diluted by runs from before the mode) fails with probability
s^k: 0.4^4 = 2.6% per case, far above the per-case alpha of 1e-3 in a 10-case suite. The run already holds
the evidence: other cases' noise windows show processes beyond every calibration process (gate/unseen.py).
From them:

- the evidence counts only where at least MIN_MODE_CASES cases other than the one judged show a slower
  unseen mode: one flaky case (a preempted process +10% in its window) is that case's own noise, not a mode
  of the run; with it alone, a real +3..+8% regression elsewhere was held "cannot fail" run after run (an
  outside review of this rule);
- s_upper: a one-sided Clopper-Pearson upper bound (SHARE_CONFIDENCE) on the share of window processes
  beyond the calibration, pooled over those other cases;
- the range of the modes: the RANGE_CASES-th largest of those cases' largest changes from their
  calibration's centre (a slowdown at most that large was seen in at least two cases: one case's +50%
  outlier does not cover every slowdown up to +50%; the third largest lost most of the rule's effect, 6 ->
  11 of 1,000 in the new-mode replay, since a mode's processes scatter about its centre);
- a suspect whose change lies within that range needs k = ceil(log(alpha) / log(s_upper)) processes, all
  beyond T; a mode is caught out by one fast process, a code regression moves every process and still fails
  (it only costs confirmation time). Where k passes the most a failure may ask for, the case cannot fail:
  it is inconclusive, with a line saying why.

Derived from the stored run and the baseline only (each case's resolved noise), so `perfgate compare` says
the same. numpy-free, scipy-free: the bound is a bisection on the binomial tail (tests check it against
scipy's beta quantile).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from perfgate.baseline import Baseline
from perfgate.gate.decision import Decision, Rule
from perfgate.model import CaseResult, Verdict

SHARE_CONFIDENCE = 0.95  # one-sided: s_upper lies above the true share this often


MIN_MODE_CASES = 3  # cases other than the judged one that must show a slower unseen mode
RANGE_CASES = 2  # the range is the largest slowdown at least this many of those cases showed


@dataclass(frozen=True)
class CaseModes:
    """One case's window beyond every calibration process, on the slower side."""

    case_id: str
    beyond: int  # window processes beyond the calibration's slowest (at most the EXTREMES_KEPT stored)
    window_processes: int  # the window's processes
    highest_pct: float  # the largest of them, from the calibration's centre (%)


@dataclass(frozen=True)
class ModeShare:
    """What a run's noise windows say about slower modes the calibration did not see: the cases showing one.
    A judged case reads the evidence of the others only (`without`)."""

    shown: tuple[CaseModes, ...]

    @property
    def beyond(self) -> int:
        return sum(c.beyond for c in self.shown)

    @property
    def window_processes(self) -> int:
        return sum(c.window_processes for c in self.shown)

    @property
    def cases(self) -> int:
        return len(self.shown)

    @property
    def highest_pct(self) -> float:
        """The range: the RANGE_CASES-th largest of the cases' largest changes (0 with fewer cases)."""
        tops = sorted((c.highest_pct for c in self.shown), reverse=True)
        return tops[RANGE_CASES - 1] if len(tops) >= RANGE_CASES else 0.0

    @property
    def share_upper(self) -> float:
        """The share's upper confidence bound (one-sided, SHARE_CONFIDENCE)."""
        return share_upper_bound(self.beyond, self.window_processes, SHARE_CONFIDENCE)

    def without(self, case_id: str) -> ModeShare | None:
        """The evidence of the other cases, None where fewer than MIN_MODE_CASES of them show a mode."""
        others = tuple(c for c in self.shown if c.case_id != case_id)
        return ModeShare(others) if len(others) >= MIN_MODE_CASES else None

    def covers(self, change_pct: float | None) -> bool:
        """Whether a slowdown of `change_pct` could be one of these modes: up to the range."""
        return change_pct is not None and 0.0 < change_pct <= self.highest_pct


def share_upper_bound(successes: int, trials: int, confidence: float = SHARE_CONFIDENCE) -> float:
    """The one-sided Clopper-Pearson upper bound on a binomial share: the p at which seeing `successes` or
    fewer in `trials` has probability 1 - `confidence` (1.0 when every trial succeeded or there are none)."""
    if trials <= 0 or successes >= trials:
        return 1.0
    if successes < 0:
        raise ValueError("successes must be >= 0")
    lo, hi = successes / trials, 1.0
    for _ in range(60):  # bisection: the tail falls as p rises
        mid = (lo + hi) / 2.0
        if _binomial_cdf(successes, trials, mid) > 1.0 - confidence:
            lo = mid
        else:
            hi = mid
    return hi


def _binomial_cdf(x: int, n: int, p: float) -> float:
    """P(X <= x) for X ~ Binomial(n, p), 0 < p < 1, summed in log space."""
    if p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 0.0 if x < n else 1.0
    lp, lq = math.log(p), math.log1p(-p)
    return min(1.0, math.fsum(math.exp(_log_comb(n, i) + i * lp + (n - i) * lq) for i in range(x + 1)))


def _log_comb(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def stages_for_share(share: float, alpha: float) -> int:
    """The fewest processes k for which all k landing in a mode of share `share` has probability <= alpha:
    ceil(log(alpha) / log(share)); 1 when there is no such mode, a huge number when every process is in it."""
    if share <= 0.0:
        return 1
    if share >= 1.0:
        return 2**31
    return max(1, math.ceil(math.log(alpha) / math.log(share) - 1e-12))


def run_mode_share(results: Sequence[CaseResult], baseline: Baseline | None) -> ModeShare | None:
    """The run's evidence of slower unseen modes in the cases' time noise (None: no case shows one). A case
    counts the window processes beyond its calibration's slowest (gate/unseen.py's count: at most the
    EXTREMES_KEPT stored, so a lower bound) over its window's processes. A judged case takes `without` itself."""
    if baseline is None:
        return None
    shown: list[CaseModes] = []
    for res in results:
        base = baseline.cases.get(res.case_id)
        noise = res.thresholds.time_noise
        if base is None or not base.calibrated or base.timer is not res.timing.timer or noise is None:
            continue
        calibration = base.time_values()
        if len(calibration) < 2 or not noise.window_upper_pct:
            continue
        centre = math.fsum(calibration) / len(calibration)
        edge = 100.0 * (max(calibration) - centre) / centre
        out = [d for d in noise.window_upper_pct if d > edge]
        if out:
            shown.append(CaseModes(res.case_id, len(out), noise.window_runs, max(out)))
    return ModeShare(tuple(shown)) if shown else None


def stages_against(modes: ModeShare | None, change_pct: float | None, alpha: float) -> int:
    """The processes a suspect slowdown of `change_pct` needs against the run's unseen modes: 1 (no demand)
    when there are none or the change lies beyond every one of them."""
    if modes is None or not modes.covers(change_pct):
        return 1
    return stages_for_share(modes.share_upper, alpha)


def why_inconclusive(modes: ModeShare, needed: int, most: int) -> str:
    """The line said where the processes a failure needs are more than it may ask for."""
    return (
        f"cannot fail: slower modes the calibration did not see ({modes.cases} case(s), up to "
        f"{modes.highest_pct:+.1f}%; {modes.beyond} of {modes.window_processes} window processes, so up to "
        f"{100.0 * modes.share_upper:.0f}% of processes) could put all of its processes beyond the threshold; "
        f"ruling that out needs {needed} processes, more than the {most} a failure may ask for"
    )


def guarded(
    d: Decision, rule: Rule, modes: ModeShare | None, case_id: str, again: Callable[[Rule], Decision]
) -> tuple[Decision, str]:
    """`d`, case `case_id`'s decision, held to the run's unseen modes as the other cases show them
    (`ModeShare.without`, taken only for an upward decision: most cases need none of it): a suspect
    or regressed slowdown within their range is decided again (`again`) on the processes they need, or, where
    that is more than `rule` may ask for, made inconclusive at once (no confirmation could let it fail), with
    the line saying why. Anything else is `d` as it was."""
    upward = d.verdict is Verdict.REGRESSED or (d.suspect and (d.change_pct or 0.0) > 0.0)
    if modes is None or d.noise is None or not upward:
        return d, ""
    modes = modes.without(case_id)
    if modes is None:
        return d, ""
    needed = stages_against(modes, d.change_pct, rule.alpha)
    most = max(rule.stages, rule.max_stages)
    if needed <= d.stages:
        return d, ""
    if needed <= most:
        return again(replace(rule, stages=needed)), ""
    return replace(d, verdict=Verdict.INCONCLUSIVE, suspect=False), why_inconclusive(modes, needed, most)
