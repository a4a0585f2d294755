"""Strict mode against an adversary (issue 23): a pull request makes one test ten times slower, then tries to
talk `pytest --perfgate --perfgate-strict` out of failing. Each variant below is one such try; none may exit 0,
and each is stopped by the defence named in its `expect` (docs/robustness.md, "Strict mode against an
adversary").

The project is a git checkout whose main branch holds a calibrated baseline (the base ref of the pull
request, `origin/main`); the pull request's run has GITHUB_BASE_REF set, as on GitHub. Timing is on the
manual clock (tests/helpers.py), so the slowdown is exactly 10x whatever the machine does. A variant that
tests a defence below the baseline check (a bound, the ceiling, the child's handshake) runs without
GITHUB_BASE_REF, so the check that would also catch it does not hide whether that defence holds.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from perfgate.baseline import load_baseline
from perfgate.baseline.write import write_baseline
from tests.helpers import CI_ENV, MANUAL_CLOCK_CONFTEST, QUIET_PROCESSES, calibrated
from tests.helpers import LEAN_PYTEST_ADDOPTS as LEAN_HELPERS

# plugins the generated project never uses, kept out of its many in-process runs
LEAN_PYTEST_ADDOPTS = LEAN_HELPERS + " -p no:xdist -p no:anyio -p no:benchmark"
FAST = """from perfgate.measure import clock


def test_fast(perfgate):
    perfgate(clock.current().sleep, 0.002)
"""
SLOW_HEAD = """import os, pathlib, sys
import pytest
from perfgate.measure import clock

FACTOR = {factor}


def work(ms):
    clock.current().sleep(ms / 1e3)

"""
SLOW = (
    SLOW_HEAD
    + """
def test_slow(perfgate):
    perfgate(work, 2.0 * FACTOR)
