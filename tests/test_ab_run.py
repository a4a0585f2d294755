"""A/B mode end to end with stand-in workers (tests/ab_standin.py): times are declared by each commit, so
verdicts, failures and caching are tested without a GPU and without reading a clock."""

from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import replace

import pytest

from perfgate.ab.coordinator import Coordinator
from perfgate.ab.protocol import AbError, Side
from perfgate.ab.rounds import RoundPlan
from perfgate.ab.run import run_ab
from perfgate.ab.setup import base_selection, check_pytest_args
from perfgate.ab.workers import Worker, WorkerSpec, stop_all
from perfgate.model import FindingKind, Verdict
from tests.ab_repo import StandinLauncher, cases, commit, make_repo, request

TIMES = {"a": 1.0, "b": 2.0, "c": 0.5}


@pytest.fixture
def repo(tmp_path):
    repo = make_repo(tmp_path / "repo")
    commit(repo, cases(TIMES), "base")
    return repo


def _verdicts(outcome, metric="median_ms"):
    return {c.case_id.split("::")[-1]: c.verdict for c in outcome.gate.comparisons if c.metric == metric}


def test_a_slower_case_regresses_new_and_removed_cases_are_reported_and_drift_cancels(repo, tmp_path):
    # 5% drift shared by each round of both sides: alternating sides cancels it in the ratio
    commit(repo, cases({"a": 1.3, "b": 2.0, "d": 0.7}, drift_pct=5.0), "head: a slower, c removed, d new")
    outcome = run_ab(
        replace(
            request(repo, "HEAD~1", tmp_path), settings=replace(request(repo, "HEAD~1", tmp_path).settings, strict=True)
        )
    )
    assert _verdicts(outcome) == {
        "a": Verdict.REGRESSED,
        "b": Verdict.UNCHANGED,
        "c": Verdict.MISSING,
        "d": Verdict.NEW,
    }
    a = next(c for c in outcome.gate.comparisons if c.case_id.endswith("::a"))
    assert a.change_pct == pytest.approx(30.0, abs=1.0) and a.ci_low_pct > 25 and "3 stages" in a.note
    assert outcome.exit_code == 1 and outcome.gate.failed
    text = "\n".join(outcome.lines)
    assert "REGRESSED" in text and "removed" in text and "perfgate: A/B cost: worktree" in text


def test_an_unchanged_head_passes_and_the_second_run_reuses_worktree_and_aa(repo, tmp_path):
    commit(repo, cases(TIMES, noise_pct=0.5), "head: unchanged")
    first = run_ab(request(repo, "HEAD~1", tmp_path))
    assert first.exit_code == 0 and set(_verdicts(first).values()) == {Verdict.UNCHANGED}
    assert dict(first.costs_s).get("A/A", 0) > 0  # the second base process measured the A/A
    second = run_ab(request(repo, "HEAD~1", tmp_path, seed=2))
    assert second.exit_code == 0 and "A/A" not in dict(second.costs_s)
    assert any("worktree reused" in line for line in second.messages)
    assert all("no A/A" not in c.note for c in second.gate.comparisons if c.metric == "median_ms")


def test_an_aa_head_process_faster_in_its_first_stage_is_not_called_improved(repo, tmp_path):
    # HEAD against HEAD's code, the head's worker 4% faster in its first 6 rounds of every case (a process
    # state, not the code): the first stage looks like an improvement, the confirmation stages do not.
    commit(repo, cases(TIMES, offset_pct={"HEAD": -4.0}, offset_rounds=6), "head: same code")
    outcome = run_ab(request(repo, "HEAD~1", tmp_path))
    assert Verdict.IMPROVED not in _verdicts(outcome).values()
    assert all(re.search(r"in [23] stages", c.note) for c in outcome.gate.comparisons if c.metric == "median_ms")


def test_a_real_five_percent_improvement_is_called_after_confirmation(repo, tmp_path):
    commit(repo, cases({**TIMES, "a": 0.95}), "head: a 5% faster")
    outcome = run_ab(request(repo, "HEAD~1", tmp_path))
    assert _verdicts(outcome) == {"a": Verdict.IMPROVED, "b": Verdict.UNCHANGED, "c": Verdict.UNCHANGED}
    a = next(c for c in outcome.gate.comparisons if c.case_id.endswith("::a"))
    assert a.change_pct == pytest.approx(-5.0, abs=0.5) and "3 stages" in a.note and outcome.exit_code == 0


