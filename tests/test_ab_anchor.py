"""Anchor runs (issue 31, requirement 3): `perfgate ab --anchor` measures the head against the commit the baseline
was calibrated at, through the one A/B pipeline, reports each case's cumulative change since, and is stored as
an A/B pair marked as an anchor run. Stand-in workers (tests/ab_repo.py): no GPU, no clock."""

from __future__ import annotations

import json
import sqlite3
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from perfgate.ab.anchor import calibration_update, resolve_anchor
from perfgate.ab.protocol import AbError
from perfgate.ab.run import run_ab
from perfgate.baseline import load_baseline
from perfgate.cli import main
from perfgate.model import Verdict
from perfgate.store import open_store
from perfgate.store.ab_pairs import ab_comparisons
from tests.ab_repo import cases, commit, git, make_repo, request

A, B = "test_perf.py::a", "test_perf.py::b"


def write_baseline(repo: Path, updates: list[dict[str, object]]) -> Path:
    """A baseline with the given update log (its cases matter not: an anchor run reads only the log)."""
    path = repo / "baselines" / "stand-in-gpu.json"
    path.parent.mkdir(exist_ok=True)
    case = {"median_ms": 1.0, "samples_ms": [1.0, 1.0], "process_medians_ms": [1.0, 1.0, 1.0]}
    doc = {
        "format": "perfgate-baseline",
        "version": 2,
        "environment": {"device_kind": "cuda", "device_name": "Stand-in GPU"},
        "updates": updates,
        "cases": {A: case, B: case},
    }
    path.write_text(json.dumps(doc))
    return path


def calibrated(commit_sha: str, at: str = "2026-11-20T08:00:00+00:00", runs: int = 6) -> dict[str, object]:
    return {"at": at, "by": "ci", "commit": commit_sha, "reason": "calibrate", "cases": 2, "calibrated_runs": runs}


@pytest.fixture
def project(tmp_path):
    """Calibrated at commit A; then the baseline committed, `a` made 30% slower, an unrelated commit."""
    repo = make_repo(tmp_path / "repo")
    anchor = commit(repo, cases({"a": 1.0, "b": 2.0}), "A: calibrated here")
    write_baseline(repo, [calibrated(anchor)])
    git(repo, "add", "baselines")
    commit(repo, cases({"a": 1.0, "b": 2.0}), "the baseline")
    commit(repo, cases({"a": 1.3, "b": 2.0}), "a: slower")
    commit(repo, cases({"a": 1.3, "b": 2.0}), "docs: unrelated")
    return repo, anchor


def anchor_request(repo: Path, tmp: Path):
    return replace(request(repo, "", tmp), anchor=True)


def test_an_anchor_run_measures_the_head_against_the_calibration_commit_and_calls_the_slowed_case(project, tmp_path):
    repo, anchor = project
    outcome = run_ab(anchor_request(repo, tmp_path))
    assert outcome.base_run.info.git_commit == anchor
    assert outcome.head_run.info.git_commit == git(repo, "rev-parse", "HEAD")
    verdicts = {case: d.verdict for (case, metric), d in outcome.decisions.items() if metric == "median_ms"}
    assert verdicts == {A: Verdict.REGRESSED, B: Verdict.UNCHANGED}
    assert outcome.exit_code == 1


def test_the_report_says_the_ratios_are_the_cumulative_change_since_the_calibration(project, tmp_path):
    repo, anchor = project
    outcome = run_ab(anchor_request(repo, tmp_path))
    said = "\n".join(outcome.lines)
    assert f"calibration commit {anchor[:12]}" in said and "3 commit(s) before the head" in said
    label = f"(stand-in-gpu.json, calibrated 2026-11-20 at {anchor[:12]})"
    assert f"cumulative change per case since the baseline's calibration {label}" in said
    row_a = next(line for line in outcome.terminal if line.lstrip().startswith(A))
    row_b = next(line for line in outcome.terminal if line.lstrip().startswith(B))
    assert "1.30" in row_a and "REGRESSED" in row_a  # the ratio with its interval, the call
    assert "1.00" in row_b and "unchanged" in row_b
    assert f"perfgate bisect {anchor[:12]} HEAD -k 'a'" in said  # the commit that did it, found by one command
    # the baseline was written by the calibration, after its commit: an anchor run's base never holds it
    assert "baseline changed since the base ref" not in said