"""
)
PYPROJECT = """[tool.perfgate]
warmup_ms = 1
min_samples = 5
max_samples = 8
budget_ms = 20
confirm_runs = 0
noise_window = 0
"""
SLOW_CASE = "test_slow.py::test_slow"


def slow_test(body: str) -> str:
    """test_slow.py ten times slower, with `body` in place of the plain test."""
    return SLOW_HEAD.format(factor=10) + "\n" + body


def conftest(extra: str) -> str:
    return MANUAL_CLOCK_CONFTEST + "\n\n" + extra


@dataclass(frozen=True)
class Variant:
    files: dict[str, str | None] = field(default_factory=dict)  # after the slowdown; None deletes the file
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    baseline: Callable[[dict[str, Any]], None] | None = None  # edits the committed baseline's JSON
    pull_request: bool = True  # GITHUB_BASE_REF=main, as on a pull request's run
    expect: str = ""  # the defence that stops it, as the run says it
    process: bool = False  # ends the process: run in a child, not in-process
    nested: bool = False  # the project whose tests live in tests/perf, gated as `pytest tests/perf` (nested_template)
    forged_at: str = ""  # a directory the pull request adds with the 10x baseline, case ids relative to tests/perf


NOT_MEASURED = "baseline case not measured"
CHANGED = "baseline changed since the base ref"
CEILING = "beyond the ceiling"
REGRESSED = "REGRESSED"
FROM_ADDOPTS = "is not on pytest's own command line"


def _case(doc: dict[str, Any]) -> dict[str, Any]:
    case: dict[str, Any] = doc["cases"][SLOW_CASE]
    return case


def _spread(doc: dict[str, Any]) -> None:
    case = _case(doc)
    case["process_medians_ms"] = [m * f for m, f in zip(case["process_medians_ms"], (0.1, 1, 20, 1, 0.5, 30))]


def _median_times_ten(doc: dict[str, Any]) -> None:
    case = _case(doc)
    case["median_ms"] *= 10
    case["process_medians_ms"] = [m * 10 for m in case["process_medians_ms"]]


def _uncalibrated(doc: dict[str, Any]) -> None:
    for case in doc["cases"].values():
        case.pop("process_medians_ms", None)


def _device(doc: dict[str, Any]) -> None:
    doc["environment"]["device_name"] = "Another CPU"


def _remove_case(doc: dict[str, Any]) -> None:
    del doc["cases"][SLOW_CASE]


def _timer(doc: dict[str, Any]) -> None:
    _case(doc)["timer"] = "cuda_event"


NESTED = "tests/perf"  # the nested project's test directory (nested_template)
NESTED_BASELINES = f"{NESTED}/baselines"
PYTEST_INI_K = '[pytest]\naddopts = -k "not slow"\n'
ADDOPTS = '\n[tool.pytest.ini_options]\naddopts = "{}"\n'

VARIANTS: dict[str, Variant] = {
    # --- the test is renamed, deleted or re-parametrized: its baseline case is not measured ---------------------
    "renamed test": Variant(
        {"test_slow.py": slow_test("def test_slow_v2(perfgate):\n    perfgate(work, 2.0 * FACTOR)\n")},
        expect=NOT_MEASURED,
    ),
    "deleted test": Variant({"test_slow.py": None}, expect=NOT_MEASURED),
    "newly parametrized test": Variant(
        {
            "test_slow.py": slow_test(
                "@pytest.mark.parametrize('n', [1, 2])\ndef test_slow(perfgate, n):\n    perfgate(work, 2.0 * FACTOR)\n"
            )
        },
        expect=NOT_MEASURED,
    ),
    "moved to another file": Variant(
        {
            "test_slow.py": None,
            "test_moved.py": slow_test("def test_slow(perfgate):\n    perfgate(work, 2.0 * FACTOR)\n"),
        },
        expect=NOT_MEASURED,
    ),
    "wrapped in a class": Variant(
        {
            "test_slow.py": slow_test(
                "class TestWrapped:\n    def test_slow(self, perfgate):\n        perfgate(work, 2.0 * FACTOR)\n"
            )
        },
        expect=NOT_MEASURED,
    ),
    "measured under another name": Variant(
        {
            "test_slow.py": slow_test(
                "def test_slow(perfgate):\n    perfgate.measure(work, (2.0 * FACTOR,), name='renamed')\n"
            )
        },
        expect=NOT_MEASURED,
    ),
    "no longer measured": Variant(
        {"test_slow.py": slow_test("def test_slow(perfgate):\n    work(2.0 * FACTOR)\n")}, expect=NOT_MEASURED
    ),
    "fixture replaced by a conftest": Variant(
        {
            "conftest.py": conftest(
                "import pytest\n\n@pytest.fixture\ndef perfgate(perfgate, request):\n"
                "    return perfgate if 'fast' in request.node.name else (lambda fn, *a, **k: fn(*a, **k))\n"
            )
        },
        expect=NOT_MEASURED,
    ),
    "skipped inside the test": Variant(
        {"test_slow.py": slow_test("def test_slow(perfgate):\n    pytest.skip('flaky on CI')\n")}, expect="test skipped"
    ),
    "module-level skip mark": Variant(
        {
            "test_slow.py": slow_test(
                "pytestmark = pytest.mark.skip('later')\n\n\n"
                "def test_slow(perfgate):\n    perfgate(work, 2.0 * FACTOR)\n"
            )
        },
        expect="test skipped",
    ),
    "importorskip at module level": Variant(
        {
            "test_slow.py": "import pytest\npytest.importorskip('no_such_module')\n"
            + slow_test("def test_slow(perfgate):\n    pass\n")
        },
        expect=NOT_MEASURED,
    ),
    "xfail without running": Variant(
        {
            "test_slow.py": slow_test(
                "@pytest.mark.xfail(run=False)\ndef test_slow(perfgate):\n    perfgate(work, 2.0 * FACTOR)\n"
            )
        },
        expect="test skipped",
    ),
    # --- deselected by files the pull request controls -------------------------------------------------------------
    "-k in pyproject addopts": Variant(
        {"pyproject.toml": PYPROJECT + ADDOPTS.format("-k 'not slow'")}, pull_request=False, expect=NOT_MEASURED
    ),
    "-m in pyproject addopts": Variant(
        {
            "pyproject.toml": PYPROJECT
            + '\n[tool.pytest.ini_options]\nmarkers = ["slow"]\naddopts = "-m \'not slow\'"\n',
            "test_slow.py": slow_test(
                "@pytest.mark.slow\ndef test_slow(perfgate):\n    perfgate(work, 2.0 * FACTOR)\n"
            ),
        },
        pull_request=False,
        expect=NOT_MEASURED,
    ),
    "--deselect in addopts": Variant(
        {"pyproject.toml": PYPROJECT + ADDOPTS.format(f"--deselect {SLOW_CASE}")},
        pull_request=False,
        expect=NOT_MEASURED,
    ),
    "--ignore in addopts": Variant(
        {"pyproject.toml": PYPROJECT + ADDOPTS.format("--ignore=test_slow.py")}, pull_request=False, expect=NOT_MEASURED
    ),
    "-k in pytest.ini": Variant({"pytest.ini": PYTEST_INI_K}, expect=NOT_MEASURED),
    "-k in tox.ini": Variant({"tox.ini": PYTEST_INI_K}, expect=NOT_MEASURED),
    "-k in setup.cfg": Variant({"setup.cfg": PYTEST_INI_K.replace("[pytest]", "[tool:pytest]")}, expect=NOT_MEASURED),
    "testpaths without the file": Variant({"pytest.ini": "[pytest]\ntestpaths = test_fast.py\n"}, expect=NOT_MEASURED),
    "python_files without the file": Variant(
        {"pytest.ini": "[pytest]\npython_files = test_fast.py\n"}, expect=NOT_MEASURED
    ),
    "python_functions without the test": Variant(
        {"pytest.ini": "[pytest]\npython_functions = test_fast\n"}, expect=NOT_MEASURED
    ),
    "-k in PYTEST_ADDOPTS": Variant(
        env={"PYTEST_ADDOPTS": LEAN_PYTEST_ADDOPTS + " -k 'not slow'"}, expect=NOT_MEASURED
    ),
    "collection_modifyitems drops it": Variant(
        {
            "conftest.py": conftest(
                "def pytest_collection_modifyitems(items):\n    items[:] = [i for i in items if 'slow' not in i.name]\n"
            )
        },
        expect=NOT_MEASURED,
    ),
    "collection_modifyitems deselects it": Variant(
        {
            "conftest.py": conftest(
                "def pytest_collection_modifyitems(config, items):\n"
                "    gone = [i for i in items if 'slow' in i.name]\n"
                "    config.hook.pytest_deselected(items=gone)\n"
                "    items[:] = [i for i in items if i not in gone]\n"
            )
        },
        expect=NOT_MEASURED,
    ),
    "collect_ignore": Variant({"conftest.py": conftest("collect_ignore = ['test_slow.py']\n")}, expect=NOT_MEASURED),
    "collect_ignore_glob": Variant(
        {"conftest.py": conftest("collect_ignore_glob = ['*slow*']\n")}, expect=NOT_MEASURED
    ),
    "pytest_ignore_collect": Variant(
        {
            "conftest.py": conftest(
                "def pytest_ignore_collect(collection_path):\n    return 'slow' in collection_path.name or None\n"
            )
        },
        expect=NOT_MEASURED,
    ),
    "skip marker added by a conftest": Variant(
        {
            "conftest.py": conftest(
                "import pytest\n\ndef pytest_collection_modifyitems(items):\n"
                "    for i in items:\n        i.add_marker(pytest.mark.skip('later'))\n"
            )
        },
        expect="test skipped",
    ),
    "node id renamed by a conftest": Variant(
        {
            "conftest.py": conftest(
                "def pytest_collection_modifyitems(items):\n"
                "    for i in items:\n"
                "        renamed = property(lambda self: super(type(self), self).nodeid.replace('slow', 'quick'))\n"
                "        i.__class__ = type('Renamed', (type(i),), {'nodeid': renamed})\n"
            )
        },
        expect=NOT_MEASURED,
    ),
    "pytest.exit(0) during collection": Variant(
        {
            "conftest.py": conftest(
                "import pytest\n\ndef pytest_collection_modifyitems(items):\n    pytest.exit('done', returncode=0)\n"
            )
        },
        expect="no perf case measured",
    ),
    "pytest.exit(0) in an earlier test": Variant(
        {"test_fast.py": FAST + "\n\ndef test_stop():\n    import pytest\n    pytest.exit('done', returncode=0)\n"},
        expect=NOT_MEASURED,
    ),
    "plugin disabled in addopts": Variant(
        {"pyproject.toml": PYPROJECT + ADDOPTS.format("-p no:perfgate")},
        pull_request=False,
        expect="unrecognized arguments: --perfgate",
    ),
    "plugin disabled in PYTEST_ADDOPTS": Variant(
        env={"PYTEST_ADDOPTS": LEAN_PYTEST_ADDOPTS + " -p no:perfgate"}, expect="unrecognized arguments: --perfgate"
    ),
    "exit status reset by a later sessionfinish": Variant(
        {
            "conftest.py": conftest(
                "import pytest\n\n@pytest.hookimpl(trylast=True)\ndef pytest_sessionfinish(session):\n"
                "    session.exitstatus = 0\n"
            )
        },
        expect=REGRESSED,
    ),
    "exit status reset by a sessionfinish wrapper": Variant(
        {
            "conftest.py": conftest(
                "import pytest\n\n@pytest.hookimpl(wrapper=True)\ndef pytest_sessionfinish(session):\n"
                "    yield\n    session.exitstatus = 0\n"
            )
        },
        expect=REGRESSED,
    ),
    # --- the baseline or the configuration it is found by, edited in the pull request -------------------------
    "process medians spread": Variant(baseline=_spread, expect=CHANGED),
    "process medians spread, no base ref": Variant(baseline=_spread, pull_request=False, expect=CEILING),
    "median raised to the slow time": Variant(baseline=_median_times_ten, expect=CHANGED),
    "case removed from the baseline": Variant(baseline=_remove_case, expect=CHANGED),
    "calibration removed": Variant(baseline=_uncalibrated, expect=CHANGED),
    # uncalibrated, the 10x slower case is a gross regression (beyond 25% in every process): it fails as
    # REGRESSED before the ceiling is needed (issue 31 req 6)
    "calibration removed, no base ref": Variant(
        baseline=_uncalibrated, pull_request=False, expect="gross regression fails even without"
    ),
    "baseline deleted": Variant({"baselines": None}, expect="no baseline"),
    "baseline of another device": Variant(baseline=_device, pull_request=False, expect="not comparable"),
    "baseline timer changed": Variant(baseline=_timer, pull_request=False, expect="not comparable"),
    "baseline_dir pointed at a forged baseline": Variant(
        {"pyproject.toml": PYPROJECT + 'baseline_dir = "forged"\n'}, expect=CHANGED
    ),
    "baseline file named in addopts": Variant(
        {"pyproject.toml": PYPROJECT + ADDOPTS.format("--perfgate-baseline-file=forged/host.json")}, expect=CHANGED
    ),
    "allow_missing added with the test deleted": Variant(
        {
            "pyproject.toml": PYPROJECT + 'allow_missing = [{pattern = "*slow*", reason = "moved"}]\n',
            "test_slow.py": None,
        },
        expect=CHANGED,
    ),
    "env mismatch allowed in addopts for another device": Variant(
        {"pyproject.toml": PYPROJECT + ADDOPTS.format("--perfgate-allow-env-mismatch")},
        baseline=_device,
        expect=CHANGED,
    ),
    "base ref overridden in addopts": Variant(
        {"pyproject.toml": PYPROJECT + ADDOPTS.format("--perfgate-baseline-ref=HEAD")},
        baseline=_median_times_ten,
        expect=FROM_ADDOPTS,
    ),
    "base ref overridden in PYTEST_ADDOPTS": Variant(
        env={"PYTEST_ADDOPTS": LEAN_PYTEST_ADDOPTS + " --perfgate-baseline-ref=HEAD"},
        baseline=_median_times_ten,
        expect=FROM_ADDOPTS,
    ),
    "change accepted in addopts": Variant(
        {"pyproject.toml": PYPROJECT + ADDOPTS.format("--perfgate-accept-baseline-change")},
        baseline=_median_times_ten,
        expect=FROM_ADDOPTS,
    ),
    # --- thresholds without an upper bound -----------------------------------------------------------------------
    "threshold_pct = 1e300": Variant(
        {"pyproject.toml": PYPROJECT + "threshold_pct = 1e300\n"},
        pull_request=False,
        expect="threshold_pct: must be a finite number >= 0 and <= 100",
    ),
    "threshold_pct = inf": Variant(
        {"pyproject.toml": PYPROJECT + "threshold_pct = inf\n"},
        pull_request=False,
        expect="threshold_pct: must be a finite number",
    ),
    "threshold_pct = nan": Variant(
        {"pyproject.toml": PYPROJECT + "threshold_pct = nan\n"},
        pull_request=False,
        expect="threshold_pct: must be a finite number",
    ),
    "min_effect_pct = 1e300": Variant(
        {"pyproject.toml": PYPROJECT + "min_effect_pct = 1e300\n"},
        pull_request=False,
        expect="min_effect_pct: must be a finite number",
    ),
    "override threshold of 1e12": Variant(
        {"pyproject.toml": PYPROJECT + '[[tool.perfgate.overrides]]\npattern = "*slow*"\nthreshold_pct = 1e12\n'},
        pull_request=False,
        expect="threshold_pct: must be a finite number",
    ),
    "marker threshold of 1e12": Variant(
        {
            "test_slow.py": slow_test(
                "@pytest.mark.perfgate(threshold_pct=1e12)\n"
                "def test_slow(perfgate):\n    perfgate(work, 2.0 * FACTOR)\n"
            )
        },
        pull_request=False,
        expect="threshold_pct: must be a finite number",
    ),
    "marker threshold of 10**400": Variant(
        {
            "test_slow.py": slow_test(
                "@pytest.mark.perfgate(threshold_pct=10**400)\n"
                "def test_slow(perfgate):\n    perfgate(work, 2.0 * FACTOR)\n"
            )
        },
        pull_request=False,
        expect="threshold_pct: must be a finite number",
    ),
    "alpha = 1e-12": Variant(
        {"pyproject.toml": PYPROJECT + "alpha = 1e-12\n"},
        pull_request=False,
        expect="'alpha' was replaced by false_alarm_pct",
    ),
    "alpha = 1e-17": Variant(
        {"pyproject.toml": PYPROJECT + "alpha = 1e-17\n"},
        pull_request=False,
        expect="'alpha' was replaced by false_alarm_pct",
    ),
    "false_alarm_pct = 1e-17": Variant(
        {"pyproject.toml": PYPROJECT + "false_alarm_pct = 1e-17\n"},
        pull_request=False,
        expect="false_alarm_pct: must be a finite number >= 0.01",
    ),
    "noise_floor_pct = 1e9": Variant(
        {"pyproject.toml": PYPROJECT + "noise_floor_pct = 1e9\n"},
        pull_request=False,
        expect="noise_floor_pct: must be a finite number",
    ),
    "ceiling_pct = 1e6": Variant(
        {"pyproject.toml": PYPROJECT + "ceiling_pct = 1e6\n"},
        pull_request=False,
        expect="ceiling_pct: must be a finite number >= 1 and <= 100",
    ),
    "noise_window = 10**9": Variant(
        {"pyproject.toml": PYPROJECT.replace("noise_window = 0", "noise_window = 1000000000")},
        pull_request=False,
        expect="noise_window: must be an integer",
    ),
    # the largest values the bounds allow still fail a 10x slowdown
    "min_effect_pct at its bound (50)": Variant(
        {"pyproject.toml": PYPROJECT + "min_effect_pct = 50\n"}, pull_request=False, expect=REGRESSED
    ),
    "noise_floor_pct at its bound (50)": Variant(
        {"pyproject.toml": PYPROJECT + "noise_floor_pct = 50\n"}, pull_request=False, expect=REGRESSED
    ),
    "marker threshold at its bound (100)": Variant(
        {
            "test_slow.py": slow_test(
                "@pytest.mark.perfgate(threshold_pct=100)\ndef test_slow(perfgate):\n    perfgate(work, 2.0 * FACTOR)\n"
            )
        },
        pull_request=False,
        expect=REGRESSED,
    ),
    "override threshold at its bound (100)": Variant(
        {"pyproject.toml": PYPROJECT + '[[tool.perfgate.overrides]]\npattern = "*slow*"\nthreshold_pct = 100\n'},
        pull_request=False,
        expect=REGRESSED,
    ),
    "false_alarm_pct at its lower bound (0.01)": Variant(
        {"pyproject.toml": PYPROJECT + "false_alarm_pct = 0.01\n"}, pull_request=False, expect=REGRESSED
    ),
    # --- update or child modes switched on from config or the environment ------------------------------------
    "update-baseline in addopts": Variant(
        {"pyproject.toml": PYPROJECT + ADDOPTS.format("--perfgate-update-baseline --perfgate-reason=x")},
        pull_request=False,
        expect=FROM_ADDOPTS,
    ),
    "update-baseline in PYTEST_ADDOPTS": Variant(
        env={"PYTEST_ADDOPTS": LEAN_PYTEST_ADDOPTS + " --perfgate-update-baseline --perfgate-reason=x"},
        pull_request=False,
        expect=FROM_ADDOPTS,
    ),
    "update-baseline switched on by a conftest": Variant(
        {
            "conftest.py": conftest(
                "import pytest\n\n@pytest.hookimpl(tryfirst=True)\ndef pytest_configure(config):\n"
                "    config.option.perfgate_update_baseline = True\n    config.option.perfgate_reason = 'x'\n"
            )
        },
        pull_request=False,
        expect=FROM_ADDOPTS,
    ),
    "--perfgate switched off by a conftest": Variant(
        {
            "conftest.py": conftest(
                "import pytest\n\n@pytest.hookimpl(tryfirst=True)\ndef pytest_configure(config):\n"
                "    config.option.perfgate = False\n"
            )
        },
        pull_request=False,
        expect="is off by the time perfgate configures",
    ),
    "--perfgate-strict switched off by a conftest": Variant(
        {
            "conftest.py": conftest(
                "import pytest\n\n@pytest.hookimpl(tryfirst=True)\ndef pytest_configure(config):\n"
                "    config.option.perfgate_strict = False\n"
            )
        },
        pull_request=False,
        expect="is off by the time perfgate configures",
    ),
    "PERFGATE_MEASURE_CHILD set to a path": Variant(
        env={"PERFGATE_MEASURE_CHILD": "/tmp/perfgate-forged.json"},
        pull_request=False,
        expect="PERFGATE_MEASURE_CHILD is set",
    ),
    "PERFGATE_MEASURE_CHILD set to a descriptor": Variant(
        env={"PERFGATE_MEASURE_CHILD": "fd:99"}, pull_request=False, expect="PERFGATE_MEASURE_CHILD is set"
    ),
    "PERFGATE_MEASURE_CHILD set to stdin": Variant(
        env={"PERFGATE_MEASURE_CHILD": "fd:0"}, pull_request=False, expect="PERFGATE_MEASURE_CHILD is set"
    ),
    "PERFGATE_MEASURE_CHILD set by a conftest": Variant(
        {"conftest.py": conftest("import os\nos.environ['PERFGATE_MEASURE_CHILD'] = '/tmp/perfgate-forged.json'\n")},
        pull_request=False,
        expect=REGRESSED,
    ),
    "PERFGATE_PROFILE_CHILD set": Variant(
        env={"PERFGATE_PROFILE_CHILD": "nsys"}, pull_request=False, expect="PERFGATE_PROFILE_CHILD is set"
    ),
    # --- the process ends before the gate decides ---------------------------------------------------------------
    "os._exit(0) in a later test": Variant(
        {"test_zz_exit.py": "import os\n\ndef test_exit():\n    os._exit(0)\n"},
        pull_request=False,
        expect="os._exit(0) before the gate decided",
        process=True,
    ),
    "posix._exit(0) in a later test": Variant(
        {"test_zz_exit.py": "import posix\n\ndef test_exit():\n    posix._exit(0)\n"},
        pull_request=False,
        expect="os._exit(0) before the gate decided",
        process=True,
    ),
    "sys.exit(0) in a later test": Variant(
        {"test_zz_exit.py": "import sys\n\ndef test_exit():\n    sys.exit(0)\n"}, pull_request=False, expect=REGRESSED
    ),
    # --- confirmation dodged by a test that knows it runs in the confirmation child ---------------------------
    "fast when PERFGATE_MEASURE_CHILD is set": Variant(
        {
            "test_slow.py": slow_test(
                "def test_slow(perfgate):\n"
                "    perfgate(work, 2.0 if os.environ.get('PERFGATE_MEASURE_CHILD') else 2.0 * FACTOR)\n"
            )
        },
        args=("--perfgate-confirm-runs", "1"),
        pull_request=False,
        expect=REGRESSED,
    ),
    "fast when a conftest saw PERFGATE_MEASURE_CHILD": Variant(
        {
            "conftest.py": conftest("import os\nCHILD = 'PERFGATE_MEASURE_CHILD' in os.environ\n"),
            "test_slow.py": slow_test(
                "import conftest\n\ndef test_slow(perfgate):\n"
                "    perfgate(work, 2.0 if conftest.CHILD else 2.0 * FACTOR)\n"
            ),
        },
        args=("--perfgate-confirm-runs", "1"),
        pull_request=False,
        expect=REGRESSED,
    ),
    "fast when the child's flag is on the command line": Variant(
        {
            "test_slow.py": slow_test(
                "def test_slow(perfgate):\n"
                "    perfgate(work, 2.0 if '--perfgate-no-store' in sys.argv else 2.0 * FACTOR)\n"
            )
        },
        args=("--perfgate-confirm-runs", "1"),
        pull_request=False,
        expect=REGRESSED,
    ),
    "fast when strict is not on the command line": Variant(
        {
            "test_slow.py": slow_test(
                "def test_slow(perfgate):\n"
                "    perfgate(work, 2.0 * FACTOR if '--perfgate-strict' in sys.argv else 2.0)\n"
            )
        },
        args=("--perfgate-confirm-runs", "1"),
        pull_request=False,
        expect=CEILING,
        process=True,
    ),
    "fast when it is the only test collected": Variant(
        {
            "test_slow.py": slow_test(
                "def test_slow(perfgate, request):\n"
                "    perfgate(work, 2.0 if len(request.session.items) == 1 else 2.0 * FACTOR)\n"
            )
        },
        args=("--perfgate-confirm-runs", "1"),
        pull_request=False,
        expect=CEILING,
    ),
    "slow the first time only": Variant(
        {
            "test_slow.py": slow_test(
                "def test_slow(perfgate):\n    mark = pathlib.Path('measured-once')\n    first = not mark.exists()\n"
                "    mark.write_text('')\n    perfgate(work, 2.0 * FACTOR if first else 2.0)\n"
            )
        },
        args=("--perfgate-confirm-runs", "1"),
        pull_request=False,
        expect=CEILING,
    ),
    # --- the project root moved, bringing its own [tool.perfgate] and baselines (issue 32) --------------------------
    # the project keeps its tests in tests/perf and CI runs `pytest tests/perf`; a configuration file beside the
    # tests makes tests/perf pytest's root: case ids lose their prefix, and tests/perf/baselines is read instead
    "pytest.ini beside the tests, with its own baseline": Variant(
        {f"{NESTED}/pytest.ini": "[pytest]\n"}, nested=True, forged_at=NESTED_BASELINES, expect=CHANGED
    ),
    ".pytest.ini beside the tests, with its own baseline": Variant(
        {f"{NESTED}/.pytest.ini": "[pytest]\n"}, nested=True, forged_at=NESTED_BASELINES, expect=CHANGED
    ),
    "pytest.toml beside the tests, with its own baseline": Variant(
        {f"{NESTED}/pytest.toml": "[pytest]\n"}, nested=True, forged_at=NESTED_BASELINES, expect=CHANGED
    ),
    "tox.ini [pytest] beside the tests, with its own baseline": Variant(
        {f"{NESTED}/tox.ini": "[pytest]\n"}, nested=True, forged_at=NESTED_BASELINES, expect=CHANGED
    ),
    "setup.cfg [tool:pytest] beside the tests, with its own baseline": Variant(
        {f"{NESTED}/setup.cfg": "[tool:pytest]\n"}, nested=True, forged_at=NESTED_BASELINES, expect=CHANGED
    ),
    "pyproject.toml beside the tests, with pytest's table and a laxer [tool.perfgate]": Variant(
        {f"{NESTED}/pyproject.toml": "[tool.pytest.ini_options]\n" + PYPROJECT + "min_effect_pct = 50\n"},
        nested=True,
        forged_at=NESTED_BASELINES,
        expect=CHANGED,
    ),
    "pytest.ini beside the tests pointing baseline_dir elsewhere": Variant(
        {
            f"{NESTED}/pytest.ini": "[pytest]\n",
            f"{NESTED}/pyproject.toml": PYPROJECT + 'baseline_dir = "../../elsewhere"\n',
        },
        nested=True,
        forged_at="elsewhere",
        expect=CHANGED,
    ),
    "pytest's root moved by a conftest": Variant(
        {
            f"{NESTED}/conftest.py": conftest(
                "import pathlib\nimport pytest\n\n@pytest.hookimpl(tryfirst=True)\ndef pytest_configure(config):\n"
                "    config._rootpath = pathlib.Path(__file__).parent\n"
            )
        },
        nested=True,
        forged_at=NESTED_BASELINES,
        expect=CHANGED,
    ),
    "--rootdir in addopts, with a baseline there": Variant(
        {"pyproject.toml": PYPROJECT + ADDOPTS.format(f"--rootdir={NESTED}")},
        nested=True,
        forged_at=NESTED_BASELINES,
        expect=REGRESSED,  # pytest places its root before it reads addopts: nothing moved
    ),
    "confcutdir in a new pytest.ini": Variant(
        {"pytest.ini": f"[pytest]\nconfcutdir = {NESTED}\n"}, nested=True, expect=CHANGED
    ),
}


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The base branch: a git checkout with a calibrated baseline of both tests, committed on main (also
    as origin/main, the pull request's base ref)."""
    root = tmp_path_factory.mktemp("base")
    (root / "conftest.py").write_text(MANUAL_CLOCK_CONFTEST)
    (root / "test_fast.py").write_text(FAST)
    (root / "test_slow.py").write_text(SLOW.format(factor=1))
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / ".gitignore").write_text(".perfgate/\n__pycache__/\n")
    env = {k: v for k, v in _environ().items() if k not in CI_ENV}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--perfgate", "-p", "no:cacheprovider", "-q"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    path = next((root / "baselines").glob("*.json"))
    base = load_baseline(path)
    assert base is not None and set(base.cases) == {"test_fast.py::test_fast", SLOW_CASE}
    write_baseline(calibrated(base, {cid: [c.median_ms * f for f in QUIET_PROCESSES] for cid, c in base.cases.items()}))
    shutil.rmtree(root / ".perfgate")
    forged = root / "forged"  # not committed: a pull request's file that the base branch does not have
    _commit_as_main(root)
    forged.mkdir()
    doc = json.loads(path.read_text())
    _median_times_ten(doc)
    (forged / path.name).write_text(json.dumps(doc))
    (forged / "host.json").write_text(json.dumps(doc))
    return root


