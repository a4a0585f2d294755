"""The plugin and `perfgate compare` must reach the same verdicts on the same stored run: one orchestration,
thresholds resolved when a case is measured and stored with it, the project root found the same way."""

import json

import pytest

from perfgate.cli import main
from tests.helpers import perf_project

PERF_TEST = """
import os
import pytest
from perfgate.measure import clock

def work():
    clock.current().sleep(float(os.environ.get("SLEEP_MS", "2")) / 1e3)

@pytest.mark.perfgate(threshold_pct=80)
def test_marker(perfgate):
    perfgate(work)

def test_override(perfgate):
    perfgate(work)

def test_default(perfgate):
    perfgate(work)
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

[[tool.perfgate.overrides]]
pattern = "*test_override*"
threshold_pct = 80.0
"""


def verdicts(doc):
    return {c["case_id"].split("::")[-1]: c["verdict"] for c in doc["comparisons"] if c["metric"] == "median_ms"}


@pytest.fixture
def slowed_run(pytester, monkeypatch):
    perf_project(pytester, monkeypatch, PERF_TEST, PYPROJECT, SLEEP_MS="2")
    for _ in range(3):  # the baseline, then two unchanged runs: the noise window the gate judges by
        assert pytester.runpytest("--perfgate", "-p", "no:cacheprovider").ret == 0
    monkeypatch.setenv("SLEEP_MS", "2.8")  # 40% slower
    result = pytester.runpytest("--perfgate", "-p", "no:cacheprovider", "--perfgate-json", "plugin.json")
    assert result.ret == 1
    return pytester


def test_compare_from_a_subdirectory_agrees_with_the_plugin(slowed_run, monkeypatch, capsys):
    plugin = verdicts(json.loads((slowed_run.path / "plugin.json").read_text()))
    assert plugin == {"test_marker": "unchanged", "test_override": "unchanged", "test_default": "regressed"}
    sub = slowed_run.path / "some" / "subdir"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    code = main(["compare", "--json", "cli.json"])
    capsys.readouterr()
    assert code == 1
    assert verdicts(json.loads((sub / "cli.json").read_text())) == plugin


def test_compare_keeps_the_thresholds_the_run_was_measured_with(slowed_run, monkeypatch, capsys):
    """Editing pyproject afterwards does not change what a stored run was gated on."""
    slowed_run.makefile(".toml", pyproject=PYPROJECT.replace("threshold_pct = 80.0", "threshold_pct = 1.0"))
    monkeypatch.chdir(slowed_run.path)
    main(["compare", "--json", "cli.json"])
    capsys.readouterr()
    assert verdicts(json.loads((slowed_run.path / "cli.json").read_text()))["test_override"] == "unchanged"


def test_compare_creates_no_file_or_directory(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["compare", "--db", str(tmp_path / "nope" / "x.db")]) == 2
    assert "no history at" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
