"""A shared host run's cases lend each other their offsets' spread (gate/pooled.py): a case's own three draws
bound its offset at t on 3 dof (t(1 - 1e-4) = 22), which caught none of 10 cases slowed 5% in a 100-case run;
with the run's prior the bound is t on d0 + 3 dof. A heavy tail or one case far out keeps d0 small, and
fewer than pooled.MIN_CASES host cases keep each case's own test."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from perfgate.ab.compare import AbRule, compare_ab
from perfgate.ab.protocol import Side
from perfgate.ab.rounds import CaseRounds, Measurement
from perfgate.gate.pooled import MIN_CASES, PRIOR_DOFS, offset_prior
from perfgate.metrics import TIME_METRIC
from perfgate.model import Timer, Verdict
from perfgate.stats import t_quantile
from tests.steady_rounds import steady_case

CALL_MS = 0.015
SLOW = "test_perf.py::test_sort[0]"


def _case(case_id: str, head_pct: float, twin_pct: float, seed: int, timer: Timer = Timer.HOST) -> CaseRounds:
    return steady_case(case_id, CALL_MS, head_pct, twin_pct, seed, timer)


def _run(offset_pct: list[float], slow_pct: float, seed: int) -> tuple[Verdict, list[Verdict]]:
    """One shared host run of len(offset_pct) cases, each side's offset drawn at that case's sd (%), the
    first case's head slowed by slow_pct; every call measured again by a fresh pair. (its verdict, the rest's)"""
    rng = np.random.default_rng(seed)

    def pair(i: int, seed_: int) -> CaseRounds:
        sd = offset_pct[i]
        head, twin = rng.normal(0.0, sd, 2)
        return _case(f"test_perf.py::test_sort[{i}]", head + (slow_pct if i == 0 else 0.0), twin, seed_)

    cases = [pair(i, seed * 1000 + i) for i in range(len(offset_pct))]
    fresh = {c.case_id: pair(i, seed * 1000 + 500 + i) for i, c in enumerate(cases)}
    m = Measurement(cases=cases, collected={Side.HEAD: tuple(c.case_id for c in cases)}, shared=True)
    cmp = compare_ab(m, {}, AbRule(), fresh=fresh)
    verdicts = [cmp.decisions[(c.case_id, TIME_METRIC)].verdict for c in cases]
    return verdicts[0], verdicts[1:]


def test_a_100_case_host_run_with_small_offsets_catches_a_5pct_slowdown() -> None:
    slowed, others = _run([0.5] * 100, 5.0, seed=3)
    assert slowed is Verdict.REGRESSED
    assert not {Verdict.REGRESSED, Verdict.IMPROVED} & set(others)


def test_fewer_than_min_cases_host_cases_keep_each_case_own_test() -> None:
    slowed, _ = _run([0.5] * (MIN_CASES - 1), 5.0, seed=3)
    assert slowed is not Verdict.REGRESSED  # t on 3 dof: the 5% is beyond what the case's own draws can show


@pytest.mark.parametrize("seed", range(4))
def test_heavy_tailed_offsets_do_not_call_an_unchanged_case(seed: int) -> None:
    # the 2 us suite's offsets: most cases within 1%, a few 5-11% (docs/ab.md); the far ones are unchanged
    sds = [0.4] * 94 + [6.0] * 6
    slowed, others = _run(sds[::-1], 0.0, seed=seed)  # the first case is one of the far ones
    assert not {Verdict.REGRESSED, Verdict.IMPROVED} & {slowed, *others}


def test_one_case_far_out_keeps_the_prior_weak() -> None:
    rng = np.random.default_rng(0)
    draws = [*rng.normal(0.0, 0.005, 99), 0.08]
    prior = offset_prior(draws)
    assert prior is not None and prior.dof <= 3
    assert offset_prior(draws[:99]) is not None and offset_prior(draws[:99]).dof >= 64  # type: ignore[union-attr]


def test_under_min_cases_draws_give_no_prior() -> None:
    assert offset_prior([0.01, -0.02, 0.005] * 3) is None


@pytest.mark.parametrize("d0", [2, 8, 32])
def test_the_prior_recovers_d0_and_s0_from_the_model_it_assumes(d0: int) -> None:
    # offsets' variances scaled inverse chi^2 (s0^2 = 1e-4, d0 dof), one draw per case: d^2 / s0^2 ~ F(1, d0)
    rng = np.random.default_rng(d0)
    var = 1e-4 * d0 / rng.chisquare(d0, 4000)
    prior = offset_prior(rng.normal(0.0, np.sqrt(var)))
    assert prior is not None
    assert PRIOR_DOFS.index(prior.dof) in range(PRIOR_DOFS.index(d0) - 2, PRIOR_DOFS.index(d0) + 3)
    assert 0.5e-4 < prior.var_log < 2e-4  # one grid step of d0 moves s0^2 by up to 1.5x


@pytest.mark.parametrize("d0", [1, 3, 12, 1000])
def test_f_1_d0_quantiles_are_t_quantiles_squared(d0: int) -> None:
    for p in (0.5, 0.9):
        assert t_quantile(0.5 + p / 2, d0) ** 2 == pytest.approx(stats.f.ppf(p, 1, d0), rel=1e-6)
