"""Inputs from the second outside review, each rebuilt from its description: a bad file is one line naming
the file and the problem (exit 2), never exit 0 with a nonsense result, and no name read from a file can
start a line of its own in a CI log (`::error::` is a GitHub Actions workflow command)."""

import contextlib
import csv
import io
import json
import math
import shutil
import sqlite3
from pathlib import Path

import pytest

from perfgate.cli import main

DATA = Path(__file__).parent / "data"
INJECTED = "t::x\n::error::x"


def run_cli(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


def refused(*argv, names):
    """The command's one-line refusal (exit 2), naming the file, with nothing on stdout."""
    code, out, err = run_cli(*argv)
    assert code == 2 and len(err.strip().splitlines()) == 1, (code, err)
    assert str(names) in err, err
    assert not any(line.startswith("::") for line in out.splitlines()), out
    return err.strip()


def history_copy(tmp_path, *updates):
    db = tmp_path / "history.db"
    shutil.copy(DATA / "compat" / "history.db", db)
    with contextlib.closing(sqlite3.connect(db)) as con, con:
        for sql, params in updates:
            con.execute(sql, params)
    return db


def renamed_case(tmp_path, new_id):
    where = "WHERE run_id = 4 AND case_id = 'test_host.py::test_sum'"
    return history_copy(
        tmp_path,
        (f"UPDATE cases SET case_id = ? {where}", (new_id,)),
        (f"UPDATE samples SET case_id = ? {where}", (new_id,)),
    )


def baseline_copy(tmp_path, edit):
    doc = json.loads((DATA / "compat" / "baselines" / "host-amd-epyc.json").read_text())
    edit(doc)
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps(doc))
    return path


# --- 1. case ids with control characters ----------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["table", "csv"])
def test_a_stored_case_id_with_a_newline_is_refused_by_history(tmp_path, fmt):
    db = renamed_case(tmp_path, INJECTED)
    err = refused("history", "--db", db, "--case", "*", "--format", fmt, names=db)
    assert "control character" in err and "::error::" not in err.split("'")[0]


def test_a_stored_case_id_with_a_newline_is_refused_by_the_gate_reader(tmp_path):
    from perfgate.store import StoreError, open_store

    db = renamed_case(tmp_path, INJECTED)
    with open_store(db, readonly=True) as store, pytest.raises(StoreError, match="control character"):
        store.load_run(4)


def test_a_baseline_case_id_with_a_newline_is_refused_by_show_and_diff(tmp_path):
    def inject(doc):
        doc["cases"]["a|b\n::error::x<img src=x>"] = doc["cases"].pop("test_host.py::test_sum")

    path = baseline_copy(tmp_path, inject)
    good = DATA / "compat" / "baselines" / "host-amd-epyc.json"
    assert "control character" in refused("baseline", "show", path, names=path)
    for fmt in ("md", "text"):
        assert "control character" in refused("baseline", "diff", "--format", fmt, good, path, names=path)


def test_a_results_file_case_id_with_a_newline_is_refused(tmp_path):
    doc = json.loads((DATA / "compat" / "results.json").read_text())
    doc["comparisons"][0]["case_id"] = INJECTED
    path = tmp_path / "results.json"
    path.write_text(json.dumps(doc))
    assert "control character" in refused("ci", "verdict", path, names=path)


def test_a_measured_case_id_with_a_newline_is_refused_by_the_codec(tmp_path):
    from perfgate.codec import CodecError, case_from_dict, case_to_dict
    from perfgate.store import open_store

    with open_store(history_copy(tmp_path), readonly=True) as store:
        case = store.load_run(4).results[0]
    raw = {**case_to_dict(case), "case_id": INJECTED}
    with pytest.raises(CodecError, match="control character"):
        case_from_dict(raw)


def test_an_imported_fullname_with_a_newline_is_made_printable(tmp_path):
    from perfgate.parse.pytest_benchmark import read_pytest_benchmark

    path = benchmark_file(tmp_path, fullname=INJECTED)
    (case,) = read_pytest_benchmark(path).results
    assert "\n" not in case.case_id and case.case_id == "t::x\ufffd::error::x"


def benchmark_file(tmp_path, fullname="bench.py::test_a", **stats):
    from perfgate.parse.pytest_benchmark_stats import BenchmarkStats

    data = [0.001 + i * 1e-6 for i in range(30)]
    computed = BenchmarkStats(data)  # as pytest-benchmark computes them: a file that contradicts its data is refused
    bench = {
        "name": "test_a",
        "fullname": fullname,
        "stats": {
            **{k: getattr(computed, k) for k in ("min", "max", "mean", "median", "stddev", "q1", "q3")},
            "rounds": 30,
            "iterations": 1,
            "data": data,
            **stats,
        },
    }
    path = tmp_path / "bench.json"
    doc = {"machine_info": {"node": "h"}, "datetime": "2026-11-24T06:00:00", "benchmarks": [bench]}
    path.write_text(json.dumps(doc))
    return path


# --- 2. times too large to be measurements ----------------------------------------------------------------

HUGE = "UPDATE cases SET median_ms = 1e308, max_ms = 1e308, q3_ms = 1e308, mean_ms = 1e308 WHERE run_id = 4"


@pytest.mark.parametrize(
    "argv",
    [
        ("history", "--db", "{db}", "--case", "*"),
        ("report", "--db", "{db}", "--html", "{tmp}/site"),
        ("compare", "--db", "{db}", "--baseline-dir", str(DATA / "compat" / "baselines"), "--json", "{tmp}/r.json"),
    ],
    ids=["history", "report-html", "compare"],
)
def test_a_stored_median_of_1e308_is_refused_in_one_line(tmp_path, argv):
    db = history_copy(tmp_path, (HUGE, ()))
    err = refused(*(a.format(db=db, tmp=tmp_path) for a in argv), names=db)
    assert "median_ms: 1e+308 is above 1e+12" in err
    assert not (tmp_path / "r.json").exists()


