"""A common-mode shift: most of a run's cases moved together, by about the same amount, against their
calibration. A driver or library update, a board swap, a machine that drifted, or a change the code made to
every case at once; not a regression of one case.

Without this, such a shift deadlocks the gate: every case beyond its threshold fails, failed runs never
enter the noise window, and nothing adapts (an outside review: a driver update making every case 3% slower
failed 45 of 45 later runs). So the run's cases are first judged together:

- the shift c is the median of the cases' first-process changes from their calibration's median, weighted
  by their precision (1 / noise^2: the quiet cases say most about a shift; a few regressed cases do not move
  a median), over the time-gated, calibrated cases of the run;
- it is declared when at least MIN_CASES cases take part and their first processes' ranks among their
  calibration processes lean one way beyond chance (Wilcoxon's signed-rank test, one-sided p <= SIGN_P:
  ranks, so two cases far out cannot make a shift alone; ranks among the calibration's, because only they
  are symmetric for unchanged code whatever the noise's shape); it is named (a finding) when |c| also
  reaches half the rule's floor (`min_effect_pct`): a machine drift is named before its quietest cases
  cross their thresholds. A smaller shift the test sees still moves the centres, unnamed: the test, not
  the size, says the cases moved (issue 31: a drift of 0.2-0.5% the ranks showed failed noisy cases);
- then each case is judged against its centre moved by c (gate/decision.py, `shift_pct`), its noise widened
  by the error of c (a median of m cases: variance pi / 2 * s^2 / m). A case that regressed beyond the
  shift still fails; the shift itself fails no case;
- one finding says so (a named shift): the shift, how many cases moved, which environment fields changed since the
  calibration (driver, CUDA, torch, Triton, Python, perfgate) or that none did (then a machine change or
  a change common to every case: `perfgate ab` against the last good commit tells them apart), and the
  command that re-anchors the baseline on the new level (`perfgate baseline reanchor`: reads the history,
  no measurement). Strict mode fails on it.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence

from perfgate.model import CommonShift, Environment

MIN_CASES = 6  # fewer cases cannot tell a shared shift from a few cases' own changes
SIGN_P = 0.025  # the signed-rank test's one-sided level (with the size condition: false shifts are rare)
# the level when the environment's fingerprint changed since calibration: a shift is then likely, and at 6 cases
# SIGN_P needs every case on one side (one case of six reading against a 3% driver step failed 4.5% of first
# runs, issue 31); a shift declared wrongly moves the centres by a median of noise and fails no case
SIGN_P_CHANGED = 0.1
FINGERPRINT = ("driver_version", "cuda_version", "torch_version", "triton_version", "python_version")


def signed_rank_p(values: Sequence[float]) -> float:
    """One-sided p-value of Wilcoxon's signed-rank test that `values` lean the way their majority does
    (normal approximation with a continuity correction; ties in |value| share their rank). A few cases far
    out count one rank each: they cannot make a shift alone."""
    nonzero = [v for v in values if v != 0]
    m = len(nonzero)
    if m == 0:
        return 1.0
    order = sorted(range(m), key=lambda i: abs(nonzero[i]))
    ranks = [0.0] * m
    ties = 0.0  # sum of t^3 - t over groups of equal |value|: they narrow the statistic's spread
    i = 0
    while i < m:
        j = i
        while j + 1 < m and abs(nonzero[order[j + 1]]) == abs(nonzero[order[i]]):
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2.0 + 1.0
        ties += (j - i + 1) ** 3 - (j - i + 1)
        i = j + 1
    positive = math.fsum(r for r, v in zip(ranks, nonzero, strict=True) if v > 0)
    w = max(positive, m * (m + 1) / 2.0 - positive)
    if m <= EXACT_MAX_CASES:
        return _exact_upper_p(ranks, w)
    mean, sd = m * (m + 1) / 4.0, math.sqrt(m * (m + 1) * (2 * m + 1) / 24.0 - ties / 48.0)
    return 0.5 * math.erfc((w - mean - 0.5) / sd / math.sqrt(2.0))


EXACT_MAX_CASES = 40  # up to this many the signed-rank p is counted exactly: the normal approximation is
# anti-conservative with tied ranks in small runs (five of six cases beyond all their calibration processes:
# 0.023 for an exact 2/64 = 0.031)


def _exact_upper_p(ranks: Sequence[float], w: float) -> float:
    """P(W+ >= w) over the 2^m equally likely sign patterns of these (possibly tied, half-integer) ranks:
    the distribution counted by adding one rank at a time (sums in half ranks)."""
    counts = {0: 1}
    for r in ranks:
        step = round(2 * r)
        nxt = dict(counts)
        for total, n in counts.items():
            nxt[total + step] = nxt.get(total + step, 0) + n
        counts = nxt
    need = round(2 * w)
    return sum(n for total, n in counts.items() if total >= need) / 2.0 ** len(ranks)


SCORE_GRID = 10_000  # the largest |score| in steps of the exact count (p within ~1e-3 of the unrounded scores')


def weighted_sign_p(scores: Sequence[float]) -> float:
    """One-sided p-value that the sum of `scores` leans the way it does, when each score's sign is a fair coin
    (the sign-flip test: exact for any scores symmetric about 0, such as weighted centred ranks of
    unchanged code). Up to EXACT_MAX_CASES scores the 2^m sign patterns are counted (the scores on a grid of
    SCORE_GRID steps to the largest); beyond, the normal approximation."""
    nonzero = [v for v in scores if v != 0 and math.isfinite(v)]
    if not nonzero:
        return 1.0
    total = math.fsum(nonzero)
    if len(nonzero) > EXACT_MAX_CASES:
        sd = math.sqrt(math.fsum(v * v for v in nonzero))
        return 0.5 * math.erfc(abs(total) / sd / math.sqrt(2.0))
    import numpy as np

    top = max(abs(v) for v in nonzero)
    steps = [max(1, round(SCORE_GRID * abs(v) / top)) for v in nonzero]
    counts = np.zeros(sum(steps) + 1)
    counts[0] = 1.0
    for q in steps:  # P(sum of the positive steps = t), one score at a time
        counts[q:] = 0.5 * (counts[q:] + counts[:-q].copy())
        counts[:q] *= 0.5
    leaning = sum(q for q, v in zip(steps, nonzero, strict=True) if (v > 0) == (total > 0))
    return float(min(1.0, counts[leaning:].sum()))


def weighted_median(values: Sequence[float], weights: Sequence[float]) -> float:
    """The value at half the total weight (the lower one on a tie)."""
    pairs = sorted(zip(values, weights, strict=True))
    half, run = math.fsum(weights) / 2.0, 0.0
    for v, w in pairs:
        run += w
        if run >= half:
            return v
    return pairs[-1][0]


def common_shift(
    changes: Mapping[str, tuple[float, float]],
    floor_pct: float,
    baseline_env: Environment | None,
    env: Environment | None,
    ranks: Mapping[str, float] | None = None,
) -> CommonShift | None:
    """The run's common-mode shift over its cases' first-process changes, when there is one. `changes`:
    per case, its change (%) and the standard deviation of one process's change (%). `ranks`: per case, its
    first process's centred rank among its calibration processes (`centred_rank`); given, the test leans on
    them instead of the changes in units of their noise."""
    keys = [k for k, (d, u) in changes.items() if math.isfinite(d) and u > 0]
    pairs = [changes[k] for k in keys]
    if len(pairs) < MIN_CASES:
        return None
    c = weighted_median([d for d, _ in pairs], [1.0 / (u * u) for _, u in pairs])
    changed = fingerprint_changes(baseline_env, env)
    # the signed-rank test's premise is a null symmetric about 0. Changes in units of their noise are not,
    # where a case's processes have two modes (40% of them 3% slow: most first processes land in the fast
    # mode, the rest far out on the slow side; an unchanged 1,000-case suite named a shift in 52 of 200 first
    # runs, and strict mode failed them, issue 31). A process's rank among its calibration's is symmetric
    # for unchanged code whatever the noise's shape (they are exchangeable).
    # each rank weighted by its case's precision (1 / noise): the score test for one shift c in every case,
    # whose rank moves by about c / noise. Equal weights let the noisy cases' coin-flip signs hide what the
    # quiet cases all show (issue 31: a 10-case suite drifted 0.8-1.2%, its five quiet cases beyond every
    # calibration process, and the unweighted test gave p = 0.03-0.15: the quiet cases then failed the floor)
    p = (
        weighted_sign_p([ranks[k] / u for k, (_, u) in zip(keys, pairs, strict=True)])
        if ranks is not None
        else signed_rank_p([d / u for d, u in pairs])
    )
    if p > (SIGN_P_CHANGED if changed else SIGN_P):
        return None
    moved = sum(1 for d, _ in pairs if d * c > 0)
    spread = statistics.median(abs(d - c) for d, _ in pairs)
    # the test says whether the cases moved together, the size whether that is worth a finding: half the floor
    # names a drift before its quietest cases cross it. A smaller shift the test sees still moves the centres
    # (issue 31: on a machine drifting +0.03% a run, a 12 us case failed against a centre its suite's ranks
    # showed 0.4% behind), unnamed: it fails no case and is no finding
    named = abs(c) >= floor_pct / 2.0
    return CommonShift(c, moved, len(pairs), spread, changed, sure=p <= SIGN_P, named=named)


def centred_rank(now: float, calibration: Sequence[float]) -> float:
    """Where `now` falls among the calibration's values: (below - above) / 2 / (n + 1), in -0.5..0.5; 0 at
    their median. For a process exchangeable with the calibration's it is symmetric about 0 whatever the
    noise's shape (two modes, heavy tails), which the shift's signed-rank test needs."""
    below = sum(1 for v in calibration if v < now)
    above = sum(1 for v in calibration if v > now)
    return (below - above) / 2.0 / (len(calibration) + 1)


def fingerprint_changes(before: Environment | None, after: Environment | None) -> tuple[str, ...]:
    if before is None or after is None:
        return ()
    out = []
    for name in FINGERPRINT:
        old, new = getattr(before, name), getattr(after, name)
        if old and new and old != new:
            out.append(f"{name.removesuffix('_version')} {old} -> {new}")
    return tuple(out)


def shift_message(shift: CommonShift, names: Sequence[str], command: str = "perfgate baseline reanchor") -> str:
    """The one finding line."""
    cause = (
        f"the environment changed since calibration ({', '.join(shift.changed)})"
        if shift.changed
        else "no environment change was recorded (driver, CUDA, torch, Triton, Python): a machine change "
        "(clocks, cooling, another tenant) or a change the code made to every case; `perfgate ab <last good "
        "commit>` tells them apart"
    )
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return (
        f"{shift.moved} of {shift.cases} cases moved together by {shift.shift_pct:+.1f}% "
        f"(median; cases spread +-{shift.spread_pct:.1f}% around it): {cause}. Each case was judged against "
        f"its centre moved by the shift; the shift itself fails no case. Cases that moved beyond it: "
        f"{shown or 'none'}. Re-anchor the baseline on the new level with `{command}` once 5 runs from the "
        f"first that named the shift are stored (it takes the level from the last 5 passing runs; measures "
        f"nothing; commit the baseline it writes)"
    )


RECENT_RUNS = 10  # the recent runs an intermittent state must have come and gone in
LIKE_SHARE = 0.5  # a past run shifted at least this share of this run's shift is "shifted like it"
BACK_SHARE = 0.25  # one shifted at most this share is "back" (a drift's older runs sit between the two)


def past_shifts(changes_by_run: Mapping[int, Sequence[tuple[float, float]]]) -> tuple[float, ...]:
    """Each past run's shift, newest run (highest id) first: the precision-weighted median of its cases'
    changes (%, against today's centres), like `common_shift`'s c but whether or not a shift was declared.
    `changes_by_run`: per run id, its cases' (change %, one process's standard deviation %). Runs with fewer
    than MIN_CASES cases say nothing."""
    return tuple(
        weighted_median([d for d, _ in pairs], [1.0 / (u * u) for _, u in pairs])
        for _, pairs in sorted(changes_by_run.items(), reverse=True)
        if len(pairs) >= MIN_CASES
    )


def comes_and_goes(shift_pct: float, past_newest_first: Sequence[float]) -> int:
    """How many of the last RECENT_RUNS runs were shifted like this run (same sign, at least LIKE_SHARE as
    far), when the shift came and went among them: a run clearly not shifted (BACK_SHARE of it at most) is
    newer than one that was. A
    shared process state the calibration missed (a library heuristic picking a slower kernel in 40% of
    processes, a power state) comes and goes; a driver update, a board swap or a code change shifts every
    run after it, and a drift every run more: 0 for those (no run after the first shifted one is back)."""
    recent = [c * (1.0 if shift_pct > 0 else -1.0) / abs(shift_pct) for c in past_newest_first[:RECENT_RUNS]]
    like = [r >= LIKE_SHARE for r in recent]
    back = [r <= BACK_SHARE for r in recent]
    if True not in like:
        return 0
    oldest_like = len(like) - 1 - like[::-1].index(True)
    return sum(like) if True in back[:oldest_like] else 0


def intermittent_message(shift: CommonShift, seen: int) -> str:
    """The one line for a shift that comes and goes (a note: strict mode does not fail on it)."""
    return (
        f"{shift.moved} of {shift.cases} cases moved together by {shift.shift_pct:+.1f}% "
        f"in this run, as in {seen} of the last {RECENT_RUNS} runs, with unshifted runs between them: a process "
        f"state that comes and goes (a library heuristic, a power state), not a lasting change. Each case was "
        f"judged against its centre moved by it; a re-anchor cannot remove it, a calibration over more "
        f"processes (`perfgate calibrate --runs 12`) takes it into the noise"
    )
