"""pytest-benchmark's command line and pytest-codspeed's fixture under --perfgate (issue 29, requirement 6):
--benchmark-json in pytest-benchmark's own format (read back by pytest-benchmark's own loader and compare
command), --benchmark-save/--benchmark-autosave into its storage, --benchmark-compare seeding a missing
baseline from a saved run (marked imported), compare-fail and histogram as one line each, the flags accepted
without pytest-benchmark installed, and pytest-codspeed's fixture and whole-test marker."""

import json
import sys

import pytest

from perfgate.baseline import load_baseline
from perfgate.baseline.imported import imported_line, seeded_baseline
from perfgate.errors import BaselineError
from perfgate.model import Environment
from perfgate.parse.pytest_benchmark_stats import BenchmarkStats
from perfgate.pytest_plugin.benchmark_cli import machine_id, storage_dir
from tests.helpers import perf_project

SUITE = """
import pytest

@pytest.mark.parametrize("n", [3, 30])
def test_sum(benchmark, n):
    benchmark.group = "sums"
    benchmark.extra_info["n"] = n
    assert benchmark(sum, range(n)) == sum(range(n))

def test_pedantic(benchmark):
    benchmark.pedantic(sorted, args=([3, 1, 2],), rounds=4, iterations=2)

def test_plain():
    pass
"""
PYPROJECT = """
[tool.perfgate]
warmup_ms = 1
min_samples = 5
max_samples = 10
budget_ms = 10
confirm_runs = 0
memory = false
"""
NAMES = {"test_sum[3]", "test_sum[30]", "test_pedantic"}


@pytest.fixture
def suite(pytester, monkeypatch):
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    return perf_project(pytester, monkeypatch, SUITE, PYPROJECT, test_name="test_bench")


def run(suite, *args):
    return suite.runpytest("--perfgate", "-p", "no:cacheprovider", "--perfgate-no-store", *args)


def saved(suite):
    return sorted((suite.path / ".benchmarks" / machine_id()).glob("*.json"))


def test_benchmark_json_is_read_by_pytest_benchmarks_own_loader_and_compare(suite, monkeypatch, capsys, tmp_path):
    pytest.importorskip("pytest_benchmark")
    from pytest_benchmark import cli
    from pytest_benchmark.logger import Logger
    from pytest_benchmark.storage.file import FileStorage

    assert run(suite, "--benchmark-json", "bench.json").ret == 0
    [(_, doc)] = list(FileStorage(suite.path, Logger(Logger.QUIET)).load("bench.json"))
    assert {"machine_info", "commit_info", "benchmarks", "datetime", "version"} <= set(doc)
    benches = {b["name"]: b for b in doc["benchmarks"]}
    assert set(benches) == NAMES
    s = benches["test_sum[30]"]
    assert s["fullname"] == "test_bench.py::test_sum[30]" and s["group"] == "sums" and s["param"] == "30"
    assert s["extra_info"] == {"n": 30} and s["params"] == {"n": 30} and benches["test_pedantic"]["params"] is None
    expected = BenchmarkStats(s["stats"]["data"]).as_dict()  # pytest-benchmark's definitions, its own data
    assert {k: s["stats"][k] for k in expected} == pytest.approx(expected)
    assert benches["test_pedantic"]["stats"]["rounds"] == 4 and benches["test_pedantic"]["stats"]["iterations"] == 2
    from perfgate.parse.pytest_benchmark import read_pytest_benchmark

    # perfgate's own reader (import-benchmark) refuses statistics that contradict their data: none here
    assert len(read_pytest_benchmark(suite.path / "bench.json").results) == 3

    (tmp_path / "bench.json").write_bytes((suite.path / "bench.json").read_bytes())
    monkeypatch.chdir(tmp_path)  # its command loads a conftest.py where it runs: none here
    monkeypatch.setattr(sys, "argv", ["pytest-benchmark", "compare", "bench.json"])
    cli.main()  # the command a user runs on the file: its table names every case
    table = capsys.readouterr().out
    assert all(name in table for name in NAMES) and "benchmark 'sums': 2 tests" in table


def test_benchmark_save_numbers_runs_in_its_storage_and_keeps_samples_only_when_asked(suite):
    pytest.importorskip("pytest_benchmark")
    assert run(suite, "--benchmark-save", "first").ret == 0
    assert run(suite, "--benchmark-save", "second", "--benchmark-save-data").ret == 0
    first, second = saved(suite)
    assert (first.name, second.name) == ("0001_first.json", "0002_second.json")
    assert all("data" not in b["stats"] for b in json.loads(first.read_text())["benchmarks"])
    assert all(b["stats"]["data"] for b in json.loads(second.read_text())["benchmarks"])
    assert run(suite, "--benchmark-autosave").ret == 0
    assert saved(suite)[-1].name.startswith("0003_")


