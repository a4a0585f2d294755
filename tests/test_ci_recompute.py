"""`perfgate ci verdict` (and every reader of results files) recomputes what a results file's numbers decide and
refuses a verdict they contradict: one line naming the file, exit status 4 (issue 32, requirement 5).

The files are the gate's own (gate/run.py's evaluate on a calibrated baseline, results_document), then edited
as a pull request's code could edit them before the trusted job reads them."""

from __future__ import annotations

import contextlib
import copy
import io
import json
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from perfgate.cli import main
from perfgate.config.settings import Settings
from perfgate.gate.findings import GateFacts
from perfgate.gate.run import evaluate
from perfgate.report.json_out import results_document
from tests.helpers import calibrated_of, make_run, noisy

SLOW, STEADY = "t.py::test_slow", "t.py::test_steady"


def run_cli(*argv: object) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def gate_document(tmp_path: Path, factor: float = 10.0, strict: bool = True, confirm_runs: int = 0) -> dict[str, Any]:
    """What the gate writes for a run where test_slow takes `factor` times its calibrated time."""
    base_run = make_run({SLOW: noisy(2.0, seed=1), STEADY: noisy(1.0, seed=2)})
    baseline = calibrated_of(base_run, tmp_path)
    run = make_run({SLOW: noisy(2.0 * factor, seed=3), STEADY: noisy(1.0, seed=4)})
    gate = evaluate(run, baseline, Settings(strict=strict, confirm_runs=confirm_runs), GateFacts())
    return results_document(gate, run)


def write(tmp_path: Path, doc: dict[str, Any]) -> Path:
    path = tmp_path / "perfgate.json"
    path.write_text(json.dumps(doc))
    return path


def slow_row(doc: dict[str, Any]) -> dict[str, Any]:
    return next(r for r in doc["comparisons"] if r["case_id"] == SLOW and r["metric"] == "median_ms")


def passed(doc: dict[str, Any]) -> dict[str, Any]:
    """The edits that make a failed gate say it passed: the verdict, the headline, the findings."""
    doc = copy.deepcopy(doc)
    slow_row(doc)["verdict"] = "unchanged"
    doc["gate"].update(failed=False, failure_reasons=[])
    doc["findings"] = [f for f in doc["findings"] if f["case_id"] != SLOW]
    return doc


def refused_as_contradiction(path: Path) -> str:
    code, out, err = run_cli("ci", "verdict", path)
    assert code == 4 and not out and len(err.strip().splitlines()) == 1, (code, out, err)
    assert str(path) in err and "contradicts its own numbers" in err
    return err


def test_the_gates_own_file_passes_the_recheck_and_fails_the_verdict(tmp_path):
    doc = gate_document(tmp_path)
    row = slow_row(doc)
    assert row["verdict"] == "regressed" and row["change_pct"] > 800
    assert run_cli("ci", "verdict", write(tmp_path, doc))[0] == 1


def test_a_regressed_verdict_flipped_to_unchanged_at_plus_900_pct_is_refused_with_exit_4(tmp_path):
    """The issue's file: +900% against a threshold of a few percent, the verdict alone edited."""
    doc = passed(gate_document(tmp_path, strict=False))
    row = slow_row(doc)
    assert row["threshold_pct"] < 5 and row["change_pct"] > 800
    err = refused_as_contradiction(write(tmp_path, doc))
    assert "unchanged with a change of +8" in err and "threshold of" in err


def test_a_flipped_verdict_with_a_widened_interval_is_still_refused_by_its_noise(tmp_path):
    doc = passed(gate_document(tmp_path, strict=False))
    slow_row(doc).update(ci_low_pct=-5000.0, ci_high_pct=5000.0)
    assert "noise band of at most" in refused_as_contradiction(write(tmp_path, doc))


def test_a_change_edited_away_from_its_baseline_and_current_is_refused(tmp_path):
    doc = passed(gate_document(tmp_path, strict=False))
    slow_row(doc).update(change_pct=0.5, ci_low_pct=0.0, ci_high_pct=1.0)
    assert "where baseline" in refused_as_contradiction(write(tmp_path, doc))


def test_a_current_time_edited_away_from_the_cases_own_processes_is_refused(tmp_path):
    doc = passed(gate_document(tmp_path, strict=False))
    row = slow_row(doc)
    row.update(current=row["baseline"], change_pct=0.0, ci_low_pct=-1.0, ci_high_pct=1.0)
    assert "process value(s) make" in refused_as_contradiction(write(tmp_path, doc))


