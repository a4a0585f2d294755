"""Runs imported from pytest-benchmark carry their own timer, `pytest_benchmark`: its calibration and
rounds are not perfgate's host clock, so `perfgate compare` calls them not comparable instead of
reporting a timer artefact as "49 improved". Histories that stored imports as `host` read the same."""

import json
import sqlite3

from perfgate.baseline.write import write_baseline
from perfgate.cli import main
from perfgate.config.settings import Settings
from perfgate.gate.compare import compare_run
from perfgate.model import Timer, Verdict
from perfgate.parse.pytest_benchmark import read_pytest_benchmark
from perfgate.store import open_store
from tests.helpers import HOST_ENV, baseline_of, make_run

CASES = ("test_bench.py::test_a", "test_bench.py::test_b")


def benchmark_json(path, median_s=1e-6):
    stats = {
        "min": median_s,
        "max": median_s,
        "mean": median_s,
        "stddev": 0.0,
        "median": median_s,
        "q1": median_s,
        "q3": median_s,
        "rounds": 5,
        "data": [median_s] * 5,
    }
    doc = {
        "machine_info": {"cpu": {"brand_raw": HOST_ENV.device_name}, "node": "n", "python_version": "3.11"},
        "commit_info": {"id": "abc"},
        "datetime": "2026-11-21T00:00:00",
        "version": "5.3.1",
        "benchmarks": [{"fullname": c, "name": c.split("::")[1], "stats": stats} for c in CASES],
    }
    path.write_text(json.dumps(doc))
    return path


def host_baseline(tmp_path):
    """A baseline perfgate's own host clock wrote, on the same CPU model."""
    base = baseline_of(make_run({c: [0.0025] * 20 for c in CASES}, env=HOST_ENV), tmp_path, "host.json")
    write_baseline(base)
    return base


def test_an_imported_run_is_labelled_with_pytest_benchmarks_timer(tmp_path):
    run = read_pytest_benchmark(benchmark_json(tmp_path / "b.json"))
    assert {r.timing.timer for r in run.results} == {Timer.PYTEST_BENCHMARK}


def test_an_imported_run_is_never_compared_with_perfgates_host_clock(tmp_path):
    run = read_pytest_benchmark(benchmark_json(tmp_path / "b.json"))
    gate = compare_run(run.results, host_baseline(tmp_path), run.environment, Settings(allow_env_mismatch=True))
    assert {c.verdict for c in gate.comparisons} == {Verdict.NOT_COMPARABLE}
    assert "baseline timed with host, this run with pytest_benchmark" in gate.comparisons[0].note


def test_compare_on_an_imported_run_reports_not_comparable(tmp_path, capsys):
    base = host_baseline(tmp_path)
    db = tmp_path / "h.db"
    assert main(["import-benchmark", str(benchmark_json(tmp_path / "b.json")), "--db", str(db)]) == 0
    assert (
        main(
            [
                "compare",
                "--rootdir",
                str(tmp_path),
                "--db",
                str(db),
                "--baseline-file",
                str(base.path),
                "--json",
                str(tmp_path / "out.json"),
            ]
        )
        == 0
    )
    verdicts = {c["verdict"] for c in json.loads((tmp_path / "out.json").read_text())["comparisons"]}
    assert verdicts == {"not comparable"}
    assert "improved" not in capsys.readouterr().out


def test_imports_stored_as_host_by_older_versions_read_as_pytest_benchmark(tmp_path):
    db = tmp_path / "h.db"
    with open_store(db) as store:
        store.save_run(read_pytest_benchmark(benchmark_json(tmp_path / "b.json")))
        store.save_run(make_run({"own::case": [1.0] * 5}, env=HOST_ENV, uid="perfgate-own"))
    with sqlite3.connect(db) as con:  # what perfgate <= 0.2 wrote for both
        con.execute("UPDATE cases SET timer = 'host'")
    with open_store(db, readonly=True) as store:
        imported, own = store.load_run(1), store.load_run(2)
    assert {r.timing.timer for r in imported.results} == {Timer.PYTEST_BENCHMARK}
    assert {r.timing.timer for r in own.results} == {Timer.HOST}
