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
