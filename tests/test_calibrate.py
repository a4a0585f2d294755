"""`perfgate calibrate`: a baseline from N fresh processes, then gated on its between-process noise."""

import json
import re
import sqlite3

import pytest

from perfgate.cli import main
from tests.helpers import perf_project, results_json

PERF_TEST = """
import os
from perfgate.measure import clock

def test_sleep(perfgate):
    perfgate(clock.current().sleep, float(os.environ.get("SLEEP_MS", "2")) / 1e3)

def test_sum(perfgate):
    perfgate(sum, range(2000))
"""
PYPROJECT = """
[tool.pytest.ini_options]
addopts = "-p no:cacheprovider"

[tool.perfgate]
warmup_ms = 2
min_samples = 10
max_samples = 30
budget_ms = 40
confirm_runs = 0
"""


@pytest.fixture
def project(pytester, monkeypatch):
    perf_project(pytester, monkeypatch, PERF_TEST, PYPROJECT, clear=("FAIL_IT",), SLEEP_MS="2")
    monkeypatch.chdir(pytester.path)
    return pytester


def test_calibration_shows_each_process_and_its_cases_while_it_runs(project, capsys, monkeypatch):
    monkeypatch.setenv("PERFGATE_PROGRESS", "log")  # the plain lines a CI log gets
    assert main(["calibrate", "--runs", "3", "--reason", "progress", "--", "test_perf.py"]) == 0
    captured = capsys.readouterr()
    err = captured.err.splitlines()
    assert "perfgate: calibration process 1/3: started" in err  # how many cases: not known yet
    assert "perfgate: calibration process 2/3 (2 step(s)): started" in err
    ends = [line for line in err if line.startswith("perfgate: calibration process") and " in " in line]
    assert len(ends) == 3 and all(": 2/2 in " in e or ": 2 done in " in e for e in ends), err
    assert "\r" not in captured.err
    assert re.search(r"2 case\(s\) from 3 processes in \d", captured.out)  # the whole calibration's cost


def test_a_calibration_too_short_for_the_budget_whatever_the_shape_is_warned_about(project, capsys):
    """Two cases at a 1% budget: 5e-3 a test; three processes bound the worst shape at 1/C(11, 8) = 6.1e-3,
    four at 1/C(12, 8) = 2.0e-3 (issue 31)."""
    assert main(["calibrate", "--runs", "3", "--reason", "short", "--", "test_perf.py"]) == 0
    out = capsys.readouterr().out
    assert "warning: 3 calibration processes cannot hold the 1% false-alarm budget for 2 cases" in out
    assert "calibrate with --runs 4" in out


def test_calibration_writes_process_medians_noise_and_what_each_case_detects(project, capsys):
    # the arguments after `--` reach every process: without them each would run the failing test too
    project.makepyfile(test_broken="def test_broken(perfgate):\n    perfgate(sum, [1])\n    assert False\n")
    assert main(["calibrate", "--runs", "3", "--reason", "first calibration", "--", "test_perf.py"]) == 0
    out = capsys.readouterr().out
    assert "wrote calibrated baseline" in out and "2 case(s) from 3 processes" in out
    baseline = json.loads(next((project.path / "baselines").glob("*.json")).read_text())
    assert sorted(baseline["cases"]) == ["test_perf.py::test_sleep", "test_perf.py::test_sum"]
    case = baseline["cases"]["test_perf.py::test_sleep"]
    assert len(case["process_medians_ms"]) == 3 and case["noise_pct"] >= 0.5 and case["threshold_pct"] >= 1.0
    assert baseline["updates"][-1]["calibrated_runs"] == 3 and baseline["updates"][-1]["reason"] == "first calibration"
    con = sqlite3.connect(project.path / ".perfgate" / "history.db")
    assert con.execute("select count(*) from runs").fetchone()[0] == 3  # the calibration runs are kept
    gate = project.runpytest("--perfgate", "--perfgate-json", "out.json", "test_perf.py")
    assert gate.ret == 0  # the same code on the same (manual) clock: the gate judges it by its calibration
    rows = results_json(project)["comparisons"]
    sleep = next(r for r in rows if r["case_id"] == "test_perf.py::test_sleep" and r["metric"] == "median_ms")
    assert sleep["note"].startswith("noise from 3 processes") and sleep["noise_pct"] > 0
    assert sleep["threshold_pct"] >= 1.0 and sleep["detects_pct"] >= sleep["threshold_pct"]
    assert sleep["verdict"] == "unchanged"


