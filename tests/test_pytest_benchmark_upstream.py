"""pytest-benchmark's own tests of its `benchmark` fixture (tests/pytest_benchmark_upstream, vendored
unchanged from pytest-benchmark 5.3.1) pass under `pytest --perfgate`, with pytest-benchmark's own
strictness (-W error --strict-markers --doctest-modules); the only failures are the listed tests that
drive pytest-benchmark's private internals (README.md there says why, test by test)."""

from pathlib import Path

import pytest

UPSTREAM = Path(__file__).parent / "pytest_benchmark_upstream"
PYPROJECT = """
[tool.perfgate]
warmup_ms = 1
min_samples = 5
max_samples = 20
budget_ms = 20
confirm_runs = 0
memory = false
"""
CALIBRATE_STUCK = 30  # test_calibration.py::test_calibrate_stuck: 5 minimums x 3 skews x 2 modes
PRIVATE_PRECISION = {
    "test_precision.py::test_zero_variance_stops_at_min_rounds",
    "test_precision.py::test_never_precise_runs_to_cap",
    "test_precision.py::test_stops_early_when_precise_enough",
}


@pytest.fixture
def upstream(pytester, monkeypatch):
    # pytest-benchmark (stepped aside here, but imported) reads this variable; the suite itself may run under -n
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.delenv("PERFGATE_DB", raising=False)
    for source in sorted(UPSTREAM.glob("test_*.py")):
        pytester.makepyfile(**{source.stem: source.read_text(encoding="utf-8")})
    pytester.makefile(".toml", pyproject=PYPROJECT)
    return pytester


def test_pytest_benchmarks_own_fixture_tests_pass_under_perfgate(upstream):
    pytest.importorskip("aspectlib")
    result = upstream.runpytest(
        "--perfgate",
        "--perfgate-no-store",
        "-p",
        "no:cacheprovider",
        "-W",
        "error",
        "--strict-markers",
        "--doctest-modules",
        "-rfs",
    )
    failed = {r.nodeid for r in result.reprec.getreports("pytest_runtest_logreport") if r.failed}
    stuck = {f for f in failed if f.startswith("test_calibration.py::test_calibrate_stuck[")}
    assert failed - stuck == PRIVATE_PRECISION and len(stuck) == CALIBRATE_STUCK
    result.assert_outcomes(passed=46, skipped=1, failed=CALIBRATE_STUCK + len(PRIVATE_PRECISION))
    result.stdout.fnmatch_lines(["*gate passed*"])
    assert sorted(p.name for p in upstream.path.iterdir() if not p.name.startswith("test_")) == ["pyproject.toml"]
