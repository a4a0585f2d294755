"""A/B mode's outputs go through the gate's one tail (gate/run.py `finish`, report/outputs.py): every output of
the registry is written, everything published is scrubbed with the secret environment values, and the
summary says what the run cost without a total it does not know yet. Stand-in workers (tests/ab_standin.py).

Written first and seen failing on the A/B pipeline beside run_gate: a secret in a skip reason reached the
A/B summary and JSON unmasked (its scrubber had no secret values), --perfgate-junit-xml, the
github-action-benchmark and Bencher files were not written, the job summary was appended without the size
fit, and the cost table said `total 0.0` and "on one GPU" on a CPU host.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from perfgate.ab.run import run_ab
from perfgate.report.progress import LogProgress
from tests.ab_repo import cases, commit, make_repo, request

SECRET = "hunter2-s3cr3t-value-0123"  # noqa: S105 (a test value: the scrubber must mask it)
OUTPUTS = {
    "summary_path": "summary.md",
    "json_path": "results.json",
    "benchmark_json_path": "benchmark.json",
    "benchmark_speedup_json_path": "speedups.json",
    "bencher_json_path": "bencher.json",
    "junit_xml_path": "junit.xml",
}


@pytest.fixture
def repo(tmp_path):
    repo = make_repo(tmp_path / "repo")
    times = {"a": 1.0, "b": 2.0, "c": 0.5}
    commit(repo, cases(times, reference_ms={"test_perf.py::b": 3.0}), "base")
    skips = {"test_perf.py::c": f"needs the service (the key {SECRET} was refused)"}
    commit(repo, cases(times, reference_ms={"test_perf.py::b": 3.0}, skips=skips), "head: c skips")
    return repo


def _run(repo, tmp_path, monkeypatch, **settings):
    out = tmp_path / "out"
    out.mkdir()
    step = tmp_path / "step-summary.md"
    monkeypatch.setenv("MY_API_TOKEN", SECRET)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    paths = {k: out / v for k, v in OUTPUTS.items()}
    req = request(repo, "HEAD~1", tmp_path, report_dir=out / "charts", **paths, **settings)
    return run_ab(req), out, step


def test_every_output_of_the_registry_is_written_in_ab_mode(repo, tmp_path, monkeypatch):
    outcome, out, step = _run(repo, tmp_path, monkeypatch)
    for name in OUTPUTS.values():
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name
    assert step.is_file() and "ratio (95% CI)" in step.read_text()
    doc = json.loads((out / "results.json").read_text())
    assert doc["ab"]["base_commit"] and doc["ab"]["cases"]
    assert "<testsuite" in (out / "junit.xml").read_text()
    assert {e["name"] for e in json.loads((out / "benchmark.json").read_text())} >= {"test_perf.py::a"}
    assert "test_perf.py::b" in json.loads((out / "bencher.json").read_text())
    assert any("no charts written" in m and "A/B mode draws no charts" in m for m in outcome.messages)


def test_a_secret_in_a_skip_reason_is_masked_in_every_ab_output(repo, tmp_path, monkeypatch):
    outcome, out, step = _run(repo, tmp_path, monkeypatch, strict=True)
    texts = {p.name: p.read_text() for p in out.iterdir() if p.is_file()}
    texts["job summary"] = step.read_text()
    assert "needs the service" in texts["results.json"]  # the reason is published, the secret is not
    for name, text in texts.items():
        assert SECRET not in text, name
    terminal = "\n".join(outcome.terminal)  # a CI log is published too
    assert "needs the service" in terminal and SECRET not in terminal


def test_the_summary_says_what_the_run_cost_so_far_and_where_it_ran(repo, tmp_path, monkeypatch):
    outcome, out, _ = _run(repo, tmp_path, monkeypatch)
    summary = (out / "summary.md").read_text()
    assert "on this host's clock (CPU)" in summary and "one GPU" not in summary
    assert not re.search(r"\| total \| 0\.0 \|", summary)
    found = re.search(r"\| until this summary \(storing and writing the outputs follow\) \| ([\d.]+) \|", summary)
    assert found and float(found[1]) > 0
    costs = dict(outcome.costs_s)  # the final line: every phase, adding up to the total
    assert costs["total"] == pytest.approx(sum(v for k, v in outcome.costs_s if k != "total"), rel=1e-6)
    assert outcome.messages[-1].startswith("perfgate: A/B cost: ") and "total" in outcome.messages[-1]


def test_live_progress_names_the_case_the_stage_and_the_elapsed_time(tmp_path, monkeypatch):
    import io

    from perfgate.report import progress

    repo = make_repo(tmp_path / "repo")
    commit(repo, cases({"a": 1.0}), "base")
    commit(repo, cases({"a": 1.3}), "head: a slower")
    monkeypatch.setattr(progress, "LOG_INTERVAL_S", 0.0)  # a line at every update (a terminal shows them all)
    stream = io.StringIO()
    outcome = run_ab(replace(request(repo, "HEAD~1", tmp_path), progress=LogProgress(stream)))
    lines = stream.getvalue().splitlines()
    assert outcome.exit_code == 1
    assert any(re.search(r"A/B: tests: 0/1, test_perf.py::a: rounds, round \d+ of 6 \(\d+\.\d s\)", x) for x in lines)
    assert any("confirmation stage 1" in x for x in lines)
    assert any(re.search(r"A/B fresh pair: tests: 1/1 in \d+\.\d s", x) for x in lines)
