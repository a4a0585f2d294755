"""What a gate writes besides the summary: JSON (samples on request), Bencher Metric Format, the
github-action-benchmark files (times smaller-is-better, speedups bigger-is-better) at full precision, and
a terminal whose last line says a failed gate failed."""

import json
from dataclasses import replace

import pytest

from perfgate.model import Speedup
from perfgate.report.annotations import check_results, workflow_commands
from perfgate.report.bencher import render_bencher
from perfgate.report.benchmark_action import render_benchmark_action, render_benchmark_action_speedups
from perfgate.report.json_out import JSON_VERSION, render_json
from perfgate.report.terminal import render_terminal
from tests.helpers import gate_json, make_run, perf_project, results_json
from tests.scale import scale_gate

TEST = """
import os
from perfgate.measure import clock

def test_ref(perfgate):
    perfgate.measure(sum, (range(300),), reference=lambda r: sum(list(r)), reference_name="list sum")

def test_sleep(perfgate):
    perfgate(clock.current().sleep, float(os.environ.get("SLEEP_MS", "1")) / 1e3)
"""
PYPROJECT = """
[tool.perfgate]
threshold_pct = 100.0
warmup_ms = 0
min_samples = 20
max_samples = 20
memory = false
confirm_runs = 0
noise_branch = "*"
"""


@pytest.fixture
def project(pytester, monkeypatch):
    return perf_project(pytester, monkeypatch, TEST, PYPROJECT, SLEEP_MS="1")


def timed_run():
    """A run of one case timed against a reference, with values no 6-digit rounding keeps."""
    run = make_run({"t::k[bf16]": [0.0123456789012, 0.0123456789013, 0.0123456789014]})
    speedup = Speedup("torch.softmax", (0.02,) * 3, 1.61803398874989, 1.5707963267949, 1.73205080756888)
    return replace(run, results=(replace(run.results[0], speedup=speedup),))


def test_json_leaves_samples_out_unless_asked_and_annotations_still_read_it(project):
    gate_json(project)  # (the verdicts do not matter here; a busy machine may slow a case)
    doc = results_json(project)
    assert doc["perfgate_json_version"] == JSON_VERSION == 3 and doc["samples_included"] is False
    ref = next(c for c in doc["cases"] if c["case_id"] == "test_perf.py::test_ref")
    assert "samples_ms" not in ref and "reference_samples_ms" not in ref["speedup"]
    assert ref["speedup"]["reference"] == "list sum" and ref["timing"]["n_samples"] == 20
    workflow_commands(check_results(project.path / "out.json", doc))  # `perfgate ci annotate` reads it
    gate_json(project, "--perfgate-json-samples")
    full = results_json(project)
    ref = next(c for c in full["cases"] if c["case_id"] == "test_perf.py::test_ref")
    assert full["samples_included"] is True
    assert len(ref["samples_ms"]) == len(ref["speedup"]["reference_samples_ms"]) == 20


def test_the_export_options_write_their_files(project):
    result = gate_json(
        project,
        "--perfgate-bencher-json",
        "bmf.json",
        "--perfgate-benchmark-json",
        "gab.json",
        "--perfgate-benchmark-speedup-json",
        "speedup.json",
    )
    assert result.ret == 0  # the first run: every case is new
    bmf = json.loads((project.path / "bmf.json").read_text())
    assert set(bmf) == {"test_perf.py::test_ref", "test_perf.py::test_sleep"}
    assert set(bmf["test_perf.py::test_ref"]) == {"latency", "speedup"} and set(bmf["test_perf.py::test_sleep"]) == {
        "latency"
    }
    assert 0.5e6 < bmf["test_perf.py::test_sleep"]["latency"]["value"] < 50e6  # ~1 ms, in nanoseconds
    [speedup] = json.loads((project.path / "speedup.json").read_text())
    assert speedup["name"] == "test_perf.py::test_ref speedup vs list sum" and speedup["unit"] == "x"
    assert {e["name"] for e in json.loads((project.path / "gab.json").read_text())} == set(bmf)


def test_bencher_metric_format_at_full_precision():
    doc = json.loads(render_bencher(None, timed_run()))
    latency = doc["t::k[bf16]"]["latency"]
    assert latency["value"] == pytest.approx(12345.6789013, rel=1e-12)  # ns, not rounded to 12346
    assert latency["lower_value"] <= latency["value"] <= latency["upper_value"]
    assert doc["t::k[bf16]"]["speedup"] == {
        "value": 1.61803398874989,
        "lower_value": 1.5707963267949,
        "upper_value": 1.73205080756888,
    }


def test_github_action_benchmark_files_keep_full_precision_and_speedups_are_bigger_is_better():
    [time_entry] = json.loads(render_benchmark_action(timed_run()))
    assert time_entry["value"] == 0.0123456789013  # was round(..., 6): 0.012346, 1 ns resolution
    [speedup] = json.loads(render_benchmark_action_speedups(None, timed_run()))
    assert speedup == {
        "name": "t::k[bf16] speedup vs torch.softmax",
        "unit": "x",
        "value": 1.61803398874989,
        "range": f"± {(1.73205080756888 - 1.5707963267949) / 2!r}",
        "extra": "reference: torch.softmax\n95% CI: 1.5707963267949-1.73205080756888",
    }
    assert render_benchmark_action_speedups(None, make_run({"t::x": [1.0, 1.0]})) == "[]\n"


def test_a_failed_gate_is_the_last_line_in_red_and_the_exit_code_is_unchanged(project, monkeypatch):
    for _ in range(3):  # the baseline and two unchanged runs: the noise the gate judges by
        assert gate_json(project).ret == 0
    monkeypatch.setenv("SLEEP_MS", "10")
    result = gate_json(project, "--color=yes")
    assert result.ret == 1
    last = result.stdout.lines[-1]
    assert "perfgate: gate FAILED" in last and "\x1b[31m" in last  # after pytest's own "N passed" line, red
    assert "passed" in result.stdout.lines[-2]
    assert sum("perfgate: gate FAILED" in line for line in result.stdout.lines) == 1  # once, last


def test_a_passing_gate_adds_no_last_line(project):
    result = gate_json(project)
    assert result.ret == 0 and "passed" in result.stdout.lines[-1]


def test_terminal_ids_that_differ_in_the_middle_stay_distinct():
    gate, _ = scale_gate(2, 2, 0)
    long_a = "kernels/tests/test_perf.py::test_softmax[variant_one-bf16-4096x8192-triton-autotuned-config-a]"
    long_b = long_a.replace("variant_one", "variant_two")
    rows = (replace(gate.comparisons[0], case_id=long_a), replace(gate.comparisons[1], case_id=long_b))
    lines = render_terminal(replace(gate, comparisons=rows, findings=()))
    shown = [line.split()[0] for line in lines[2:4]]
    assert len(set(shown)) == 2 and all(len(s) <= 56 and s.endswith("config-a]") for s in shown)
    assert sorted(s.split("…")[1][:7] for s in shown) == ["ant_one", "ant_two"]  # where they differ is kept


def test_json_stays_small_without_samples():
    gate, run = scale_gate(300, 3, 30)
    samples = tuple(float(i) for i in range(200))
    run = replace(run, results=tuple(replace(r, samples_ms=samples) for r in run.results))
    small, full = render_json(gate, run), render_json(gate, run, samples=True)
    assert '"samples_ms"' not in small and len(full) - len(small) > 300 * 200 * 4  # every sample's digits gone