def test_a_slowdown_below_what_a_case_can_call_is_inconclusive_and_its_finding_shows_what_was_tested(repo, tmp_path):
    # Every case 0.98% slower: beyond the screen, so measured over three stages, above its noise band and
    # within a band of the 1% minimum effect: inconclusive, and the finding says so in the numbers it tested.
    commit(repo, cases({k: v * 1.0098 for k, v in TIMES.items()}, noise_pct=0.2), "head: 0.98% slower")
    outcome = run_ab(request(repo, "HEAD~1", tmp_path))
    assert set(_verdicts(outcome).values()) == {Verdict.INCONCLUSIVE}
    texts = [f.message for f in outcome.gate.findings if f.kind is FindingKind.INCONCLUSIVE]
    assert len(texts) == len(TIMES)
    for text in texts:
        found = re.search(
            r"median_ms head/base ([+-][\d.]+)% over 3 stages is above its noise band \(([\d.]+)%\) but not "
            r"beyond what it can call \(([\d.]+)%\)",
            text,
        )
        assert found and float(found[2]) < float(found[1]) <= float(found[3]), text


def test_the_history_stores_both_sides_with_the_base_commit(repo, tmp_path):
    head_sha = commit(repo, cases(TIMES), "head, same times")  # HEAD~1 is the base commit
    outcome = run_ab(request(repo, "HEAD~1", tmp_path))
    with sqlite3.connect(tmp_path / "history.db") as con:
        rows = con.execute("SELECT git_commit, profile_settings FROM runs ORDER BY id").fetchall()
    base_commit = outcome.base_run.info.git_commit
    assert [r[0] for r in rows] == [base_commit, head_sha]
    assert f"head side, base {base_commit}" in rows[1][1] and "base side" in rows[0][1]


def test_rounds_alternate_the_sides_in_mirrored_random_pairs(repo, tmp_path):
    plan = RoundPlan(rounds=8, stages=1, timeout_s=60, seed=3)
    specs = [WorkerSpec(side, repo, repo, ()) for side in (Side.BASE, Side.HEAD, Side.AA)]
    workers = {s.side: Worker.start(s, StandinLauncher(), tmp_path / "logs") for s in specs}
    try:
        m = Coordinator(workers, plan, lambda case, m: False, lambda case_id: True).run()
    finally:
        stop_all(list(workers.values()))
    for case in m.cases:
        assert len(case.orders) == 8 and all(sorted(o) == sorted((Side.BASE, Side.HEAD, Side.AA)) for o in case.orders)
        assert all(case.orders[i + 1] == case.orders[i][::-1] for i in range(0, 8, 2))
    firsts = {case.orders[0] for case in m.cases} | {case.orders[2] for case in m.cases}
    assert len(firsts) > 1  # not the same order every time


def test_a_crashing_base_worker_is_one_line_naming_the_base_and_strict_mode_fails_closed(repo, tmp_path):
    spec = cases(TIMES, crash="round:test_perf.py::b")
    base = commit(repo, spec, "base crashes in b")
    commit(repo, cases(TIMES), "head")
    strict = request(repo, base, tmp_path)
    outcome = run_ab(replace(strict, settings=replace(strict.settings, strict=True)))
    finding = next(f for f in outcome.gate.findings if f.kind is FindingKind.NOT_COMPARABLE)
    assert finding.message.startswith(
        "perfgate: A/B: base worker crashed (exit status 139) while measuring a round "
        "of test_perf.py::b: Segmentation fault in test_perf.py::b (stand-in)"
    )
    assert outcome.failed and outcome.exit_code == 1
    assert not (tmp_path / "history.db").exists()  # nothing stored from an incomplete comparison
    lenient = run_ab(request(repo, base, tmp_path))
    assert lenient.exit_code == 0 and _verdicts(lenient) == {"a": Verdict.UNCHANGED}


