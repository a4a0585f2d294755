"""Files the previous release wrote (perfgate 0.2.0, commit 9c99ad0; tests/data/compat/README.md says how) read
by today's version: its calibrated baseline gates runs, its history answers `perfgate history` and `perfgate
compare` and takes today's runs, its results JSON is read by the CI helpers and `db export`."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from perfgate.cli import main
from perfgate.measure import environment
from perfgate.measure.machine import HostMachine
from tests.conftest import DATA
from tests.helpers import perf_project, results_json

COMPAT = DATA / "compat"
CASES = ("test_host.py::test_sorted", "test_host.py::test_sum")
OLD_CPU = "AMD EPYC"  # the CPU the old version ran on (baselines/host-amd-epyc.json)
OLD_RUNS = 4  # three calibration processes, then one gate run (the one results.json describes)


def old_baseline() -> dict:
    doc: dict = json.loads((COMPAT / "baselines" / "host-amd-epyc.json").read_text())
    return doc


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The old suite's checkout as the old version left it: the baseline it calibrated, the history it kept."""
    for var in ("PERFGATE_DB", "GITHUB_STEP_SUMMARY"):
        monkeypatch.delenv(var, raising=False)
    shutil.copy(COMPAT / "suite.py", tmp_path / "test_host.py")
    shutil.copy(COMPAT / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copytree(COMPAT / "baselines", tmp_path / "baselines")
    (tmp_path / ".perfgate").mkdir()
    shutil.copy(COMPAT / "history.db", tmp_path / ".perfgate" / "history.db")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _json_out(capsys: pytest.CaptureFixture[str], argv: list[str]) -> list[dict]:
    assert main(argv) == 0
    doc: list[dict] = json.loads(capsys.readouterr().out)
    return doc


def test_the_old_history_lists_its_runs_and_a_cases_trend(project, capsys):
    runs = _json_out(capsys, ["history", "--format", "json"])
    assert [r["run_id"] for r in runs] == list(range(1, OLD_RUNS + 1))
    assert {r["device_name"] for r in runs} == {OLD_CPU} and all(r["cases"] == 2 for r in runs)
    trend = _json_out(capsys, ["history", "--case", "*test_sum", "--format", "json"])
    medians = old_baseline()["cases"]["test_host.py::test_sum"]["process_medians_ms"]
    assert [p["median_ms"] for p in trend[:3]] == medians  # the calibration processes, as the baseline says
    assert all(p["timer"] == "host" and p["n_samples"] > 0 for p in trend) and len(trend) == OLD_RUNS


def test_the_old_baseline_gates_the_old_run_with_its_calibrated_noise(project):
    assert main(["compare", "--json", "compared.json"]) == 0
    doc = json.loads((project / "compared.json").read_text())
    assert doc["run"]["run_id"] == OLD_RUNS and doc["gate"]["failed"] is False
    rows = {c["case_id"]: c for c in doc["comparisons"] if c["metric"] == "median_ms"}
    assert sorted(rows) == list(CASES)
    for case_id, row in rows.items():
        medians = old_baseline()["cases"][case_id]["process_medians_ms"]
        assert min(medians) <= row["baseline"] <= max(medians)  # the old file's numbers, not another's
        assert row["note"].startswith("noise from 3 processes") and row["verdict"] == "unchanged"


def test_a_gate_run_today_uses_the_old_baseline_and_lands_in_the_old_history(project, pytester, monkeypatch):
    # the old baseline is keyed by the CPU it was made on: today's run is on that CPU, whatever this host is;
    # today's name adds the model id to a brand that names none, and the old file is still the one used
    machine = HostMachine(OLD_CPU, "family 25 model 17", "x86_64", 2, 2**21, 2**25, "Linux 6.1")
    assert machine.name != OLD_CPU
    monkeypatch.setattr(environment, "host_machine", lambda: machine)
    perf_project(
        pytester,
        monkeypatch,
        (COMPAT / "suite.py").read_text(),
        (COMPAT / "pyproject.toml").read_text(),
        test_name="test_host",
    )
    shutil.copytree(project / "baselines", pytester.path / "baselines")
    shutil.copytree(project / ".perfgate", pytester.path / ".perfgate")
    result = pytester.runpytest("--perfgate", "--perfgate-json", "out.json")
    assert result.ret in (0, 1), result.stdout.str()  # a manual clock's times: the verdict is not the point
    rows = {c["case_id"]: c for c in results_json(pytester)["comparisons"] if c["metric"] == "median_ms"}
    assert sorted(rows) == list(CASES)
    for case_id, row in rows.items():
        medians = old_baseline()["cases"][case_id]["process_medians_ms"]
        assert min(medians) <= row["baseline"] <= max(medians)
        assert row["note"].startswith("noise from 3 processes")
    with sqlite3.connect(pytester.path / ".perfgate" / "history.db") as con:
        assert con.execute("select count(*) from runs").fetchone()[0] == OLD_RUNS + 1
        assert con.execute("select count(*) from cases").fetchone()[0] == 2 * (OLD_RUNS + 1)


def test_the_old_results_json_is_read_by_the_ci_helpers(project, capsys):
    results = COMPAT / "results.json"
    assert json.loads(results.read_text())["perfgate_json_version"] == 2
    assert main(["ci", "verdict", str(results)]) == 0  # the gate passed
    assert main(["ci", "annotate", str(results)]) == 0
    from perfgate.report.comment import read_results

    read = read_results(results)
    assert not read.failed and read.device == OLD_CPU
    assert {(r.case_id, r.verdict) for r in read.rows if r.metric == "median_ms"} == {(c, "unchanged") for c in CASES}
    assert main(["db", "export", str(project / "one-run.db"), "--results", str(results)]) == 0
    with sqlite3.connect(project / "one-run.db") as con:
        uid = json.loads(results.read_text())["run"]["run_uid"]
        assert con.execute("select run_uid from runs").fetchall() == [(uid,)]
