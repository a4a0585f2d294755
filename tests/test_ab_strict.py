"""Strict A/B fails what strict baseline mode fails (issue 30, requirement 2), with stand-in workers whose
times each commit declares (tests/ab_standin.py): a base case the head does not measure (renamed, deleted,
skipped) unless the base's own [tool.perfgate] allows it; a [tool.perfgate] or baseline that differs from
the base commit's without the pull request saying so; a case beyond `ceiling_pct` in any pair of processes.

Each of these passed strict A/B before the A/B pipeline was routed through gate/run.py's tail (written
first and seen failing: the renamed and deleted case ended "1 new, 1 removed" and exit 0; min_effect_pct
= 50 let a 1.45x slowdown pass; a first pair ten times slower and a calm fresh pair ended inconclusive).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from perfgate.ab.run import run_ab
from perfgate.model import FindingKind, Verdict
from tests.ab_repo import cases, commit, git, make_repo, request

TIMES = {"a": 1.0, "b": 2.0}


def _strict(repo: Path, ref: str, tmp_path: Path, **settings: object):
    req = request(repo, ref, tmp_path, **settings)
    return run_ab(replace(req, settings=replace(req.settings, strict=True)))


def _kinds(outcome) -> set[FindingKind]:
    return {f.kind for f in outcome.gate.findings if f.fails_strict}


def _pyproject(repo: Path, text: str) -> None:
    (repo / "pyproject.toml").write_text(text)
    git(repo, "add", "pyproject.toml")


@pytest.fixture
def repo(tmp_path):
    repo = make_repo(tmp_path / "repo")
    commit(repo, cases(TIMES), "base")
    return repo


@pytest.mark.parametrize(
    "head",
    [
        pytest.param({"a_renamed": 10.0, "b": 2.0}, id="renamed and ten times slower"),
        pytest.param({"b": 2.0}, id="deleted"),
    ],
)
def test_a_base_case_the_head_does_not_measure_fails_strict_ab(repo, tmp_path, head):
    commit(repo, cases(head), "head: test a renamed or deleted")
    outcome = _strict(repo, "HEAD~1", tmp_path)
    assert outcome.exit_code == 1 and outcome.gate.failed
    found = next(f for f in outcome.gate.findings if f.kind is FindingKind.NOT_MEASURED)
    assert "test_perf.py::a" in found.message and "allow_missing" in found.message
    lenient = run_ab(request(repo, "HEAD~1", tmp_path))
    assert lenient.exit_code == 0  # without strict: a warning


def test_a_base_case_skipped_in_the_head_fails_strict_ab(repo, tmp_path):
    commit(repo, cases(TIMES, skips={"test_perf.py::a": "not today"}), "head: a skips")
    outcome = _strict(repo, "HEAD~1", tmp_path)
    assert outcome.exit_code == 1 and FindingKind.TEST_SKIPPED in _kinds(outcome)


def test_the_bases_own_allow_missing_lets_a_case_go_and_the_heads_does_not(repo, tmp_path):
    allow = '[tool.perfgate]\nallow_missing = [{pattern = "*::a", reason = "retired in #12"}]\n'
    _pyproject(repo, allow)
    commit(repo, cases(TIMES), "base: a may be missing")
    commit(repo, cases({"b": 2.0}), "head: a deleted")
    allowed = _strict(repo, "HEAD~1", tmp_path)
    assert allowed.exit_code == 0, [f.message for f in allowed.gate.findings]
    assert any(f.kind is FindingKind.ALLOWED_MISSING and "retired in #12" in f.message for f in allowed.gate.findings)

    other = make_repo(tmp_path / "other")
    commit(other, cases(TIMES), "base: nothing may be missing")
    _pyproject(other, allow)  # the pull request allows itself to lose a
    commit(other, cases({"b": 2.0}), "head: a deleted, allowed by the head")
    outcome = _strict(other, "HEAD~1", tmp_path / "o")
    assert outcome.exit_code == 1
    assert {FindingKind.NOT_MEASURED, FindingKind.BASELINE_CHANGED} <= _kinds(outcome)


def test_the_prs_own_min_effect_pct_is_a_strict_finding_not_a_pass(repo, tmp_path):
    # min_effect_pct = 50 in the pull request's [tool.perfgate]: a 1.45x slowdown is then "no effect"
    _pyproject(repo, "[tool.perfgate]\nmin_effect_pct = 50\n")
    commit(repo, cases({"a": 1.45, "b": 2.0}), "head: a 45% slower, min_effect_pct raised")
    outcome = _strict(repo, "HEAD~1", tmp_path, min_effect_pct=50.0)
    assert outcome.exit_code == 1
    changed = next(f for f in outcome.gate.findings if f.kind is FindingKind.BASELINE_CHANGED)
    assert "min_effect_pct" in changed.message
    stated = _strict(repo, "HEAD~1", tmp_path, min_effect_pct=50.0, accept_baseline_change=True)
    assert FindingKind.BASELINE_CHANGED not in _kinds(stated)


def test_a_baseline_file_changed_by_the_pr_fails_strict_ab(repo, tmp_path):
    (repo / "baselines").mkdir()
    (repo / "baselines" / "host-stand-in-gpu.json").write_text("{}\n")
    git(repo, "add", "baselines")
    commit(repo, cases(TIMES), "head: a baseline file appears")
    outcome = _strict(repo, "HEAD~1", tmp_path)
    assert outcome.exit_code == 1 and FindingKind.BASELINE_CHANGED in _kinds(outcome)


@pytest.mark.parametrize("reference", [False, True], ids=["time", "time with a reference"])
def test_a_case_ten_times_slower_in_the_first_pair_fails_strict_ab_whatever_the_fresh_pair_says(
    repo, tmp_path, reference
):
    # The head's first process ten times slower (its reference too, where it has one: the speedup stays),
    # its fresh pair calm: the rule ends inconclusive, the ceiling fails it.
    extra = {"reference_ms": {"test_perf.py::a": 0.5}} if reference else {}
    base = commit(repo, cases(TIMES, **extra), "base")
    commit(repo, cases(TIMES, first_process_offset_pct={"HEAD": 900.0}, **extra), "head: slow first process")
    outcome = _strict(repo, base, tmp_path)
    a = next(c for c in outcome.gate.comparisons if c.case_id.endswith("::a") and c.metric == "median_ms")
    assert a.verdict is not Verdict.REGRESSED  # the fresh pair did not repeat it
    ceiling = next(f for f in outcome.gate.findings if f.kind is FindingKind.BEYOND_CEILING)
    assert "test_perf.py::a" in ceiling.message and "pair" in ceiling.message
    assert outcome.exit_code == 1


def test_the_unchanged_head_still_passes_strict_ab(repo, tmp_path):
    commit(repo, cases(TIMES), "head: unchanged")
    outcome = _strict(repo, "HEAD~1", tmp_path)
    assert outcome.exit_code == 0, [f.message for f in outcome.gate.findings]
