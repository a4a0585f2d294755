"""Speedup against a reference and peak memory, end to end on the host clock (pytester, in-process):
the candidate and its reference alternate sample by sample, a candidate below `min_speedup` fails with
the speedup named, a wrong output fails before anything is timed, and a memory regression is flagged
on the memory metric while the time is unchanged."""

import pytest

from tests.helpers import comparisons_by_case, gate_json, perf_project

PERF_TEST = """
import os
import pytest
from perfgate.measure import clock

CALLS = []

def reference(ms):
    CALLS.append("ref")
    clock.current().sleep(ms / 1e3)
    return ms * 2

def candidate(ms):
    CALLS.append("cand")
    clock.current().sleep(ms * float(os.environ.get("CAND_FACTOR", "0.5")) / 1e3)
    return ms * 2 + float(os.environ.get("CAND_ERROR", "0"))

def test_alternates(perfgate):
    CALLS.clear()
    perfgate.measure(candidate, (2.0,), reference=reference, check=True)
    # compile/check: candidate, then reference; timing: reference, candidate, reference, ...;
    # then the candidate's own memory pass (3 calls), after the timing so it never disturbs it
    order = "".join(c[0] for c in CALLS)
    assert order[:2] == "cr" and order[-3:] == "ccc", order
    timed = order[2:-3]
    assert len(timed) >= 20 and timed == "rc" * (len(timed) // 2), order
    assert perfgate.last.speedup is not None and perfgate.last.speedup.median > 1.5

@pytest.mark.perfgate(min_speedup=1.2)
def test_fast_enough(perfgate):
    perfgate.measure(candidate, (2.0,), reference=reference, reference_name="the slow one")

def test_memory(perfgate):
    size = int(os.environ.get("ALLOC_KB", "256")) * 1024
    def work():
        buf = bytearray(size)
        clock.current().sleep(0.002)
        return len(buf)
    perfgate.measure(work)
"""
PYPROJECT = """
[tool.perfgate]
threshold_pct = 50.0
warmup_ms = 2
min_samples = 10
max_samples = 30
budget_ms = 60
confirm_runs = 0
"""


@pytest.fixture
def project(pytester, monkeypatch):
    return perf_project(pytester, monkeypatch, PERF_TEST, PYPROJECT, clear=("CAND_FACTOR", "CAND_ERROR", "ALLOC_KB"))


def test_reference_and_candidate_samples_alternate(project):
    result = gate_json(project, "-k", "alternates")
    assert result.ret == 0, result.stdout.str()


def test_a_candidate_slowed_below_min_speedup_fails_with_the_speedup_named(project, monkeypatch):
    assert gate_json(project, "-k", "fast_enough").ret == 0  # 2x faster than its reference: passes, baseline written
    monkeypatch.setenv("CAND_FACTOR", "1.0")  # now as slow as the reference
    result = gate_json(project, "-k", "fast_enough")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*below target: *test_fast_enough: *x vs the slow one (CI *), needs >= 1.2x*"])
    assert comparisons_by_case(project, "min_speedup")["test_fast_enough"]["verdict"] == "below target"


def test_a_wrong_output_fails_the_test_before_anything_is_timed(project, monkeypatch):
    monkeypatch.setenv("CAND_ERROR", "0.5")
    result = gate_json(project, "-k", "alternates")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*OutputMismatch: output: 4.5 vs reference 4.0*"])
    assert not (project.path / "baselines").exists()  # a failing test never writes a baseline


def test_a_memory_regression_is_flagged_while_the_time_is_unchanged(project, monkeypatch):
    assert gate_json(project, "-k", "memory").ret == 0
    monkeypatch.setenv("ALLOC_KB", "1024")  # four times the memory, the same 2 ms
    result = gate_json(project, "-k", "memory")
    assert result.ret == 1
    assert comparisons_by_case(project, "median_ms")["test_memory"]["verdict"] == "unchanged"
    memory = comparisons_by_case(project, "memory.peak_host_bytes")["test_memory"]
    assert memory["verdict"] == "regressed" and memory["current"] > 3.5 * memory["baseline"]