def test_the_markdown_summary_and_json_name_the_anchor(project, tmp_path):
    repo, anchor = project
    summary, doc = tmp_path / "anchor.md", tmp_path / "anchor.json"
    run_ab(
        replace(
            anchor_request(repo, tmp_path),
            settings=replace(anchor_request(repo, tmp_path).settings, summary_path=summary, json_path=doc),
        )
    )
    text = summary.read_text()
    assert text.startswith("## ❌ perfgate anchor run") and "Cumulative change since the baseline's calibration" in text
    assert anchor[:12] in text and "| `test_perf.py::a` |" in text
    assert json.loads(doc.read_text())["ab"]["anchor"].endswith(anchor[:12])


def test_an_anchor_run_is_stored_as_an_ab_pair_marked_as_anchor_and_listed_over_time(project, tmp_path):
    repo, anchor = project
    run_ab(anchor_request(repo, tmp_path))
    run_ab(request(repo, "HEAD~1", tmp_path))  # an ordinary A/B run: not an anchor run
    with sqlite3.connect(tmp_path / "history.db") as con:
        rows = con.execute("SELECT kind, ab_anchor, git_commit FROM runs ORDER BY id").fetchall()
    assert [(k, a) for k, a, _ in rows] == [("ab-base", 1), ("ab-head", 1), ("ab-base", None), ("ab-head", None)]
    with open_store(tmp_path / "history.db", readonly=True) as store:
        every = ab_comparisons(store, 10)
        anchored = ab_comparisons(store, 10, anchor_only=True)
        back = store.load_run(1)
    assert [r.anchor for r in every] == [True, False]
    assert [(r.base_commit, r.gate) for r in anchored] == [(anchor, "failed")]
    assert back.info.ab_anchor and back.info.git_commit == anchor


