"""`perfgate bisect` (perfgate/ab/bisect.py) on small git histories whose commits declare their times."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from perfgate.ab.bisect import StepResult, bisect
from perfgate.ab.protocol import AbError
from perfgate.ab.run import AbOutcome
from perfgate.model import Comparison, Direction, GateResult, Verdict
from tests.ab_repo import cases, commit, make_repo, request


def _history(repo, slow_at: int, n: int = 16) -> list[str]:
    """GOOD, then n commits; from commit `slow_at` on, case b is 30% slower."""
    shas = [commit(repo, cases({"a": 1.0, "b": 2.0}), "good")]
    for i in range(1, n + 1):
        b = 2.6 if i >= slow_at else 2.0
        shas.append(commit(repo, cases({"a": 1.0, "b": b}), f"change {i}"))
    return shas


def test_bisect_names_the_commit_that_slowed_a_case_by_30_percent_in_five_steps(tmp_path):
    repo = make_repo(tmp_path / "repo")
    shas = _history(repo, slow_at=11)
    lines: list[str] = []
    found = bisect(request(repo, shas[0], tmp_path), shas[0], shas[-1], progress=lines.append)
    assert found.first_bad == shas[11]
    assert len(found.steps) <= 5 and len(lines) == len(found.steps)
    decisive = next(s for s in found.steps if s.commit == shas[11])
    assert decisive.case_id.endswith("::b") and decisive.ratio == pytest.approx(1.3, abs=0.02)
    summary = found.summary()[-1]
    assert summary.startswith(f"perfgate bisect: first bad commit {shas[11]} (change 11): test_perf.py::b ratio 1.3")


def _fake(verdicts: dict[str, str]):
    """A measurement that answers from a table: commit -> 'bad' | 'good' | 'crash' | 'fail'."""

    def measure(sha: str) -> AbOutcome:
        what = verdicts[sha]
        if what == "crash":
            raise AbError("perfgate: A/B: head worker crashed (exit status 1) while collecting its tests: ImportError")
        verdict = Verdict.REGRESSED if what == "bad" else Verdict.UNCHANGED
        row = Comparison(
            "t::b",
            "median_ms",
            "ms",
            Direction.LOWER,
            verdict,
            baseline=2.0,
            current=2.6,
            change_pct=30.0 if what == "bad" else 0.1,
            ci_low_pct=29.0,
            ci_high_pct=31.0,
            threshold_pct=1.0,
        )
        gate = GateResult((row,))
        run = SimpleNamespace()
        return AbOutcome(gate, run, run, (), 0, head_tests_failed=what == "fail")  # type: ignore[arg-type]

    return measure


def test_commits_that_do_not_build_or_fail_their_tests_are_skipped_like_git_bisect_skip(tmp_path):
    repo = make_repo(tmp_path / "repo")
    shas = _history(repo, slow_at=6, n=8)
    table = {s: ("bad" if i >= 6 else "good") for i, s in enumerate(shas)}
    table[shas[4]], table[shas[3]] = "crash", "fail"  # the first probe does not build, the next fails its tests
    found = bisect(request(repo, shas[0], tmp_path), shas[0], shas[-1], measure=_fake(table))
    assert found.first_bad == shas[6]
    skipped = {s.commit: s.why for s in found.steps if s.result is StepResult.SKIP}
    assert set(skipped) == {shas[3], shas[4]}
    assert "ImportError" in skipped[shas[4]] and "tests failed" in skipped[shas[3]]


def test_when_only_skipped_commits_separate_good_from_bad_the_range_is_the_answer(tmp_path):
    repo = make_repo(tmp_path / "repo")
    shas = _history(repo, slow_at=3, n=4)
    table = {shas[1]: "good", shas[2]: "crash", shas[3]: "bad", shas[4]: "bad"}
    found = bisect(request(repo, shas[0], tmp_path), shas[0], shas[-1], measure=_fake(table))
    assert found.first_bad is None and found.candidates == (shas[2], shas[3])
    assert "is one of" in found.summary()[-1]


def test_bisect_says_which_commit_it_measures_before_each_step_ends(tmp_path):
    repo = make_repo(tmp_path / "repo")
    shas = _history(repo, slow_at=6, n=8)
    events: list[str] = []
    fake = _fake({s: ("bad" if i >= 6 else "good") for i, s in enumerate(shas)})

    def measure(sha):
        events.append(f"measured {sha[:12]}")
        return fake(sha)

    found = bisect(
        request(repo, shas[0], tmp_path),
        shas[0],
        shas[-1],
        measure=measure,
        progress=lambda line: events.append("line"),
        measuring=events.append,
    )
    assert len(events) == 3 * len(found.steps)
    for n, step in enumerate(found.steps):
        starts, measured, line = events[3 * n : 3 * n + 3]
        assert starts == f"step {n + 1}: measuring {step.commit[:12]} against {shas[0][:12]}"
        assert (measured, line) == (f"measured {step.commit[:12]}", "line")


def test_a_bad_end_that_is_not_slower_stops_before_bisecting(tmp_path):
    repo = make_repo(tmp_path / "repo")
    shas = _history(repo, slow_at=99, n=4)
    found = bisect(request(repo, shas[0], tmp_path), shas[0], shas[-1], measure=_fake(dict.fromkeys(shas, "good")))
    assert found.first_bad is None and len(found.steps) == 1
    assert "is not slower than" in found.summary()[-1]


def test_good_must_be_an_ancestor_of_bad(tmp_path):
    repo = make_repo(tmp_path / "repo")
    shas = _history(repo, slow_at=2, n=2)
    with pytest.raises(AbError, match="is not an ancestor of"):
        bisect(request(repo, shas[2], tmp_path), shas[2], shas[0], measure=_fake({}))
