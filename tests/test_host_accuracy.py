"""A ~300 ns call on perfgate's host clock reads within 10% of pytest-benchmark's median for the same
callable, on this machine, in this test run. (One call per sample used to read 2.2-2.9x slower.)

This is the one test that reads the real clock, by design: it compares two timers. It is built not to
flake on a busy machine:
- the two timers take turns on the same callable (pytest-benchmark, perfgate, pytest-benchmark, ...),
  so a burst of load hits both;
- each pair times its own fresh copy of the callable: where the code lands in memory moves a sub-us
  call by several percent, for one timer's loop more than the other's; the verdict is the median of
  the pairs' ratios, over several placements;
- when pytest-benchmark's own rounds are too spread to resolve 10% (median IQR above 10% of the
  median), the machine is too noisy to tell, and the test skips saying so (never silently).
"""

import json
import statistics

import pytest

TOLERANCE = 0.10
PAIRS = 7
SUITE = f'''
import json
import pytest
from perfgate.measure.case import CaseSpec, measure_case
from perfgate.model import Timer
from perfgate.config.settings import MeasureOptions

SOURCE = """
def work(n):  # ~300 ns of pure Python on a 2020s x86 core
    total = 0
    for i in range(n):
        total += i * i
    return total
"""

def fresh_work():
    scope = {{}}
    exec(compile(SOURCE, "work.py", "exec"), scope)  # a new code object each time, placed anew
    return scope["work"]

WORKS = [fresh_work() for _ in range({PAIRS})]
OPTIONS = MeasureOptions(warmup_ms=2, min_samples=20, max_samples=100, budget_ms=20, memory=False)

@pytest.mark.parametrize("pair", range({PAIRS}))
@pytest.mark.parametrize("timer", ["pytest-benchmark", "perfgate"])
def test_work(timer, pair, request):
    work = WORKS[pair]
    if timer == "pytest-benchmark":
        benchmark = request.getfixturevalue("benchmark")
        benchmark(work, 3)
        row = [pair, timer, benchmark.stats.stats.median, benchmark.stats.stats.iqr]
    else:
        t = measure_case(CaseSpec("work", work, (3,), options=OPTIONS, timer=Timer.HOST)).timing
        row = [pair, timer, t.median_ms / 1e3, t.iqr_ms / 1e3]
    with open("medians.jsonl", "a") as out:
        out.write(json.dumps(row) + "\\n")
'''


def _one_attempt(pytester: pytest.Pytester) -> tuple[float, list[float]] | str:
    """The median ratio and the pairs' ratios, or why this machine is too noisy to tell right now."""
    medians = pytester.path / "medians.jsonl"
    medians.unlink(missing_ok=True)
    result = pytester.runpytest("-p", "no:cacheprovider", "--benchmark-max-time=0.02", "-q")
    result.assert_outcomes(passed=2 * PAIRS)
    rows = [json.loads(line) for line in medians.read_text().splitlines()]
    theirs = {pair: (median, iqr) for pair, timer, median, iqr in rows if timer == "pytest-benchmark"}
    ours = {pair: median for pair, timer, median, _ in rows if timer == "perfgate"}
    spread = statistics.median(iqr / median for median, iqr in theirs.values())
    if spread > TOLERANCE:
        return f"too noisy to resolve {TOLERANCE:.0%}: pytest-benchmark's own rounds spread {spread:.0%} (IQR / median)"
    ratios = sorted(ours[p] / theirs[p][0] for p in range(PAIRS))
    print(
        f"perfgate / pytest-benchmark medians of a ~{theirs[0][0] * 1e9:.0f} ns call, {PAIRS} pairs: "
        f"{', '.join(f'{r:.3f}' for r in ratios)}; median {statistics.median(ratios):.3f}"
    )
    return statistics.median(ratios), ratios


def test_a_300_ns_call_reads_within_10_percent_of_pytest_benchmark(pytester, monkeypatch):
    """A systematic error (the old 2.2-2.9x) is off in every attempt; a burst of load on a shared machine
    (once seen at 1.30x under a load average of 8, once at 0.79x after two attempts too noisy to measure)
    is not, so a miss is re-measured, up to four times, as the gate confirms a suspect in fresh processes,
    and a failure needs two measured attempts that are both off: one is a burst, not a bias."""
    pytest.importorskip("pytest_benchmark")
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)  # pytest-benchmark disables itself on xdist workers
    pytester.makepyfile(test_timers=SUITE)
    seen: list[object] = []
    for _ in range(4):
        attempt = _one_attempt(pytester)
        if isinstance(attempt, str):
            seen.append(attempt)
            continue
        ratio, ratios = attempt
        if abs(ratio - 1) <= TOLERANCE:
            return
        seen.append(ratios)
    measured = [s for s in seen if not isinstance(s, str)]
    if len(measured) < 2:
        pytest.skip(f"this machine is too noisy to tell right now: {seen}")
    raise AssertionError(f"perfgate / pytest-benchmark off by more than {TOLERANCE:.0%} in every attempt: {seen}")