def test_a_base_that_fails_to_import_is_named(repo, tmp_path):
    base = commit(repo, cases(TIMES, crash="collect"), "base does not import")
    commit(repo, cases(TIMES), "head")
    outcome = run_ab(request(repo, base, tmp_path))
    message = next(f.message for f in outcome.gate.findings if f.kind is FindingKind.NOT_COMPARABLE)
    assert "base worker crashed (exit status 1) while collecting its tests: ImportError: cannot import name" in message


def test_a_test_file_the_base_cannot_import_leaves_its_cases_not_comparable_not_new(repo, tmp_path):
    spec = {
        "tests": {"test_perf.py::a": {"test_perf.py::a": 1.0}, "test_more.py::b": {"test_more.py::b": 2.0}},
        "noise_pct": 0.3,
    }
    base = commit(
        repo,
        {**spec, "collect_errors": {"test_more.py": "ModuleNotFoundError: No module named 'x'"}},
        "base: test_more.py does not import",
    )
    commit(repo, spec, "head: fixed")
    req = request(repo, base, tmp_path)
    outcome = run_ab(replace(req, settings=replace(req.settings, strict=True)))
    b = next(c for c in outcome.gate.comparisons if c.case_id == "test_more.py::b")
    assert b.verdict is Verdict.NOT_COMPARABLE
    assert b.note == "base: test_more.py could not be collected: ModuleNotFoundError: No module named 'x'"
    assert _verdicts(outcome)["a"] is Verdict.UNCHANGED and outcome.exit_code == 1  # strict: fails closed


def test_a_hanging_worker_is_stopped_after_its_timeout(repo, tmp_path):
    commit(repo, cases(TIMES, hang="round:test_perf.py::a"), "head hangs in a")
    req = request(repo, "HEAD~1", tmp_path)
    outcome = run_ab(replace(req, settings=replace(req.settings, ab_timeout_s=2.0)))  # starting has its own
    message = next(f.message for f in outcome.gate.findings if f.kind is FindingKind.NOT_COMPARABLE)
    assert message.startswith(
        "perfgate: A/B: head worker hung: no answer in 2 s while measuring a round of test_perf.py::a (stopped it; log "
    )
    assert outcome.failed


def test_an_aa_worker_that_dies_is_dropped_and_the_comparison_goes_on(repo, tmp_path):
    base = commit(repo, cases(TIMES, crash="AA@round:test_perf.py::b"), "the A/A twin crashes in b")
    commit(repo, cases(TIMES), "head")
    outcome = run_ab(request(repo, base, tmp_path))
    assert outcome.exit_code == 0 and not outcome.failed and set(_verdicts(outcome)) == {"a", "b", "c"}
    assert any(
        "base (A/A) worker crashed (exit status 139)" in line and "goes on without it" in line
        for line in outcome.messages
    )
    c = next(r for r in outcome.gate.comparisons if r.case_id.endswith("::c"))
    assert "no A/A" in c.note  # measured after the twin was gone


def test_a_failed_output_check_on_one_side_names_that_side(repo, tmp_path):
    commit(repo, cases(TIMES, check_fails=["test_perf.py::c"]), "head's c is wrong")
    req = request(repo, "HEAD~1", tmp_path)
    outcome = run_ab(replace(req, settings=replace(req.settings, strict=True)))
    c = next(r for r in outcome.gate.comparisons if r.case_id.endswith("::c"))
    assert c.verdict is Verdict.NOT_COMPARABLE and c.note.startswith("head: AssertionError: output differs")
    assert outcome.exit_code == 1 and _verdicts(outcome)["a"] is Verdict.UNCHANGED


def test_a_dirty_head_tree_fails_closed_in_strict_mode_and_is_said_otherwise(repo, tmp_path):
    commit(repo, cases(TIMES), "head")
    (repo / "standin.json").write_text(json.dumps(cases(TIMES)))
    (repo / "standin.json").write_text((repo / "standin.json").read_text() + "\n")
    req = request(repo, "HEAD~1", tmp_path)
    with pytest.raises(AbError, match="head tree .* has uncommitted changes; strict mode compares committed code"):
        run_ab(replace(req, settings=replace(req.settings, strict=True)))
    outcome = run_ab(req)
    assert any("uncommitted changes: they are measured as they are" in line for line in outcome.messages)


