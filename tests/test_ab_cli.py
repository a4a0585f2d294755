"""A/B mode through its adapters: `pytest --perfgate --perfgate-base REF` with real pytest workers (host clock,
a 10x slower head: no tight timing), `perfgate ab`, and the flags."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap

import pytest

from perfgate.cli import main
from perfgate.pytest_plugin.ab import without_perfgate_flags
from tests.ab_repo import git, make_repo

PERF_TESTS = textwrap.dedent("""
    import random
    import mylib

    def test_sort(perfgate):
        data = [random.random() for _ in range(500)]
        perfgate(mylib.work, data)

    def test_{extra}(perfgate):
        perfgate.measure(sum, (list(range(300)),), name="sum")

    def test_not_perf():
        assert True
""")


@pytest.fixture
def project(tmp_path):
    """A git project whose head sorts 10x more data than its base (HEAD~1), with one perf test renamed."""
    repo = make_repo(tmp_path / "proj")
    (repo / "pyproject.toml").write_text(
        "[tool.pytest.ini_options]\n\n[tool.perfgate]\nab_rounds = 4\nbudget_ms = 40.0\n"
    )
    (repo / "mylib").mkdir()
    (repo / "mylib" / "__init__.py").write_text("N = 1\n\ndef work(data):\n    return sorted(data * N)\n")
    (repo / "test_perf.py").write_text(PERF_TESTS.format(extra="removed"))
    (repo / ".gitignore").write_text(".perfgate/\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    (repo / "mylib" / "__init__.py").write_text("N = 10\n\ndef work(data):\n    return sorted(data * N)\n")
    (repo / "test_perf.py").write_text(PERF_TESTS.format(extra="added"))
    git(repo, "commit", "-q", "-am", "head: 10x the work, a perf test renamed")
    return repo


def test_pytest_perfgate_base_runs_both_trees_in_workers_and_fails_the_slower_head(project, tmp_path):
    argv = [
        sys.executable,
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "--perfgate",
        "--perfgate-base",
        "HEAD~1",
        f"--perfgate-worktree-dir={tmp_path / 'wt'}",
        "--perfgate-json",
        "out.json",
        "--perfgate-summary",
        "ab.md",
    ]
    proc = subprocess.run(
        argv,
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
        env={k: v for k, v in __import__("os").environ.items() if k not in ("PERFGATE_DB", "GITHUB_STEP_SUMMARY")},
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert re.search(r"test_perf.py::test_sort +time .* REGRESSED", out), out
    assert "perfgate: A/B cost: worktree" in out and "start" in out and "rounds" in out
    doc = json.loads((project / "out.json").read_text())
    verdicts = {(c["case_id"], c["metric"]): c["verdict"] for c in doc["comparisons"]}
    assert verdicts[("test_perf.py::test_sort", "median_ms")] == "regressed"
    assert verdicts[("test_perf.py::test_added::sum", "median_ms")] == "new"
    assert verdicts[("test_perf.py::test_removed::sum", "median_ms")] == "missing"
    assert doc["ab"]["base_commit"] == git(project, "rev-parse", "HEAD~1") and doc["ab"]["rounds"] == 4
    summary = (project / "ab.md").read_text()
    assert "| `test_perf.py::test_sort` | time |" in summary and "ratio (95% CI)" in summary
    assert "test_not_perf" not in out  # workers run perf tests only


def test_perfgate_ab_with_an_unknown_ref_is_one_line_and_status_2(project, capsys, monkeypatch):
    monkeypatch.chdir(project)
    assert main(["ab", "no-such-branch", "--rootdir", str(project)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "unknown git ref 'no-such-branch'" in err


def test_perfgate_flags_are_left_out_of_what_the_workers_get():
    args = [
        "--perfgate",
        "--perfgate-base",
        "main",
        "-k",
        "x",
        "--perfgate-json=o.json",
        "--perfgate-strict",
        "tests/",
        "--perfgate-summary",
        "s.md",
        "-q",
    ]
    assert without_perfgate_flags(args) == ("-k", "x", "tests/", "-q")


def test_a_baseline_update_in_ab_mode_is_refused_before_anything_runs(pytester):
    pytester.makepyfile(test_x="def test_x(perfgate):\n    perfgate(sum, [1])\n")
    result = pytester.runpytest("--perfgate-base", "main", "--perfgate-update-baseline", "--perfgate-reason", "r")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--perfgate-base compares with a base commit; it writes no baseline*"])


def test_a_slow_test_deselected_by_the_prs_own_addopts_fails_strict_ab(project, capsys, monkeypatch):
    # The pull request makes test_sort 10x slower and hides it with its own addopts: the head's workers
    # (pytest in the head's tree, reading the head's configuration) never measure it. Before the A/B
    # pipeline went through the gate's tail this passed strict A/B ("1 removed"); now the base case the
    # head did not measure fails it, and so does the selection change itself.
    (project / "pyproject.toml").write_text(
        "[tool.pytest.ini_options]\naddopts = \"-k 'not test_sort'\"\n\n"
        "[tool.perfgate]\nab_rounds = 4\nbudget_ms = 40.0\n"
    )
    git(project, "commit", "-q", "-am", "head: deselect the slow test")
    monkeypatch.chdir(project)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    code = main(["ab", "HEAD~2", "--strict", "--no-store", "--worktree-dir", str(project.parent / "wt")])
    out = capsys.readouterr().out
    assert code == 1, out
    assert re.search(r"perfgate strict: baseline case not measured: 2 base case\(s\) not measured .*test_sort", out)
    assert "perfgate strict: test selection changed since the base ref: pytest's test selection differs" in out
    assert "addopts: none in HEAD~2" in out and "'-k not test_sort' in the head" in out


def _ab(project, monkeypatch, capsys, *pytest_args: str) -> tuple[int, str, str]:
    monkeypatch.chdir(project)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    code = main(["ab", "HEAD~1", "--no-store", "--worktree-dir", str(project.parent / "wt"), "--", *pytest_args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_test_path_neither_tree_has_is_pytests_own_line_and_a_usage_error(project, capsys, monkeypatch):
    code, out, err = _ab(project, monkeypatch, capsys, "tests/perf")
    assert code == 4, out + err
    lines = [line for line in err.splitlines() if "tests/perf" in line]  # (stderr has the progress lines too)
    assert len(lines) == 1 and "file or directory not found: tests/perf" in lines[0], err
    assert re.match(r"perfgate: A/B: (head|base): pytest: ", lines[0]) and "usage error" in lines[0], err
    assert err.strip().splitlines()[-1] == lines[0], err
    assert "no perf case was measured" not in out + err


def test_a_selection_that_collects_no_perf_test_is_pytests_exit_5_told_plainly(project, capsys, monkeypatch):
    code, out, err = _ab(project, monkeypatch, capsys, "-k", "no_such_case")
    assert code == 5, out + err
    assert "pytest collected no perf test in the head (exit status 5)" in out, out


def test_a_head_session_pytest_exit_ends_the_run_with_pytests_status_and_its_reason(project, capsys, monkeypatch):
    (project / "conftest.py").write_text(
        "import pytest\n\ndef pytest_runtest_setup(item):\n    pytest.exit('the GPU is gone')\n"
    )
    code, out, err = _ab(project, monkeypatch, capsys)
    assert code == 2, out + err
    line = err.strip().splitlines()[-1]
    assert line.startswith("perfgate: A/B: head: pytest: ") and "the GPU is gone" in line, err
    assert "interrupted" in line and "nothing stored" in line, err


def test_an_internal_error_in_a_side_is_pytests_status_3_and_its_exception(project, capsys, monkeypatch):
    (project / "conftest.py").write_text(
        "def pytest_collection_modifyitems(items):\n    raise RuntimeError('a broken plugin')\n"
    )
    code, out, err = _ab(project, monkeypatch, capsys)
    assert code == 3, out + err
    line = err.strip().splitlines()[-1]
    assert line.startswith("perfgate: A/B: head: pytest: ") and "RuntimeError: a broken plugin" in line, err
    assert "internal error" in line, err


@pytest.mark.parametrize("process", ["shared", "separate"])
def test_an_argument_pytest_refuses_is_its_own_line_and_a_usage_error(project, capsys, monkeypatch, process):
    monkeypatch.chdir(project)
    code = main(["ab", "HEAD~1", "--no-store", "--process", process, "--worktree-dir", str(project.parent / "wt"),
                 "--", "--no-such-option"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 4, err
    assert re.search(r"perfgate: A/B: (head|base): pytest: unrecognized arguments: --no-such-option \(", err), err


def test_pytest_perfgate_base_with_a_missing_test_path_exits_4_with_pytests_line(project, tmp_path):
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--perfgate", "--perfgate-base", "HEAD~1",
            f"--perfgate-worktree-dir={tmp_path / 'wt'}", "--perfgate-no-store", "tests/perf"]  # fmt: skip
    proc = subprocess.run(argv, cwd=project, capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 4, out
    assert "pytest: file or directory not found: tests/perf (pytest exit status 4, a usage error" in out, out
