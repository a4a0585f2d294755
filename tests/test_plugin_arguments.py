"""Every argument of `perfgate(...)`, `perfgate.measure(...)`, `perfgate.work(...)` and the `benchmark`
fixture is checked where the test calls it (issue 32): a bad value fails that test with one line, and every
other case is stored and gated. Only the process that started the session stores or gates: a test that
forks, even inside the measured call, leaves one run in the history."""

from __future__ import annotations

import json
import sqlite3

import pytest

from tests.helpers import perf_project

PYPROJECT = """
[tool.perfgate]
warmup_ms = 1
min_samples = 5
max_samples = 8
budget_ms = 20
confirm_runs = 0
"""
GOOD = """
from perfgate.measure import clock


def test_good(perfgate):
    perfgate.measure(clock.current().sleep, (0.001,), flops=1000, bytes_moved=4096)
"""


def _stored(project) -> tuple[int, list[str]]:
    con = sqlite3.connect(project.path / ".perfgate" / "history.db")
    runs = con.execute("SELECT count(*) FROM runs").fetchone()[0]
    return runs, [r[0] for r in con.execute("SELECT case_id FROM cases ORDER BY case_id")]


def _failure_lines(result, test: str) -> list[str]:
    """The lines pytest printed for one failed (or errored) test, between its header and the next section."""
    out = result.stdout.str()
    start = out.find(f"_ {test} _")
    start = start if start != -1 else out.index(f" of {test} _")
    end = min(i for i in (out.find("\n___", start + 1), out.find("\n===", start + 1)) if i != -1)
    return [line for line in out[start:end].splitlines()[1:] if line.strip()]


BAD_CALLS = {
    "flops_past_int64": "perfgate.measure(f, flops=10**30)",
    "negative_bytes": "perfgate.measure(f, bytes_moved=-1)",
    "nan_bytes": "perfgate.measure(f, bytes_moved=float('nan'))",
    "inf_flops": "perfgate.measure(f, flops=float('inf'))",
    "fractional_flops": "perfgate.measure(f, flops=1.5)",
    "bool_flops": "perfgate.measure(f, flops=True)",
    "work_negative": "perfgate.work(bytes_moved=-5)(f)",
    "work_past_int64": "perfgate.work(flops=2**64)(f)",
    "name_with_newline": "perfgate.measure(f, name='a\\n::error::forged')",
    "name_with_escape": "perfgate.measure(f, name='a\\x1b[31m')",
    "empty_name": "perfgate.measure(f, name='')",
    "long_name": "perfgate.measure(f, name='x' * 500)",
    "min_speedup_zero": "perfgate.measure(f, reference=f, min_speedup=0)",
    "min_speedup_nan": "perfgate.measure(f, reference=f, min_speedup=float('nan'))",
    "min_speedup_huge": "perfgate.measure(f, reference=f, min_speedup=1e9)",
    "negative_rtol": "perfgate.measure(f, reference=f, check=True, rtol=-1)",
    "not_callable": "perfgate.measure(42)",
    "reference_not_callable": "perfgate.measure(f, reference='torch.add')",
    "args_not_a_tuple": "perfgate.measure(f, args=5)",
    "kwargs_not_a_mapping": "perfgate.measure(f, kwargs=[1])",
    "timer_by_name": "perfgate.measure(f, timer='cuda')",
    "check_not_bool": "perfgate.measure(f, reference=f, check='yes')",
    "check_without_reference": "perfgate.measure(f, check=True)",
    "min_speedup_without_reference": "perfgate.measure(f, min_speedup=2.0)",
}
BAD_SUITE = (
    GOOD
    + "\n\ndef f():\n    pass\n"
    + "".join(f"\n\ndef test_{name}(perfgate):\n    {call}\n" for name, call in BAD_CALLS.items())
)


@pytest.fixture
def bad_project(pytester, monkeypatch):
    return perf_project(pytester, monkeypatch, BAD_SUITE, PYPROJECT)


def test_a_bad_argument_fails_its_test_in_one_line_and_the_run_is_stored_and_gated(bad_project):
    result = bad_project.runpytest("--perfgate", "-p", "no:cacheprovider", "--perfgate-json", "out.json")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed") == len(BAD_CALLS) and outcomes.get("passed") == 1
    for name in BAD_CALLS:
        lines = _failure_lines(result, f"test_{name}")
        assert len(lines) == 1 and lines[0].startswith("perfgate: "), (name, lines)
        assert "Traceback" not in lines[0] and "\x1b" not in lines[0]
    runs, cases = _stored(bad_project)
    assert (runs, cases) == (1, ["test_perf.py::test_good"])
    doc = json.loads((bad_project.path / "out.json").read_text())
    assert [c["case_id"] for c in doc["cases"]] == ["test_perf.py::test_good"]
    assert {u["nodeid"].split("::")[1] for u in doc["run"]["unmeasured"]} == {f"test_{n}" for n in BAD_CALLS}


