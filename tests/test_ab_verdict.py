"""The A/B ratio rule (perfgate/gate/ratio.py), case by case: wild rounds set aside, stages pooled, every
draw of the process offset in the noise (the A/A's, significant or not; a fresh pair's), the two-pair bound of
each process mode, a call without a fresh pair, and "detects" as the change caught with 80% power. Whole runs
under the H100's noise, on the shipped functions, are tests/test_ab_rates.py."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from perfgate.ab.findings import inconclusive_text
from perfgate.gate.fresh_pair import on_one_pair, with_fresh_pair
from perfgate.gate.offset_bound import OffsetDraw, bound_threshold, t_quantile
from perfgate.gate.ratio import WILD_SHARE, AaNoise, RatioRule, decide_ratio, tame
from perfgate.model import Verdict

ROUNDS = 20
STAGES = 3
SHARED = RatioRule(alpha=0.001, stages=STAGES, separate=False)
SEPARATE = RatioRule(alpha=0.001, stages=STAGES, separate=True)


def _rounds(rng: np.random.Generator, mean: float, sd: float, wild: float) -> np.ndarray:
    """One stage of per-round log ratios; a `wild` share of rounds hit by a shock of 30% (sd)."""
    x = rng.normal(mean, sd, ROUNDS)
    hit = rng.random(ROUNDS) < wild
    x[hit] += rng.normal(0.0, 0.3, int(hit.sum()))
    return x


def test_wild_rounds_are_set_aside_and_counted():
    quiet = np.linspace(-1e-3, 1e-3, ROUNDS)
    hit = quiet.copy()
    hit[[3, 11]] += 0.5  # two rounds 50% off
    d = decide_ratio([hit], None, RatioRule(alpha=0.001, stages=1))
    assert d.wild_rounds == 2 and d.verdict is Verdict.UNCHANGED and abs(d.change_pct) < 0.1
    slower = decide_ratio([hit + 0.03] * STAGES, None, RatioRule(alpha=0.001, stages=STAGES))
    assert slower.verdict is Verdict.REGRESSED and slower.change_pct == pytest.approx(3.05, abs=0.05)


def test_no_more_than_a_quarter_of_the_rounds_is_ever_wild():
    x = np.concatenate([np.zeros(12), np.full(8, 0.5)]) + np.linspace(0, 1e-3, 20)
    assert (~tame(x)).sum() == int(WILD_SHARE * 20)
    assert tame(np.full(20, 0.01)).all()  # identical rounds: nothing is wild


def test_the_aa_sets_its_wild_rounds_aside_too():
    quiet = np.linspace(-1e-3, 1e-3, ROUNDS)
    shocked = quiet.copy()
    shocked[0] += 1.2
    assert AaNoise.of(shocked).rounds == ROUNDS - 1
    assert abs(AaNoise.of(shocked).mean_log) < 1e-3  # one shock is not a process offset


def test_a_real_five_percent_improvement_is_called_after_its_confirmation_stages():
    rng = np.random.default_rng(5)
    rule = RatioRule(alpha=0.001, stages=STAGES)
    stages = [rng.normal(math.log(0.95), 0.005, ROUNDS)]
    first = decide_ratio(stages, None, rule)
    assert first.suspect and first.verdict is Verdict.UNCHANGED  # one stage is not enough, as for a regression
    stages += [rng.normal(math.log(0.95), 0.005, ROUNDS) for _ in range(STAGES - 1)]
    d = decide_ratio(stages, None, rule)
    assert d.verdict is Verdict.IMPROVED and not d.suspect and d.change_pct == pytest.approx(-5, abs=0.5)


def test_a_stage_the_confirmation_does_not_repeat_is_neither_regressed_nor_improved():
    # A neighbour busy for one whole stage: 3% in stage 1, nothing after. The stage-to-stage difference is
    # noise the pooled mean carries, so it widens what the case can call instead of being called.
    rule = RatioRule(alpha=0.001, stages=STAGES)
    rounds = np.linspace(-0.002, 0.002, ROUNDS)
    for sign in (1, -1):
        assert decide_ratio([rounds + sign * 0.03], None, rule).suspect
        d = decide_ratio([rounds + sign * 0.03, rounds, rounds], None, rule)
        assert d.verdict in (Verdict.UNCHANGED, Verdict.INCONCLUSIVE) and not d.suspect


def test_a_confirmed_slowdown_is_regressed_with_its_pooled_ratio():
    rule = RatioRule(alpha=0.001, stages=STAGES)
    rounds = np.linspace(-0.002, 0.002, ROUNDS)
    first = decide_ratio([rounds + 0.03], None, rule)
    assert first.suspect and first.verdict is Verdict.UNCHANGED
    confirmed = decide_ratio([rounds + 0.03] * 3, None, rule)
    assert confirmed.verdict is Verdict.REGRESSED and confirmed.ratio == pytest.approx(1.0305, abs=1e-3)


def test_a_quiet_first_stage_is_not_suspect_and_says_what_it_would_detect():
    rule = RatioRule(alpha=0.001, stages=STAGES)
    d = decide_ratio([np.linspace(-0.04, 0.04, ROUNDS)], None, rule)
    assert not d.suspect and d.verdict is Verdict.UNCHANGED
    # what three stages of such rounds would call: c * s / sqrt(60), above the 1% floor here
    assert 1.0 < d.threshold_pct < 2.5 and d.screen_pct < d.threshold_pct


@pytest.mark.parametrize("process_sd", [0.0, 0.01])
def test_improved_and_regressed_are_mirror_images(process_sd):
    # Negating every round (and the A/A) turns a regression into an improvement and nothing else: the same
    # thresholds, the same confirmation, the same share of the budget in both directions.
    rng = np.random.default_rng(21)
    rule = RatioRule(alpha=0.005, stages=STAGES)
    mirror = {Verdict.REGRESSED: Verdict.IMPROVED, Verdict.IMPROVED: Verdict.REGRESSED}
    seen = set()
    for _ in range(400):
        offset, k = rng.normal(0.0, process_sd), int(rng.integers(1, STAGES + 1))
        stages = [rng.normal(rng.choice([0.0, 0.02, -0.02]) + offset, 0.005, ROUNDS) for _ in range(k)]
        aa_rounds = rng.normal(rng.normal(0.0, process_sd), 0.005, ROUNDS)
        up = decide_ratio(stages, AaNoise.of(aa_rounds), rule)
        down = decide_ratio([-s for s in stages], AaNoise.of(-aa_rounds), rule)
        assert (down.verdict is Verdict.IMPROVED) == (up.verdict is Verdict.REGRESSED)
        assert (up.verdict is Verdict.IMPROVED) == (down.verdict is Verdict.REGRESSED)
        assert up.suspect == down.suspect and up.threshold_pct == pytest.approx(down.threshold_pct)
        seen.add(mirror.get(up.verdict, up.verdict))
    assert {Verdict.REGRESSED, Verdict.IMPROVED} <= seen


def test_fewer_than_three_rounds_is_refused():
    with pytest.raises(ValueError, match="at least 3 rounds"):
        decide_ratio([[0.0, 0.1]], None, RatioRule(0.01, 1))


def test_an_inconclusive_single_stage_says_its_change_is_below_what_it_can_call():
    quiet = np.linspace(-1e-3, 1e-3, ROUNDS)
    d = decide_ratio([quiet + 0.0098], None, RatioRule(alpha=0.01, stages=1))
    assert d.verdict is Verdict.INCONCLUSIVE
    text = inconclusive_text("median_ms", d)
    assert text == (
        f"head/base +0.98% is above its noise band ({d.band_pct:.2f}%) but not beyond what it can call (1.00%)"
    )


def test_an_inconclusive_pooled_test_shows_the_pooled_change_against_the_pooled_threshold():
    quiet = np.linspace(-1e-3, 1e-3, ROUNDS)
    d = decide_ratio([quiet + 0.03] * STAGES, AaNoise.of(quiet + 0.01), RatioRule(alpha=0.001, stages=STAGES))
    assert d.verdict is Verdict.INCONCLUSIVE and d.process_pct is not None and d.change_pct < d.threshold_pct
    assert inconclusive_text("speedup", d) == (
        f"speedup base/head +3.05% over 3 stages is above its noise band ({d.band_pct:.2f}%) but not beyond what "
        f"it can call ({d.threshold_pct:.2f}%)"
    )


def test_a_suspect_case_whose_rounds_ended_says_its_screen():
    quiet = np.linspace(-1e-3, 1e-3, ROUNDS)
    d = decide_ratio([quiet + 0.02], None, RatioRule(alpha=0.001, stages=STAGES))
    assert d.suspect
    assert inconclusive_text("median_ms", d) == (
        f"head/base +2.02% is beyond its screen ({d.screen_pct:.2f}%), but the rounds ended before the "
        "confirmation stages that would decide it"
    )


def test_rounds_that_tie_are_not_taken_for_wild_ones():
    # a coarse timer: 12 rounds read exactly the same, 8 one step above; none of them is wild
    x = np.concatenate([np.zeros(12), np.full(8, 0.002)])
    assert tame(x).all()
    assert decide_ratio([x], None, RatioRule(alpha=0.001, stages=1)).wild_rounds == 0


def test_a_round_without_a_finite_ratio_is_set_aside_not_averaged():
    quiet = list(np.linspace(-1e-3, 1e-3, ROUNDS))
    d = decide_ratio([[*quiet[:-2], math.nan, math.inf]], None, RatioRule(alpha=0.001, stages=1))
    assert d.wild_rounds == 2 and math.isfinite(d.change_pct) and d.verdict is Verdict.UNCHANGED
    assert AaNoise.of([*quiet, math.nan]).rounds == ROUNDS
    with pytest.raises(ValueError, match="finite"):
        decide_ratio([[math.nan] * 5], None, RatioRule(alpha=0.001, stages=1))


def test_a_regression_the_fresh_pair_contradicts_says_so_in_its_finding():
    rule = RatioRule(alpha=0.001, stages=STAGES)
    quiet = np.linspace(-0.002, 0.002, ROUNDS)
    d = with_fresh_pair(
        decide_ratio([quiet + 0.03] * STAGES, None, rule), decide_ratio([quiet - 0.023] * STAGES, None, rule)
    )
    assert d.verdict is Verdict.INCONCLUSIVE
    assert inconclusive_text("median_ms", d) == (
        f"head/base: the first pair of processes +3.05%, a fresh pair -2.27%; together {d.change_pct:+.2f}%, not "
        f"beyond what both pairs can call ({d.threshold_pct:.2f}%): a difference between processes, not "
        "confirmed as the code's"
    )


def test_a_one_percent_slowdown_is_not_called_below_the_minimum_effect():
    quiet = np.linspace(-1e-3, 1e-3, ROUNDS)
    d = decide_ratio([quiet + math.log(1.005)] * STAGES, None, SHARED)
    assert d.verdict is not Verdict.REGRESSED and d.threshold_pct == pytest.approx(1.0)


def test_an_aa_offset_short_of_significance_still_enters_the_noise():
    # the A/A twin 0.35% off the base under 1% round noise: under 3 of its standard errors, short of the old
    # test's two-sided 0.1% (3.3), so it used to count for nothing; it is a draw of the process offset all the same
    rng = np.random.default_rng(4)
    twin = rng.normal(0.0, 0.01, 3 * ROUNDS)
    twin += 0.0035 - twin.mean()
    stages = [rng.normal(0.0, 0.01, ROUNDS) for _ in range(STAGES)]
    without, with_aa = decide_ratio(stages, None, SHARED), decide_ratio(stages, AaNoise.of(twin), SHARED)
    aa = AaNoise.of(twin)
    s2 = (with_aa.noise_pct / 100) ** 2  # ~ s^2 (pct of a small log)
    assert aa.mean_log == pytest.approx(0.0035) and abs(aa.mean_log) / math.sqrt(s2 / aa.rounds) < 3.3
    assert with_aa.process_pct is not None and with_aa.process_pct > 0.2
    assert with_aa.threshold_pct > without.threshold_pct
    assert with_aa.draws == (OffsetDraw(aa.mean_log, pytest.approx(with_aa.round_var_log / aa.rounds)),)


def test_a_process_offset_the_aa_shows_widens_the_threshold_and_names_itself():
    quiet = np.linspace(-1e-3, 1e-3, ROUNDS)
    offset_aa = AaNoise.of(quiet + 0.03)  # two base processes 3% apart, each round steady
    for rule in (SHARED, SEPARATE):
        d = decide_ratio([quiet + 0.03] * STAGES, offset_aa, rule)
        assert d.process_pct == pytest.approx(3.05, abs=0.05)
        assert d.threshold_pct > 3.0 and d.verdict is not Verdict.REGRESSED


def _stages(change: float, sd: float = 0.002) -> list[np.ndarray]:
    quiet = np.linspace(-sd, sd, ROUNDS)
    return [quiet + change] * STAGES


def test_in_separate_processes_two_pairs_are_judged_by_t_at_as_many_dof_as_draws():
    # m = (m1 + m2) / 2 against t(1 - alpha, K) sqrt(rounds / 4 + mean(d^2) / 2), the draws being both twins'
    # A/A and the pairs' difference over sqrt(2): Student's t when offsets dominate, more concentrated else
    first = decide_ratio(_stages(0.03), AaNoise.of(np.linspace(-0.002, 0.002, ROUNDS) + 0.004), SEPARATE)
    fresh = decide_ratio(_stages(0.027), AaNoise.of(np.linspace(-0.002, 0.002, ROUNDS) - 0.003), SEPARATE)
    assert first.called and fresh.called
    d = with_fresh_pair(first, fresh)
    draws = [0.004, -0.003, (first.mean_log - fresh.mean_log) / math.sqrt(2)]
    spread = (first.rounds_var_log + fresh.rounds_var_log) / 4 + np.mean(np.square(draws)) / 2
    expected = stats.t.ppf(1 - 0.001, 3) * math.sqrt(spread)
    assert d.threshold_pct == pytest.approx(100 * math.expm1(expected), rel=1e-6)
    assert d.verdict is Verdict.REGRESSED and 2.0 < d.threshold_pct < 2.85  # t(0.999, 3) = 10.2 x 0.23%
    assert d.change_pct == pytest.approx(2.89, abs=0.02) and len(d.draws) == 3
    bigger = decide_ratio(_stages(0.027), AaNoise.of(np.linspace(-0.002, 0.002, ROUNDS) - 0.006), SEPARATE)
    assert with_fresh_pair(first, bigger).verdict is Verdict.INCONCLUSIVE  # a twin 0.6% off: the bound is ~3.3%


def test_in_one_shared_process_two_pairs_keep_the_rounds_dof():
    first, fresh = decide_ratio(_stages(0.03), None, SHARED), decide_ratio(_stages(0.027), None, SHARED)
    d = with_fresh_pair(first, fresh)
    assert d.verdict is Verdict.REGRESSED and d.threshold_pct < 1.5  # the 1% floor, or about it
    assert d.change_pct == pytest.approx(2.89, abs=0.05)


def test_an_h100_process_offset_is_not_a_regression_on_two_pairs():
    # the 12 us add in an A/A on the H100, separate processes: first pair +2.65%, the fresh pair +1.20%
    rule = RatioRule(alpha=0.01 / 42, stages=STAGES)
    quiet = np.linspace(-0.012, 0.012, ROUNDS)
    first = decide_ratio([quiet + math.log(1.0265)] * STAGES, None, rule)
    fresh = decide_ratio([quiet + math.log(1.012)] * STAGES, None, rule)
    assert first.verdict is Verdict.REGRESSED and fresh.verdict is Verdict.REGRESSED
    for mode in (rule, RatioRule(alpha=0.01 / 42, stages=STAGES, separate=False)):
        d = with_fresh_pair(decide_ratio([quiet + math.log(1.0265)] * STAGES, None, mode), fresh)
        assert d.verdict is Verdict.INCONCLUSIVE and d.first_pct == pytest.approx(2.65, abs=0.01)
        assert d.change_pct == pytest.approx(1.92, abs=0.05) and d.threshold_pct > d.change_pct


def test_a_fresh_pair_that_points_the_other_way_undoes_a_call():
    for rule in (SHARED, SEPARATE):
        slower, faster = decide_ratio(_stages(0.03), None, rule), decide_ratio(_stages(-0.03), None, rule)
        assert with_fresh_pair(slower, faster).verdict is Verdict.INCONCLUSIVE
        assert with_fresh_pair(faster, slower).verdict is Verdict.UNCHANGED
    confirmed = with_fresh_pair(decide_ratio(_stages(0.03), None, SHARED), decide_ratio(_stages(0.031), None, SHARED))
    assert confirmed.verdict is Verdict.REGRESSED and confirmed.change_pct == pytest.approx(3.1, abs=0.1)
    # separate processes with quiet twins: three small draws bound the offset tightly enough for 3%
    quiet_aa = AaNoise.of(np.linspace(-0.002, 0.002, ROUNDS) + 0.0005)
    both = with_fresh_pair(
        decide_ratio(_stages(0.03), quiet_aa, SEPARATE), decide_ratio(_stages(0.031), quiet_aa, SEPARATE)
    )
    assert both.verdict is Verdict.REGRESSED


def test_a_3_5x_slowdown_whose_separate_pairs_disagree_in_size_is_regressed_by_the_gross_rule():
    # a loaded host: 2.5x in the first pair, 5x in the fresh one; their difference alone is a draw of 0.49 in
    # log units, so the two-pair test at 3 dof would need a change of ~7x and say inconclusive
    twin = AaNoise.of(np.linspace(-0.02, 0.02, ROUNDS) + 0.01)
    first = decide_ratio(_stages(math.log(2.5), sd=0.05), twin, SEPARATE)
    fresh = decide_ratio(_stages(math.log(5.0), sd=0.05), twin, SEPARATE)
    d = with_fresh_pair(first, fresh)
    assert d.verdict is Verdict.REGRESSED and d.gross and d.threshold_pct == pytest.approx(25.0)
    assert bound_threshold(d.rounds_var_log, 0.5, d.draws, 0.001, d.floor_log) > d.mean_log  # the t test alone
    shared = with_fresh_pair(
        decide_ratio(_stages(math.log(2.5), sd=0.05), twin, SHARED),
        decide_ratio(_stages(math.log(5.0), sd=0.05), twin, SHARED),
    )
    assert shared.verdict is Verdict.REGRESSED and not shared.gross  # one process: the two-pair test calls it


def test_the_gross_rule_needs_every_pair_beyond_it_and_beyond_twice_the_largest_twin():
    quiet = AaNoise.of(np.linspace(-0.002, 0.002, ROUNDS))
    first = decide_ratio(_stages(math.log(3.0), sd=0.05), quiet, SEPARATE)
    calm = decide_ratio(_stages(0.0, sd=0.05), quiet, SEPARATE)  # the fresh pair sees nothing
    assert with_fresh_pair(first, calm).verdict is Verdict.INCONCLUSIVE
    short = decide_ratio(_stages(math.log(1.22), sd=0.002), quiet, SEPARATE)  # 22%: under the 25% limit
    assert not with_fresh_pair(decide_ratio(_stages(math.log(1.5)), quiet, SEPARATE), short).gross
    # the fresh twin's processes were 20% apart: the limit becomes 2 x 20%, and 1.3x in both pairs is not beyond it
    wide = AaNoise.of(np.linspace(-0.002, 0.002, ROUNDS) + math.log(1.2))
    d = with_fresh_pair(
        decide_ratio(_stages(math.log(1.3)), quiet, SEPARATE), decide_ratio(_stages(math.log(1.35)), wide, SEPARATE)
    )
    assert not d.gross and d.verdict is Verdict.INCONCLUSIVE
    assert "gross" not in inconclusive_text("time", d)


def test_without_a_fresh_pair_a_separate_call_is_judged_on_its_one_draw():
    aa = AaNoise.of(np.linspace(-0.002, 0.002, ROUNDS) + 0.002)
    first = decide_ratio(_stages(0.03), aa, SEPARATE)
    assert first.called
    alone = on_one_pair(first)
    expected = bound_threshold(first.rounds_var_log, 1.0, first.draws, 0.001, first.floor_log)
    assert alone.threshold_pct == pytest.approx(100 * math.expm1(expected))
    assert expected == pytest.approx(stats.t.ppf(1 - 0.001, 1) * math.sqrt(first.rounds_var_log + 0.002**2))
    assert alone.verdict is Verdict.INCONCLUSIVE and alone.unrepeated  # 3% is within 318 x 0.2%
    shared = decide_ratio(_stages(0.03), aa, SHARED)
    assert on_one_pair(shared).verdict is Verdict.REGRESSED  # one process: no offset to bound


def test_separate_processes_without_an_aa_or_a_fresh_pair_bound_nothing():
    rule = RatioRule(alpha=0.001, stages=STAGES, separate=True, fresh_pair=False)
    d = on_one_pair(decide_ratio(_stages(0.3), None, rule))
    assert d.verdict is Verdict.INCONCLUSIVE and math.isinf(d.threshold_pct) and d.detects_pct is None


def test_detects_is_the_change_caught_with_80_percent_power():
    # one shared pair, no fresh pair: the stages at the change "detects" names, again and again
    rng = np.random.default_rng(12)
    rule = RatioRule(alpha=0.001, stages=STAGES, separate=False, fresh_pair=False, min_effect_pct=0.0)
    exact = rng.normal(0.0, 1.0, STAGES * ROUNDS)
    exact = 0.01 * (exact - exact.mean()) / exact.std(ddof=1)  # rounds whose sd is exactly 1%
    detects = decide_ratio(np.split(exact, STAGES), None, rule).detects_pct
    assert detects is not None
    change = math.log1p(detects / 100)
    caught = np.mean(
        [
            decide_ratio([rng.normal(change, 0.01, ROUNDS) for _ in range(STAGES)], None, rule).verdict
            is Verdict.REGRESSED
            for _ in range(1500)
        ]
    )
    assert 0.75 < caught < 0.85  # 80%, within the binomial's reach (and the sd's estimate each time)


def test_detects_counts_the_fresh_pair_and_what_separate_processes_cannot_bound():
    aa = AaNoise.of(np.linspace(-0.01, 0.01, ROUNDS) + 0.015)  # the 12 us add's twin, 1.5% off
    stages = [np.linspace(-0.01, 0.01, ROUNDS)] * STAGES
    shared = decide_ratio(stages, aa, RatioRule(alpha=0.001, stages=STAGES, separate=False))
    separate = decide_ratio(stages, aa, SEPARATE)
    alone = decide_ratio(stages, aa, RatioRule(alpha=0.001, stages=STAGES, separate=True, fresh_pair=False))
    assert shared.detects_pct is not None and separate.detects_pct is not None and alone.detects_pct is not None
    assert shared.threshold_pct < shared.detects_pct < separate.detects_pct < alone.detects_pct
    assert separate.detects_pct > 5.0  # an offset of 1.5% (one draw) is not bounded below 2% by two pairs


@pytest.mark.parametrize("dof", [1, 2, 3, 5, 30, 120])
@pytest.mark.parametrize("p", [0.9, 0.95, 0.975, 0.999, 0.9999, 0.99999])
def test_the_t_quantiles_the_rule_uses_are_scipys(dof, p):
    # one draw of the offset means one dof at 1 - alpha, alpha down to 1e-5 (1% over 1,000 comparisons)
    assert t_quantile(p, dof) == pytest.approx(stats.t.ppf(p, dof), rel=1e-6)
