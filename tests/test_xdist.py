"""`pytest --perfgate -n N`: the workers' measurements become one run, stored once, gated once. The
GPU-per-worker side needs GPUs (docs/evidence/gpu-runs.md has the 2-GPU run); here the host-clock refusal is lifted
in the controller (the workers never check) so the plumbing (worker -> controller -> one transaction) runs."""

import json
import sqlite3

import pytest

from tests.helpers import LEAN_PYTEST_ADDOPTS, MANUAL_CLOCK_CONFTEST

pytest.importorskip("xdist")

PERF_TESTS = """
from perfgate.measure import clock

def test_a(perfgate):
    perfgate(clock.current().sleep, 0.001)

def test_b(perfgate):
    perfgate.measure(clock.current().sleep, (0.001,), name="one")
    perfgate.measure(clock.current().sleep, (0.002,), name="two")

def test_c(perfgate):
    perfgate(clock.current().sleep, 0.001)
"""
PYPROJECT = "[tool.perfgate]\nwarmup_ms = 2\nmin_samples = 5\nmax_samples = 10\nbudget_ms = 20\nconfirm_runs = 0\n"


def test_workers_measurements_become_one_stored_run(pytester, monkeypatch):
    monkeypatch.delenv("PERFGATE_DB", raising=False)
    monkeypatch.setenv("PYTEST_ADDOPTS", LEAN_PYTEST_ADDOPTS)
    monkeypatch.setattr("perfgate.pytest_plugin.xdist.check_controller", lambda config: None)  # no GPUs here
    pytester.makeconftest(MANUAL_CLOCK_CONFTEST)
    pytester.makepyfile(test_perf=PERF_TESTS)
    pytester.makefile(".toml", pyproject=PYPROJECT)
    result = pytester.runpytest("--perfgate", "-p", "no:cacheprovider", "-n", "2", "--perfgate-json", "out.json")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*gate passed: 4 case(s): 4 new*"])
    doc = json.loads((pytester.path / "out.json").read_text())
    assert sorted(c["case_id"] for c in doc["cases"]) == [
        "test_perf.py::test_a",
        "test_perf.py::test_b::one",
        "test_perf.py::test_b::two",
        "test_perf.py::test_c",
    ]
    con = sqlite3.connect(pytester.path / ".perfgate" / "history.db")
    assert con.execute("select count(*) from runs").fetchone()[0] == 1
    assert con.execute("select count(*) from cases").fetchone()[0] == 4


def test_more_workers_than_gpus_is_refused(pytester, monkeypatch):
    import perfgate.measure.timer as timer

    pytester.makepyfile(test_perf=PERF_TESTS)
    pytester.makefile(".toml", pyproject=PYPROJECT)
    monkeypatch.setattr(timer, "cuda_available", lambda: True)
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    result = pytester.runpytest("--perfgate", "-p", "no:cacheprovider", "-n", "2")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*-n 2 but 1 GPU(s) visible: two workers on one GPU would time each other*"])
