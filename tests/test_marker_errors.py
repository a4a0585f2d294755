"""A bad `@pytest.mark.perfgate(...)` argument is bad configuration: one line naming the test, the problem and the
allowed values, exit 4 (pytest's usage error) before any test runs, as a bad `[tool.perfgate]` entry is; not one
pytest error per test (issue 31, review finding)."""

from __future__ import annotations

import pytest

TESTS = """
import pytest

@pytest.mark.perfgate({marker})
def test_a(perfgate):
    perfgate(sorted, [3, 2, 1])

@pytest.mark.perfgate({marker})
def test_b(perfgate):
    perfgate(sorted, [3, 2, 1])

def test_plain():
    pass
"""


def _run(pytester: pytest.Pytester, marker: str) -> tuple[pytest.RunResult, list[str]]:
    pytester.makepyfile(test_m=TESTS.format(marker=marker))
    result = pytester.runpytest("--perfgate", "--perfgate-no-store", "-p", "no:cacheprovider")
    lines = [line for line in result.outlines + result.errlines if "perfgate marker" in line]
    return result, lines


def test_an_invalid_host_timer_is_one_line_naming_the_test_and_the_allowed_values_and_exit_4(pytester):
    result, lines = _run(pytester, 'host_timer="cpu"')
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.outlines
    assert len(lines) == 1, lines
    assert (
        "test_m.py::test_a: perfgate marker host_timer: must be one of 'wall', 'thread_cpu', 'process_cpu', got 'cpu'"
        in lines[0]
    )
    assert "(and 1 more test with the same problem: test_m.py::test_b)" in lines[0], lines[0]
    result.assert_outcomes()  # no test ran, not even the plain one: the run's configuration is bad


@pytest.mark.parametrize(
    ("marker", "problem"),
    [
        ("threshold_pct='two'", "perfgate marker threshold_pct: "),
        ("min_samples=0", "perfgate marker min_samples: "),
        ("gated_measure='power'", "perfgate marker gated_measure: "),
        ("treshold_pct=3", "unknown perfgate marker argument(s) ['treshold_pct']; known: "),
        ("'fast'", "the perfgate marker takes keyword arguments only"),
        ("min_samples=50, max_samples=10", "perfgate marker: min_samples > max_samples"),
        ("metrics={'no_such_counter': 5}", "perfgate marker metrics"),
    ],
)
def test_every_bad_marker_argument_is_one_line_and_exit_4(pytester, marker, problem):
    result, _ = _run(pytester, marker)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.outlines
    said = [line for line in result.errlines if line.startswith("ERROR: perfgate: ")]
    assert len(said) == 1 and problem in said[0] and "test_m.py::test_a" in said[0], result.errlines


def test_a_module_wide_bad_marker_is_named_once(pytester):
    pytester.makepyfile(
        test_m="import pytest\npytestmark = pytest.mark.perfgate(host_timer='cpu')\n"
        + "".join(f"\ndef test_{i}(perfgate):\n    perfgate(sorted, [1])\n" for i in range(5))
    )
    result = pytester.runpytest("--perfgate", "--perfgate-no-store", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    said = [line for line in result.errlines if "perfgate marker" in line]
    assert len(said) == 1 and "(and 4 more tests with the same problem: test_m.py::test_1, " in said[0], said


def test_without_perfgate_a_marker_is_not_read(pytester):
    pytester.makepyfile(test_m=TESTS.format(marker='host_timer="cpu"'))
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=3)
