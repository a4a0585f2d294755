import json

import pytest

from perfgate.baseline import baseline_path, load_baseline, render_baseline, updated_baseline, write_baseline
from perfgate.errors import BaselineError
from perfgate.model import CaseResult, Environment, Metric, Run, RunInfo, Timer
from perfgate.stats import summarize

ENV = Environment(device_kind="cuda", device_name="NVIDIA H100 80GB HBM3", compute_capability="9.0")


def make_run(samples: dict[str, list[float]], metrics=()) -> Run:
    results = tuple(CaseResult(cid, summarize(s, Timer.CUDA_EVENT), tuple(s), tuple(metrics)) for cid, s in samples.items())
    return Run(RunInfo("2026-11-21T00:00:00+00:00", "2026-11-21T00:01:00+00:00", git_commit="abc123"), ENV, results)


def test_baseline_file_is_named_after_the_device_model(tmp_path):
    assert baseline_path(tmp_path, ENV).name == "nvidia-h100-80gb-hbm3.json"
    assert baseline_path(tmp_path, Environment("host", "Intel(R) Xeon(R)")).name == "host-intel-r-xeon-r.json"


def test_written_baseline_reads_back_with_its_update_log(tmp_path):
    path = tmp_path / "b.json"
    run = make_run({"t::b": [1.0, 1.1, 0.9], "t::a": [2.0, 2.1]},
                   metrics=(Metric("launch__registers_per_thread", 64, "register/thread", "ncu", "k"),
                            Metric("some__uncatalogued.metric", 1, "", "ncu", "k")))
    write_baseline(updated_baseline(None, run, path, "alice", "first"))
    b = load_baseline(path)
    assert sorted(b.cases) == ["t::a", "t::b"]
    assert b.cases["t::b"].samples_ms == (1.0, 1.1, 0.9)
    assert [m.name for m in b.cases["t::b"].metrics] == ["launch__registers_per_thread"]  # only gated metrics
    assert b.updates[-1].by == "alice" and b.updates[-1].reason == "first" and b.updates[-1].commit == "abc123"


def test_rendering_is_stable_and_sorted_for_review(tmp_path):
    path = tmp_path / "b.json"
    b1 = updated_baseline(None, make_run({"z": [1.0, 2.0], "a": [3.0, 4.0]}), path, "x", "r")
    b2 = updated_baseline(None, make_run({"a": [3.0, 4.0], "z": [1.0, 2.0]}), path, "x", "r")
    text = render_baseline(b1)
    assert text == render_baseline(b2)
    assert text.index('"a"') < text.index('"z"')
    json.loads(text)  # still plain JSON


def test_update_keeps_cases_that_were_not_run(tmp_path):
    path = tmp_path / "b.json"
    first = updated_baseline(None, make_run({"a": [1.0, 1.0], "b": [2.0, 2.0]}), path, "x", "one")
    second = updated_baseline(first, make_run({"a": [5.0, 5.0]}), path, "x", "two")
    assert second.cases["a"].median_ms == 5.0
    assert second.cases["b"].median_ms == 2.0
    assert [u.reason for u in second.updates] == ["one", "two"]


@pytest.mark.parametrize("content, problem", [
    ("{not json", "not valid JSON (line 1"),
    ('{"format": "something-else"}', "not a perfgate baseline"),
    ('{"format": "perfgate-baseline", "version": 99}', "format version 99"),
    ('{"format": "perfgate-baseline", "version": 1, "cases": {}}', 'missing "environment"'),
    ('{"format": "perfgate-baseline", "version": 1, "environment": {"device_kind": "cuda", "device_name": "x"},'
     ' "cases": {"t": {"median_ms": 1.0, "samples_ms": [1.0]}}}', "at least 2"),
    ('{"format": "perfgate-baseline", "version": 1, "environment": {"device_kind": "cuda", "device_name": "x"},'
     ' "cases": {"t": {"samples_ms": [1.0, 2.0]}}}', 'missing "median_ms"'),
])
def test_malformed_baseline_is_a_clear_error_naming_the_file(tmp_path, content, problem):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(BaselineError) as err:
        load_baseline(path)
    assert str(path) in str(err.value)
    assert problem in str(err.value)
    assert "\n" not in str(err.value)


def test_missing_baseline_is_none(tmp_path):
    assert load_baseline(tmp_path / "none.json") is None