@pytest.fixture(scope="module")
def nested_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The base branch of a project that keeps its perf tests in tests/perf, gated as `pytest tests/perf`: the
    calibrated baseline (case ids tests/perf/...) in baselines/ at the root, committed on main (and origin/main).
    `forged/` (untracked) holds what a pull request would add: the 10x baseline with ids relative to tests/perf."""
    root = tmp_path_factory.mktemp("nested-base")
    tests = root / NESTED
    tests.mkdir(parents=True)
    (tests / "conftest.py").write_text(MANUAL_CLOCK_CONFTEST)
    (tests / "test_fast.py").write_text(FAST)
    (tests / "test_slow.py").write_text(SLOW.format(factor=1))
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / ".gitignore").write_text(".perfgate/\n__pycache__/\n")
    env = {k: v for k, v in _environ().items() if k not in CI_ENV}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--perfgate", "-p", "no:cacheprovider", "-q", NESTED],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    path = next((root / "baselines").glob("*.json"))
    base = load_baseline(path)
    assert base is not None and f"{NESTED}/{SLOW_CASE}" in base.cases
    write_baseline(calibrated(base, {cid: [c.median_ms * f for f in QUIET_PROCESSES] for cid, c in base.cases.items()}))
    shutil.rmtree(root / ".perfgate")
    _commit_as_main(root)
    doc = json.loads(path.read_text())
    doc["cases"] = {cid.removeprefix(f"{NESTED}/"): case for cid, case in doc["cases"].items()}
    for cid, case in doc["cases"].items():
        case["case_id"] = cid
    _median_times_ten(doc)
    (root / "forged").mkdir()
    (root / "forged" / path.name).write_text(json.dumps(doc))
    return root


def _commit_as_main(root: Path) -> None:
    for git in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        ["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "base"],
        ["update-ref", "refs/remotes/origin/main", "HEAD"],
    ):
        subprocess.run(["git", *git], cwd=root, check=True, capture_output=True, timeout=60)


def _environ() -> dict[str, str]:
    import os

    return {**os.environ, "PYTEST_ADDOPTS": LEAN_PYTEST_ADDOPTS}


@pytest.fixture
def pull_request(template: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A pull request's checkout of the base branch, with test_slow.py ten times slower."""
    shutil.copytree(template, pytester.path, dirs_exist_ok=True, symlinks=True)
    (pytester.path / "test_slow.py").write_text(SLOW.format(factor=10))
    for var in (*CI_ENV, "PERFGATE_MEASURE_CHILD", "PERFGATE_PROFILE_CHILD"):
        monkeypatch.setenv(var, "")  # recorded, so a value a variant's conftest sets is undone after it
        monkeypatch.delenv(var)
    monkeypatch.setenv("PYTEST_ADDOPTS", LEAN_PYTEST_ADDOPTS)
    return pytester


