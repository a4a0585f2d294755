"""A/B mode's statistics as a guarantee, on the shipped functions (perfgate.ab.ratios.judge_case, aa_noise,
perfgate.ab.pairs.screen) over seeded whole runs (tests/ab_simulation.py): the noise the H100 showed
(docs/evidence/ab-noise.md: round noise, wild rounds, process offsets of 1-3% on a 12 us add and ~0.1-0.3% on
long kernels in separate processes, next to none in one shared process), heavy tails, offsets beyond the
measured. An unchanged run fails within its false-alarm budget whatever its size and process mode; a 2%
slowdown is still caught in one shared process; a case that cannot catch it says so (its "detects"); and
"detects" is what is caught 80% of the time. scripts/ab_rates.py prints the same at the shipped budget.

The budget is tested at 10% per run without the 1% minimum effect (so that a rate is measurable in a few
hundred runs and the rule's own bound is what is tested: the floor only makes a call rarer), and the count of
failed runs against the binomial's 99.9% quantile at that budget (scipy)."""

from __future__ import annotations

import math

import pytest
from scipy import stats

from tests.ab_simulation import SEPARATE, SHARED, Kind, Suite, runs

BUDGET_PCT = 10.0


def _failed_runs(suite: Suite, count: int, seed: int) -> int:
    return sum(o.failed for o in runs(suite, count, seed=seed, budget_pct=BUDGET_PCT, min_effect_pct=0.0))


def _within_budget(failed: int, count: int) -> bool:
    return failed <= stats.binom.ppf(0.999, count, BUDGET_PCT / 100)


@pytest.mark.parametrize("shared", [True, False], ids=["shared", "separate"])
def test_an_unchanged_ten_case_run_fails_within_its_budget(shared):
    suite = Suite(SHARED if shared else SEPARATE, 10, shared)
    failed = _failed_runs(suite, 200, seed=1 + shared)
    assert _within_budget(failed, 200), f"{failed} of 200 unchanged runs failed at a {BUDGET_PCT}% budget"


@pytest.mark.slow
@pytest.mark.parametrize("shared", [True, False], ids=["shared", "separate"])
def test_an_unchanged_hundred_case_run_fails_within_its_budget(shared):
    suite = Suite(SHARED if shared else SEPARATE, 100, shared)
    failed = _failed_runs(suite, 60, seed=3 + shared)
    assert _within_budget(failed, 60), f"{failed} of 60 unchanged 100-case runs failed"


@pytest.mark.slow
@pytest.mark.parametrize(
    "variant",
    [{"t3": True, "wild": 0.05}, {"offset_scale": 2.0}],
    ids=["heavy tails and wild rounds", "offsets twice the measured"],
)
def test_the_budget_holds_beyond_the_noise_measured_in_separate_processes(variant):
    suite = Suite(SEPARATE, 10, False, **variant)
    failed = _failed_runs(suite, 300, seed=5)
    assert _within_budget(failed, 300), f"{failed} of 300 unchanged runs failed"


def test_one_shared_process_keeps_a_two_percent_slowdown_caught():
    # the shipped budget (1%) and floor (1%), 10 cases: the 12 us add, the GEMMs, the copy, attention
    outcomes = list(runs(Suite(SHARED, 10, True), 20, seed=7, change=math.log(1.02)))
    verdicts = [v for o in outcomes for _, v, _ in o.verdicts]
    caught = sum(v.value == "regressed" for v in verdicts) / len(verdicts)
    assert caught >= 0.9, f"2% caught on {caught:.0%} of {len(verdicts)} shared cases"


def test_a_case_that_cannot_catch_two_percent_says_so():
    # separate processes: the 12 us add's offsets of 1-3% (and the GEMMs' round noise) are beyond what two
    # pairs can bound below 2%: the misses name a "detects" above 2%
    outcomes = list(runs(Suite(SEPARATE, 10, False), 12, seed=8, change=math.log(1.02)))
    missed = [d for o in outcomes for _, v, d in o.verdicts if v.value != "regressed" and d is not None]
    assert missed and sum(d.detects_pct is None or d.detects_pct > 2.0 for d in missed) >= 0.9 * len(missed)
    add = sorted(
        math.inf if d.detects_pct is None else d.detects_pct
        for o in outcomes
        for kind, _, d in o.verdicts
        if kind == "12 us add" and d is not None
    )
    assert add[len(add) // 2] > 5.0  # one A/A draw of a 1-3% offset: most say so, an unlucky small draw less


@pytest.mark.slow
@pytest.mark.parametrize("shared", [True, False], ids=["shared", "separate"])
def test_detects_is_the_change_caught_80_percent_of_the_time(shared):
    # one kind at a time, its noise fixed; changes around what its cases report, each case then scored at
    # its own "detects" (computed from the same rounds its verdict was): the cases whose change was within
    # 10% of what they reported were caught about 80% of the time
    for kind in (SHARED if shared else SEPARATE)[:2]:
        middle = Kind(kind.name, (sum(kind.round_sd) / 2,) * 2, (sum(kind.offset_sd) / 2,) * 2, kind.wild)
        suite = Suite((middle,), 10, shared)
        reported = sorted(
            d.detects_pct for o in runs(suite, 6, seed=9) for _, _, d in o.verdicts if d and d.detects_pct
        )
        centre = reported[len(reported) // 2]
        near: list[bool] = []
        for i, scale in enumerate((0.8, 0.9, 1.0, 1.1, 1.25)):
            change = centre * scale
            for o in runs(suite, 12, seed=20 + i, change=math.log1p(change / 100)):
                near += [
                    v.value == "regressed"
                    for _, v, d in o.verdicts
                    if d is not None and d.detects_pct and abs(change / d.detects_pct - 1) <= 0.1
                ]
        rate = sum(near) / len(near)
        assert len(near) >= 40 and 0.65 <= rate <= 0.95, f"{kind.name}: caught {rate:.0%} of {len(near)} at detects"


@pytest.mark.slow
def test_the_12us_adds_process_offsets_are_called_no_more_often_than_alpha():
    # the outside review's case: separate processes 1-3% apart, at alpha = 0.1% per comparison (a 1% budget
    # over 10 comparisons), no minimum effect. The rule before this one called 0.88%; judged as if one shared
    # process (no bound on the offset), these runs call ~1%
    suite = Suite(SEPARATE[:1], 10, False)
    outcomes = runs(suite, 200, seed=11, budget_pct=1.0, min_effect_pct=0.0)
    called = sum(v.value == "regressed" for o in outcomes for _, v, _ in o.verdicts)
    assert called <= stats.binom.ppf(0.999, 2000, 0.001), f"{called} of 2000 comparisons called at alpha 0.1%"