def test_bad_input_is_one_line_before_any_worker_starts(repo, tmp_path):
    with pytest.raises(AbError, match="unknown git ref 'nope'"):
        run_ab(request(repo, "nope", tmp_path))
    with pytest.raises(AbError, match="drop '-n' \\(pytest-xdist\\)"):
        check_pytest_args(["-n", "4"])
    check_pytest_args(["-k", "softmax", "--no-header"])


def test_test_paths_the_base_lacks_are_left_out_of_its_selection(tmp_path):
    head, base = tmp_path / "head", tmp_path / "base"
    for d in (head, base):
        (d / "tests").mkdir(parents=True)
        (d / "tests" / "test_old.py").write_text("")
    (head / "tests" / "test_new.py").write_text("")
    assert base_selection(["tests/test_old.py", "tests/test_new.py::t", "-k", "x"], head, base) == [
        "tests/test_old.py",
        "-k",
        "x",
    ]
    assert base_selection(["tests/test_new.py"], head, base) is None  # every case new: no base worker
    assert base_selection(["-k", "x"], head, tmp_path / "missing") is None


def test_profiler_counters_are_compared_head_against_base(repo, tmp_path, monkeypatch):
    from perfgate.measure import profiling
    from perfgate.model import Metric

    def fake_profile(results, settings, rootdir, extra_env=None):
        registers = 128.0 if (rootdir / ".git").is_dir() else 64.0  # the head is the checkout, the base a worktree
        metric = Metric("launch__registers_per_thread", registers, "register/thread", "ncu", "softmax_kernel")
        profiled = {cid: r.with_metrics((metric,)) for cid, r in results.items()}
        return profiling.Profiled(profiled, "ncu (stand-in)", ("perfgate: ncu phase took 0.0 s",))

    monkeypatch.setattr(profiling, "profile_cases", fake_profile)
    commit(repo, cases(TIMES), "head: same times, more registers")
    req = request(repo, "HEAD~1", tmp_path)
    outcome = run_ab(replace(req, settings=replace(req.settings, profile=frozenset({"ncu"}))))
    rows = [c for c in outcome.gate.comparisons if c.metric == "launch__registers_per_thread"]
    assert len(rows) == 3 and all(r.verdict is Verdict.REGRESSED and (r.baseline, r.current) == (64, 128) for r in rows)
    assert outcome.exit_code == 1 and any("ncu phase took" in line and "(base)" in line for line in outcome.messages)


def test_a_process_offset_of_the_first_head_process_is_not_repeated_by_a_fresh_pair(repo, tmp_path):
    # The head's first worker 6% slower on every case (a process state: placement, a library's choice), the
    # code the same. Its rounds call a regression; the fresh pair of processes does not repeat it: not a
    # failure, and every row says what the fresh pair measured.
    commit(repo, cases(TIMES, first_process_offset_pct={"HEAD": 6.0}), "head: same code")
    outcome = run_ab(request(repo, "HEAD~1", tmp_path))
    assert set(_verdicts(outcome).values()) == {Verdict.INCONCLUSIVE} and outcome.exit_code == 0
    rows = [c for c in outcome.gate.comparisons if c.metric == "median_ms"]
    assert all(
        re.search(r"not confirmed by a fresh pair of processes \([+-]0\.\d\d%; first pair \+[5-7]\.\d\d%", c.note)
        for c in rows
    )
    assert any("3 case(s) called: measured again by a fresh pair" in line for line in outcome.messages)
    assert "fresh pair" in dict(outcome.costs_s)


def test_a_real_slowdown_is_confirmed_by_the_fresh_pair_and_only_called_cases_are_measured_again(repo, tmp_path):
    commit(repo, cases({**TIMES, "a": 1.03}), "head: a 3% slower")
    outcome = run_ab(request(repo, "HEAD~1", tmp_path))
    assert _verdicts(outcome) == {"a": Verdict.REGRESSED, "b": Verdict.UNCHANGED, "c": Verdict.UNCHANGED}
    a = next(c for c in outcome.gate.comparisons if c.case_id.endswith("::a") and c.metric == "median_ms")
    found = re.search(r"confirmed by a fresh pair of processes \(\+([\d.]+)%; first pair \+([\d.]+)%", a.note)
    assert found and all(2.5 < float(x) < 3.5 for x in found.groups()) and outcome.exit_code == 1
    assert a.change_pct == pytest.approx(3.0, abs=0.5)  # both pairs' mean
    assert any("1 case(s) called: measured again" in line for line in outcome.messages)