def test_history_kind_anchor_lists_only_anchor_runs(project, tmp_path, capsys):
    repo, _ = project
    run_ab(anchor_request(repo, tmp_path))
    run_ab(request(repo, "HEAD~1", tmp_path))
    capsys.readouterr()
    assert main(["history", "--db", str(tmp_path / "history.db"), "--kind", "anchor", "--format", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [r["run_id"] for r in listed] == [1, 2]


def test_the_anchor_is_the_latest_calibration_with_a_commit(tmp_path):
    path = write_baseline(
        make_repo(tmp_path / "r"),
        [
            calibrated("1" * 40, "2026-10-01T00:00:00+00:00"),
            calibrated("2" * 40, "2026-11-01T00:00:00+00:00"),
            {"at": "2026-11-02T00:00:00+00:00", "by": "x", "commit": "3" * 40, "reason": "update", "cases": 1},
            calibrated("", "2026-11-03T00:00:00+00:00"),  # no commit recorded: cannot anchor
        ],
    )
    baseline = load_baseline(path)
    assert baseline is not None
    found = calibration_update(baseline)
    assert found is not None and found.commit == "2" * 40


def test_a_later_update_without_calibration_is_said(project, tmp_path):
    repo, anchor = project
    write_baseline(
        repo, [calibrated(anchor), {"at": "2026-11-21", "by": "x", "commit": anchor, "reason": "u", "cases": 1}]
    )
    lines = "\n".join(run_ab(anchor_request(repo, tmp_path)).messages)
    assert "1 later update(s) of stand-in-gpu.json changed cases without calibrating" in lines


def test_a_baseline_without_a_calibration_commit_is_one_clear_line(tmp_path):
    repo = make_repo(tmp_path / "repo")
    commit(repo, cases({"a": 1.0}), "first")
    path = write_baseline(repo, [{"at": "2026-11-01", "by": "x", "commit": "", "reason": "first run", "cases": 2}])
    with pytest.raises(AbError, match=f"{path} records no calibration commit") as err:
        run_ab(anchor_request(repo, tmp_path))
    assert "\n" not in str(err.value)


def test_no_baseline_at_all_is_one_clear_line(tmp_path):
    repo = make_repo(tmp_path / "repo")
    commit(repo, cases({"a": 1.0}), "first")
    with pytest.raises(AbError, match="no baseline in .*run perfgate calibrate first"):
        run_ab(anchor_request(repo, tmp_path))


def test_several_baselines_need_one_named(project, tmp_path):
    repo, _ = project
    (repo / "baselines" / "other-gpu.json").write_text("{}")
    with pytest.raises(AbError, match="holds 2 baselines .*name this device's with --baseline-file"):
        run_ab(anchor_request(repo, tmp_path))
    named = replace(request(repo, "", tmp_path, baseline_file=repo / "baselines" / "stand-in-gpu.json"), anchor=True)
    assert resolve_anchor(named.settings, repo).commit == git(repo, "rev-parse", "HEAD~3")


def test_a_calibration_commit_missing_from_the_repository_is_one_clear_line(tmp_path):
    repo = make_repo(tmp_path / "repo")
    commit(repo, cases({"a": 1.0}), "first")
    write_baseline(repo, [calibrated("f" * 40)])
    with pytest.raises(AbError, match=r"calibration commit ffffffffffff of .* is not in this repository .*git fetch"):
        run_ab(anchor_request(repo, tmp_path))


def test_a_shallow_clone_is_told_to_fetch_the_whole_history(project, tmp_path):
    repo, _ = project
    shallow = tmp_path / "shallow"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "1", f"file://{repo}", str(shallow)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    with pytest.raises(AbError, match=r"is not in this shallow clone: .*fetch-depth: 0"):
        run_ab(replace(request(shallow, "", tmp_path), anchor=True))


@pytest.mark.parametrize("argv", [["ab"], ["ab", "main", "--anchor"]])
def test_ab_needs_a_ref_or_anchor_not_both(argv, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert "name the base: a REF, or --anchor" in capsys.readouterr().err


def test_a_calibration_on_a_tree_with_uncommitted_changes_is_recorded_and_said(project, tmp_path):
    from perfgate.baseline.write import calibrated_baseline, render_baseline
    from perfgate.config.settings import Settings
    from tests.helpers import make_run, noisy

    clean = [make_run({A: noisy(1.0, seed=i)}) for i in range(3)]
    dirty = [*clean[:2], replace(clean[2], info=replace(clean[2].info, git_dirty=True))]
    settings = Settings(enabled=True)
    assert '"dirty"' not in render_baseline(calibrated_baseline(None, clean, tmp_path / "b.json", "me", "r", settings))
    text = render_baseline(calibrated_baseline(None, dirty, tmp_path / "b.json", "me", "r", settings))
    assert '"dirty": true' in text
    repo, anchor = project
    write_baseline(repo, [{**calibrated(anchor), "dirty": True}])
    said = "\n".join(run_ab(anchor_request(repo, tmp_path)).messages)
    assert f"the calibration ran on a tree with uncommitted changes: commit {anchor[:12]} is not exactly" in said


def test_the_calibration_an_anchor_needs_outlives_the_update_log_trim():
    from perfgate.baseline import MAX_UPDATES_KEPT, Update
    from perfgate.baseline.write import kept_updates

    calibration = Update("2026-01-01", "ci", "a" * 40, "calibrate", 2, calibrated_runs=6)
    later = tuple(Update(f"2026-02-{i:02d}", "x", "b" * 40, f"update {i}", 1) for i in range(1, 26))
    kept = kept_updates((calibration, *later))
    assert len(kept) == MAX_UPDATES_KEPT and kept[0] == calibration and kept[-1] == later[-1]
    recalibrated = Update("2026-03-01", "ci", "c" * 40, "calibrate", 2, calibrated_runs=6)
    assert kept_updates((calibration, *later, recalibrated))[0] == later[-(MAX_UPDATES_KEPT - 1)]  # plain trim


def test_the_anchor_runs_head_records_the_branch_it_measured_and_the_base_none(project, tmp_path, capsys):
    repo, anchor = project  # on `main`: the nightly workflow checks the default branch out by name
    run_ab(anchor_request(repo, tmp_path))
    with sqlite3.connect(tmp_path / "history.db") as con:
        rows = con.execute("SELECT kind, git_branch FROM runs ORDER BY id").fetchall()
    assert rows == [("ab-base", ""), ("ab-head", "main")]  # the base is a commit (the calibration's), no branch
    capsys.readouterr()
    assert main(["history", "--db", str(tmp_path / "history.db"), "--kind", "anchor", "--format", "json"]) == 0
    assert [r["git_branch"] for r in json.loads(capsys.readouterr().out)] == ["", "main"]


def test_a_detached_head_records_no_branch(project, tmp_path):
    repo, _ = project
    git(repo, "checkout", "-q", "--detach", "HEAD")  # a pull request's checkout of one commit
    outcome = run_ab(anchor_request(repo, tmp_path))
    assert outcome.head_run.info.git_branch == ""
