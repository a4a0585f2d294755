"""The plugin end to end, in-process (pytester.runpytest): generated perf tests timed with the host timer,
on a manual clock (tests/helpers.py).

The callable takes SLEEP_MS (read from the environment at call time), so a test can slow it down or
speed it up without touching the test file, exactly as a code change would. Subprocess runs are kept for
what needs a process. A gate judges by between-process noise: `gateable` stores unchanged runs whose
process values form the noise window of an uncalibrated baseline (noise_branch = "*": the project is no
git checkout), as passing runs on main would.
"""

import json
import re
import sqlite3

import pytest

from tests.helpers import LEAN_PYTEST_ADDOPTS, MANUAL_CLOCK_CONFTEST

PERF_TEST = """
import os, pytest
from perfgate.measure import clock

def work():
    clock.current().sleep(float(os.environ.get("SLEEP_MS", "2")) / 1e3)

def test_sleep(perfgate):
    stats = perfgate(work)
    assert stats.n_samples >= 5

@pytest.mark.perfgate(threshold_pct=100)  # declares no time: one tick of the manual clock
def test_other(perfgate):
    perfgate.work(bytes_moved=1000)(sum, range(100))
"""
PYPROJECT = """
[tool.perfgate]
threshold_pct = 10.0
warmup_ms = 5
min_samples = 15
max_samples = 40
budget_ms = 60
confirm_runs = 0
noise_branch = "*"
{extra}
"""


@pytest.fixture
def project(pytester, monkeypatch):
    monkeypatch.setenv("SLEEP_MS", "2")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.delenv("PERFGATE_DB", raising=False)
    monkeypatch.setenv("PYTEST_ADDOPTS", LEAN_PYTEST_ADDOPTS)
    pytester.makeconftest(MANUAL_CLOCK_CONFTEST)
    pytester.makepyfile(test_perf=PERF_TEST)
    pytester.makefile(".toml", pyproject=PYPROJECT.format(extra=""))
    return pytester


def run(pytester, *args, sleep_ms="2"):
    pytester._monkeypatch.setenv("SLEEP_MS", sleep_ms)
    return pytester.runpytest("--perfgate", "-p", "no:cacheprovider", *args)


def gateable(pytester, unchanged_runs=2, sleep_ms="2"):
    """A baseline from the first run and `unchanged_runs` passing runs in the history (its noise window)."""
    for _ in range(1 + unchanged_runs):
        assert run(pytester, sleep_ms=sleep_ms).ret == 0


def baseline_file(pytester):
    files = list((pytester.path / "baselines").glob("*.json"))
    assert len(files) == 1
    return files[0]


def test_without_the_flag_nothing_is_measured_or_stored(project):
    result = project.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)  # the callable runs once: n_samples is 1, the assert fails
    assert not (project.path / "baselines").exists()
    assert not (project.path / ".perfgate").exists()


def test_first_run_creates_a_baseline_and_passes(project):
    result = run(project)
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*wrote*baselines*host-*.json*", "*gate passed: 2 case(s): 2 new*"])
    data = json.loads(baseline_file(project).read_text())
    assert sorted(data["cases"]) == ["test_perf.py::test_other", "test_perf.py::test_sleep"]
    assert data["updates"][0]["reason"] == "initial baseline (none existed)"


def test_unchanged_rerun_passes(project):
    assert run(project).ret == 0
    result = run(project, "--perfgate-summary", "summary.md")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*not listed:*unchanged row(s) (--perfgate-full-table lists every row)*"])
    assert "test_perf.py::test_sleep" not in result.stdout.str()  # an unchanged case is counted, not listed
    full = run(project, "--perfgate-full-table")
    full.stdout.fnmatch_lines(["*test_perf.py::test_sleep*time*unchanged*"])
    assert "regressed" not in (project.path / "summary.md").read_text().split("All other results")[0]


def test_slowed_callable_fails_the_gate_and_the_summary_names_it(project):
    gateable(project)
    result = run(project, "--perfgate-summary", "summary.md", "--perfgate-json", "out.json", sleep_ms="3")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*test_perf.py::test_sleep*time*+*%*REGRESSED*", "*gate FAILED*"])
    md = (project.path / "summary.md").read_text()
    changed = md.split("<details>")[0]
    assert "test_perf.py::test_sleep" in changed and "regressed" in changed
    doc = json.loads((project.path / "out.json").read_text())
    assert doc["gate"]["failed"] is True
    assert {c["case_id"] for c in doc["comparisons"] if c["verdict"] == "regressed"} == {"test_perf.py::test_sleep"}
    sleep = next(c for c in doc["cases"] if c["case_id"] == "test_perf.py::test_sleep")
    assert sleep["location"] == ["test_perf.py", 7] and sleep["thresholds"]["time_pct"] == 10.0


def test_improvement_is_reported_and_does_not_fail(project):
    gateable(project, sleep_ms="4")
    result = run(project, sleep_ms="2")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*test_perf.py::test_sleep*improved*", "*gate passed*"])