def test_without_the_fresh_pair_a_process_offset_fails_the_gate(repo, tmp_path):
    # what ab_fresh_pair = false gives up: the first pair's offset is taken for the code
    commit(repo, cases(TIMES, first_process_offset_pct={"HEAD": 6.0}), "head: same code")
    outcome = run_ab(request(repo, "HEAD~1", tmp_path, ab_fresh_pair=False))
    assert set(_verdicts(outcome).values()) == {Verdict.REGRESSED} and outcome.exit_code == 1
    assert "fresh pair" not in dict(outcome.costs_s)


def test_a_call_the_fresh_pair_could_not_measure_is_judged_on_the_first_pair_alone_and_says_so(repo, tmp_path):
    # separate processes: the first pair's A/A is the one draw of the offset; 30% is beyond what it bounds
    commit(repo, cases({**TIMES, "a": 1.3}, fresh_check_fails=["test_perf.py::a"]), "head: a slower")
    outcome = run_ab(request(repo, "HEAD~1", tmp_path))
    a = next(c for c in outcome.gate.comparisons if c.case_id.endswith("::a") and c.metric == "median_ms")
    assert a.verdict is Verdict.REGRESSED and outcome.exit_code == 1
    assert "no fresh pair of processes measured it: judged on the first pair alone" in a.note


def test_cases_with_the_same_code_on_both_sides_are_not_measured_and_the_time_saved_is_said(repo, tmp_path):
    # the head changes b's kernel (and its time); a and c compile to the same SASS as in the base
    commit(repo, cases(TIMES, sass={"test_perf.py::a": "a1", "test_perf.py::b": "b1", "test_perf.py::c": "c1"}), "same")
    commit(
        repo,
        cases({**TIMES, "b": 2.6}, sass={"test_perf.py::a": "a1", "test_perf.py::b": "b2", "test_perf.py::c": "c1"}),
        "b",
    )
    outcome = run_ab(request(repo, "HEAD~1", tmp_path))
    rows = {c.case_id.split("::")[-1]: c for c in outcome.gate.comparisons if c.metric == "median_ms"}
    assert rows["b"].verdict is Verdict.REGRESSED and "rounds" in rows["b"].note
    for name in ("a", "c"):
        assert rows[name].verdict is Verdict.UNCHANGED and not rows[name].gated
        assert rows[name].note.startswith("unchanged (same code): 1 kernel(s) with identical SASS and launches")
    line = next(m for m in outcome.messages if "unchanged (same code" in m)
    assert re.search(r"2 case\(s\) unchanged .* at least \d+\.\d s of GPU time saved", line)
    again = run_ab(request(repo, "HEAD~1", tmp_path, seed=2, ab_skip_same_code=False))
    measured = {c.case_id.split("::")[-1]: c.note for c in again.gate.comparisons if c.metric == "median_ms"}
    assert all("rounds" in note for note in measured.values())
    assert not any("same code" in m for m in again.messages)


def test_the_fresh_pair_runs_the_called_cases_tests_alone(repo, tmp_path, monkeypatch):
    # Before: every worker of the fresh pair ran every test body to reach the one called case.
    log = tmp_path / "ran.log"
    monkeypatch.setenv("STANDIN_LOG", str(log))
    commit(repo, cases({**TIMES, "a": 1.3}), "head: a slower")
    outcome = run_ab(request(repo, "HEAD~1", tmp_path))
    assert _verdicts(outcome)["a"] is Verdict.REGRESSED
    ran = [line.split() for line in log.read_text().splitlines()]
    fresh = {(side, nodeid) for side, seed, nodeid in ran if "." in seed}  # a fresh worker's seed is SEED.N
    first = {(side, nodeid) for side, seed, nodeid in ran if "." not in seed}
    assert fresh == {(side, "test_perf.py::a") for side in ("BASE", "HEAD", "AA")}
    assert {nodeid for _, nodeid in first} == {"test_perf.py::a", "test_perf.py::b", "test_perf.py::c"}
