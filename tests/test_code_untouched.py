"""A case whose time changed across commits that did not touch its code is named as such (issue 31): its
provenance (the files its code came from) against `git diff --name-only` in a real repository."""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from perfgate.baseline import Update
from perfgate.config.settings import Settings
from perfgate.gate.findings import GateFacts
from perfgate.gate.run import GateRequest, run_gate
from perfgate.model import CodeRole, CodeSource, FindingKind, Verdict
from tests.helpers import calibrated_of, make_run, noisy

CASES = [f"tests/test_k.py::test_{i}" for i in range(10)]
SPREAD = (0.994, 1.0, 1.006, 0.998, 1.002, 1.0)


def git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    env |= {"PATH": "/usr/bin:/bin:/usr/local/bin", "HOME": str(repo), "GIT_CONFIG_NOSYSTEM": "1"}
    out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, check=True)
    return out.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str, str]:
    """kernels/k0.py .. k9.py, one per case, and their test file; the second commit changes k1.py only."""
    root = tmp_path / "repo"
    (root / "kernels").mkdir(parents=True)
    (root / "tests").mkdir()
    for i in range(10):
        (root / "kernels" / f"k{i}.py").write_text(f"def k{i}(x):\n    return x\n")
    (root / "tests" / "test_k.py").write_text("def test_0(): ...\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "calibrated here")
    first = git(root, "rev-parse", "HEAD")
    (root / "kernels" / "k1.py").write_text("def k1(x):\n    return x * 1\n")
    git(root, "commit", "-qam", "k1 changed")
    return root, first, git(root, "rev-parse", "HEAD")


def gate_of(root: Path, since: str, until: str, slower: dict[str, float], with_code: bool = True, dirty=False):
    calibration = make_run({cid: noisy(1.0, seed=i) for i, cid in enumerate(CASES)})
    baseline = calibrated_of(calibration, root.parent, SPREAD)
    baseline = replace(baseline, updates=(Update("2026-11-01T00:00:00+00:00", "t", since, "calibrate", 10, 6),))
    run = make_run({cid: noisy(slower.get(cid, 1.0), seed=50 + i) for i, cid in enumerate(CASES)})
    run = replace(run, info=replace(run.info, git_commit=until, git_dirty=dirty))
    if with_code:
        run = replace(run, results=tuple(replace(r, code=_code(root, i)) for i, r in enumerate(run.results)))
    settings = Settings(rootdir=root, store=False)
    request = GateRequest(run, settings, baseline, root / "baseline.json", GateFacts(), may_write_baseline=False)
    return run_gate(request)


def _code(root: Path, i: int) -> tuple[CodeSource, ...]:
    return (
        CodeSource(CodeRole.MEASURED, f"kernels.k{i}:k{i}", str(root / "kernels" / f"k{i}.py")),
        CodeSource(CodeRole.TEST, "test_k.py", str(root / "tests" / "test_k.py")),
    )


def named(outcome) -> dict[str, str]:
    return {f.case_id: f.message for f in outcome.gate.findings if f.kind is FindingKind.CODE_UNCHANGED}


def test_a_regressed_case_whose_files_did_not_change_since_the_calibration_is_named_and_still_fails(repo):
    root, first, second = repo
    out = gate_of(root, first, second, {CASES[0]: 1.10, CASES[1]: 1.10})
    verdicts = {c.case_id: c.verdict for c in out.gate.comparisons}
    assert verdicts[CASES[0]] is Verdict.REGRESSED and verdicts[CASES[1]] is Verdict.REGRESSED
    found = named(out)
    assert list(found) == [CASES[0]]  # k1.py changed between the commits: case 1 may be its code
    assert (
        f"no file this case's code came from changed since {first[:12]} (the baseline's calibration)"
        in (found[CASES[0]])
    )
    assert "not this code" in found[CASES[0]] and "perfgate baseline reanchor" in found[CASES[0]]
    assert out.exit_code == 1  # named, never passed: a data file or a C library may still be the cause


def test_a_change_to_the_test_module_counts_as_the_cases_code(repo):
    root, first, _ = repo
    (root / "tests" / "test_k.py").write_text("def test_0(): ...  # bigger inputs\n")
    third = git(root, "commit", "-qam", "test changed") or git(root, "rev-parse", "HEAD")
    assert named(gate_of(root, first, third, {CASES[0]: 1.10})) == {}


def test_uncommitted_changes_to_the_cases_file_count_when_the_run_was_dirty(repo):
    root, _, second = repo
    (root / "kernels" / "k0.py").write_text("def k0(x):\n    return -x\n")
    out = gate_of(root, second, second, {CASES[0]: 1.10})
    assert named(out)  # a clean run is its commit
    dirty = gate_of(root, second, second, {CASES[0]: 1.10}, dirty=True)
    assert named(dirty) == {}


def test_a_case_without_provenance_is_never_called_untouched(repo):
    root, first, second = repo
    assert named(gate_of(root, first, second, {CASES[0]: 1.10}, with_code=False)) == {}


def test_a_commit_missing_from_a_shallow_clone_is_one_line_and_the_check_is_skipped(repo):
    root, _, second = repo
    out = gate_of(root, "0" * 40, second, {CASES[0]: 1.10})
    assert named(out) == {} and out.exit_code == 1
    (line,) = [m for m in out.messages if "was not checked" in m]
    assert "shallow clone" in line and "0000000000" in line and "\n" not in line


def _step(case_id: str, before: str, after: str):
    from perfgate.trends.changepoints import Step
    from perfgate.trends.history import HistoryChange, RunPoint

    step = Step(index=5, before_median=1.0, after_median=1.05, change_pct=5.0, p_value=1e-4)
    return HistoryChange(
        case_id, "H100", step, RunPoint(4, before, "main", "", 1.0), RunPoint(5, after, "main", "", 1.05)
    )


def test_a_history_step_over_commits_that_did_not_touch_the_case_is_not_this_cases_code(repo):
    from perfgate.gate.untouched import code_check, with_untouched_steps

    root, first, second = repo
    run = gate_of(root, first, second, {}).run
    steps = [_step(CASES[0], first, second), _step(CASES[1], first, second), _step(CASES[2], second, second)]
    named_steps, skipped = with_untouched_steps(steps, code_check(run.results, root))
    assert [s.cause for s in named_steps] == ["not this case's code", "code or machine", "machine"]
    assert skipped == ()
    unknown, skipped = with_untouched_steps([_step(CASES[0], "f" * 40, second)], code_check(run.results, root))
    assert unknown[0].cause == "code or machine" and "shallow clone" in skipped[0]


def test_a_baseline_case_records_its_callable_test_module_and_the_trees_modules(tmp_path, monkeypatch):
    import importlib
    import sys

    from perfgate.ab.provenance import checkout_code

    (tmp_path / "mykern_untouched.py").write_text("def k(x):\n    return x\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("mykern_untouched")
    try:
        code = checkout_code(module.k, None, str(tmp_path / "test_k.py"), str(tmp_path), set())
    finally:
        sys.modules.pop("mykern_untouched", None)
    got = {(c.role, Path(c.path).name) for c in code}
    assert {(CodeRole.MEASURED, "mykern_untouched.py"), (CodeRole.TEST, "test_k.py")} <= got
    assert (CodeRole.MODULE, "mykern_untouched.py") in got


def test_another_cases_test_module_is_not_this_cases_code_but_a_conftest_is(repo):
    from perfgate.gate.untouched import code_check

    root, first, second = repo
    run = gate_of(root, first, second, {}).run
    rewritten = "AssertionRewritingHook"
    other = CodeSource(CodeRole.MODULE, "test_other", str(root / "tests" / "test_other.py"), loader=rewritten)
    conftest = CodeSource(CodeRole.MODULE, "tests.conftest", str(root / "tests" / "conftest.py"), loader=rewritten)
    results = (replace(run.results[0], code=run.results[0].code + (other, conftest)), *run.results[1:])
    files = code_check(results, root).files[CASES[3]]
    assert "tests/conftest.py" in files and "tests/test_other.py" not in files


KERNEL = """
import os
from perfgate.measure import clock

def work():
    clock.current().sleep(float(os.environ.get("SLEEP_MS", "2")) / 1e3)
"""
PERF_TEST = """
import mykern

def test_default(perfgate):
    perfgate(mykern.work)
"""
PYPROJECT = """
[tool.perfgate]
threshold_pct = 10.0
warmup_ms = 2
min_samples = 10
max_samples = 20
budget_ms = 40
confirm_runs = 0
noise_branch = "*"
"""


def _slowed(pytester, monkeypatch, change_kernel: bool):
    from tests.helpers import perf_project

    perf_project(pytester, monkeypatch, PERF_TEST, PYPROJECT, SLEEP_MS="2")
    (pytester.path / "mykern.py").write_text(KERNEL)
    monkeypatch.syspath_prepend(str(pytester.path))
    root = Path(pytester.path)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "first")
    for _ in range(3):  # the baseline, then two unchanged runs: the noise window the gate judges by
        assert pytester.runpytest("--perfgate", "-p", "no:cacheprovider").ret == 0
    if change_kernel:
        (root / "mykern.py").write_text(KERNEL + "\n# tuned\n")
        git(root, "commit", "-qam", "tuned")
    monkeypatch.setenv("SLEEP_MS", "2.8")  # 40% slower, from outside the code
    result = pytester.runpytest("--perfgate", "-p", "no:cacheprovider", "--perfgate-json", "out.json")
    assert result.ret == 1
    return result, json.loads((root / "out.json").read_text())


def test_pytest_perfgate_names_a_regression_whose_code_did_not_change(pytester, monkeypatch):
    result, doc = _slowed(pytester, monkeypatch, change_kernel=False)
    (case,) = doc["cases"]
    roles = {(c["role"], Path(c["path"]).name) for c in case["code"]}
    assert {("measured", "mykern.py"), ("test", "test_perf.py"), ("module", "mykern.py")} <= roles
    # relative to the checkout: a history read on another runner (another checkout path) still matches
    assert {(c["path"], c["tree"]) for c in case["code"] if c["role"] == "measured"} == {("mykern.py", "checkout")}
    kinds = [f["kind"] for f in doc["findings"]]
    assert "regressed, its code unchanged" in kinds
    assert "no file this case's code came from changed since" in result.stdout.str()


def test_pytest_perfgate_does_not_name_it_when_the_kernel_file_changed(pytester, monkeypatch):
    _, doc = _slowed(pytester, monkeypatch, change_kernel=True)
    assert "regressed, its code unchanged" not in [f["kind"] for f in doc["findings"]]


def stepped(root: Path, first: str, second: str):
    """30 runs of cases 0 and 1, 4 % slower from run 20 on, which measured `second` (k1.py changed)."""
    from perfgate.model import Environment, Run, RunInfo
    from perfgate.store import open_store
    from tests.site_histories import single_median_case

    env = Environment(device_kind="cuda", device_name="NVIDIA H100 80GB HBM3", compute_capability="9.0")
    db = root.parent / "h.db"
    with open_store(db) as store:
        for i in range(30):
            factor = 1.04 if i >= 20 else 1.0
            cases = tuple(
                replace(
                    single_median_case(CASES[k], 0.2 * factor * (1 + 0.001 * ((i * 7 + k) % 5))), code=_code(root, k)
                )
                for k in (0, 1)
            )
            info = RunInfo(f"2026-11-01T00:{i:02d}:00+00:00", "", git_commit=second if i >= 20 else first)
            store.save_run(Run(info, env, cases))
    return db, Run(info, env, cases)


def test_history_changes_names_a_step_whose_commits_did_not_touch_the_case(repo, capsys):
    from perfgate.cli import main

    root, first, second = repo
    db, _ = stepped(root, first, second)
    main(["history", "--changes", "--db", str(db), "--rootdir", str(root), "--format", "json"])
    causes = {row["case_id"]: row["cause"] for row in json.loads(capsys.readouterr().out)}
    assert causes == {CASES[0]: "not this case's code", CASES[1]: "code or machine"}  # k1.py changed
    main(["history", "--changes", "--db", str(db), "--rootdir", str(root)])
    lines = [x for x in capsys.readouterr().out.splitlines() if x.startswith(CASES[0])]
    assert lines and lines[0].rstrip().endswith("not this case's code")


def test_the_gates_change_point_lines_name_it_too(repo):
    from perfgate.gate.run import change_point_lines

    root, first, second = repo
    db, run = stepped(root, first, second)
    lines = change_point_lines(run, Settings(rootdir=root, db_path=db, noise_branch="*"))
    by_case = {line.split(": ")[0]: line for line in lines}
    assert "not this case's code" in by_case[CASES[0]] and "not this case's code" not in by_case[CASES[1]]


# --- the outside review's findings: each a way the note claimed "not this code" for code that did change ----


def test_a_helper_rewritten_by_register_assert_rewrite_counts_as_every_cases_code(repo):
    from perfgate.gate.untouched import code_check

    root, first, second = repo
    run = gate_of(root, first, second, {}).run
    rewritten = "AssertionRewritingHook"  # pytest.register_assert_rewrite("mylib") loads mylib.helper so
    helper = CodeSource(CodeRole.MODULE, "mylib.helper", str(root / "kernels" / "k9.py"), loader=rewritten)
    results = (replace(run.results[0], code=run.results[0].code + (helper,)), *run.results[1:])
    assert "kernels/k9.py" in code_check(results, root).files[CASES[3]]


def test_a_changed_file_outside_the_rootdir_but_inside_the_repository_is_never_called_untouched(repo):
    from perfgate.gate.untouched import code_check

    root, first, second = repo  # a monorepo: pytest's rootdir is kernels/, a sibling package is imported by path
    run = gate_of(root, first, second, {}).run
    results = tuple(replace(r, code=_code(root, i)) for i, r in enumerate(run.results))
    check = code_check(results, root / "kernels", root)
    assert check.scope == "kernels"
    assert not check.untouched(CASES[0], frozenset({"shared/helper.py"}))
    assert check.untouched(CASES[0], frozenset({"kernels/k1.py"}))


def test_a_changed_submodule_touches_every_file_below_it(repo):
    from perfgate.gate.untouched import CodeCheck

    root, _, _ = repo
    check = CodeCheck(root, {CASES[0]: frozenset({"vendor/subhelper.py", "kernels/k0.py"})})
    assert not check.untouched(CASES[0], frozenset({"vendor"}))  # git diff names the gitlink, not its files
    assert check.untouched(CASES[0], frozenset({"vendored.py", "kernels/k1.py"}))


def test_a_history_step_into_a_dirty_run_is_neither_a_machine_change_nor_untouched(repo):
    from perfgate.gate.untouched import code_check, with_untouched_steps

    root, first, second = repo
    run = gate_of(root, first, second, {}).run
    dirty_same, dirty_range = _step(CASES[0], second, second), _step(CASES[0], first, second)
    dirty_same = replace(dirty_same, first_after=replace(dirty_same.first_after, git_dirty=True))
    dirty_range = replace(dirty_range, first_after=replace(dirty_range.first_after, git_dirty=True))
    named_steps, _ = with_untouched_steps([dirty_same, dirty_range], code_check(run.results, root))
    assert [s.cause for s in named_steps] == ["code or machine", "code or machine"]


def test_a_baseline_update_without_a_commit_says_it_records_none(repo):
    from perfgate.gate.untouched import reference_commit

    root, _, _ = repo
    update = Update("2026-11-01T00:00:00+00:00", "t", "", "calibrate", 10, 6)
    baseline = replace(_any_baseline(root), updates=(update,))
    assert reference_commit(baseline) == ("", "the baseline records no commit")


def _any_baseline(root: Path):
    return calibrated_of(make_run({cid: noisy(1.0, seed=i) for i, cid in enumerate(CASES)}), root.parent, SPREAD)
