"""`perfgate baseline reanchor` (baseline/reanchor.py): the centres move onto the recent runs' level only where
those runs show a common shift, by the gate's own test; runs that did not move leave the baseline as it is
(an outside review, issue 31: a re-anchor on unchanged runs moved every centre by a median of noise)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from perfgate.baseline import Baseline, Update, load_baseline
from perfgate.baseline.reanchor import MIN_RUNS, reanchored
from perfgate.cli import main
from tests.helpers import ENV, calibrated_of, load_script, make_run, noisy

CASES = [f"k.py::test_{i}" for i in range(10)]
SPREAD = (0.994, 1.0, 1.006, 0.998, 1.002, 1.0, 0.996, 1.004, 0.999, 1.001)  # ten processes, ~0.4% apart
UPDATE = Update(at="2026-11-29T00:00:00+00:00", by="ci", commit="abc", reason="driver 555", cases=0)


def baseline(tmp_path: Path, cases: list[str] = CASES) -> Baseline:
    return calibrated_of(make_run({cid: noisy(1.0, seed=i) for i, cid in enumerate(cases)}), tmp_path, SPREAD)


def recent(base: Baseline, factor: float, runs: int = 5, seed: int = 7) -> dict[str, list[float]]:
    """Each case's last `runs` passing runs: processes like its calibration's (drawn from them), times `factor`."""
    rng = random.Random(seed)
    return {cid: [factor * rng.choice(c.time_values()) for _ in range(runs)] for cid, c in base.cases.items()}


def test_unchanged_runs_move_no_centre(tmp_path):
    base = baseline(tmp_path)
    for seed in range(20):  # whatever the draw: runs like the calibration's show no shift
        result = reanchored(base, recent(base, 1.0, seed=seed), ENV, UPDATE)
        assert result is not None and not result.moved and result.shift is None
        assert result.baseline is base and result.cases == len(CASES)


def test_a_three_percent_shift_moves_every_centre_by_it(tmp_path):
    base = baseline(tmp_path)
    result = reanchored(base, recent(base, 1.03), ENV, UPDATE)
    assert result is not None and result.moved and result.shift is not None
    assert result.factor == pytest.approx(1.03, abs=0.003)
    for cid, case in result.baseline.cases.items():
        assert case.process_medians_ms == pytest.approx([v * result.factor for v in base.cases[cid].process_medians_ms])


def test_force_moves_the_centres_without_a_shift(tmp_path):
    base = baseline(tmp_path)
    result = reanchored(base, recent(base, 1.0), ENV, UPDATE, force=True)
    assert result is not None and result.moved and result.shift is None
    assert result.baseline is not base and result.baseline.updates[-1].reason == "driver 555"


def test_too_few_cases_to_tell_a_shift_move_nothing_unless_forced(tmp_path):
    base = baseline(tmp_path, CASES[:4])
    result = reanchored(base, recent(base, 1.03), ENV, UPDATE)
    assert result is not None and not result.moved and result.cases == 4
    forced = reanchored(base, recent(base, 1.03), ENV, UPDATE, force=True)
    assert forced is not None and forced.moved and forced.factor == pytest.approx(1.03, abs=0.003)


def test_runs_below_the_minimum_are_refused_in_one_line_naming_the_minimum(tmp_path, capsys):
    path = tmp_path / "b.json"
    for runs in ("1", str(MIN_RUNS - 1)):
        with pytest.raises(SystemExit) as exc:
            main(["baseline", "reanchor", str(path), "--runs", runs])
        assert exc.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()[-1]
        assert f"--runs: must be an integer >= {MIN_RUNS}" in err
    assert not path.exists()


@pytest.fixture(scope="module")
def bench():
    return load_script("replay_scenarios")


def _gated(bench, tmp_path: Path, scenario: str, runs: int):
    """A replica of `scenario` (scripts/replay_scenarios.py) calibrated, then gated `runs` runs into its history."""
    rep = bench.Replica(bench.SCENARIOS[scenario], 5, tmp_path, 10)
    rep.calibrate()
    with bench._Silence():
        for run in range(runs):
            rep.gate(run)
    return rep


def test_the_command_on_unchanged_runs_says_why_and_writes_nothing(bench, tmp_path, capsys):
    rep = _gated(bench, tmp_path, "process state over time (20% +2%)", 6)
    before = rep.path.read_bytes()
    capsys.readouterr()
    rep.reanchor()
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1 and "no common shift: its 10 case(s) did not move together beyond chance" in out[0]
    assert "nothing moved, nothing written (--force moves the centres anyway)" in out[0]
    assert rep.path.read_bytes() == before


def test_the_command_after_a_driver_update_moves_the_centres(bench, tmp_path, capsys):
    rep = _gated(bench, tmp_path, "driver update (+3% every case)", 16)  # its update at run 10
    before = load_baseline(rep.path)
    capsys.readouterr()
    rep.reanchor()
    assert "perfgate: re-anchored 10 case(s)" in capsys.readouterr().out
    after = load_baseline(rep.path)
    assert after.updates[-1].calibrated_runs == 0 and len(after.updates) == len(before.updates) + 1