@pytest.fixture
def nested_pull_request(
    nested_template: Path, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> pytest.Pytester:
    """A pull request's checkout of the nested project, with tests/perf/test_slow.py ten times slower."""
    shutil.copytree(nested_template, pytester.path, dirs_exist_ok=True, symlinks=True)
    (pytester.path / NESTED / "test_slow.py").write_text(SLOW.format(factor=10))
    for var in (*CI_ENV, "PERFGATE_MEASURE_CHILD", "PERFGATE_PROFILE_CHILD"):
        monkeypatch.setenv(var, "")
        monkeypatch.delenv(var)
    monkeypatch.setenv("PYTEST_ADDOPTS", LEAN_PYTEST_ADDOPTS)
    return pytester


def apply(project: pytest.Pytester, variant: Variant, monkeypatch: pytest.MonkeyPatch) -> None:
    root = project.path
    if variant.forged_at:
        forged = next((root / "forged").glob("*.json"))
        (root / variant.forged_at).mkdir(parents=True, exist_ok=True)
        shutil.copy(forged, root / variant.forged_at / forged.name)
    for name, text in variant.files.items():
        target = root / name
        if text is None:
            shutil.rmtree(target) if target.is_dir() else target.unlink()
        else:
            target.write_text(text)
    if variant.baseline is not None:
        path = next((root / "baselines").glob("*.json"))
        doc = json.loads(path.read_text())
        variant.baseline(doc)
        path.write_text(json.dumps(doc))
    if variant.pull_request:
        monkeypatch.setenv("GITHUB_BASE_REF", "main")
    for var, value in variant.env.items():
        monkeypatch.setenv(var, value)


def strict_gate(project: pytest.Pytester, variant: Variant = Variant()) -> tuple[int, str]:
    paths = (NESTED,) if variant.nested else ()
    args = ("--perfgate", "--perfgate-strict", "-p", "no:cacheprovider", *variant.args, *paths)
    run = project.runpytest_subprocess if variant.process else project.runpytest
    result = run(*args)
    return int(result.ret), result.stdout.str() + result.stderr.str()


def test_the_unchanged_pull_request_passes_strict_mode(pull_request, monkeypatch):
    (pull_request.path / "test_slow.py").write_text(SLOW.format(factor=1))
    monkeypatch.setenv("GITHUB_BASE_REF", "main")
    code, out = strict_gate(pull_request)
    assert code == 0, out
    assert "baseline changed" not in out and "not measured" not in out


def test_the_slowdown_alone_fails_strict_mode(pull_request, monkeypatch):
    monkeypatch.setenv("GITHUB_BASE_REF", "main")
    code, out = strict_gate(pull_request)
    assert code == 1 and "test_slow.py::test_slow" in out and REGRESSED in out, out


def test_there_are_at_least_fifty_variants():
    assert len(VARIANTS) >= 50


def test_the_nested_projects_unchanged_pull_request_passes_and_its_slowdown_fails(nested_pull_request, monkeypatch):
    monkeypatch.setenv("GITHUB_BASE_REF", "main")
    code, out = strict_gate(nested_pull_request, Variant(nested=True))
    assert code == 1 and f"{NESTED}/{SLOW_CASE}" in out and REGRESSED in out, out
    (nested_pull_request.path / NESTED / "test_slow.py").write_text(SLOW.format(factor=1))
    code, out = strict_gate(nested_pull_request, Variant(nested=True))
    assert code == 0 and "baseline changed" not in out, out


@pytest.mark.slow  # 99 gates: a stage of its own in .ci/run; the cases around them stay in the default run
@pytest.mark.parametrize("name", sorted(VARIANTS), ids=lambda n: n.replace(" ", "-"))
def test_no_variant_talks_strict_mode_out_of_failing(request, monkeypatch, name):
    variant = VARIANTS[name]
    project = request.getfixturevalue("nested_pull_request" if variant.nested else "pull_request")
    apply(project, variant, monkeypatch)
    code, out = strict_gate(project, variant)
    assert code != 0, out
    assert variant.expect in out, out


def test_a_stated_baseline_change_is_reported_and_passes(pull_request, monkeypatch):
    """An intended slowdown with its new baseline: the pull request's intent (a label, for which the workflow
    passes the flag) accepts the change, and the report still names it."""
    apply(pull_request, Variant(baseline=_median_times_ten), monkeypatch)
    code, out = strict_gate(pull_request, replace(Variant(), args=("--perfgate-accept-baseline-change",)))
    assert code == 0, out
    assert "baseline change stated" in out and "1 case(s) changed (test_slow.py::test_slow)" in out


def test_a_base_ref_that_is_not_fetched_fails_strict_mode(pull_request, monkeypatch):
    (pull_request.path / "test_slow.py").write_text(SLOW.format(factor=1))
    monkeypatch.setenv("GITHUB_BASE_REF", "release")
    code, out = strict_gate(pull_request)
    assert code == 1 and "the base ref origin/release is not in this checkout" in out, out