def test_the_messages_name_the_argument_and_the_value(bad_project):
    result = bad_project.runpytest("--perfgate", "-p", "no:cacheprovider")
    expected = {
        "flops_past_int64": "perfgate: perfgate.measure flops: must be a whole number in [0, 2**63)",
        "nan_bytes": "perfgate: perfgate.measure bytes_moved: must be a whole number in [0, 2**63)",
        "name_with_newline": "perfgate: perfgate.measure name: must not hold a control character",
        "min_speedup_zero": "perfgate: perfgate.measure min_speedup: must be a finite number in (0, 1000]",
        "work_negative": "perfgate: perfgate.work bytes_moved: must be a whole number",
        "check_without_reference": "perfgate: perfgate.measure check: needs a reference= callable",
        "min_speedup_without_reference": "perfgate: perfgate.measure min_speedup: needs a reference= callable",
    }
    for name, start in expected.items():
        assert _failure_lines(result, f"test_{name}")[0].startswith(start), name


def test_an_integral_float_is_a_whole_number_of_operations(pytester, monkeypatch):
    suite = "def test_float_flops(perfgate):\n    perfgate.measure(sum, ([1, 2],), flops=2e12, bytes_moved=4.0)\n"
    project = perf_project(pytester, monkeypatch, suite, PYPROJECT)
    assert project.runpytest("--perfgate", "-p", "no:cacheprovider").ret == 0
    con = sqlite3.connect(project.path / ".perfgate" / "history.db")
    assert con.execute("SELECT flops, bytes_moved FROM cases").fetchone() == (2_000_000_000_000, 4)


def test_a_case_measured_twice_fails_its_test_in_one_line(pytester, monkeypatch):
    suite = GOOD + "\n\ndef test_twice(perfgate):\n    perfgate(sum, [1])\n    perfgate(sum, [2])\n"
    project = perf_project(pytester, monkeypatch, suite, PYPROJECT)
    result = project.runpytest("--perfgate", "-p", "no:cacheprovider")
    lines = _failure_lines(result, "test_twice")
    assert len(lines) == 1 and "measured twice" in lines[0]
    assert _stored(project) == (1, ["test_perf.py::test_good", "test_perf.py::test_twice"])


BENCHMARK_SUITE = """
import math


def test_good(benchmark):
    benchmark(sum, range(10))


def test_nan_extra_info(benchmark):
    benchmark.extra_info["ratio"] = math.nan
    benchmark(sum, range(10))


def test_huge_extra_info(benchmark):
    benchmark(sum, range(10))
    benchmark.extra_info["bytes"] = 10**30


def test_group_not_text(benchmark):
    benchmark.group = 5
    benchmark(sum, range(10))


def test_object_extra_info_is_kept_as_text(benchmark):
    benchmark.extra_info["shape"] = object()
    benchmark(sum, range(10))


def test_bad_rounds(benchmark):
    benchmark.pedantic(sum, args=(range(3),), rounds=0)
"""


def test_a_bad_benchmark_value_fails_its_test_in_one_line_and_the_rest_is_stored(pytester, monkeypatch):
    project = perf_project(pytester, monkeypatch, BENCHMARK_SUITE, PYPROJECT)
    result = project.runpytest("--perfgate", "-p", "no:cacheprovider", "--perfgate-json", "out.json")
    for test, start in (
        ("test_nan_extra_info", "perfgate: benchmark.extra_info: holds a number strict JSON cannot hold"),
        ("test_huge_extra_info", "perfgate: benchmark.extra_info: holds a number strict JSON cannot hold"),
        ("test_group_not_text", "perfgate: benchmark.group: must be text"),
    ):
        lines = _failure_lines(result, test)
        assert len(lines) == 1 and lines[0].startswith(start), (test, lines)
    rounds = "\n".join(_failure_lines(result, "test_bad_rounds"))  # pytest-benchmark's own ValueError, kept
    assert "ValueError: Must have positive int for `rounds`." in rounds and "perfgate/" not in rounds
    runs, cases = _stored(project)
    assert runs == 1
    assert cases == ["test_perf.py::test_good", "test_perf.py::test_object_extra_info_is_kept_as_text"]
    assert json.loads((project.path / "out.json").read_text())["gate"]["failed"] is False


FORK_IN_TEST = """
import os
from perfgate.measure import clock


def test_forks(perfgate):
    pid = os.fork()  # the child carries on with the session, as a careless test lets it
    if pid:
        os.waitpid(pid, 0)
    perfgate(clock.current().sleep, 0.001)


def test_after(perfgate):
    perfgate(clock.current().sleep, 0.002)
"""
FORK_IN_CALL = """
import os


def forking():
    pid = os.fork()  # the child returns into perfgate's timing loop
    if pid:
        os.waitpid(pid, 0)


def test_forks_in_the_measured_call(perfgate):
    perfgate(forking)


def test_after(perfgate):
    perfgate(sum, range(10))
"""


@pytest.mark.parametrize("suite", [FORK_IN_TEST, FORK_IN_CALL], ids=["in-the-test", "in-the-measured-call"])
def test_a_forked_child_never_stores_or_gates(pytester, monkeypatch, suite):
    project = perf_project(pytester, monkeypatch, suite, PYPROJECT)
    result = project.runpytest_subprocess("--perfgate", "-p", "no:cacheprovider", "--perfgate-json", "out.json")
    assert result.ret == 0
    runs, cases = _stored(project)
    assert runs == 1 and len(cases) == 2
    assert result.stdout.str().count("perfgate: gate passed") == 1