def test_compare_seeds_a_missing_baseline_from_the_saved_run_marked_imported(suite, capsys):
    pytest.importorskip("pytest_benchmark")
    assert run(suite, "--benchmark-save", "before").ret == 0
    result = suite.runpytest("--perfgate", "-p", "no:cacheprovider", "--benchmark-compare=0001")
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "perfgate: seeded *baselines*host-*.json from pytest-benchmark's saved run *0001_before.json: 3 case(s), "
            "marked imported",
            "perfgate: --benchmark-compare: compared with this machine's perfgate baseline instead of a saved run*",
            "perfgate: 3 baseline case(s) imported from pytest-benchmark (0001_before.json), uncalibrated*",
        ]
    )
    [path] = (suite.path / "baselines").glob("host-*.json")
    baseline = load_baseline(path)
    assert baseline is not None and set(baseline.cases) == {f"test_bench.py::{n}" for n in NAMES}
    assert {c.imported_from for c in baseline.cases.values()} == {f".benchmarks/{machine_id()}/0001_before.json"}

    from perfgate.cli import main

    assert main(["baseline", "show", str(path)]) == 0
    assert "3 baseline case(s) imported from pytest-benchmark (0001_before.json)" in capsys.readouterr().out


def test_compare_with_no_saved_run_is_one_line_before_any_test(suite):
    pytest.importorskip("pytest_benchmark")
    result = run(suite, "--benchmark-compare")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*--benchmark-compare: *.benchmarks* holds no any saved run to seed the baseline*"])


def test_compare_fail_and_histogram_map_onto_perfgate_in_one_line_each(suite):
    pytest.importorskip("pytest_benchmark")
    result = run(suite, "--benchmark-compare-fail=min:5%", "--benchmark-histogram")
    assert result.ret == 0
    out = result.stdout.str()
    assert out.count("perfgate: --benchmark-compare-fail: perfgate's gate fails the run instead") == 1
    assert out.count("perfgate: --benchmark-histogram: no SVG histograms; perfgate draws") == 1
    assert "not used under --perfgate" not in out


def test_without_pytest_benchmark_its_flags_still_work(suite):
    result = run(
        suite, "-p", "no:benchmark", "--benchmark-json", "bench.json", "--benchmark-save", "x", "--benchmark-only"
    )
    assert result.ret == 0
    result.assert_outcomes(passed=3, skipped=1)
    assert {b["name"] for b in json.loads((suite.path / "bench.json").read_text())["benchmarks"]} == NAMES
    assert [p.name for p in saved(suite)] == ["0001_x.json"]


def test_elasticsearch_storage_is_refused_in_one_line(tmp_path):
    with pytest.raises(Exception, match="runs are saved to files only"):
        storage_dir("elasticsearch+https://host/index", tmp_path)
    assert storage_dir("file://./.b", tmp_path) == tmp_path / ".b"


def _file(tmp_path, brand):
    doc = {
        "machine_info": {"cpu": {"brand_raw": brand}},
        "commit_info": {"id": "abc"},
        "datetime": "2026-01-01T00:00:00+00:00",
        "benchmarks": [
            {
                "fullname": "t.py::test_a",
                "stats": {"min": 1e-6, "q1": 1e-6, "median": 2e-6, "q3": 3e-6, "max": 3e-6, "mean": 2e-6}
                | {"stddev": 1e-6, "rounds": 3},
            }
        ],
    }
    path = tmp_path / "0001_x.json"
    path.write_text(json.dumps(doc))
    return path


def test_a_saved_run_from_another_cpu_does_not_seed_this_machines_baseline(tmp_path):
    env = Environment(device_kind="host", device_name="AMD EPYC (family 25 model 17)", cpu_brand="AMD EPYC")
    with pytest.raises(BaselineError, match="measured on 'Intel Xeon', this machine is"):
        seeded_baseline(None, _file(tmp_path, "Intel Xeon"), tmp_path / "b.json", env, "me")
    seeded = seeded_baseline(None, _file(tmp_path, "AMD EPYC"), tmp_path / "b.json", env, "me")
    case = seeded.baseline.cases["t.py::test_a"]
    assert case.samples_ms == (1e-3, 1e-3, 2e-3, 3e-3, 3e-3)  # no data saved: its order statistics
    assert seeded.added == ("t.py::test_a",) and "1 baseline case(s) imported" in imported_line(seeded.baseline)
    again = seeded_baseline(seeded.baseline, _file(tmp_path, "AMD EPYC"), tmp_path / "b.json", env, "me")
    assert again.added == () and again.kept == ("t.py::test_a",)  # an imported number never replaces one