def test_calibration_needs_three_processes_and_a_reason(project, capsys):
    assert main(["calibrate", "--runs", "2", "--reason", "x"]) == 2
    assert "--runs must be at least 3" in capsys.readouterr().err
    assert main(["calibrate", "--runs", "3", "--reason", " "]) == 2
    assert not (project.path / "baselines").exists()


def test_a_failing_calibration_process_writes_no_baseline(project, capsys):
    project.makepyfile(test_broken="def test_broken(perfgate):\n    perfgate(sum, [1])\n    assert False\n")
    assert main(["calibrate", "--runs", "3", "--reason", "x"]) == 2
    assert "process 1: pytest exited with status 1" in capsys.readouterr().err
    assert not (project.path / "baselines").exists()


@pytest.mark.parametrize(
    ("pytest_args", "said"),
    [
        (["tests/perf"], "process 1: pytest: file or directory not found: tests/perf (exit status 4, a usage error)"),
        (["--no-such-option"], "process 1: pytest: unrecognized arguments: --no-such-option (exit status 4"),
        (["-k", "no_such_case"], "process 1: pytest collected no perf test (exit status 5): the paths, -k and -m"),
    ],
)
def test_a_calibration_pytest_refuses_is_pytests_own_line(project, capsys, pytest_args, said):
    assert main(["calibrate", "--runs", "3", "--reason", "x", "--no-store", "--", *pytest_args]) == 2
    err = capsys.readouterr().err
    line = err.strip().splitlines()[-1]
    assert line.startswith("perfgate calibrate: ") and said in line and "no baseline written" in line, err
    assert not (project.path / "baselines").exists()


def test_the_baseline_and_the_run_have_one_time_each_in_every_output(project, capsys, monkeypatch):
    """The gate's "baseline" and "current", `baseline show`, `baseline diff` and `perfgate history` show the
    same number for the same quantity: the mean of the process medians (docs/decision-rule.md)."""
    from perfgate.report.format import fmt_value

    assert main(["calibrate", "--runs", "3", "--reason", "one number", "--", "test_perf.py"]) == 0
    # processes that disagree, as real ones do: their median (2.001 ms) is not their mean (2.201 ms)
    path = next((project.path / "baselines").glob("*.json"))
    doc = json.loads(path.read_text())
    doc["cases"]["test_perf.py::test_sleep"]["process_medians_ms"] = [2.001, 2.001, 2.601]
    path.write_text(json.dumps(doc))
    monkeypatch.setenv("SLEEP_MS", "8")  # 4x slower: confirmed in fresh processes, so the run has several
    gate = project.runpytest(
        "--perfgate", "--perfgate-json", "out.json", "--perfgate-confirm-runs", "2", "test_perf.py"
    )
    assert gate.ret == 1
    row = next(
        r
        for r in results_json(project)["comparisons"]
        if r["case_id"] == "test_perf.py::test_sleep" and r["metric"] == "median_ms"
    )
    assert row["baseline"] == pytest.approx(2.201)
    capsys.readouterr()
    assert main(["baseline", "show", "baselines"]) == 0
    shown = capsys.readouterr().out
    assert fmt_value(row["baseline"], "ms") in next(line for line in shown.splitlines() if "test_sleep" in line)
    assert main(["history", "--case", "*test_sleep", "--format", "json"]) == 0
    trend = json.loads(capsys.readouterr().out)
    assert trend[-1]["processes"] >= 3 and trend[-1]["time_ms"] == pytest.approx(row["current"], rel=1e-12)