def test_without_between_process_noise_a_modest_slowdown_is_inconclusive_never_a_failure(project):
    assert run(project).ret == 0  # an uncalibrated baseline and no history yet
    result = run(project, "--perfgate-full-table", sleep_ms="2.3")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*test_sleep*inconclusive*", "*cannot fail the gate: run perfgate calibrate*"])


def test_without_between_process_noise_a_gross_slowdown_fails_with_the_calibrate_hint(project):
    assert run(project).ret == 0  # the first run writes the baseline
    result = run(project, "--perfgate-full-table", sleep_ms="3")  # 1.5x slower
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*test_sleep*REGRESSED*", "*more than 25% in every process*run perfgate calibrate*"])


def test_per_case_threshold_override_absorbs_the_slowdown(project):
    assert run(project).ret == 0
    project.makefile(
        ".toml",
        pyproject=PYPROJECT.format(extra='[[tool.perfgate.overrides]]\npattern = "*test_sleep*"\nthreshold_pct = 80.0'),
    )
    result = run(project, "--perfgate-full-table", sleep_ms="3")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*test_sleep*unchanged*"])


def test_marker_threshold_override(project):
    project.makepyfile(
        test_perf=PERF_TEST.replace("def test_sleep", "@pytest.mark.perfgate(threshold_pct=90)\ndef test_sleep")
    )
    assert run(project).ret == 0
    assert run(project, sleep_ms="3").ret == 0


def test_environment_mismatch_is_not_comparable(project):
    assert run(project).ret == 0
    path = baseline_file(project)
    data = json.loads(path.read_text())
    data["environment"]["device_name"] = "Some Other CPU"
    path.write_text(json.dumps(data))
    result = run(project, sleep_ms="3")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*test_sleep*not comparable*", "*measured on Some Other CPU*"])


def test_malformed_baseline_is_one_clear_error_before_any_test_runs(project):
    assert run(project).ret == 0
    path = baseline_file(project)
    path.write_text('{"format": "perfgate-baseline", "version": 1, "cases": ')
    result = run(project)
    assert result.ret == 4
    result.stderr.fnmatch_lines([f"*perfgate: baseline {path}: not valid JSON (line 1*"])
    assert "test_sleep" not in result.stdout.str()


@pytest.mark.parametrize(
    "extra, problem",
    [
        ("false_alarm_pct = 0", "false_alarm_pct: must be a finite number >= 0.01 and <= 5"),
        ("alpha = 0.01", "'alpha' was replaced by false_alarm_pct"),
        ('warmup_ms = "5"', "warmup_ms: must be a finite number"),
        ("metrics = []", "metrics: must be a table"),
        ("db = 5", "db: must be a non-empty string"),
        ("threshold_pct = nan", "threshold_pct: must be a finite number >= 0"),
        ("threshold_pct = inf", "threshold_pct: must be a finite number >= 0"),
    ],
)
def test_a_config_that_would_switch_the_gate_off_is_a_usage_error(project, extra, problem):
    key = extra.split(" = ")[0]
    table = "\n".join(line for line in PYPROJECT.format(extra="").splitlines() if not line.startswith(key + " ="))
    project.makefile(".toml", pyproject=table + "\n" + extra + "\n")
    result = run(project)
    assert result.ret == 4
    result.stderr.fnmatch_lines([f"*pyproject.toml*{problem}*"])


def test_a_baseline_with_a_nan_median_is_refused_not_passed(project):
    assert run(project).ret == 0
    path = baseline_file(project)
    text = path.read_text()
    path.write_text(text.replace('"median_ms": ', '"median_ms": 1e999, "x": ', 1))
    result = run(project, sleep_ms="6")
    assert result.ret == 4
    result.stderr.fnmatch_lines(['*baseline*"median_ms" is outside the range of a double*'])


def test_a_named_baseline_file_that_does_not_exist_is_an_error_and_is_not_created(project):
    result = run(project, "--perfgate-baseline-file", "baselines/typo.json")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*baselines/typo.json: no such file*"])
    assert not (project.path / "baselines" / "typo.json").exists()


def test_update_needs_a_reason_and_records_it(project):
    assert run(project).ret == 0
    assert run(project, "--perfgate-update-baseline").ret == 4
    result = run(project, "--perfgate-update-baseline", "--perfgate-reason", "slower sleep on purpose", sleep_ms="3")
    assert result.ret == 0
    data = json.loads(baseline_file(project).read_text())
    assert data["updates"][-1]["reason"] == "slower sleep on purpose"
    assert run(project, sleep_ms="3").ret == 0


def test_every_run_is_stored_with_its_environment(project):
    run(project)
    run(project)
    con = sqlite3.connect(project.path / ".perfgate" / "history.db")
    assert con.execute("select count(*) from runs").fetchone()[0] == 2
    assert con.execute("select count(distinct case_id) from cases").fetchone()[0] == 2
    assert con.execute("select device_kind, python_version != '' from runs").fetchone() == ("host", 1)