def test_a_stored_median_of_1e308_is_refused_by_the_merge_check():
    from perfgate.store import rows
    from perfgate.store.checks import StoredValueError

    row = {"case_id": "a", "timer": "host", "n_samples": 3, "gbps": None, "tflops": None, "thresholds": None}
    row |= {c: 1.0 for c in ("median_ms", "mean_ms", "stdev_ms", "min_ms", "max_ms", "q1_ms", "q3_ms")}
    row |= {"median_ms": 1e308, "mean_ms": 1e308, "max_ms": 1e308, "q3_ms": 1e308, "samples_f64": b""}
    with pytest.raises(StoredValueError, match="is above 1e\\+12"):
        rows.check_case_row(row)


@pytest.mark.parametrize("key", ["median_ms", "samples_ms", "process_medians_ms"])
def test_a_baseline_time_of_1e308_is_refused(tmp_path, key):
    def inflate(doc):
        case = doc["cases"]["test_host.py::test_sum"]
        case[key] = [1e308] * len(case[key]) if isinstance(case[key], list) else 1e308

    path = baseline_copy(tmp_path, inflate)
    assert "is above 1e+12: not a measured time" in refused("baseline", "show", path, names=path)


def test_the_site_embeds_a_non_finite_number_as_null():
    from perfgate.report.site.pages import embed_json

    assert embed_json({"a": [1.5, float("inf"), (float("nan"), 2)], "b": "<x>"}) == (
        '{"a":[1.5,null,[null,2]],"b":"\\u003cx\\u003e"}'
    )


# --- 3. nsys rows 292 years long ----------------------------------------------------------------------------

FAR = "start = 4611686018427387904, end = 9223372036854775807"


@pytest.mark.parametrize(
    "table", ["CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_RUNTIME"]
)
def test_an_nsys_row_past_31_years_is_dropped_and_counted(tmp_path, table):
    from perfgate.parse.nsys_sqlite import read_nsys_sqlite

    path = tmp_path / "x.sqlite"
    shutil.copy(DATA / "h100" / "perfgate-nsys.sqlite", path)
    with contextlib.closing(sqlite3.connect(path)) as con, con:
        con.execute(f"INSERT INTO {table} SELECT * FROM {table} LIMIT 1")
        con.execute(f"UPDATE {table} SET {FAR} WHERE rowid = (SELECT max(rowid) FROM {table})")

    def counted(notes):
        return any(n.startswith(f"1 {table} rows ") and n.endswith("past 1e18 ns (31 years) ignored") for n in notes)

    code, out, err = run_cli("analyze", path, "--format", "json")
    doc = json.loads(out)
    assert code == 0, err
    assert counted(doc["notes"]), doc["notes"]
    assert doc["gpu_idle"]["busy_ns"] < 10**10  # the recorded capture's 0.5 s, not 4.6e9 s
    timeline = read_nsys_sqlite(path)
    assert counted(timeline.notes), timeline.notes
    assert all(k.end_ns < 10**18 for k in timeline.kernels)


# --- 4. ncu CSV values past float range once scaled, and -0 % -----------------------------------------------


def ncu_csv(tmp_path, column, value):
    rows = list(csv.reader((DATA / "h100" / "perfgate-ncu_raw.csv").open(newline="")))
    j = rows[0].index(column)
    rows[2][j] = value
    path = tmp_path / "ncu.csv"
    with path.open("w", newline="") as f:
        csv.writer(f, quoting=csv.QUOTE_ALL).writerows(rows)
    return path


def test_an_ncu_duration_overflowing_when_scaled_is_refused_as_too_large(tmp_path):
    path = ncu_csv(tmp_path, "gpu__time_duration.sum", "1e308")
    err = refused("analyze", path, names=path)
    assert "gpu__time_duration.sum = 1e+308 us cannot be that large" in err


def test_a_negative_zero_percentage_reads_as_zero(tmp_path):
    from perfgate.parse.ncu_csv import read_ncu_csv

    column = "sm__throughput.avg.pct_of_peak_sustained_elapsed"
    launch = read_ncu_csv(ncu_csv(tmp_path, column, "-0"))[0]
    value = launch.metrics[column].value
    assert value == 0.0 and math.copysign(1.0, value) == 1.0
    code, out, err = run_cli("analyze", ncu_csv(tmp_path, column, "-0"))
    assert code == 0 and "-0%" not in out and "-0 %" not in out, err


# --- 5. pytest-benchmark rounds and iterations --------------------------------------------------------------


@pytest.mark.parametrize(
    ("stats", "problem"),
    [
        ({"rounds": 10**9}, "stats.rounds is 1,000,000,000 but stats.data holds 30 times"),
        ({"iterations": -10}, "stats.iterations must be an integer from 1 to 2**31 - 1"),
        ({"iterations": 2**63}, "stats.iterations must be an integer from 1 to 2**31 - 1"),
        ({"iterations": 0}, "stats.iterations must be an integer from 1 to 2**31 - 1"),
    ],
)
def test_an_impossible_round_or_iteration_count_is_refused_on_import(tmp_path, stats, problem):
    path = benchmark_file(tmp_path, **stats)
    err = refused("import-benchmark", path, "--db", tmp_path / "h.db", names=path)
    assert problem in err
    assert "benchmarks[0]" in err


def test_a_benchmark_with_as_many_rounds_as_times_is_imported(tmp_path):
    code, _, err = run_cli(
        "import-benchmark", benchmark_file(tmp_path, iterations=2**31 - 1), "--db", tmp_path / "h.db"
    )
    assert code == 0, err