def test_a_strict_file_made_consistent_everywhere_but_the_ceiling_is_refused(tmp_path):
    """Threshold, noise and interval all raised to excuse the change: no setting lets a process 10x slower pass
    a strict gate without its `beyond the ceiling` finding."""
    doc = passed(gate_document(tmp_path, strict=True))
    slow_row(doc).update(threshold_pct=5000.0, noise_pct=3000.0, ci_low_pct=-5000.0, ci_high_pct=7000.0)
    assert "beyond every ceiling" in refused_as_contradiction(write(tmp_path, doc))


def test_a_regressed_verdict_below_its_threshold_is_refused(tmp_path):
    doc = gate_document(tmp_path, factor=1.0, strict=False)
    row = next(r for r in doc["comparisons"] if r["case_id"] == STEADY)
    row["verdict"] = "regressed"
    row["change_pct"] = abs(row["change_pct"])
    row["current"] = row["baseline"] * (1 + row["change_pct"] / 100)
    assert "regressed with a change of" in refused_as_contradiction(write(tmp_path, doc))


def test_an_ab_files_flipped_ratio_verdict_is_refused(tmp_path):
    doc = gate_document(tmp_path, factor=1.0, strict=False)
    doc["ab"] = {"base": "main", "head": "pr", "rounds": 30}
    row = slow_row(doc)  # A/B: ratio +900% [+850, +950] against a 2% threshold, called unchanged
    row.update(verdict="unchanged", change_pct=900.0, ci_low_pct=850.0, ci_high_pct=950.0, threshold_pct=2.0)
    assert "unchanged with a change of +900%" in refused_as_contradiction(write(tmp_path, doc))
    row.update(ci_low_pct=-90.0, ci_high_pct=9000.0, verdict="inconclusive")
    assert run_cli("ci", "verdict", write(tmp_path, doc))[0] == 0  # inconclusive: a call the rule can make


@pytest.mark.parametrize("command", ["annotate", "comment"])
def test_every_reader_of_results_files_refuses_the_contradiction(tmp_path, monkeypatch, command):
    path = write(tmp_path, passed(gate_document(tmp_path, strict=False)))
    monkeypatch.setenv("GITHUB_TOKEN", "t")
    extra = ["--results", path, "--repo", "o/r", "--pr", "1"] if command == "comment" else [path]
    code, _, err = run_cli("ci", command, *extra)
    assert code == 4 and "contradicts its own numbers" in err


def test_no_file_the_gate_writes_is_refused(tmp_path):
    """Over many runs (noise, slowdowns from none to 12x, confirmation processes, strict or not), the recheck
    accepts every file the gate itself wrote: it recomputes the gate's rule, it does not add one."""
    from perfgate.ci.results import read_checked_results
    from tests.helpers import case

    rng = random.Random(7)
    for i in range(60):
        base_run = make_run({SLOW: noisy(2.0, seed=i), STEADY: noisy(1.0, seed=i + 1)})
        spread = tuple(1 + rng.gauss(0, rng.choice([0.001, 0.01, 0.05])) for _ in range(rng.randint(3, 8)))
        baseline = calibrated_of(base_run, tmp_path, spread)
        factor = rng.choice([1.0, 1.01, 1.03, 1.1, 1.5, 2.5, 12.0])
        confirmations = tuple(2.0 * factor * (1 + rng.gauss(0, 0.01)) for _ in range(rng.randint(0, 2)))
        slow = replace(case(SLOW, noisy(2.0 * factor, seed=i + 2)), confirmation_medians_ms=confirmations)
        run = replace(base_run, results=(slow, case(STEADY, noisy(1.0, seed=i + 3))))
        settings = Settings(strict=rng.random() < 0.5, confirm_runs=len(confirmations))
        doc = results_document(evaluate(run, baseline, settings, GateFacts()), run)
        read_checked_results(write(tmp_path, json.loads(json.dumps(doc))))


def test_the_ceiling_the_recheck_assumes_is_the_highest_a_setting_allows():
    from perfgate.ci.recompute import HIGHEST_CEILING_PCT
    from perfgate.config.validate import CEILING
    from perfgate.errors import ConfigError

    assert CEILING(HIGHEST_CEILING_PCT, "ceiling_pct") == HIGHEST_CEILING_PCT
    with pytest.raises(ConfigError):
        CEILING(HIGHEST_CEILING_PCT + 1e-9, "ceiling_pct")
