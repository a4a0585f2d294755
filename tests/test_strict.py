"""Fail-closed mode: a green gate must mean "measured, compared, fine". Each way a run can pass without
checking anything is a warning without --perfgate-strict and a one-line failure with it."""

import json

import pytest

from tests.helpers import gate_json, perf_project, results_json

PERF_TEST = """
import os
import pytest
from perfgate.measure import clock

def test_fast(perfgate):
    perfgate(clock.current().sleep, 0.001)

def test_maybe_skipped(perfgate):
    if os.environ.get("SKIP_IT"):
        pytest.skip("no GPU on this runner")
    perfgate(clock.current().sleep, 0.001)

def test_maybe_broken(perfgate):
    if os.environ.get("BREAK_IT"):
        raise RuntimeError("CUDA driver version is insufficient")
    perfgate(clock.current().sleep, 0.001)
"""
PYPROJECT = """
[tool.perfgate]
threshold_pct = 50.0
warmup_ms = 2
min_samples = 5
max_samples = 10
budget_ms = 20
confirm_runs = 0
"""


@pytest.fixture
def project(pytester, monkeypatch):
    return perf_project(pytester, monkeypatch, PERF_TEST, PYPROJECT, clear=("SKIP_IT", "BREAK_IT"))


def findings(p):
    return {f["kind"]: f for f in results_json(p)["findings"]}


def test_a_skipped_baseline_case_warns_without_strict_and_fails_with_it(project, monkeypatch):
    assert gate_json(project).ret == 0
    monkeypatch.setenv("SKIP_IT", "1")
    warned = gate_json(project)
    assert warned.ret == 0
    warned.stdout.fnmatch_lines(
        ["*perfgate warning: test skipped: test_perf.py::test_maybe_skipped skipped: no GPU on this runner*"]
    )
    strict = gate_json(project, "--perfgate-strict")
    assert strict.ret == 1
    strict.stdout.fnmatch_lines(["*perfgate strict: test skipped*", "*gate FAILED*1 strict-mode failure(s)*"])
    doc = results_json(project)
    assert doc["gate"]["failure_reasons"] == [
        "strict: test_perf.py::test_maybe_skipped skipped: no GPU on this runner (1 baseline case(s) not measured)"
    ]


def test_deselecting_a_baseline_case_warns_without_strict_and_fails_with_it(project):
    assert gate_json(project).ret == 0
    assert gate_json(project, "-k", "fast").ret == 0
    assert "2 baseline case(s) not measured" in findings(project)["baseline case not measured"]["message"]
    result = gate_json(project, "--perfgate-strict", "-k", "fast")
    assert result.ret == 1
    assert (
        "perfgate strict: baseline case not measured: 2 baseline case(s) not measured (not collected, "
        "deselected or renamed): test_perf.py::test_maybe_broken, test_perf.py::test_maybe_skipped; run them, "
        "or list them in [tool.perfgate] allow_missing with a reason"
    ) in result.stdout.str()


def test_cases_the_allow_list_names_may_be_missing_and_the_reason_is_shown(project):
    assert gate_json(project).ret == 0
    project.makefile(
        ".toml",
        pyproject=PYPROJECT + 'strict = true\nallow_missing = [{pattern = "*maybe*", '
        'reason = "GPU-only, run nightly"}]\n',
    )
    result = gate_json(project, "-k", "fast")
    assert result.ret == 0
    allowed = findings(project)["baseline case allowed to be missing"]
    assert (
        allowed["message"]
        == "2 baseline case(s) not measured, allowed by allow_missing '*maybe*': GPU-only, run nightly"
        and not allowed["fails_strict"]
    )


@pytest.mark.parametrize(
    "entry",
    [
        '[{pattern = "*"}]',
        '[{reason = "r"}]',
        '["*"]',
        '[{pattern = "*", reason = ""}]',
        '[{pattern = "*", reason = "r", extra = 1}]',
    ],
)
def test_an_allow_list_entry_without_a_pattern_and_a_reason_is_refused(project, entry):
    project.makefile(".toml", pyproject=PYPROJECT + f"allow_missing = {entry}\n")
    result = gate_json(project)
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*allow_missing*"])


def test_an_errored_baseline_case_fails_strict_mode(project, monkeypatch):
    assert gate_json(project).ret == 0
    monkeypatch.setenv("BREAK_IT", "1")
    result = gate_json(project, "--perfgate-strict")
    assert result.ret == 1  # pytest's own failure, and the gate's reason is on record too
    assert "CUDA driver version is insufficient" in findings(project)["test errored"]["message"]


def test_every_perf_test_skipped_passes_only_without_strict(project, monkeypatch):
    project.makepyfile(test_perf="import pytest\n\ndef test_a(perfgate):\n    pytest.skip('no GPU')\n")
    assert gate_json(project).ret == 0
    assert "no perf case measured" in findings(project)
    result = gate_json(project, "--perfgate-strict")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*perfgate strict: no perf case measured*"])


def test_a_run_that_measured_nothing_says_so_and_why_instead_of_a_green_gate(project):
    project.makepyfile(
        test_perf="import pytest\n\n@pytest.mark.parametrize('n', [1, 2])\n"
        "def test_a(perfgate, n):\n    pytest.skip('needs a CUDA GPU')\n"
    )
    result = gate_json(project)
    assert result.ret == 0
    out = result.stdout.str()
    assert "gate passed" not in out and out.count("no perf case measured") == 1
    result.stdout.fnmatch_lines(
        [
            "*no perf case measured: 2 perf test(s) collected, none measured: 2 skipped (needs a CUDA GPU)*",
            "perfgate: nothing measured: no gate ran (--perfgate-strict fails such a run)",
        ]
    )


def test_strict_refuses_to_pass_without_a_baseline_and_writes_none(project):
    result = gate_json(project, "--perfgate-strict")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*strict: no initial baseline written*", "*perfgate strict: no baseline*"])
    assert not (project.path / "baselines").exists()


def test_strict_is_also_a_pyproject_setting(project):
    project.makefile(".toml", pyproject=PYPROJECT + "strict = true\n")
    assert gate_json(project).ret == 1  # no baseline yet


def test_another_device_model_fails_strict_mode(project):
    assert gate_json(project).ret == 0
    path = next((project.path / "baselines").glob("*.json"))
    data = json.loads(path.read_text())
    data["environment"]["device_name"] = "Another CPU"
    path.write_text(json.dumps(data))
    assert gate_json(project).ret == 0
    assert gate_json(project, "--perfgate-strict").ret == 1
    assert "not comparable" in findings(project)


def test_host_clock_beside_cuda_baselines_fails_strict_mode(project):
    assert gate_json(project).ret == 0
    host = next((project.path / "baselines").glob("host-*.json"))
    cuda = host.with_name("nvidia-h100-80gb-hbm3.json")
    cuda.write_text(host.read_text().replace('"device_kind": "host"', '"device_kind": "cuda"'))
    result = gate_json(project, "--perfgate-strict")
    assert result.ret == 1
    assert "nvidia-h100-80gb-hbm3.json" in findings(project)["host clock against a CUDA baseline"]["message"]


def test_strict_mode_is_recorded_in_the_summary(project):
    assert gate_json(project).ret == 0
    gate_json(project, "--perfgate-strict", "--perfgate-summary", "s.md", "-k", "fast")
    assert "### Needs attention" in (project.path / "s.md").read_text()