def test_an_unreadable_history_fails_before_the_tests_with_one_line(project):
    (project.path / ".perfgate").mkdir()
    (project.path / ".perfgate" / "history.db").write_bytes(b"garbage" * 100)
    result = run(project)
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*perfgate: history *history.db: cannot open it: file is not a database*"])
    assert "test_sleep" not in result.stdout.str()


def test_failing_tests_keep_pytest_exit_code_and_never_write_a_baseline(project):
    project.makepyfile(test_broken="def test_broken(perfgate):\n    perfgate(sum, [1])\n    assert False\n")
    result = run(project)
    assert result.ret == 1
    assert not (project.path / "baselines").exists()


def test_github_step_summary_is_appended_without_dead_links(project, tmp_path, monkeypatch):
    summary = tmp_path / "step_summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    gateable(project)
    assert run(project, "--perfgate-report-dir", "report", sleep_ms="3").ret == 1
    text = summary.read_text()
    assert text.startswith("earlier step\n") and "perfgate: gate passed" in text
    assert "change_per_case.png (in the results artifact)" in text and "](change_per_case.png)" not in text
    assert (
        run(
            project, "--perfgate-report-dir", "report", "--perfgate-chart-url", "https://x.example/run/7", sleep_ms="3"
        ).ret
        == 1
    )
    assert "[change_per_case.png](https://x.example/run/7/change_per_case.png)" in summary.read_text()


def test_missing_profiler_is_one_line_naming_the_tool(project, monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    result = run(project, "--perfgate-profile", "nsys")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*perfgate: nsys not found on PATH; install Nsight Systems*"])


def test_a_broken_config_does_not_break_plain_pytest(project):
    project.makefile(".toml", pyproject="[tool.perfgate]\nthresold_pct = 3\n")
    result = project.runpytest("-p", "no:cacheprovider", "-k", "other")
    assert result.ret == 0
    gated = run(project)
    assert gated.ret == 4
    gated.stderr.fnmatch_lines(["*perfgate: *tool.perfgate*: unknown key(s)*thresold_pct*"])


def test_xdist_with_the_host_clock_is_refused_with_a_reason(project):
    pytest.importorskip("xdist")
    result = run(project, "-n", "2")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*-n (pytest-xdist) needs one GPU per worker*without -n*"])


def test_report_dir_gets_charts_linked_from_the_summary(project):
    gateable(project)
    result = run(project, "--perfgate-report-dir", "report", "--perfgate-summary", "out/summary.md", sleep_ms="3")
    assert result.ret == 1
    written = {p.name for p in (project.path / "report").glob("*.png")}
    assert "change_per_case.png" in written
    # a changed case's charts are named by the case (safe characters, a hash of the id keeps names unique)
    trend = next(n for n in written if n.endswith("_trend.png"))
    assert re.fullmatch(r"test_[A-Za-z0-9_.-]+-[0-9a-f]{8}_trend\.png", trend), written
    assert trend.replace("_trend", "_distribution") in written
    md = (project.path / "out" / "summary.md").read_text()
    assert f"[{trend}](../report/{trend})" in md  # relative to the summary file


def test_work_applies_to_one_measurement_only(project):
    project.makepyfile(
        test_perf="""
def test_two(perfgate):
    perfgate.work(flops=10**9)
    perfgate.measure(sum, ([1, 2],), name="first")
    perfgate.measure(sum, ([1, 2],), name="second")
"""
    )
    assert run(project, "--perfgate-json", "out.json").ret == 0
    cases = {c["case_id"]: c for c in json.loads((project.path / "out.json").read_text())["cases"]}
    assert cases["test_perf.py::test_two::first"]["flops"] == 10**9
    assert cases["test_perf.py::test_two::second"]["flops"] is None


def test_the_run_that_creates_the_history_says_to_ignore_it_in_git(project):
    import subprocess

    subprocess.run(["git", "init", "-q"], cwd=project.path, check=True)
    first = run(project)
    first.stdout.fnmatch_lines(["*created the history*add `.perfgate/` to .gitignore*"])
    assert "created the history" not in run(project).stdout.str()  # once, not on every run
    (project.path / ".perfgate" / "history.db").unlink()
    (project.path / ".gitignore").write_text(".perfgate/\n")
    assert "created the history" not in run(project).stdout.str()  # already ignored: nothing to say


def test_ctrl_c_during_the_tests_stores_nothing_and_writes_no_baseline(project):
    project.makepyfile(test_zz_interrupt="def test_ctrl_c():\n    raise KeyboardInterrupt\n")
    # in-process: pytester hands the interrupt back as the exit status instead of raising it in this session
    result = project.runpytest("--perfgate", "-p", "no:cacheprovider", no_reraise_ctrlc=True)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*interrupted before anything was stored; no baseline touched*"])
    assert not (project.path / "baselines").exists()
    db = project.path / ".perfgate" / "history.db"
    assert not db.exists() or sqlite3.connect(db).execute("select count(*) from runs").fetchone()[0] == 0