CODSPEED_SUITE = """
import pytest

CALLS = []

@pytest.mark.benchmark
def test_whole(tmp_path):
    CALLS.append(tmp_path)
    sum(range(50))

def test_fixture(benchmark):
    assert benchmark(sorted, [2, 1]) == [1, 2]

@pytest.mark.benchmark(group="g", max_rounds=5)
def test_pedantic(benchmark):
    benchmark.pedantic(sorted, args=([2, 1],), rounds=3)

def test_codspeed_name(codspeed_benchmark):
    codspeed_benchmark(sum, [1, 2])

def test_plain():
    pass

def test_fixtures_set_up_once():
    assert len(set(CALLS)) == 1 and len(CALLS) > 1  # measured many times, one tmp_path
"""


@pytest.mark.parametrize("with_pytest_benchmark", [True, False])
def test_a_pytest_codspeed_suite_runs_under_perfgate(pytester, monkeypatch, with_pytest_benchmark):
    pytest.importorskip("pytest_codspeed")
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    suite = perf_project(pytester, monkeypatch, CODSPEED_SUITE, PYPROJECT, test_name="test_cs")
    extra = () if with_pytest_benchmark else ("-p", "no:benchmark")
    result = run(suite, "--perfgate-json", "out.json", *extra, "-p", "no:randomly")
    result.assert_outcomes(passed=6)
    cases = {c["case_id"].split("::")[-1]: c for c in json.loads((suite.path / "out.json").read_text())["cases"]}
    assert set(cases) == {"test_whole", "test_fixture", "test_pedantic", "test_codspeed_name"}
    assert cases["test_pedantic"]["timing"]["n_samples"] == 3 and cases["test_pedantic"]["group"] == "g"
    result.stdout.fnmatch_lines(["perfgate warning: *not used under --perfgate*@pytest.mark.benchmark(max_rounds)"])


def test_a_bare_benchmark_marker_measures_nothing_without_pytest_codspeed(suite, pytester):
    pytester.makepyfile(test_marked="import pytest\n@pytest.mark.benchmark\ndef test_m():\n    pass\n")
    result = run(suite, "--perfgate-json", "out.json", "-p", "no:codspeed", "test_marked.py")
    result.assert_outcomes(passed=1)
    assert "no perf case measured" in result.stdout.str()


def test_import_benchmark_seed_baseline_adds_only_the_missing_cases(tmp_path, monkeypatch, capsys):
    from perfgate.cli import main
    from perfgate.measure import environment

    env = Environment(device_kind="host", device_name="Pinned CPU (family 1 model 2)", cpu_brand="Pinned CPU")
    monkeypatch.setattr(environment, "current_environment", lambda use_cuda: env)
    monkeypatch.chdir(tmp_path)
    source = _file(tmp_path, "Pinned CPU")
    argv = ["import-benchmark", "--rootdir", str(tmp_path), "--seed-baseline", str(source)]
    assert main(argv) == 0
    [path] = (tmp_path / "baselines").glob("host-*.json")
    assert path.name == "host-pinned-cpu-family-1-model-2.json"
    assert load_baseline(path).cases["t.py::test_a"].imported_from == "0001_x.json"
    assert "seeded 1 case(s)" in capsys.readouterr().out
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "seeded 0 case(s)" in out and "(1 already there, kept)" in out


def test_without_pytest_benchmark_or_perfgate_its_flags_are_refused_not_ignored(suite):
    result = suite.runpytest("-p", "no:cacheprovider", "-p", "no:benchmark", "--benchmark-json", "bench.json")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*--benchmark-json: pytest-benchmark is not installed; perfgate serves its flags*"])
    assert not (suite.path / "bench.json").exists()


def test_compare_with_a_baseline_already_there_needs_no_saved_run(suite):
    pytest.importorskip("pytest_benchmark")
    assert suite.runpytest("--perfgate", "-p", "no:cacheprovider").ret == 0  # writes the first baseline
    result = suite.runpytest("--perfgate", "-p", "no:cacheprovider", "--benchmark-compare")
    assert result.ret == 0 and "seeded" not in result.stdout.str()
    result.stdout.fnmatch_lines(["perfgate: --benchmark-compare: compared with this machine's perfgate baseline*"])
