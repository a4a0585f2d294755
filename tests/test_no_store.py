"""`--perfgate-no-store` writes nothing at all: no history and no initial baseline, only the outputs the
command line names."""

import pytest

from tests.helpers import perf_project

SUITE = """
def test_sum(perfgate):
    perfgate(sum, range(100))
"""
PYPROJECT = """
[tool.perfgate]
warmup_ms = 1
min_samples = 5
max_samples = 10
budget_ms = 5
confirm_runs = 0
"""


def files(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if "__pycache__" not in p.parts)


@pytest.fixture
def project(pytester, monkeypatch):
    return perf_project(pytester, monkeypatch, SUITE, PYPROJECT)


def test_no_store_writes_no_history_and_no_initial_baseline(project):
    before = files(project.path)
    result = project.runpytest("--perfgate", "--perfgate-no-store", "-p", "no:cacheprovider")
    assert result.ret == 0
    assert files(project.path) == before
    result.stdout.fnmatch_lines(["*--perfgate-no-store: no initial baseline written for *baselines*"])


def test_no_store_still_writes_the_outputs_it_is_asked_for(project):
    before = files(project.path)
    result = project.runpytest(
        "--perfgate", "--perfgate-no-store", "-p", "no:cacheprovider", "--perfgate-json", "out.json"
    )
    assert result.ret == 0
    assert files(project.path) == sorted([*before, "out.json"])


def test_without_no_store_the_history_and_a_first_baseline_are_written(project):
    assert project.runpytest("--perfgate", "-p", "no:cacheprovider").ret == 0
    written = set(files(project.path))
    assert ".perfgate/history.db" in written and any(f.startswith("baselines/") for f in written)
